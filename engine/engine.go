package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// Engine is one replica's scheduler as a pure state machine. It owns no
// clock, randomness, goroutine or I/O: the driver adds requests and aborts
// them at instants it chooses, asks for the next step with Schedule, and
// reports the step's end with Complete, reading what happened from the
// returned Plan and Outcome. Methods are not safe for concurrent use.
type Engine struct {
	cfg   Config
	model costmodel.Model
	// promptTooLong is Add's refusal of a prompt at or above MaxModelLen,
	// made once: ErrPromptTooLong with the bound.
	promptTooLong error

	// The state, by kind, each in the file that owns it. The groups are
	// embedded values, so a field is read with one load as before
	// (e.running, e.plan).
	kvState                // the KV blocks and the prefix cache (kv.go, prefix.go)
	queues                 // the requests held: by Ref, waiting, running (here)
	remoteState            // Remote requests reserved or landed (remote.go)
	tier         Tier      // KV below HBM (tier.go); nil: none
	skipped      []*seq    // the waiting requests the tier asked this plan to pass over (admitAsync)
	refusedHead  *seq      // the waiting request at which this plan's waiting loop stopped, refused (admitAsync); nil: none
	scheduling             // the step planned and in flight: plan, outcome, batch (schedule.go)
	runState               // the run of decode steps in flight (run.go, residues.go)
	co           cohort    // the running requests in a decode streak (cohort.go)
	streakState            // outcomes that leave out decode streaks (streak.go)
	priceCache             // what the cost model's prices are known to be (run.go)
	fast         fastPaths // which fast paths are on, and why not (fastpaths.go)
	recording              // RecordSteps: each outcome's steps described (steplog.go)
	testKnobs              // vLLM's behaviours turned off, for the tests (kv.go)
	tierPrivate  bool      // the tier says only this engine calls it (PrivateTier): runs may hand it their stores (storeRun)
	tierRun      bool      // with a tier, this plan may be a run of several steps (tierRuns); beside tierPrivate, in the word testKnobs' bools begin, so that the two bools fill what they left (an Engine of 2,296 bytes and its malloc header fill the 2,304-byte size class: TestFleetSetupAllocatesEachReplicaOnce)
	checkScratch           // Check's scratch (check.go)
	strictState            // Runner.SetStrict: the batched contract's rules checked (runner.go)
}

// queues are the requests the engine holds: every one by its Ref, the
// waiting queue and the running list (the cohort's members are before
// it, in co), with the recycled request states.
type queues struct {
	reqs        refTable
	waiting     waitQueue
	running     []*seq
	nextSeq     uint64 // Add order of the next request
	spare       []*seq // recycled request states
	staged      *seq   // the in-place Add's next request (addinto.go); nil until it is asked
	outstanding int    // Σ left() over the requests held
}

// Plan is the step the engine chose. The slices are owned by the engine and
// valid until the next Schedule call.
type Plan struct {
	Start    time.Duration
	Steps    int           // steps advanced in one move (>= 1); all alike
	StepTime time.Duration // duration of each step, from the cost model
	End      time.Duration // Start + Steps × StepTime
	// Batch is the shape of the (first) step as priced; it does not name
	// the requests (Engine.Scheduled does, while the step is in flight).
	Batch costmodel.Batch
	// Started lists requests scheduled for the first time in this step;
	// Cached[i] is how many of Started[i]'s prompt tokens it found in the
	// prefix cache.
	Started []int32
	Cached  []int
	// Preempted lists requests preempted (recompute) while planning it.
	Preempted []int32
	// Reserved lists the Remote requests whose blocks this plan reserved,
	// in the order the waiting loop reached them: their transfers start
	// at Plan.Start. A plan that only reserves is an empty step (1 µs, no
	// forward pass).
	Reserved []Reservation
	// Cohort is the number of decodes of the engine's decode cohort the
	// step has besides those in Batch.Decode, whose contexts it does not
	// list (see Runner.OmitStreaks): 0 unless the driver asked for streaks to be
	// left out and the cost model says its price reads decode contexts
	// only through their sum (costmodel.DecodeSum). With speculative
	// decoding (Config.SpeculativeTokens) it counts, under
	// costmodel.Frozen, which prices verified positions by their sum, the
	// step's leading decodes with drafts, listed in neither Batch.Decode
	// nor Batch.Verify: Engine.Scheduled names them, with their tokens.
	Cohort int
}

// Emit says that Ref emitted Tokens tokens, one at the end of each of the
// last Tokens steps the Outcome covers (so at Outcome.End − i × StepTime for
// i = Tokens−1 … 0).
//
// A speculative step whose Draft drafted tokens (Outcome.Drafts) is
// different: its Tokens, the accepted drafts and the token sampled after
// them, were all emitted at End, as one streamed chunk.
//
// So is a request that finished inside a run of decode steps that went on
// through finishes, which only a driver that asked for them through the
// module's internal path sees (sim's single replica: engine/through.go):
// Done, with fewer Tokens than the Outcome's Steps, it emitted one at the
// end of each of the first Tokens steps, its last at Outcome.End −
// (Steps − Tokens) × StepTime. Such Emits come first, by that instant.
//
// Emit keeps four fields: the compiler passes a struct of at most four
// in registers, and a fifth cost the run loop 13 % (BenchmarkRunAtlas).
// Its bools sit after Ref, in the padding before Tokens: 16 bytes, not
// 24, so an Emit is indexed by a shift and its bools' stores take no
// address of their own (Regime/Speculation, which writes and reads one
// a member a step: servesim's own 18,723 then 18,361 instructions a
// request, the budget test; verifyUncut 2,700 then 2,580, plainChunks
// 1,886 then 1,729, applyRows 610 then 514).
type Emit struct {
	Ref    int32
	First  bool // the first of them is the request's first output token
	Done   bool // the request emitted its last token and left the engine
	Tokens int
}

// Draft is what one Emit's step verified with speculative decoding: the
// draft tokens it verified for the request and those it accepted.
type Draft struct {
	Drafted, Accepted int
}

// Acceptor says how many of a request's drafted tokens a step accepted
// (0 to drafted): the driver draws it, so that the engine stays pure.
type Acceptor interface {
	Accept(ref int32, drafted int) int
}

// SetAcceptor sets the driver's Acceptor for speculative decoding
// (Config.SpeculativeTokens). Without one, every draft is rejected.
func (e *Engine) SetAcceptor(a Acceptor) {
	if a == nil {
		a = rejectAll{}
	}
	e.acceptor = a
}

// rejectAll is the Acceptor of an engine given none: every draft
// rejected. With it the engine asks an Acceptor always, without a test
// for none a decode (290 instructions a request in
// BenchmarkRegime/Speculation: 40,292 then 40,085).
type rejectAll struct{}

func (rejectAll) Accept(int32, int) int { return 0 }

// Outcome is what the completed steps of a plan produced: Steps steps, the
// last of which ended at End. Emitted is owned by the engine and valid until
// the next Complete or Runner.CompleteUntil call.
type Outcome struct {
	Steps int
	End   time.Duration
	// Drafts holds, with speculative decoding (Config.SpeculativeTokens >
	// 0), one Draft per Emitted entry, in the same order; nil without.
	Drafts []Draft
	// BlockSteps is the sum over those steps of the KV blocks held during
	// each (× the step time, the KV occupancy integral).
	BlockSteps int
	// Decodes and Chunks are the decoding sequences and prefill chunks of
	// each of those steps (alike, for a run).
	Decodes, Chunks int
	Emitted         []Emit
	// Streak and Left are set when the driver asked for decode streaks to
	// be left out (Runner.OmitStreaks; 0 and empty otherwise). Streak is the
	// number of requests that continued their streak: each emitted one
	// token at the end of each of these Steps steps, none its first or its
	// last, and is not in Emitted. Left lists the requests whose streak
	// ended without an Emit: they emitted at the end of the previous
	// outcome with steps but are in none of these steps (preempted, or
	// left out of the token budget).
	Streak int
	Left   []int32
	// Shape describes the steps, when the engine records them
	// (RecordSteps).
	Shape StepShape
}

// ErrStepInFlight is returned by Schedule when the previous step has not
// been completed.
var ErrStepInFlight = errors.New("engine: Schedule called while a step is in flight")

// ErrNoStepInFlight is returned by Complete when there is no step to complete.
var ErrNoStepInFlight = errors.New("engine: Complete called with no step in flight")

// ErrUnsettledRun is returned by Abort when the request is part of a run of
// several steps in flight: only the run's last step may be running
// at an abort. The steps that ended before it emitted their tokens, so the
// driver first collects them with Runner.CompleteUntil(now); a run that would
// still have steps to go after now was planned past an instant the driver
// knew something would happen at (see Runner.ScheduleUntil).
var ErrUnsettledRun = errors.New("engine: Abort of a request in a run of several steps in flight; collect the ended steps with CompleteUntil first")

// ErrBadStepTime is returned by Schedule when the cost model prices a
// non-empty step at zero or negative time (a broken model): the simulated
// clock could not advance.
var ErrBadStepTime = errors.New("engine: cost model returned a non-positive step time")

// New returns an engine for cfg whose steps are priced by m (nil means
// costmodel.Frozen{}, the Atlas TP4 frozen costs).
func New(cfg Config, m costmodel.Model) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	if m == nil {
		m = costmodel.Frozen{}
	}
	e := &Engine{
		cfg:        cfg,
		model:      m,
		kvState:    newKVState(cfg),
		runState:   runState{res: newResidues(cfg.BlockSize)},
		priceCache: newPriceCache(m),
	}
	e.promptTooLong = fmt.Errorf("%w: MaxModelLen %d", ErrPromptTooLong, cfg.MaxModelLen)
	_, e.fcfs = cfg.Policy.(FCFS)
	e.decideFast() // and with it the cohort (setCohort) and the waiting queue's order
	e.SetAcceptor(nil)
	return e, nil
}

// Config returns the configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

// Waiting and Running are the lengths of the two queues (Waiting counts
// Remote requests reserved or landed as waiting, as vLLM counts
// skipped_waiting). FreeBlocks is the
// number of KV blocks no request holds (what an allocation may draw on);
// CachedBlocks is the number carrying cached content, held or free, and
// EvictableBlocks the cached ones among the free.
func (e *Engine) Waiting() int         { return e.waiting.len() + len(e.reserved) + len(e.landed) }
func (e *Engine) Running() int         { return e.nrunning() }
func (e *Engine) FreeBlocks() int      { return e.pool.free() }
func (e *Engine) CachedBlocks() int    { return e.pool.cached + e.coastCached() }
func (e *Engine) EvictableBlocks() int { return e.pool.evict }

// Busy reports whether a step is in flight.
func (e *Engine) Busy() bool { return e.inFlight }

// AtSeqCap reports whether the running list is at the sequence cap
// (MaxSeqs): no waiting request can be admitted until a running one
// leaves, so a request that joins the waiting queue changes no step of a
// move in flight (a move keeps its running requests to its end).
func (e *Engine) AtSeqCap() bool { return e.nrunning() >= e.cfg.MaxSeqs }

// joinChangesNothing is Runner.JoinChangesNothing (runner.go), which documents it.
func (e *Engine) joinChangesNothing() bool {
	if !e.fast.joinsFast { // off, or strict mode: the one test either way
		if e.strict {
			e.checkJoin()
		}
		if !e.fast.joins {
			return false
		}
	}
	// A run through finishes (through.go) admits nobody only while nothing
	// waits: a finish inside it, not collected yet, would let the
	// newcomer in.
	return e.thruAt == noFinish && (e.AtSeqCap() || (e.runHead != 0 && e.waiting.len() > 0 && e.waiting.peek().order+1 == e.runHead))
}

// Idle reports whether the engine holds no request.
func (e *Engine) Idle() bool { return e.reqs.len() == 0 }

// Unstarted appends to dst the refs of the waiting requests that have
// never been scheduled (no token in KV, never preempted, no KV reserved or
// landed for them), in the order they were added, and returns it: the
// requests a replica could hand back to the router without losing any
// work (package sim's drains). It changes nothing; call it between
// steps (with no step in flight, or after a Runner's move was cut), since
// a step in flight may have admitted some of the waiting.
func (e *Engine) Unstarted(dst []int32) []int32 {
	var found []*seq
	add := func(s *seq) {
		if s != nil && s.computed == 0 && s.preempts == 0 && s.rstate == 0 {
			found = append(found, s)
		}
	}
	for _, it := range e.waiting.items {
		add(it.s)
	}
	for _, it := range e.waiting.run[e.waiting.head:] {
		add(it.s)
	}
	slices.SortFunc(found, func(a, b *seq) int { return cmp.Compare(a.order, b.order) })
	for _, s := range found {
		dst = append(dst, s.req.Ref)
	}
	return dst
}

// Add offers r to the engine. A nil error means r joined the waiting queue;
// otherwise r was rejected at once and the error (wrapping one of the Err*
// reasons) says why. An accepted request whose Input + Output exceeds
// Config.MaxModelLen will emit Config.ServedOutput(Input, Output) tokens,
// MaxModelLen − Input: the engine keeps its Output cut there. The instant
// is accepted for symmetry with the other calls; the engine orders by call
// order.
func (e *Engine) Add(now time.Duration, r Request) error {
	if r.Input <= 0 || r.Output <= 0 || r.Deadline != 0 && r.Deadline < r.Arrival {
		return invalid(&r)
	}
	if _, dup := e.reqs.get(r.Ref); dup {
		return fmt.Errorf("%w: %d", ErrDuplicateRef, r.Ref)
	}
	if r.Input >= e.cfg.MaxModelLen {
		return e.promptTooLong // one error, the same for every such request, so that a driver's tally groups them
	}
	// Cut at MaxModelLen (length-capped), here once, so that every path
	// that reads Output stops it there: vLLM stops a request when its
	// tokens reach max_model_len (sched/utils.py check_stop,
	// request.num_tokens >= max_model_len after the token is appended).
	// Its peak, Input + Output − 1 < MaxModelLen <= KVBlocks × BlockSize
	// tokens, fits the cache.
	r.Output = min(r.Output, e.cfg.MaxModelLen-r.Input)
	if r.Remote {
		return e.addRemote(&r) // remote.go: the same steps, its own state
	}
	if e.cfg.DisableChunkedPrefill && r.Input+r.Output-1 > e.cfg.MaxBatchedTokens {
		return ErrExceedsBudget
	}
	if e.cfg.MaxWaiting > 0 && e.waiting.len() >= e.cfg.MaxWaiting {
		return ErrQueueFull
	}
	s := e.newSeq() // as recycle leaves it: only its own fields to write
	s.req, s.order, s.known = r, e.nextSeq, r.Input
	e.setShared(s)
	e.outstanding += s.left()
	e.nextSeq++
	e.reqs.put(r.Ref, s)
	e.waiting.push(s)
	return nil
}

// invalid is Add's error for a request with no input or output, or a
// deadline before its arrival (out of line: Add runs once a request).
func invalid(r *Request) error {
	if r.Input <= 0 || r.Output <= 0 {
		return fmt.Errorf("%w: Input %d, Output %d", ErrInvalidRequest, r.Input, r.Output)
	}
	return fmt.Errorf("%w: Deadline %v before Arrival %v", ErrInvalidRequest, r.Deadline, r.Arrival)
}

// newSeq is a seq in the state recycle leaves it in: zero but for its
// heapIdx, -1, and its slices' capacity.
func (e *Engine) newSeq() *seq {
	if n := len(e.spare); n > 0 {
		s := e.spare[n-1]
		e.spare = e.spare[:n-1]
		return s
	}
	return &seq{heapIdx: -1}
}

func (e *Engine) release(s *seq) {
	e.outstanding -= s.left()
	e.reqs.remove(s.req.Ref)
	e.recycle(s)
}

// recycle resets s for reuse, keeping its slices' capacity.
//
// Field by field, not as *s = seq{} with the slices and runs saved and
// written back: the whole seq (320 bytes) was zeroed by a loop of 5
// passes, then the kept slices' words written again, and the runs'
// whole runSeq likewise. Zeroing each field, the compiler merges the
// adjacent stores into 16-byte ones with no loop, and the slices keep
// their pointer and capacity with no store (and no write barrier's
// test): RunAtlas 4,761 then 4,747 instructions a request,
// Regime/Fleet8PrefixApprox 9,599 then 9,576 (the budget test), though
// recycle no longer inlines into release. TestRecycleLeavesANewSeq
// holds it to a new seq, every field of seq and runSeq scribbled over
// first: a field added to either and left out here fails it.
func (e *Engine) recycle(s *seq) {
	s.req = Request{}
	s.order, s.known, s.computed, s.emitted, s.sched, s.admitted = 0, 0, 0, 0, 0, 0
	s.ids = s.ids[:0]
	s.keys = s.keys[:0]
	s.held, s.anon, s.shared, s.keyed = 0, 0, 0, 0
	s.lastMove, s.t0, s.finTick, s.rank = 0, 0, 0, 0
	s.heapIdx, s.cached, s.draft, s.look, s.preempts, s.cidx = -1, 0, 0, 0, 0, 0
	s.stored, s.tierHit, s.tierLoad, s.tierNext, s.checkGen = 0, 0, 0, 0, 0
	s.phase, s.rstate, s.checkIn = 0, 0, 0
	s.started, s.decoding, s.aborted, s.ownCached, s.member, s.tierLag = false, false, false, false, false, false
	if runs := s.runs; runs != nil { // kept, emptied, for its slices' capacity
		runs.path = runs.path[:0]
		runs.copies = runs.copies[:0]
		runs.cur, runs.room, runs.owe, runs.oweAt, runs.coast, runs.cs = runCursor{}, 0, 0, 0, false, nil
	}
	e.spare = append(e.spare, s)
}

// Abort removes the request at instant now wherever it is (a client
// deadline, a cancel) and frees its blocks. If it is in the step in flight,
// that step's work for it is discarded: Complete reports nothing for it. A
// request in a run of several steps can only be aborted in the run's last
// step: the steps that ended before now must first be collected with
// Runner.CompleteUntil(now) (ErrUnsettledRun otherwise).
func (e *Engine) Abort(now time.Duration, ref int32) error {
	s, ok := e.reqs.get(ref)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownRef, ref)
	}
	e.syncRun(now) // a continued run's first step takes its blocks lazily (Continue)
	if e.mixed {   // inside a mixed move's first step: its blocks are counted at its collection (mixed.go)
		e.firstBlocks = -1
	}
	if e.sc != nil { // the speculative cohort's notes go, and its members in flight are listed (speccohort.go)
		e.sc.ready = false
		e.materializeSpec()
	}
	if s.member {
		return e.abortMember(now, s)
	}
	if s.sched > 0 && e.plan.Steps > 1 {
		return fmt.Errorf("%w: request %d at %v, %d steps of %v from %v", ErrUnsettledRun, ref, now, e.plan.Steps, e.plan.StepTime, e.plan.Start)
	}
	switch s.phase {
	case phaseWaiting:
		e.waiting.drop(s)
	case phaseRunning:
		e.removeRunning(s)
		e.leaveResidues(s)
		if s.sched > 0 && s.decoding { // its decode in flight cached its block when planned
			e.lateCache(s, min(s.computed+s.sched, s.known))
		}
		e.drop(s)
	case phaseReserved, phaseLanded:
		e.abortRemote(s)
	}
	if s.sched > 0 {
		if e.lazy {
			e.live -= e.stepTokens(s)
		}
		s.aborted = true // released by Complete
		s.draft = 0      // verifyIID's loop stops at it, without testing aborted
		e.outstanding -= s.left()
		e.reqs.remove(ref)
		return nil
	}
	e.release(s)
	return nil
}

func (e *Engine) removeRunning(s *seq) {
	for i, r := range e.running {
		if r == s {
			copy(e.running[i:], e.running[i+1:])
			e.running[len(e.running)-1] = nil
			e.running = e.running[:len(e.running)-1]
			return
		}
	}
	panic("engine: invariant running-membership broken: a running request is not in the running list")
}
