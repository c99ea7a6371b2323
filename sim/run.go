package sim

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// Run simulates one replica configured by cfg under the requests of src,
// handing every request's record to obs (which may be nil) when it ends, and
// returns the summary of the measurement window.
//
// An open window (Window.Horizon = 0) needs a finite source. A source error
// other than io.EOF (a malformed trace line) stops the run and is returned.
func Run(cfg Config, src workload.Source, obs Observer) (Summary, error) {
	r, err := newRunner(cfg, src, obs)
	if err != nil {
		return Summary{}, err
	}
	if err := r.loop(); err != nil {
		return Summary{}, err
	}
	return r.summary(), nil
}

// slot is a request's record plus what the runner needs while it lives.
type slot struct {
	rec       Record
	gen       uint32 // bumped when the slot is reused, to expire timeouts
	live      bool
	willError bool
	priority  int
	prefix    []uint64 // the request's prefix hash ids, for the cache
	prefixLen int      // tokens per hash id
}

type runner struct {
	cfg  Config
	slo  SLO
	eng  *engine.Engine
	src  workload.Source
	fb   workload.Feedback
	obs  Observer
	errs *rand.Rand

	events   eventHeap
	slots    []slot
	freeRefs []int32

	now          time.Duration
	srcDone      bool
	lastArrival  time.Duration
	seen         int // requests pulled from the source
	measuredLive int
	stopAt       time.Duration
	lastEnd      time.Duration // last terminal event

	inSystem           int       // requests held by the engine
	area               wide      // ∫ inSystem dt over the window, in request·ns, exact
	startSeen, endSeen bool      // HeldAtStart / HeldAtEnd recorded
	segs               []segment // held over time, when detecting the warm-up
	marks              []mark    // counters before each instant, likewise
	done, tokens       int       // ok completions and tokens inside the window
	areaAt             time.Duration

	stepTime time.Duration // of the step in flight
	stepDone time.Duration // when the move in flight ends

	pullErr error // a source error met while handling feedback

	maxHeld    int  // Config.MaxBacklog resolved; 0 means no bound
	overloaded bool // the backlog passed maxHeld: the run stops

	checkEngine bool // tests: verify the engine's invariants after every plan and step

	col collector
}

func newRunner(cfg Config, src workload.Source, obs Observer) (*runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("sim: Run needs a workload.Source, got nil")
	}
	eng, err := engine.New(cfg.Engine, cfg.Model)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, slo: cfg.SLO.WithDefaults(), eng: eng, src: src, obs: obs,
		errs: workload.NewStream(cfg.Seed, "sim/errors"), stopAt: Unbounded}
	r.fb, _ = src.(workload.Feedback)
	if cfg.Horizon > 0 {
		drain := cfg.Drain
		if drain == 0 {
			drain = cfg.Window.Length()
		}
		r.stopAt = cfg.Horizon + drain
	}
	if r.maxHeld = cfg.MaxBacklog; r.maxHeld == 0 {
		r.maxHeld = DefaultMaxBacklog
	} else if r.maxHeld < 0 {
		r.maxHeld = 0
	}
	r.col.slo = r.slo
	r.col.detect = cfg.DetectWarmup
	r.areaAt = cfg.Warmup
	return r, nil
}

func (r *runner) loop() error {
	if err := r.pull(); err != nil {
		return err
	}
	for r.events.len() > 0 {
		ev := r.events.peek()
		if stop := r.stopping(); ev.at > stop {
			// The run ends here: the steps that ended by now emitted their
			// tokens, and unfinished requests end now.
			if err := r.reach(stop, true); err != nil {
				return err
			}
			break
		}
		r.events.pop()
		// An abort needs the steps that ended by its instant collected; a
		// detected warm-up needs the counters exact at every arrival.
		settle := ev.class == classTimeout || (ev.class == classArrival && r.cfg.DetectWarmup)
		if err := r.reach(ev.at, settle); err != nil {
			return err
		}
		if err := r.handle(ev); err != nil {
			return err
		}
		if r.pullErr != nil {
			return r.pullErr
		}
		if r.overloaded { // the backlog proves overload: stop now
			if err := r.settle(r.now); err != nil {
				return err
			}
			break
		}
		if r.events.len() == 0 || r.events.peek().at > r.now {
			if err := r.plan(); err != nil {
				return err
			}
		}
	}
	r.abandon()
	return nil
}

// stopping is the instant the run stops at, once every event up to it is
// handled: Horizon + Drain, or, once every measured request has ended,
// the Horizon (or now, if that is later): nothing after it is measured.
func (r *runner) stopping() time.Duration {
	if r.cfg.Horizon > 0 && r.measuredLive == 0 {
		return min(r.stopAt, max(r.cfg.Horizon, r.now))
	}
	return r.stopAt
}

// reach moves the clock to instant t. With settle, it first collects the
// steps of a run in flight that ended before t, and after the clock moves
// those that end at t (a step's end comes first among the events of its
// instant), so that an event at t inside a run planned by ScheduleUntil
// sees exactly what it would see step by step, and so do the counters
// that advance records before t's events.
func (r *runner) reach(t time.Duration, settle bool) error {
	if !settle {
		r.advance(t)
		return nil
	}
	if err := r.settle(t - 1); err != nil {
		return err
	}
	r.advance(t)
	return r.settle(t)
}

// settle accounts the tokens of the steps of a run in flight that ended
// by instant t (see engine.CompleteUntil).
func (r *runner) settle(t time.Duration) error {
	if !r.eng.Busy() || t >= r.stepDone {
		return nil // nothing in flight, or the step end at t comes first
	}
	out, err := r.eng.CompleteUntil(t)
	if err != nil {
		return err
	}
	return r.account(out)
}

// advance moves the clock to t, integrating requests in the system over
// the measurement window for Little's law.
func (r *runner) advance(t time.Duration) {
	if r.areaAt <= r.cfg.Warmup && r.cfg.Warmup <= t && !r.startSeen {
		r.startSeen = true
		r.col.s.HeldAtStart = r.inSystem
	}
	if r.cfg.Horizon > 0 && r.areaAt <= r.cfg.Horizon && r.cfg.Horizon <= t && !r.endSeen {
		r.endSeen = true
		r.col.s.HeldAtEnd = r.inSystem
	}
	if r.cfg.DetectWarmup && t > r.areaAt {
		r.segs = append(r.segs, segment{At: r.areaAt, Held: r.inSystem})
		r.marks = append(r.marks, mark{at: t, done: r.done, tokens: r.tokens})
	}
	lo, hi := max(r.areaAt, r.cfg.Warmup), t
	if r.cfg.Horizon > 0 {
		hi = min(hi, r.cfg.Horizon)
	}
	if hi > lo {
		r.area.add(uint64(r.inSystem), uint64(hi-lo))
	}
	r.areaAt = max(r.areaAt, t)
	r.now = t
}

func (r *runner) handle(ev event) error {
	switch ev.class {
	case classStepEnd:
		return r.stepEnd()
	case classArrival:
		return r.arrive(ev.ref)
	case classTimeout:
		s := &r.slots[ev.ref]
		if s.live && s.gen == ev.gen {
			if err := r.eng.Abort(r.now, ev.ref); err != nil {
				panic("sim: invariant timeout-of-held-request broken: " + err.Error())
			}
			r.inSystem--
			r.end(ev.ref, StatusTimedOut, "client deadline reached")
		}
	}
	return nil
}

// pull takes the next request(s) from the source: one for an open-loop
// source (the next arrival, kept in the event queue), all that are ready for
// a closed-loop one.
func (r *runner) pull() error {
	for !r.srcDone {
		req, err := r.src.Next()
		if errors.Is(err, workload.ErrWaiting) {
			return nil
		}
		if err == io.EOF {
			r.srcDone = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("sim: reading the workload: %w", err)
		}
		if err := r.schedule(req); err != nil {
			return err
		}
		if r.fb == nil {
			return nil
		}
	}
	return nil
}

func (r *runner) schedule(req workload.Request) error {
	floor := r.lastArrival
	if r.fb != nil {
		floor = r.now
	}
	if req.Arrival < floor {
		return fmt.Errorf("sim: workload request %d arrives at %v, before %v: sources must yield in arrival order", req.ID, req.Arrival, floor)
	}
	if r.fb == nil {
		r.lastArrival = req.Arrival
	}
	ref := r.alloc()
	s := &r.slots[ref]
	s.rec = Record{
		ID: req.ID, Conversation: req.Conversation, Turn: req.Turn, Class: req.Class,
		Arrival: req.Arrival, Input: req.InputTokens, Output: req.OutputTokens,
		FirstScheduled: Never, FirstToken: Never, LastToken: Never, Finish: Never,
		Measured: r.measures(req.Arrival),
		Tokens:   s.rec.Tokens[:0],
	}
	s.priority = req.Priority
	s.prefix, s.prefixLen = req.PrefixHashes, req.PrefixBlockTokens
	s.willError = req.Failed
	r.seen++
	r.events.push(event{at: req.Arrival, class: classArrival, ref: ref})
	return nil
}

func (r *runner) measures(t time.Duration) bool {
	return t >= r.cfg.Warmup && (r.cfg.Horizon == 0 || t < r.cfg.Horizon) && r.seen >= r.cfg.WarmupRequests
}

func (r *runner) alloc() int32 {
	if n := len(r.freeRefs); n > 0 {
		ref := r.freeRefs[n-1]
		r.freeRefs = r.freeRefs[:n-1]
		return ref
	}
	r.slots = append(r.slots, slot{})
	return int32(len(r.slots) - 1)
}

func (r *runner) arrive(ref int32) error {
	s := &r.slots[ref]
	s.live = true
	if s.rec.Measured {
		r.measuredLive++
	}
	// Drawn for every request, so the stream does not depend on outcomes.
	injected := r.errs.Float64() < r.cfg.ErrorRate
	if s.willError { // the trace recorded it as failed: it never loads the replica
		r.end(ref, StatusErrored, "recorded as failed in the trace")
		if r.fb == nil {
			return r.pull()
		}
		return nil
	}
	s.willError = injected
	err := r.eng.Add(r.now, engine.Request{Ref: ref, Arrival: r.now, Input: s.rec.Input, Output: s.rec.Output,
		Priority: s.priority, Prefix: s.prefix, PrefixBlockTokens: s.prefixLen})
	if err != nil {
		r.end(ref, StatusRejected, err.Error())
	} else {
		r.inSystem++
		if r.maxHeld > 0 && r.inSystem > r.maxHeld {
			r.overloaded = true
			return nil
		}
		if r.cfg.Timeout > 0 {
			r.events.push(event{at: r.now + r.cfg.Timeout, class: classTimeout, ref: ref, gen: s.gen})
		}
	}
	if r.fb == nil {
		return r.pull()
	}
	return nil
}

func (r *runner) plan() error {
	if r.eng.Busy() {
		return nil
	}
	// Nothing external happens before the next event (or the stop), so the
	// engine may advance a run of identical decode steps in one move.
	until := r.stopAt
	if r.cfg.Stepwise {
		until = r.now
	} else if r.events.len() > 0 {
		until = min(until, r.events.peek().at)
	}
	p, err := r.eng.ScheduleUntil(r.now, until)
	if err != nil || p == nil {
		return err
	}
	for i, ref := range p.Started {
		r.slots[ref].rec.FirstScheduled = p.Start
		r.slots[ref].rec.Cached = p.Cached[i]
	}
	for _, ref := range p.Preempted {
		r.slots[ref].rec.Preemptions++
	}
	if r.checkEngine {
		if err := r.eng.Check(); err != nil {
			return fmt.Errorf("sim: after planning the step at %v: %w", r.now, err)
		}
	}
	r.events.push(event{at: p.End, class: classStepEnd})
	r.stepTime, r.stepDone = p.StepTime, p.End
	return nil
}

// wide is an exact 128-bit accumulator of request·nanoseconds, so the
// integral is the same however the run was split into events (a float sum
// would depend on the order of its terms).
type wide struct{ hi, lo uint64 }

func (w *wide) add(n, dt uint64) {
	hi, lo := bits.Mul64(n, dt)
	var carry uint64
	w.lo, carry = bits.Add64(w.lo, lo, 0)
	w.hi += hi + carry
}

// seconds converts request·ns to request·s.
func (w wide) seconds() float64 {
	return (float64(w.hi)*0x1p64 + float64(w.lo)) / 1e9
}
