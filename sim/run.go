package sim

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"time"

	"github.com/servesim/servesim/workload"
)

// Run simulates the replica, or the fleet of replicas, configured by cfg
// under the requests of src, handing every request's record to obs (which
// may be nil) when it ends, and returns the summary of the measurement
// window.
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

// The runner is split in four concerns, one file each:
//   - run.go: the event loop and when it stops;
//   - intake.go: pulling requests from the source, routing each arrival to
//     a replica, client deadlines;
//   - replica.go: each replica's engine and its move in flight (a step, or
//     a run of identical decode steps cut where something happens to it);
//   - window.go: the clock, the measurement window and what is integrated
//     over it; step.go and summary.go turn tokens into records and records
//     into a Summary.
type runner struct {
	cfg Config
	slo SLO
	src workload.Source
	fb  workload.Feedback
	// paced is the source as workload.Paced, if it is: streamDue says a
	// request its Next yielded has not arrived yet; lastRef is the slot
	// schedule filled last.
	paced     workload.Paced
	streamDue bool
	lastRef   int32
	obs       Observer
	errs      *rand.Rand

	reps      []replica
	toPlan    []int // replicas to plan once the current instant is handled
	router    Router
	routeRand *rand.Rand
	routed    int // requests routed so far
	routeReq  workload.Request
	signals   []signals // each frontend's stale view (Fleet.SignalDelay)
	view      View

	events   eventHeap
	ends     stepEnds // the replicas' move ends: the step-end events
	slots    []slot
	freeRefs []int32

	now          time.Duration
	srcDone      bool
	lastArrival  time.Duration
	seen         int // requests pulled from the source
	measuredLive int
	stopAt       time.Duration
	lastEnd      time.Duration // last terminal event

	inSystem           int           // requests held by the replicas
	area               wide          // ∫ inSystem dt over the window, in request·ns, exact
	startSeen, endSeen bool          // HeldAtStart / HeldAtEnd recorded
	open               bool          // no Horizon and no warm-up to detect: the window never closes
	closes             time.Duration // the declared window's end: Horizon, or Unbounded
	segs               []segment     // held over time, when detecting the warm-up
	marks              []mark        // counters before each instant, likewise
	done, tokens       int           // ok completions and tokens inside the window
	areaAt             time.Duration

	maxHeld    int  // Config.MaxBacklog resolved; 0 means no bound
	overloaded bool // the backlog passed maxHeld: the run stops

	inFlight   int     // requests sent and not ended (Config.MaxConcurrency)
	clientQ    []int32 // requests waiting client-side for a slot, from clientHead
	clientHead int

	speculates bool   // some replica decodes speculatively
	accSeed    uint64 // seeds each request's acceptance stream with its ID

	classes  classes      // Config.Classes, the default class last
	edges    int          // window edges in the event queue (classWindow events)
	bounds   []classBound // each class's bounds, by class
	perClass bool         // Config.Classes is set: each class has its own summary

	checkEngine bool // tests: verify the engines' invariants after every plan and step
	continued   int  // moves planned at a step end by engine.Continue (tests read it)

	lazy    bool     // decode streaks are accounted when they end (streak.go)
	members []member // each ref's streak, when lazy
	joiners []int32  // scratch: the refs that join streaks after a move

	steps StepObserver // the observer's steps, if it wants them
	step  Step         // reused for each call
	mix   stepMix      // step time by composition over the window

	col collector
}

func newRunner(cfg Config, src workload.Source, obs Observer) (*runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("sim: Run needs a workload.Source, got nil")
	}
	r := &runner{cfg: cfg, slo: cfg.SLO.WithDefaults(), src: src, obs: obs,
		errs: workload.NewStream(cfg.Seed, "sim/errors"), stopAt: Unbounded,
		router: cfg.Fleet.Router, routeRand: workload.NewStream(cfg.Seed, "sim/router"),
		open: cfg.Horizon == 0 && !cfg.DetectWarmup, closes: Unbounded}
	if cfg.Horizon > 0 {
		r.closes = cfg.Horizon
	}
	if r.router == nil {
		r.router = RoundRobin{}
	}
	for i, rc := range cfg.replicas() {
		rep, err := newReplica(i, rc, r.slo)
		if err != nil {
			return nil, err
		}
		r.reps = append(r.reps, rep)
	}
	r.ends = newStepEnds(len(r.reps))
	r.view.r = r
	if so, ok := obs.(StepObserver); ok {
		r.steps = so
		for i := range r.reps {
			r.reps[i].eng.RecordSteps(true)
		}
	}
	r.signals = make([]signals, max(1, cfg.Fleet.Frontends))
	r.fb, _ = src.(workload.Feedback)
	r.paced, _ = src.(workload.Paced)
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
	r.classes = newClasses(cfg.Classes, r.slo)
	for _, c := range r.classes.list {
		r.bounds = append(r.bounds, classBound{itl: c.slo.ITL, ttft: c.slo.TTFT, perToken: c.slo.ITLSeries == PerToken})
	}
	if r.perClass = len(cfg.Classes) > 0; r.perClass {
		r.col.classSLO = func(rec *Record) SLO { return r.classes.list[r.classes.of(rec.Class)].slo }
	}
	for i := range r.reps {
		if sp := r.reps[i].spec; sp.On() {
			r.speculates = true
			r.reps[i].eng.SetAcceptor(newAcceptor(r, sp))
		}
	}
	r.accSeed = workload.NewStream(cfg.Seed, "sim/speculation").Uint64()
	r.col.speculates = r.speculates
	r.lazy = r.lazyTokens()
	if r.lazy {
		for i := range r.reps {
			rep := &r.reps[i]
			rep.eng.OmitStreaks(true) // accountLazy counts them
			rep.continues = rep.ctxFree && r.steps == nil && !rep.spec.On()
		}
	}
	r.col.setExact(cfg.ExactSamples)
	for c := range r.mix.dur {
		r.mix.dur[c].limit = r.col.limit()
	}
	for i := range r.reps {
		r.reps[i].col.setExact(cfg.ExactSamples)
	}
	for i := range r.classes.list {
		r.classes.list[i].col.setExact(cfg.ExactSamples)
	}
	if err := r.warm(); err != nil {
		return nil, err
	}
	r.areaAt = cfg.Warmup
	// The window's edges split every replica's runs, so that the steps
	// measured are those that ended inside it, however they were planned.
	r.events.push(event{at: cfg.Warmup, class: classWindow})
	r.edges++
	if cfg.Horizon > 0 {
		r.events.push(event{at: cfg.Horizon, class: classWindow})
		r.edges++
	}
	return r, nil
}

func (r *runner) loop() error {
	if err := r.pull(); err != nil {
		return err
	}
	for r.dropIdle() {
		if r.checkEngine {
			if err := r.checkEnds(); err != nil {
				return err
			}
		}
		at, stepEnd := r.next()
		if stop := r.stopping(); at > stop {
			// The run ends here: the steps that ended by now emitted their
			// tokens, and unfinished requests end now.
			if err := r.reach(stop); err != nil {
				return err
			}
			if err := r.settleAll(stop); err != nil {
				return err
			}
			break
		}
		if r.startSeen && r.open { // reach's usual case, without its call
			r.advanceOpen(at)
		} else if err := r.reach(at); err != nil {
			return err
		}
		var err error
		if stepEnd {
			err = r.stepEnd(&r.reps[r.ends.pop().rep])
		} else {
			err = r.handle(r.events.pop())
		}
		if err != nil {
			return err
		}
		if r.clientHead < len(r.clientQ) { // slots freed at this event
			if err := r.sendWaiting(); err != nil {
				return err
			}
		}
		if r.overloaded { // the backlog proves overload: stop now
			// A move that ends at this very instant is collected as the
			// step end it is: step by step it came before the arrival
			// that proved the overload (a run that arrival cut ends with
			// its step in flight, now, and the loop stops before that
			// step end's event would have collected it).
			for r.ends.len() > 0 && r.ends.peek().at <= r.now {
				if err := r.stepEnd(&r.reps[r.ends.pop().rep]); err != nil {
					return err
				}
			}
			if err := r.settleAll(r.now); err != nil {
				return err
			}
			break
		}
		if len(r.toPlan) > 0 && (r.ends.len()+r.events.len() == 0 || r.nextAt() > r.now) {
			if err := r.planQueued(); err != nil {
				return err
			}
		}
	}
	r.abandon()
	return nil
}

// dropIdle pops the window edges at the head of the queue that have
// nothing to do (nothing in flight to split, once every replica due is
// planned) and reports whether an event remains. (Small enough to inline
// into the loop, which asks at every event, with the lengths read off the
// slices; dropEdges is the rest. The split is worth 0.63 % of RunAtlas's
// instructions and 0.64 % of RunBatch256's, measured 2026-12-04; it stays
// as one of five splits worth 3.9 % together: docs/scale.md, "What the
// inlining contortions are worth".)
func (r *runner) dropIdle() bool {
	if r.edges == 0 { // none queued: there is nothing to drop
		return len(r.events.items) > 0 || len(r.ends.items) > 0
	}
	return r.dropEdges()
}

// dropEdges is dropIdle with a window edge queued.
func (r *runner) dropEdges() bool {
	for r.events.len() > 0 {
		// A replica is busy exactly when it has a step end (stepEnds).
		if r.events.peek().class != classWindow || len(r.toPlan) > 0 || r.ends.len() > 0 {
			return true
		}
		r.events.pop()
		r.edges--
	}
	return r.ends.len() > 0
}

func (r *runner) nextAt() time.Duration {
	at, _ := r.next()
	return at
}

// next is the instant of the next event, and whether it is a step end
// (which comes first at its instant). There must be one.
func (r *runner) next() (at time.Duration, stepEnd bool) {
	if r.ends.len() > 0 {
		if at := r.ends.peek().at; r.events.len() == 0 || at <= r.events.peek().at {
			return at, true
		}
	}
	return r.events.peek().at, false
}

// warm installs Config.Warm's prefixes in every replica's cache, refusing
// a warm-up that does not fit.
func (r *runner) warm() error {
	for i := range r.reps {
		eng := r.reps[i].eng
		total := 0
		for j, w := range r.cfg.Warm {
			n, err := eng.Warm(w.PrefixHashes, w.PrefixBlockTokens, w.InputTokens)
			if err != nil {
				return fmt.Errorf("sim: Warm[%d] on replica %d: %w", j, i, err)
			}
			total += n
		}
		if kv := eng.Config().KVBlocks; total > kv {
			return fmt.Errorf("sim: Warm installs %d blocks of prefixes, more than replica %d's %d KV blocks: the warm-up does not fit the cache", total, i, kv)
		}
	}
	return nil
}

// frontend is the stale view of the router instance the current arrival
// was dealt to.
func (r *runner) frontend() *signals { return &r.signals[r.routed%len(r.signals)] }

// stopping is the instant the run stops at, once every event up to it is
// handled: Horizon + Drain, or, once every measured request has ended,
// the Horizon (or now, if that is later): nothing after it is measured.
func (r *runner) stopping() time.Duration {
	if r.cfg.Horizon > 0 && r.measuredLive == 0 {
		return min(r.stopAt, max(r.cfg.Horizon, r.now))
	}
	return r.stopAt
}

func (r *runner) handle(ev event) error {
	switch ev.class {
	case classArrival:
		return r.arrive(ev.ref)
	case classTimeout:
		return r.timeout(ev.ref, ev.gen)
	case classWindow:
		r.edges--
		return r.settleAll(r.now)
	}
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
