package sim

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/specrun"
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

// The runner is split in concerns, one file each, and its state in
// sub-structs named after them, embedded by value so that a field is one
// load away, as a field of the runner's own:
//   - run.go: the event loop and when it stops (the runner's own fields);
//   - intake.go: pulling requests from the source, routing each arrival to
//     a replica, client deadlines (intake, routing);
//   - replica.go: each replica's engine and its move in flight (a step, or
//     a run of identical decode steps cut where something happens to it)
//     (replicas);
//   - window.go: the measurement window and what is integrated over it
//     (window);
//   - streak.go: decode streaks accounted when they end (streaking);
//   - step.go: tokens into records, records into the summaries' collectors
//     (collectors); summary.go turns those into a Summary.
type runner struct {
	cfg Config
	tw  twins // the slow twins on, for tests (twins.go)

	// The event loop's: the clock (window.go's advance moves it), the
	// event queues, and when the run stops.
	now          time.Duration
	events       eventHeap
	ends         stepEnds // the replicas' move ends: the step-end events
	edges        int      // window edges in the event queue (classWindow events)
	stopAt       time.Duration
	measuredLive int // measured requests that arrived and have not ended

	checkEngine   bool // tests: verify the engines' invariants after every plan and step
	apart         bool // a measured record is counted apart too (countAll): a fleet, classes or tiers
	plainOff      bool // plainChunks is off: kept tokens, classes, Stepwise or eachChunk (its twin: accountChunk alone)
	continued     int  // moves planned at a step end by engine.Runner.Continue (tests read it)
	landJoins     int  // of those, moves that admit a landed request (aloneAt; tests read it)
	landJoinsMany int  // of those, moves that admit two or more (tests read it)
	landReserves  int  // of those, moves that reserve a waiting Remote request too (tests read it)
	notAlone      int  // step ends where aloneAt found something else at now (tests read it)
	atOnce        int  // step ends that planned at once (stepEnd; tests read it)
	removedAtOnce int  // of them, those whose end left the set first (stepEnd's twin; tests read it)
	lastMoves     int  // members' last moves accounted with their streak's (lastMove; tests read it)
	chunkRuns     int  // runs planned whose steps carry prefill chunks, counted while checkEngine (tests read it)
	runReserves   int  // reservations made inside a run (reserveInRun), counted while checkEngine (tests read it)
	insides       int  // finishes accounted inside runs through finishes (finishInside; tests read it)

	// thruAt is where the one replica's engine keeps the first finish
	// inside its move in flight (runThrough; 0: none), or noThru's
	// address.
	thruAt *time.Duration
	noThru time.Duration
	// noFirst and noBlocks are where a replica that plans no mixed move
	// points its firstOn and firstBlocks (replica).
	noFirst  bool
	noBlocks int
	// odd is what account tests first: the one replica's firstOn, or
	// checking's address (always true) while the engines are checked
	// (checkEngines), or fleetOdd's (always true) when a fleet's engines
	// plan mixed moves (fleetMixed: account then tests the replica's
	// firstOn), so that the regimes that ask for none of them pay one
	// test a collection, not one each (Regime/KVPressure 10,094 then
	// 10,066 instructions a request, Regime/Autoscale 7,129 then 7,113,
	// RunAtlas 5,418 both).
	odd        *bool
	checking   bool
	fleetOdd   bool
	mixes      int // mixed moves' first steps accounted (accountFirst; tests read it)
	mixInsides int // finishes accounted inside mixed moves (finishMixed; tests read it)
	// mixLeast: a fleet whose engines plan mixed moves (fleetMixed),
	// mixedrun.Least of its engines, which reads them as the
	// step-by-step engines count their load; nil otherwise.
	mixLeast func(time.Duration) int
	// engs are the replicas' engines, by index (reps[i].eng), which
	// leastOutstanding reads: one load a replica, where reps[i].eng
	// is a multiply and a load (RunFleet64/workload=atlas/
	// router=LeastLoaded's leastOutstanding 1,617 then 1,523
	// instructions a request). addReplica appends to it.
	engs []*engine.Engine
	// keptLoads: send reads the loads the replicas of a fleet larger than
	// mixedFleetMax keep (leastKept), not every engine's (leastEach, its
	// twin: twins.eachLoad).
	keptLoads bool
	// part is accountMixed's scratch: a part of a mixed move's outcome
	// (an Outcome zeroed a call cost RunAtlas 50 instructions a request).
	part engine.Outcome
	// mixCounts are accountMixed's counts over its outcome's emits, kept
	// here rather than in registers its calls spill and reload each emit.
	mixCounts struct{ cont, fins, finMeasured int }

	// specCnt is where the one replica's engine counts the steps of its
	// last speculative run by member (specRuns; nil: it plans none).
	specCnt   *specrun.Counts
	specMoves int     // speculative runs accounted (accountSpecRun; tests read it)
	specRare  []int32 // accountSpecRun's members accounted apart

	gw    *gateway // Config.Gateway's admission; nil without
	pd    *disagg  // Fleet.Prefill's pool, links and tallies; nil without
	tiers *tiers   // Fleet.HostTier's and Fleet.SharedStore's state; nil without
	scale *scaling // Fleet.Autoscale's state (lifecycle.go); nil without
	// The ends the policy reads back (ScaleView.Recent, scale_recent.go);
	// nil unless it declares a History.
	recent *recentEnds
	// late: the engines cache answers late (lateAnswers; tests read it).
	late bool

	intake
	routing
	replicas
	window
	streaking
	collectors
}

func newRunner(cfg Config, src workload.Source, obs Observer) (*runner, error) {
	return newRunnerWith(cfg, src, obs, twins{})
}

// newRunnerWith is newRunner with the slow twins tw on (twins.go).
func newRunnerWith(cfg Config, src workload.Source, obs Observer, tw twins) (*runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("sim: Run needs a workload.Source, got nil")
	}
	slo := cfg.SLO.WithDefaults()
	reps, err := newReplicas(cfg, slo)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, tw: tw, stopAt: runStop(cfg), ends: newStepEnds(len(reps.reps)),
		intake: newIntake(cfg, src), routing: newRouting(cfg), replicas: reps,
		window: newWindow(cfg), collectors: newCollectors(cfg, slo, obs, reps.speculates), gw: newGateway(cfg.Gateway)}
	if tw.smallOneEnd {
		r.ends.one = false // kept as a small fleet's
	}
	r.ends.noThird = tw.noThirdEnd
	if tw.noNextInto {
		r.fill = nil // every source's Next called, the route's twin
	}
	r.pd = newDisagg(cfg, r)
	r.fleet = len(r.reps) > 1 || cfg.Fleet.Autoscale.On()
	r.oneHeld = !r.fleet && !tw.ownHeldArea
	r.routes = r.fleet || cfg.Fleet.Router != nil || r.gw != nil
	r.idsInPlace()
	r.recycleIDs(cfg)
	if m, ok := r.fill.(moreReady); ok && r.fb != nil && !tw.eachPull {
		r.more = m
	}
	r.view.r, r.view.n, r.view.routed = r, len(r.reps), &r.routed
	if r.pd != nil {
		r.view.n = r.pd.decoders
	}
	if r.perClass {
		r.col.classSLO = func(rec *Record) SLO { return r.classes.list[r.classes.of(rec.Class)].slo }
	}
	if r.cache, err = newCacheState(r); err != nil { // before the engines are wired: a view may publish their KV events
		return nil, err
	}
	r.roots = newLackRoots(r)
	if r.fleet && r.roots == nil && cfg.Fleet.SignalDelay <= 0 && !cfg.Fleet.Autoscale.On() && r.pd == nil && !tw.noHeldEach {
		// heldRange's choice, made once: the replicas' array never moves
		// in a fleet that does not autoscale.
		r.heldReps = r.reps[r.view.lo : r.view.lo+r.view.n]
		r.view.each = &r.heldReps
	}
	if p, ok := r.router.(PrefixAffinity); ok && !tw.routerCall {
		r.prefix = &p
	}
	_, least := r.router.(LeastLoaded)
	r.leastFresh = least && (r.pd == nil || r.pd.leastRemote()) && r.cache == nil && cfg.Fleet.SignalDelay <= 0 && r.gw == nil
	r.gwOrLeast = r.gw != nil || r.leastFresh
	// (send's branch of the whole fleet: no prefill pool, no autoscaling's routable list)
	r.keptLoads = r.leastFresh && r.pd == nil && !cfg.Fleet.Autoscale.On() && len(r.reps) > mixedFleetMax && !tw.eachLoad
	if r.tiers, err = newTiers(cfg, r); err != nil { // before too: a tier turns the engines' fast paths off
		return nil, err
	}
	r.apart = r.fleet || r.perClass || r.tiers != nil
	r.plainOff = cfg.KeepTokens || r.perClass || cfg.Stepwise || eachChunk
	// The heap alone, stepwise (the twin of its sorted mode) or under an
	// open-loop source (eventHeap's sorted mode).
	r.events.heapOnly(cfg.Stepwise || r.fb == nil)
	r.engs = make([]*engine.Engine, len(r.reps))
	for i := range r.reps {
		r.engs[i] = r.reps[i].eng
	}
	r.streaking = newStreaking(r.wireReplicas())
	r.scale = newScaling(cfg, r, slo)
	r.runThrough()
	r.lateAnswers() // after runThrough: the engine caches late only without runs through finishes
	r.specRuns()
	if err := r.warm(); err != nil {
		return nil, err
	}
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

// runStop is the instant a run stops at whatever happens: Horizon + Drain
// (Drain 0: the window's length), or never without a Horizon.
func runStop(cfg Config) time.Duration {
	if cfg.Horizon == 0 {
		return Unbounded
	}
	drain := cfg.Drain
	if drain == 0 {
		drain = cfg.Window.Length()
	}
	return cfg.Horizon + drain
}

// wireReplicas tells each replica's engine what the run needs of it: a
// step record for a step observer, acceptance draws for speculative
// decoding, omitted decode streaks for the lazy accounting. It reports
// whether the run defers decode streaks (streak.go): it asks for them
// when the run would (deferStreaks), and defers them when every engine
// then omits them, which is the engine's decision (not with speculative
// decoding, whose streaks vary with acceptance); otherwise every engine
// lists every emit. Whether a replica may continue a run at a step end
// is its engine's decision too (engine.Runner.Continues).
func (r *runner) wireReplicas() (lazy bool) {
	lazy = r.deferStreaks()
	for i := range r.reps {
		rep := &r.reps[i]
		if r.steps != nil {
			rep.eng.RecordSteps(true)
		}
		if rep.spec.On() {
			rep.eng.SetAcceptor(newAcceptor(r, rep.spec))
		}
		if r.deferStreaks() {
			rep.run().OmitStreaks(true) // accountLazy counts them
			lazy = lazy && rep.run().OmitsStreaks()
		}
	}
	for i := range r.reps {
		rep := &r.reps[i]
		if !lazy && r.deferStreaks() && !rep.spec.On() {
			// A replica lists them: so do all. A speculative one lists
			// them whatever it was asked, and keeps the ask: the account
			// reads no listed decode of its plans, so its engine may keep
			// a speculative cohort (engine/speccohort.go).
			rep.run().OmitStreaks(false)
		}
		rep.continues = rep.run().Continues() && !(rep.tiered && r.tw.tierNoContinue)
		rep.oneStep = r.oneStep(rep)
	}
	return lazy
}

// oneStep reports whether the replica plans a step a move (replica's
// oneStep): stepwise, or its engine's fast path "runs" off (FastPaths),
// which the engine decided.
func (r *runner) oneStep(rep *replica) bool {
	if r.cfg.Stepwise {
		return true
	}
	if askRuns { // the twin: every engine asked for runs
		return false
	}
	for _, p := range rep.eng.FastPaths() {
		if p.Name == "runs" {
			return !p.On
		}
	}
	return false
}

// askRuns makes every replica that is not stepwise plan to the stopping
// instant (ScheduleUntil), its engine's fast path "runs" off or on: the
// twin of oneStep, for tests (TestOneStepPlansWhatUntilWould).
var askRuns = false

// addReplica builds a replica configured by rc at the end of the fleet,
// wired as wireReplicas wired the others (an autoscaled fleet's join:
// rc is the fleet's first replica's configuration, so its engine decides
// as theirs did), and returns its index. The replica array may move:
// nothing keeps a pointer into it across an event.
func (r *runner) addReplica(rc ReplicaConfig) (int, error) {
	i := len(r.reps)
	r.reps = append(r.reps, replica{})
	rep := &r.reps[i]
	if err := rep.init(i, rc, r.scale.slo); err != nil {
		return 0, err
	}
	rep.eng.ShareKeyMemo(r.reps[0].eng)
	r.engs = append(r.engs, rep.eng)
	rep.col.setExact(r.cfg.ExactSamples)
	if r.steps != nil {
		rep.eng.RecordSteps(true)
	}
	if rep.spec.On() {
		rep.eng.SetAcceptor(newAcceptor(r, rep.spec))
	}
	if !r.lazy && r.deferStreaks() && rep.spec.On() {
		rep.run().OmitStreaks(true) // as wireReplicas keeps it
	}
	if r.lazy {
		rep.run().OmitStreaks(true)
		if !rep.run().OmitsStreaks() {
			return 0, fmt.Errorf("sim: replica %d: its engine lists decode streaks, which the fleet's first replica omits (an internal error)", i)
		}
	}
	rep.continues = rep.run().Continues() && !(rep.tiered && r.tw.tierNoContinue)
	rep.oneStep = r.oneStep(rep)
	rep.firstOn, rep.firstBlocks = &r.noFirst, &r.noBlocks // an autoscaled fleet plans no mixed move (runThrough)
	r.ends.add()
	r.keys = prefixChains{} // its block size may be new: the chains are found again
	if r.cache != nil {
		r.cache.added(r, i)
	}
	if r.roots != nil {
		r.roots = r.roots.added(r, i)
	}
	return i, nil
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
		if *r.thruAt != 0 { // a finish inside a run may come first (runThrough)
			if err := r.settleThrough(); err != nil {
				return err
			}
		}
		at, stepEnd := r.next()
		if stop := r.stopping(); at > stop {
			if err := r.halt(stop); err != nil {
				return err
			}
			break
		}
		if r.openStarted { // reach's usual case, without its call
			r.advanceOpen(at)
		} else if err := r.reach(at); err != nil {
			return err
		}
		var err error
		if stepEnd >= 0 {
			err = r.stepEnd(&r.reps[stepEnd])
		} else if ev := r.events.pop(); ev.class == classArrival { // handle's usual case, without its call: RunAtlas 5,057 then 5,047 instructions a request (servesim's own)
			err = r.arrive(ev.ref)
		} else {
			err = r.handle(ev)
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
			if err := r.haltOverloaded(); err != nil {
				return err
			}
			break
		}
		if len(r.toPlan) > 0 && r.nothingAt(r.now) {
			if err := r.planQueued(); err != nil {
				return err
			}
		}
	}
	r.abandon()
	return nil
}

// halt stops the run at instant t, before the next event: the steps that
// ended by t emit their tokens, and unfinished requests end at t.
func (r *runner) halt(t time.Duration) error {
	if err := r.reach(t); err != nil {
		return err
	}
	return r.settleAll(t)
}

// haltOverloaded stops the run now, the backlog having proved overload. A
// move that ends at this very instant is collected as the step end it is:
// step by step it came before the arrival that proved the overload (a run
// that arrival cut ends with its step in flight, now, and the loop stops
// before that step end's event would have collected it).
func (r *runner) haltOverloaded() error {
	for r.ends.len() > 0 && r.ends.peek().at <= r.now {
		if err := r.stepEnd(&r.reps[r.ends.peek().rep]); err != nil {
			return err
		}
	}
	return r.settleAll(r.now)
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
		return len(r.events.items) > 0 || r.ends.n > 0
	}
	return r.dropEdges()
}

// dropEdges is dropIdle with a window edge or an autoscaler's tick
// queued. A tick at the head is dropped when nothing but edges would
// follow it, no replica is busy and none is to plan: a tick alone never
// keeps a run going (nor a run whose held requests could never move,
// which would otherwise tick to its stop).
func (r *runner) dropEdges() bool {
	for r.events.len() > 0 {
		// A replica is busy exactly when it has a step end (stepEnds).
		if len(r.toPlan) > 0 || r.ends.len() > 0 {
			return true
		}
		switch r.events.peek().class {
		case classWindow:
		case classScale:
			if r.events.len() > r.edges {
				return true
			}
		default:
			return true
		}
		r.events.pop()
		r.edges--
	}
	return r.ends.len() > 0
}

// nothingAt reports whether no event is left at instant t (each is
// later, or there is none).
func (r *runner) nothingAt(t time.Duration) bool {
	return (r.ends.len() == 0 || r.ends.peek().at > t) && (r.events.len() == 0 || r.events.peek().at > t)
}

// next is the instant of the next event, and the replica whose move
// ends then when it is a step end (which comes first at its instant),
// else -1. There must be one.
func (r *runner) next() (at time.Duration, stepEnd int32) {
	if r.ends.len() > 0 {
		if e := r.ends.peek(); r.events.len() == 0 || e.at <= r.events.peek().at {
			return e.at, e.rep
		}
	}
	return r.events.peek().at, -1
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
			if r.tiers != nil { // serving it would have written its blocks through (tiers.go)
				r.tiers.warmKeys = eng.BlockKeys(r.tiers.warmKeys[:0], w.PrefixHashes, w.PrefixBlockTokens, w.InputTokens)
				r.tiers.ports[i].Store(r.tiers.warmKeys, r.tiers.warmKeys)
			}
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
	case classExpire:
		return r.expire(ev.ref, ev.gen)
	case classLand:
		return r.land(ev.ref, ev.gen)
	case classTierLand:
		return r.landTier(ev.ref, ev.gen)
	case classReady:
		return r.ready(int(ev.ref))
	case classScale:
		r.edges--
		return r.tick()
	case classDrain:
		return r.drainDeadline(int(ev.ref))
	case classReserve:
		if rep := &r.reps[ev.ref]; rep.resAt == r.now {
			r.queuePlan(rep) // plan reserves inside its run once everything at now is handled
		}
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
