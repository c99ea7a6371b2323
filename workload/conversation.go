package workload

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/pcgint"
)

// Conversations is a multi-turn chat workload. First turns arrive open-loop
// (from Arrival); each follow-up turn is closed-loop: it is issued when the
// previous answer has finished plus a think time, so the source takes
// Feedback and is labelled ClosedLoop.
//
// Turn k+1's prompt is turn k's prompt + turn k's answer + new user tokens,
// as in vLLM's multi_turn benchmark: the conversation's history is resent.
// Each turn's block hash ids cover its prompt and its answer
// (HashesCoverOutput): the prompt's full blocks keep the last turn's ids,
// the rest (the last, partial prompt block, whose content changes once the
// answer follows it, and the answer) get fresh ids. Turn k+1's ids begin
// with every full block of turn k's prompt and answer, unchanged, so a
// prefix cache sees the history, answer included, as a shared prefix, as
// vLLM does (it hashes generated tokens like prompt tokens): a replica
// that served turn k and still holds its blocks serves turn k+1's history
// from its cache, which is what session affinity buys. The answer's last
// token is never in KV (it is sampled, not fed back), so the block holding
// it is recomputed.
// A conversation ends after its drawn number of turns, when the next prompt
// would exceed MaxInput, or when a turn fails (the user gives up).
//
// Conversation c draws from its own streams ("conversation/<c>/turns",
// "/input", "/output", "/think", "/prefix").
type Conversations struct {
	Seed uint64
	// Count is the number of conversations (> 0).
	Count int
	// Arrival is the arrival process of first turns.
	Arrival Arrival
	// Turns is the number of turns of a conversation.
	Turns Length
	// FirstInput is the user's first message in tokens (after any system
	// prompt); UserInput each later message; Output each answer.
	FirstInput, UserInput, Output Length
	// Think is the user's think time between an answer and the next turn.
	Think Think
	// MaxInput, when > 0, ends a conversation whose next prompt would be
	// longer (a context window).
	MaxInput int
	// Prefix adds a system prompt shared across conversations. Hash ids are
	// always carried; the zero value means 512-token blocks, no system
	// prompt.
	Prefix PrefixReuse
	Class  string
}

// Validate reports every problem with the configuration.
func (c Conversations) Validate() error {
	var errs []error
	if c.Count < 1 {
		errs = append(errs, fmt.Errorf("workload: Conversations.Count must be >= 1, got %d", c.Count))
	}
	for _, l := range []struct {
		name string
		l    Length
	}{{"Turns", c.Turns}, {"FirstInput", c.FirstInput}, {"UserInput", c.UserInput}, {"Output", c.Output}} {
		errs = append(errs, validateLength("Conversations."+l.name, l.l))
	}
	if c.MaxInput < 0 {
		errs = append(errs, fmt.Errorf("workload: Conversations.MaxInput must be >= 0, got %d", c.MaxInput))
	}
	errs = append(errs, c.Arrival.Validate(c.Count), c.Think.Validate(), c.Prefix.Validate())
	return errors.Join(errs...)
}

func (c Conversations) String() string {
	return fmt.Sprintf("closed-loop multi-turn: %d conversations arriving %v; turns %v; first input %v, user input %v, output %v; %v; max input %d; prefixes: %v; seed %d",
		c.Count, c.Arrival, c.Turns, c.FirstInput, c.UserInput, c.Output, c.Think, c.MaxInput, c.prefix(), c.Seed)
}

func (c Conversations) prefix() PrefixReuse {
	p := c.Prefix
	if p.BlockTokens == 0 {
		p.BlockTokens = MooncakeBlockTokens
	}
	return p
}

// conversation is the state of one conversation between turns.
type conversation struct {
	id           uint64
	turns, turn  int
	input        int // tokens of the current turn's prompt
	output       int // tokens of the current turn's answer
	ids          []uint64
	user, answer *streamCell // their draws read the generator itself (draw.sample)
	think        *rand.Rand
	// The streams user, answer and think point into, and those of its
	// turns and its prefix, read at its start: a part of it, not five
	// sources and five generators of their own (allocated, Regime/
	// Conversations paid 431 instructions a request more: 19,404 then
	// 18,973, cachegrind's marginal count, SERVESIM_BUDGET_FUNCS).
	streams [5]streamCell
}

// ChatSource yields a Conversations workload; it is a Source and takes
// Feedback.
type ChatSource struct {
	cfg      Conversations
	prefix   PrefixReuse
	starts   *arrivals
	started  int
	ids      *blockIDs
	ready    []turnDue // follow-up turns released by Finished, from ready[yielded] on
	yielded  int
	inflight flight // request id → its conversation
	// startsDone: the arrivals of first turns are over (starts.next
	// answered false, as it would again).
	startsDone bool
	next       uint64
	// The lengths a turn draws (cfg's FirstInput, UserInput, Output),
	// each a Uniform's bounds worked out once (draw).
	first, user, output draw
	// inPlace: a turn's ids are extended in its conversation's array
	// (blockIDs.extendInPlace), which a first turn cuts with room for
	// its later turns (room), not copied into a new one; set by
	// IDsInPlace, whose caller reads no turn's ids once it is Finished.
	inPlace bool
	// head is the FNV-1a state after "conversation/", and count the
	// decimal of started, the next conversation's id: its streams'
	// names' head, "conversation/<id>/", hashed from there (start).
	head  uint64
	count decimal
	// fresh is the room the next conversations are cut from (start),
	// convChunk of them at a time.
	fresh []conversation
}

// convChunk is how many conversations start cuts from one array, about
// 8 KiB: a conversation allocated alone (about 250 bytes, with
// pointers) cost Regime/Conversations its allocation a conversation
// (runtime.mallocgcSmallScanNoHeader, mallocgc, newobject and the heap
// bits, 46 instructions a request). An array is kept while one of its
// conversations is, which a source's first Next starts together.
const convChunk = 32

// decimal is a count's decimal digits, d[lo:], counted up by inc
// (TestDecimalIsAppendUint holds it to strconv.AppendUint): a
// conversation's id written into its streams' names without
// strconv.AppendUint's division by ten a digit.
type decimal struct {
	d  [20]byte
	lo int
}

// zero makes c the decimal of 0.
func (c *decimal) zero() { c.d[len(c.d)-1], c.lo = '0', len(c.d)-1 }

// inc adds one to c.
func (c *decimal) inc() {
	i := len(c.d) - 1
	for i >= c.lo && c.d[i] == '9' {
		c.d[i] = '0'
		i--
	}
	if i < c.lo {
		c.lo = i
		c.d[i] = '1'
		return
	}
	c.d[i]++
}

// draw is Length l's Sample: when l is a Uniform, its bounds worked out
// once, not at each draw (Uniform.Sample, called through the Length
// and its pointer wrapper, cost Regime/Conversations, two draws a
// request, 84 and 30 instructions a request, draw.sample 38:
// SERVESIM_BUDGET_FUNCS). TestDrawIsSample holds it to l.Sample.
type draw struct {
	l       Length
	uniform bool
	lo, n   int // a Uniform's: lo + IntN(n)
	most    int // the most it draws, a Uniform's or a Constant's; 0: not known
}

func newDraw(l Length) draw {
	switch u := l.(type) {
	case Uniform:
		lo, hi := u.bounds()
		return draw{l: l, uniform: true, lo: lo, n: hi - lo + 1, most: hi}
	case Constant:
		return draw{l: l, most: u.Tokens}
	}
	return draw{l: l}
}

// sample is d.l.Sample(&c.r): a Uniform's from c's generator itself
// (pcgint.IntN), not through the Rand's calls and its source's
// interface (TestDrawIsSample).
func (d *draw) sample(c *streamCell) int {
	if d.uniform {
		return d.lo + pcgint.IntN(&c.pcg, d.n)
	}
	return d.l.Sample(&c.r)
}

// NewConversations validates cfg and returns its source.
func NewConversations(cfg Conversations) (*ChatSource, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := cfg.prefix()
	s := &ChatSource{cfg: cfg, prefix: p, starts: newArrivals(cfg.Arrival, cfg.Seed, cfg.Count),
		ids: newBlockIDs(p), first: newDraw(cfg.FirstInput), user: newDraw(cfg.UserInput), output: newDraw(cfg.Output),
		head: fnvOn(fnvOffset, "conversation/")}
	s.count.zero()
	return s, nil
}

// Next yields released follow-up turns first, then every remaining first
// turn (their arrivals do not depend on feedback, so they are all yielded
// at once, in arrival order), then ErrWaiting while turns are in flight and
// io.EOF at the end.
func (s *ChatSource) Next() (r Request, err error) {
	err = (*chatInto)(s).NextInto(&r)
	return r, err
}

// chatInto is a ChatSource as internal/nextinto's route, as
// generatorInto is a Generator (synthetic.go): sim's runner has it
// write each turn into its slot in place; Next, its twin, into a fresh
// result.
type chatInto ChatSource

// NextInto is Next writing the turn into *r, every field of it (r may
// hold an earlier request); with no turn (ErrWaiting, io.EOF), *r is
// unchanged.
func (si *chatInto) NextInto(r *Request) error {
	s := (*ChatSource)(si)
	if s.yielded < len(s.ready) {
		t := s.ready[s.yielded]
		if s.yielded++; s.yielded == len(s.ready) {
			// Emptied, its array kept: re-sliced past each turn, as
			// each is yielded as soon as Finished releases it, the list
			// had no room for the next (an allocation a turn;
			// Regime/Conversations paid 211 instructions a request
			// more: 18,973 then 18,762, cachegrind's marginal count).
			s.ready, s.yielded = s.ready[:0], 0
		}
		s.issue(r, t.c, t.at)
		return nil
	}
	if !s.startsDone {
		if at, ok := s.starts.next(); ok {
			s.issue(r, s.start(), at)
			return nil
		}
		s.startsDone = true // the arrivals are over: none is asked for again
	}
	if s.inflight.n == 0 {
		return io.EOF
	}
	return ErrWaiting
}

// More reports false when NextInto would now answer ErrWaiting, true
// when it would write a turn or answer io.EOF, or has yet to find the
// arrivals of first turns over (it then answers as it does): sim's runner, which drains NextInto after each
// Finished until ErrWaiting, asks it after each turn instead (a turn
// released, the next NextInto was that ErrWaiting, its call through
// the interface and the runner's test of the error).
func (si *chatInto) More() bool {
	s := (*ChatSource)(si)
	return s.yielded < len(s.ready) || !s.startsDone || s.inflight.n == 0
}

// start draws a new conversation, its first turn's lengths and ids.
func (s *ChatSource) start() *conversation {
	id := uint64(s.started)
	s.started++
	// NewStream(seed, "conversation/<id>/<name>"), its head hashed
	// once, from "conversation/" hashed once a source, the id's digits
	// counted (decimal): strconv.AppendUint and the whole head hashed
	// at each start cost Regime/Conversations about 30 instructions a
	// request (a call of its own for it, 7).
	h := (fnvOn(s.head, s.count.d[s.count.lo:]) ^ '/') * fnvPrime
	s.count.inc()
	if len(s.fresh) == 0 {
		s.fresh = make([]conversation, convChunk)
	}
	c := &s.fresh[0]
	s.fresh = s.fresh[1:]
	c.id = id
	seed, st := s.cfg.Seed, &c.streams
	st[0].on(seed, fnvOn(h, "input"))
	st[1].on(seed, fnvOn(h, "output"))
	c.user, c.answer, c.think = &st[0], &st[1], st[2].on(seed, fnvOn(h, "think"))
	c.turns = s.cfg.Turns.Sample(st[3].on(seed, fnvOn(h, "turns")))
	c.input = s.prefix.PrefixTokens + s.first.sample(c.user)
	c.output = s.output.sample(c.answer)
	room := 0
	if s.inPlace {
		room = s.room(c)
	}
	c.ids = s.ids.prompt(st[4].on(seed, fnvOn(h, "prefix")), c.input+c.output, room) // each of its own stream: the order of draws is free
	return c
}

// room is the ids conversation c's turns may reach, its first drawn, so
// that its later turns' ids fit its array (extendInPlace): its first
// turn's tokens and, for each later turn, the most a user's message and
// an answer may add, its prompt at most MaxInput; at most maxRoom. 0
// when a message's or an answer's length has no bound (Uniform and
// Constant have one): its array then grows as a slice does.
func (s *ChatSource) room(c *conversation) int {
	u, o := s.user.most, s.output.most
	if u <= 0 || o <= 0 {
		return 0
	}
	tokens := c.input + c.output + (c.turns-1)*(u+o)
	if m := s.cfg.MaxInput; m > 0 {
		tokens = min(tokens, m+o)
	}
	return min(blocks(tokens, s.prefix.block()), maxRoom)
}

// maxRoom bounds the room a first turn cuts for its conversation: half
// a slab (promptSlab), past which a conversation's array is its own.
const maxRoom = promptSlab / 2

// IDsInPlace has the source extend each conversation's ids in place
// (ChatSource.inPlace): its caller (sim's runner, through
// internal/nextinto's route) keeps no turn's PrefixHashes once it has
// called Finished for it, nor lets anyone else, since the next turn may
// write over its last id (its partial block's). Next's twin, a copy a
// turn, is what every other caller gets.
func (si *chatInto) IDsInPlace() { si.inPlace = true }

// issue yields the current turn, its ids drawn (start, Finished) over
// its prompt and its answer at once. Its ids were drawn over its prompt,
// then from its prompt's full blocks on over its answer (reopen): its
// prompt's partial block's id was drawn and dropped, never in any
// request, so its answer's ids skipped one and a turn's fresh ids were
// two runs (Request.PrefixTwoRuns' runs of consecutive ids), not one.
// An id is a label: the ids after each one no longer drawn are
// renumbered, every equality between them the same
// (TestConversationIDsAreLabels, TestPrefixUniformUnchanged). Regime/
// Conversations, two runs a turn then one, 16,455 then 14,334
// instructions a request (the budget test); drawn at once, not its
// prompt's full blocks' and then the rest in the same array (reopen, a
// call more a turn, a first turn's array grown), 14,276 then 13,931.
// It writes the turn into r, Next's zero result, field by field: a
// Request built and returned, then returned again by Next, was copied
// twice (issue, Next and start cost Regime/Conversations 102, 107 and
// 140 instructions a request, then 75, 73 and 130, SERVESIM_BUDGET_FUNCS).
func (s *ChatSource) issue(r *Request, c *conversation, at time.Duration) {
	r.ID, r.Arrival, r.InputTokens, r.OutputTokens = s.next, at, c.input, c.output
	// Its ids capped at their length: an append to them must not write
	// into the room the conversation's next turns' ids take (inPlace).
	r.PrefixHashes, r.PrefixBlockTokens, r.HashesCoverOutput = c.ids[:len(c.ids):len(c.ids)], s.prefix.block(), c.ids != nil
	r.Conversation, r.Turn, r.Class = c.id, c.turn, s.cfg.Class
	r.Priority, r.Failed, r.PrefixTwoRuns = 0, false, ascend.Promise{} // r may hold an earlier request (chatInto)
	if c.ids != nil {
		r.PrefixTwoRuns = ascend.Rising() // blockIDs' ids rise (blockIDs.extendIn)
	}
	s.inflight.add(r.ID, c)
	s.next++
}

// Finished releases the next turn of the request's conversation, at + a
// think time, unless the conversation is over. Unknown ids are ignored.
func (s *ChatSource) Finished(id uint64, at time.Duration, ok bool) {
	c := s.inflight.take(id)
	if c == nil {
		return
	}
	if !ok || c.turn+1 >= c.turns {
		return
	}
	next := c.input + c.output + s.user.sample(c.user)
	if s.cfg.MaxInput > 0 && next > s.cfg.MaxInput {
		return
	}
	// The answer's length, of its own stream, is drawn before the ids
	// (the same): they cover its blocks too (issue).
	output := s.output.sample(c.answer)
	if s.inPlace { // the full blocks of its prompt and answer, then fresh ones
		c.ids = s.ids.extendInPlace(c.ids, c.input+c.output, next+output)
	} else {
		c.ids = s.ids.extendIn(c.ids, c.input+c.output, next+output)
	}
	c.input, c.output = next, output
	c.turn++
	s.ready = append(s.ready, turnDue{c, at + s.cfg.Think.sample(c.think)})
}

// turnDue is a conversation's next turn, released by Finished, and its
// arrival: Next issues it (its request id the next, as Finished's issue
// gave it: the turns are yielded in the order they are released, before
// any first turn). A Request kept in ready instead was copied in and out
// of it: Finished and Next cost Regime/Conversations 143 and 103
// instructions a request, then 121 and 107 (SERVESIM_BUDGET_FUNCS).
type turnDue struct {
	c  *conversation
	at time.Duration
}

// flight is the conversations of the turns in flight by their request
// ids, which a source issues in order (each one more than the last): a
// list from the oldest id in flight (base) on, an entry an id issued
// since (nil once its turn finished), not a map. A map's insert, lookup
// and delete (runtime.mapassign_fast64, mapaccess2_fast64 and the map's
// Delete) cost Regime/Conversations 483 instructions a request more:
// 17,864 then 17,381 (SERVESIM_BUDGET_FUNCS, the marginal count). Its memory is 8
// bytes an id issued since the oldest in flight. TestFlightIsAMap holds
// it to a map.
type flight struct {
	base  uint64          // the id of convs[0]
	convs []*conversation // by id − base
	n     int             // the turns in flight
}

// add notes id's conversation c (not nil); id is at least every id
// added before.
func (f *flight) add(id uint64, c *conversation) {
	if len(f.convs) == 0 {
		f.base = id
	}
	for f.base+uint64(len(f.convs)) < id {
		f.convs = append(f.convs, nil)
	}
	f.convs = append(f.convs, c)
	f.n++
}

// take returns id's conversation and forgets it; nil if id is not in
// flight.
func (f *flight) take(id uint64) *conversation {
	i := id - f.base
	if id < f.base || i >= uint64(len(f.convs)) || f.convs[i] == nil {
		return nil
	}
	c := f.convs[i]
	f.convs[i] = nil
	f.n--
	for len(f.convs) > 0 && f.convs[0] == nil {
		f.convs, f.base = f.convs[1:], f.base+1
	}
	return c
}

// Loop is ClosedLoop: follow-up turns wait for answers.
func (s *ChatSource) Loop() Loop { return ClosedLoop }

// Config returns the workload's configuration.
func (s *ChatSource) Config() Conversations { return s.cfg }
