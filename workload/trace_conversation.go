package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// ErrTurnOrder is wrapped by the *ParseError of a conversation-keeping
// replay whose Turn column disagrees with the file's order: a turn whose
// index is not greater than that of the conversation's previous turn.
// Which of the two orders is right would be a guess.
var ErrTurnOrder = errors.New("workload: conversation turns out of order")

// ConversationTrace replays a trace keeping its conversations (see
// ConversationReplay): turn k+1 is released at the later of its recorded
// instant and the end of turn k (Finished, ok or not) plus MinThink. It is
// a Source that takes Feedback, labelled ClosedLoop, and a Paced one.
//
// Requests keep every field of timestamp replay, their ids included (the
// row's position among the kept rows, or the ID column); only a turn's
// Arrival can move, and only later, and a turn's PrefixHashes go on over
// its answer (HashesCoverOutput), the ids of an answer it resends being
// its predecessor's (ConversationReplay.Answers; Resent says the rule). Requests without a conversation, and
// first turns, keep their recorded instants.
//
// A failed turn (Finished with ok = false: errored, rejected, timed out,
// or recorded as failed) does not end its conversation, unlike
// Conversations, whose user gives up: a trace's later turns are recorded
// traffic, so they are still offered, each at the later of its instant and
// its predecessor's end + MinThink. Dropping them would offer less than the
// trace and take requests out of the denominator.
//
// It streams. It holds the turns read while their predecessor has not
// finished (Held) — under overload, every turn whose recorded instant has
// passed while its predecessor waits — about 200 bytes each plus 8 per hash
// id, and about 100 bytes per conversation it tracks: one with a turn
// released, held or in flight, or whose last end + MinThink lies after the
// last row read; and, when ids come from an ID column, a counter per id of
// the requests without conversation in flight. Nothing else of the file is
// kept (with TraceConfig.Sort, the whole trace is, as in timestamp
// replay). A turn whose predecessor
// the driver never finishes (one it abandons when the run stops) is held
// until the end.
type ConversationTrace struct {
	tr    *Trace
	think time.Duration
	turn  bool // the Turn column is mapped: check it
	ids   bool // the ID column is mapped: ids may repeat

	chains   map[uint64]*chain // tracked conversations
	turns    map[uint64]uint64 // tracked turn id → conversation
	loose    map[uint64]int    // with ids: requests without conversation in flight, by id
	released releaseHeap       // turns whose arrival is known, not yet yielded
	idle     []idleChain       // chains that went idle, in order of end
	held     int               // turns waiting for their predecessor
	seq      uint64            // kept rows read
	last     time.Duration     // recorded instant of the last row read
	count    int               // requests yielded
	ans      *answers          // answer ids (nil: the trace's ids only)
	done     bool              // the file is read (or failed)
	err      error             // the error that ended the replay
}

// chain is a tracked conversation.
type chain struct {
	busy  bool          // cur is released or in flight
	out   bool          // cur has been yielded
	ended bool          // a turn has finished: end is set
	cur   uint64        // id of the turn released or in flight
	end   time.Duration // the end of its last finished turn
	turn  int           // Turn of its last turn read
	held  []pending     // turns read while busy, in file order
}

// pending is a turn with its recorded instant in Arrival and its position
// among the kept rows.
type pending struct {
	req  Request
	seq  uint64
	line int
}

// idleChain is a chain that went idle at end.
type idleChain struct {
	conv uint64
	end  time.Duration
}

var _ Paced = (*ConversationTrace)(nil)

func newConversationTrace(r io.Reader, name string, cfg TraceConfig) (*ConversationTrace, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := newTrace(r, name, cfg)
	if err != nil {
		return nil, err
	}
	return &ConversationTrace{tr: t, think: cfg.Conversations.MinThink, turn: cfg.Columns.Turn != "", ids: cfg.Columns.ID != "",
		chains: map[uint64]*chain{}, turns: map[uint64]uint64{}, loose: map[uint64]int{},
		ans: newAnswers(cfg.Conversations.Answers)}, nil
}

func (c *ConversationTrace) setCloser(cl io.Closer) { c.tr.closer = cl }

// Close closes the file opened by OpenReplay (a no-op for NewReplay).
func (c *ConversationTrace) Close() error { return c.tr.Close() }

// Loop is ClosedLoop: turns wait for answers.
func (c *ConversationTrace) Loop() Loop { return ClosedLoop }

// Config returns the trace's configuration.
func (c *ConversationTrace) Config() TraceConfig { return c.tr.cfg }

// Count is the number of requests yielded so far.
func (c *ConversationTrace) Count() int { return c.count }

// Clock reports the unit the arrival column is read in and the offered
// rate the rows read so far imply, on their recorded instants (as
// Trace.Clock does).
func (c *ConversationTrace) Clock() TraceClock { return c.tr.Clock() }

// Resent is the number of turns yielded so far that resend their
// predecessor's prompt and answer and so were given its answer's ids
// (see ConversationReplay.Answers). A turn resends its predecessor when
// its block size is the predecessor's, its ids over the predecessor's
// full prompt blocks are the trace's ids there, and its prompt is at
// least the predecessor's prompt and answer long; its ids over the full
// blocks of that prompt and answer are then the predecessor's, the rest
// the trace's. The ids of a turn's own answer (past its prompt's full
// blocks) are a 64-bit mix of its conversation, row and block, since the
// trace does not give them (a collision with a trace's id, about 2⁻⁶⁴
// per pair, is ignored).
func (c *ConversationTrace) Resent() int {
	if c.ans == nil {
		return 0
	}
	return c.ans.resent
}

// Held is the number of turns read and waiting for their predecessor to
// finish: the memory the replay holds beyond one row.
func (c *ConversationTrace) Held() int { return c.held }

// String describes the replay for a card, e.g.
//
//	conv.csv (csv), conversation-keeping replay (a turn is released at the
//	later of its recorded instant and its predecessor's end + 2s minimum
//	think time), own pace
func (c *ConversationTrace) String() string { return c.tr.String() }

// Next yields a released turn if one is waiting (the earliest), else the
// next row of the file that keeps its recorded instant, holding on the way
// the turns whose predecessor has not finished and releasing those whose
// predecessor ended less than MinThink before their instant. It returns
// ErrWaiting once the file is read and every remaining turn waits on an
// unfinished predecessor, io.EOF when none remains (or the error that
// ended the replay, again on every call).
//
// A driver that drains Next to ErrWaiting at the start and after each
// Finished is correct, but then holds every row of the file whose instant
// does not depend on feedback, and this source every later turn; a Paced
// driver holds only what is due next.
func (c *ConversationTrace) Next() (Request, error) {
	if r, ok := c.Released(); ok {
		return r, nil
	}
	for !c.done {
		p, err := c.read()
		if err != nil {
			c.done, c.err = true, err
			break
		}
		if p == nil {
			c.done = true
			break
		}
		if stream := c.place(*p); stream {
			return c.yield(*p), nil
		}
	}
	if r, ok := c.Released(); ok {
		return r, nil
	}
	switch {
	case c.err != nil:
		return Request{}, c.err
	case c.held > 0:
		return Request{}, ErrWaiting
	}
	return Request{}, io.EOF
}

// Released yields the earliest turn whose arrival was set by feedback and
// not yet yielded: released by Finished, or read after its predecessor
// ended but recorded less than MinThink after that end. Its arrival is at
// or after the Finished call that set it. False when there is none.
func (c *ConversationTrace) Released() (Request, bool) {
	if c.err != nil || c.released.len() == 0 {
		return Request{}, false
	}
	return c.yield(c.released.pop()), true
}

// Finished tells the replay that request id ended at instant at, ok or
// not (a failed turn does not end its conversation: see
// ConversationTrace). The conversation's next held turn, if any, is
// released at the later of its recorded instant and at + MinThink. Ids
// that are not a turn in flight are ignored.
func (c *ConversationTrace) Finished(id uint64, at time.Duration, _ bool) {
	conv, found := c.turns[id]
	if !found {
		c.ended(id)
		return
	}
	ch := c.chains[conv]
	if !ch.busy || !ch.out || ch.cur != id {
		return // a held or released turn: not in flight
	}
	delete(c.turns, id)
	ch.busy, ch.out, ch.ended, ch.end = false, false, true, at
	if len(ch.held) > 0 {
		p := ch.held[0]
		ch.held[0] = pending{}
		ch.held = ch.held[1:]
		c.held--
		c.release(ch, p)
		return
	}
	c.idle = append(c.idle, idleChain{conv, at})
}

// read returns the next kept row with its recorded instant, nil at the
// end of the file.
func (c *ConversationTrace) read() (*pending, error) {
	r, err := c.tr.Next()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := &pending{req: r, seq: c.seq, line: c.tr.lastLine}
	c.seq++
	c.last = r.Arrival
	c.prune()
	return p, c.track(p)
}

// track checks a row against what the replay tracks: its id must not
// repeat a tracked turn's, nor, for a turn, a request's in flight (Finished
// would not know which one ended); a turn's Turn must follow the previous
// turn's. It records a turn.
func (c *ConversationTrace) track(p *pending) error {
	r := p.req
	if prev, dup := c.turns[r.ID]; dup {
		return c.fail(p, c.tr.cfg.Columns.ID, fmt.Sprint(r.ID), fmt.Sprintf("repeats the id of a turn of conversation %d still held or in flight: ids must be unique", prev), ErrMalformed)
	}
	if r.Conversation == 0 {
		return nil
	}
	if c.loose[r.ID] > 0 {
		return c.fail(p, c.tr.cfg.Columns.ID, fmt.Sprint(r.ID), "repeats the id of a request still in flight: ids must be unique", ErrMalformed)
	}
	ch := c.chains[r.Conversation]
	if ch == nil {
		c.chains[r.Conversation] = &chain{turn: r.Turn}
	} else if c.turn && r.Turn <= ch.turn {
		return c.fail(p, c.tr.cfg.Columns.Turn, fmt.Sprint(r.Turn), fmt.Sprintf("does not follow turn %d of conversation %d, read before it (turns are ordered by timestamp, ties in file order)", ch.turn, r.Conversation), ErrTurnOrder)
	} else {
		ch.turn = r.Turn
	}
	c.turns[r.ID] = r.Conversation
	return nil
}

func (c *ConversationTrace) fail(p *pending, field, value, reason string, err error) error {
	return &ParseError{File: c.tr.name, Line: p.line, Field: field, Value: value, Reason: reason, Err: err}
}

// place decides a row's fate: stream (true: it keeps its recorded instant
// and is yielded now), held behind its predecessor, or released at its
// predecessor's end + MinThink.
func (c *ConversationTrace) place(p pending) (stream bool) {
	if p.req.Conversation == 0 {
		return true
	}
	ch := c.chains[p.req.Conversation]
	if ch.busy || len(ch.held) > 0 {
		ch.held = append(ch.held, p)
		c.held++
		return false
	}
	ch.busy, ch.cur = true, p.req.ID
	if !ch.ended { // a first turn
		return true
	}
	at := max(p.req.Arrival, satAdd(ch.end, c.think))
	if at == p.req.Arrival {
		return true
	}
	p.req.Arrival = at
	c.released.push(p)
	return false
}

// release puts a held turn in the released heap at the later of its
// recorded instant and its predecessor's end + MinThink.
func (c *ConversationTrace) release(ch *chain, p pending) {
	p.req.Arrival = max(p.req.Arrival, satAdd(ch.end, c.think))
	ch.busy, ch.cur = true, p.req.ID
	c.released.push(p)
}

// yield gives a request its answer ids, counts it out and marks it in
// flight.
func (c *ConversationTrace) yield(p pending) Request {
	r := p.req
	c.ans.issue(&r, p.seq)
	switch {
	case r.Conversation != 0:
		c.chains[r.Conversation].out = true
	case c.ids:
		c.loose[r.ID]++
	}
	c.count++
	return r
}

// ended forgets a request without conversation, when ids may repeat.
func (c *ConversationTrace) ended(id uint64) {
	if !c.ids {
		return
	}
	switch n := c.loose[id]; {
	case n > 1:
		c.loose[id] = n - 1
	case n == 1:
		delete(c.loose, id)
	}
}

// prune forgets the idle chains whose next turn, recorded at or after the
// last row read, can no longer be delayed by their end + MinThink.
func (c *ConversationTrace) prune() {
	n := 0
	for _, e := range c.idle {
		if satAdd(e.end, c.think) > c.last {
			break
		}
		n++
		ch := c.chains[e.conv]
		if ch != nil && !ch.busy && len(ch.held) == 0 && ch.end == e.end {
			delete(c.chains, e.conv)
		}
	}
	c.idle = c.idle[:copy(c.idle, c.idle[n:])]
}

// satAdd is a + b for b >= 0, saturating at the largest time.Duration.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
