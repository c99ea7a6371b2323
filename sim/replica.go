package sim

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/workload"
)

// replica is one engine of the fleet and what the runner tracks of it: the
// move in flight (one step, or a run of identical decode steps), the
// generation of its step-end event, the requests it holds, and its own
// share of the measurements.
type replica struct {
	idx      int
	eng      *engine.Engine
	spec     Speculation   // its speculative decoding
	stepTime time.Duration // of the move in flight
	stepDone time.Duration // when the move in flight ends
	moveAt   time.Duration // when it started
	held     int           // requests it holds
	// heldArea is ∫ held dt over the window, request·ns, by request
	// (heldIn): less clip(heldAt) at each request in, plus it at each
	// out, held·clip(heldAt) short of the integral up to heldAt
	// (heldAreaTo); under twins.heldEachEvent, the integral itself,
	// added at each change (integrateHeld).
	heldArea wide
	heldAt   time.Duration // its changes' latest instant
	planned  bool          // queued to plan after the current instant
	// remoteKV: a disaggregated fleet's decode replica, which takes
	// requests prefilled remotely; prefill: one of its prefill pool,
	// whose requests move on after their first token (pools.go).
	remoteKV, prefill bool
	// reservedAt: a decode replica's (or a tiered one's) last plan that
	// reserved blocks for a transfer (a tier load) started then (Never
	// before one).
	reservedAt time.Duration
	// resAt: the start of the step of its run in flight where the
	// engine reserves a request handed to it inside the run
	// (engine.Runner.ReserveLater; Never when none).
	resAt time.Duration
	// modelLen is its engine's longest sequence, Config.ServedOutput of
	// an empty prompt (init): served reads it.
	modelLen int
	// tiered: its engine has KV tiers below HBM (tiers.go); async:
	// remoteKV or tiered, a plan may reserve blocks for KV that lands
	// later (plannedAsync).
	tiered, async bool
	// landWait: a Remote request landed here (land) and may wait to be
	// admitted; aloneAt clears it when none waits.
	landWait bool
	// state is where it is in its life (lifecycle.go): serving, the zero
	// value, unless the fleet autoscales; requested, readyAt, drainAt and
	// goneAt are when it was asked for, began serving, left routing and
	// stopped costing (0, 0, Never, Never for a replica the run starts
	// with; Never for what has not happened).
	state replicaState
	// (continues and oneStep sit beside state, in one word with it.)
	// continues: its engine may continue a run at a step end
	// (engine.Runner.Continue), as the engine decided it
	// (engine.Runner.Continues); the others skip the call.
	continues bool
	// oneStep: it plans a step a move (ScheduleUntil to now): the run is
	// stepwise (Config.Stepwise), or its engine plans no run of several
	// steps (its fast path "runs" is off, as with speculative decoding),
	// where ScheduleUntil to a later instant would plan the same step,
	// extendRun finding it one (212 instructions a request in
	// BenchmarkRegime/Speculation: 40,628 then 40,389).
	oneStep                             bool
	requested, readyAt, drainAt, goneAt time.Duration
	// firstOn and firstBlocks are where its engine says whether the
	// outcome it last returned covers a mixed move's first step, and the
	// blocks held during it (mixedrun.Out; mixedMoves), or the runner's
	// noFirst and noBlocks when it plans none.
	firstOn     *bool
	firstBlocks *int
	// staged is its engine's record of the next request sent here, zero,
	// for send to write in place (internal/addinto; stage); nil with
	// noAddInto, and send calls Engine.Add.
	staged *engine.Request

	busy      time.Duration // time with a step in flight, inside the window
	blockTime wide          // KV blocks held × step time, over the steps that ended in the window
	col       collector     // its measured requests
	streak    streaks       // its requests in decode streaks (streak.go)
	// aborted: when steps are observed, the requests aborted since its
	// move in flight was planned, first first, by ref and ID (a ref is
	// reused once its request ends; the step's record names it by ID).
	aborted []abortedRef

	// loadOut is its engine's Outstanding, as a fleet behind LeastLoaded
	// keeps it (leastKept), until loadUntil: the instant the engine's
	// run lowers it (engine.Engine.OutstandingUntil), or 0, read it
	// again, once the engine is changed (run and edit set it).
	loadOut   int
	loadUntil time.Duration
}

// abortedRef is a request aborted while its replica's move was in flight.
type abortedRef struct {
	ref int32
	id  uint64
}

// replicas is the runner's fleet (this file): every replica, those to
// plan once the current instant is handled, and whether any decodes
// speculatively, with the seed of each request's acceptance stream.
type replicas struct {
	reps       []replica
	toPlan     []int        // replicas to plan once the current instant is handled
	speculates bool         // some replica decodes speculatively
	fleet      bool         // more than one replica, or replicas that come and go (Fleet.Autoscale)
	accSeed    uint64       // seeds each request's acceptance stream with its ID
	accs       []accept.PCG // each request's acceptance stream, by ref (seedAcc)
	// oneHeld says a single replica, which holds every request the
	// system holds (held is inSystem, changed at the same instants, and
	// integrated over the same declared window), takes the runner's
	// integral for its own (replicaSummaries) rather than integrate
	// held at every change: RunAtlas 4,981 then 4,937 instructions a
	// request. TestOneHeldIsItsOwn holds it to its twin
	// (twins.ownHeldArea).
	oneHeld bool
}

// newReplicas builds every replica of cfg, in one allocation (appending
// them one by one was 56 % of the setup of 50,000 replicas).
func newReplicas(cfg Config, slo SLO) (replicas, error) {
	rcs := cfg.replicas()
	decoders := len(rcs)
	if pool := cfg.Fleet.Prefill; pool.On() {
		rcs = append(append(make([]ReplicaConfig, 0, len(rcs)+len(pool.Replicas)), rcs...), pool.Replicas...)
	}
	rs := replicas{reps: make([]replica, len(rcs)),
		accSeed: workload.NewStream(cfg.Seed, "sim/speculation").Uint64()}
	for i, rc := range rcs {
		if i < decoders && len(rcs) > decoders {
			rc.Engine.RemoteKV = true // the decode pool of a disaggregated fleet
		}
		rep := &rs.reps[i]
		if err := rep.init(i, rc, slo); err != nil {
			return replicas{}, err
		}
		if i > 0 {
			rep.eng.ShareKeyMemo(rs.reps[0].eng) // a prompt keyed once for the fleet
		}
		rep.col.setExact(cfg.ExactSamples)
		rs.speculates = rs.speculates || rep.spec.On()
	}
	return rs, nil
}

// effective is the engine configuration and the cost model the replica
// runs: with speculative decoding the engine drafts K tokens and the
// model prices the drafter too. A free drafter (n-gram: no DraftStep, no
// DraftOverhead) adds nothing to a step, and Drafting prices its steps
// with its Model alone: the replica's model is that one, without the
// wrapper's call a step (TestFreeDraftingIsItsModel; 450 instructions a
// request in BenchmarkRegime/Speculation).
func (r ReplicaConfig) effective() (engine.Config, costmodel.Model) {
	if sp := r.Speculation; sp.On() {
		r.Engine.SpeculativeTokens = sp.Tokens
		if sp.DraftStep == 0 && sp.DraftOverhead == 0 { // nil: Frozen{} either way
			return r.Engine, r.Model
		}
		return r.Engine, costmodel.Drafting{Model: r.Model, DraftStep: sp.DraftStep, Overhead: sp.DraftOverhead}
	}
	return r.Engine, r.Model
}

// init makes the zero replica in place replica idx, configured by r.
func (rep *replica) init(idx int, r ReplicaConfig, slo SLO) error {
	cfg, model := r.effective()
	eng, err := engine.New(cfg, model)
	if err != nil {
		return fmt.Errorf("sim: replica %d: %w", idx, err)
	}
	rep.idx, rep.eng, rep.spec, rep.remoteKV, rep.async = idx, eng, r.Speculation, cfg.RemoteKV, cfg.RemoteKV
	rep.drainAt, rep.goneAt, rep.reservedAt, rep.resAt = Never, Never, Never, Never
	rep.col.slo, rep.col.share = slo, true
	rep.modelLen = cfg.ServedOutput(0, math.MaxInt)
	return nil
}

// served is its engine's Config.ServedOutput(input, output), the output
// tokens it serves a request, from the longest sequence read once.
func (rep *replica) served(input, output int) int {
	if input >= rep.modelLen {
		return 0
	}
	return min(output, rep.modelLen-input)
}

// run is the replica's engine seen through its batched contract (the
// same pointer: engine.Runner): the moves of several steps. A move may
// change its load: the load kept (loadUntil) is read again.
func (rep *replica) run() *engine.Runner {
	rep.loadUntil = 0
	return rep.eng.Runner()
}

// edit is the replica's engine, to change it (Add, Abort, Land,
// Complete): the load kept (loadUntil) is read again.
func (rep *replica) edit() *engine.Engine {
	rep.loadUntil = 0
	return rep.eng
}

// hold changes the requests the replica holds by d at the runner's
// instant, integrating what it held until then over the window: a single
// replica's is the runner's integral of inSystem (oneHeld), and it
// never drains (a fleet's replicas do, Fleet.Autoscale), so it only
// counts. (Apart from holdApart, hold is inlined at its two calls a
// request: RunAtlas 4,937 then 4,922 instructions a request.)
func (r *runner) hold(rep *replica, d int) {
	if !r.oneHeld {
		r.holdApart(rep, d)
		return
	}
	rep.held += d
}

// holdApart is hold of a fleet's replica, or of a single replica
// integrating its own (twins.ownHeldArea). It keeps the integral by
// request (heldIn), not at each change (integrateHeld, its twin:
// twins.heldEachEvent).
func (r *runner) holdApart(rep *replica, d int) {
	if r.tw.heldEachEvent {
		r.integrateHeld(rep, r.now)
	} else {
		r.heldIn(rep, d)
	}
	rep.held += d
	r.holds++
	if rep.held == 0 && rep.state == stateDraining {
		r.drained(rep)
	}
}

// heldIn counts d requests (+1 or −1) into the replica at the
// runner's instant, by request: the window's clip of its latest change
// (heldAt) taken from heldArea at an entry, added back at a leave,
// modulo 2¹²⁸. Each interval between two changes, held·(clip(after) −
// clip(before)), as integrateHeld adds it, sums so to −Σ d·clip(heldAt)
// over the changes and held·clip(heldAt) over the last (heldAreaTo):
// the same integer, without a multiply and a test at each change.
func (r *runner) heldIn(rep *replica, d int) {
	rep.heldAt = max(rep.heldAt, r.now)
	c := r.clip(rep.heldAt)
	var carry uint64
	if d > 0 {
		rep.heldArea.lo, carry = bits.Sub64(rep.heldArea.lo, c, 0)
		rep.heldArea.hi -= carry
		return
	}
	rep.heldArea.lo, carry = bits.Add64(rep.heldArea.lo, c, 0)
	rep.heldArea.hi += carry
}

// heldAreaTo integrates what a fleet's replica holds up to instant t
// (integrateHeld) and returns the integral over the window, request·ns:
// under twins.heldEachEvent heldArea itself, else heldIn's sum and held
// times the clip of the instant reached (heldAt, moved to t as
// integrateHeld moves it, so that later changes count on from there).
func (r *runner) heldAreaTo(rep *replica, t time.Duration) wide {
	if r.tw.heldEachEvent {
		r.integrateHeld(rep, t)
		return rep.heldArea
	}
	rep.heldAt = max(rep.heldAt, t)
	a := rep.heldArea
	a.add(uint64(rep.held), r.clip(rep.heldAt))
	return a
}

// integrateHeld adds what the replica held from its last change to t,
// clipped to the declared window, to its integral.
func (w *window) integrateHeld(rep *replica, t time.Duration) {
	lo, hi := max(rep.heldAt, w.opens), min(t, w.closes)
	if hi > lo {
		rep.heldArea.add(uint64(rep.held), uint64(hi-lo))
	}
	rep.heldAt = max(rep.heldAt, t)
}

// load reads the replica's load at instant now, without changing what it
// will do.
func (rep *replica) load(now time.Duration) Load {
	rep.run().SyncTo(now)
	return Load{Waiting: rep.eng.Waiting(), Running: rep.eng.Running(),
		Outstanding: rep.eng.Outstanding(now), FreeBlocks: rep.eng.FreeBlocks()}
}

// plan asks the engine for the next move at the runner's instant: a step,
// or a run of identical decode steps whose every step starts before until.
func (r *runner) plan(rep *replica) error {
	if rep.eng.Busy() {
		if rep.resAt == r.now {
			return r.reserveInRun(rep)
		}
		return nil
	}
	until := r.stopping()
	if rep.oneStep {
		until = r.now
		if r.specCnt != nil { // speculative runs (specrun.go)
			return r.planSpec(rep)
		}
	}
	p, err := rep.run().ScheduleUntil(r.now, until)
	if err != nil || p == nil {
		return err
	}
	return r.planned(rep, p)
}

// planned notes the move the replica's engine planned at the runner's
// instant.
func (r *runner) planned(rep *replica, p *engine.Plan) error {
	for i, ref := range p.Started {
		r.slots[ref].rec.FirstScheduled = p.Start
		r.slots[ref].rec.Cached = p.Cached[i]
	}
	if len(p.Preempted) > 0 { // the loop's setup cost 7 instructions a move with none (RunAtlas, cachegrind)
		for _, ref := range p.Preempted {
			r.slots[ref].rec.Preemptions++
		}
	}
	if r.checkEngine {
		if err := rep.eng.Check(); err != nil {
			return fmt.Errorf("sim: replica %d, after planning the step at %v: %w", rep.idx, r.now, err)
		}
		if p.Steps > 1 && len(p.Batch.Prefill) > 0 {
			r.chunkRuns++
		}
	}
	r.ends.set(rep.idx, p.End)
	rep.stepTime, rep.stepDone, rep.moveAt = p.StepTime, p.End, p.Start
	rep.aborted = rep.aborted[:0]
	if rep.async {
		r.plannedAsync(rep, p)
	}
	return nil
}

// stepEnd applies the end of the replica's move in flight, and plans its
// next move at once when that is a run of the decode cohort
// (engine.Runner.Continue: nothing waits, or the batch is at MaxSeqs,
// after a finish or a prompt's last chunk), else after everything at the instant. Continue is asked after
// the move is accounted, so that a request its finish sent here (a
// closed-loop client's next) has joined the waiting queue, and with the
// stopping instant as it is once the finisher no longer counts; a join
// or an abort later at this instant cuts the continued run whole
// (interrupt), as it would have been planned only after them.
//
// The move's end, the earliest in stepEnds (peek), stays there while the
// end is applied, as the instant it is: the continued run's end replaces
// it in place (planned), else it goes before the next event is peeked.
// A continued run so spares the pop's remove (about 20 instructions a
// move), and a small fleet keeps its second earliest end when the new
// one comes before it (stepEnds.set).
//
// Else, when nothing else happens at now (nothingAt: no event, no other
// replica's end), no replica is queued, no client's request waits to be
// sent (sendWaiting) and the run is not overloaded, the loop's next act
// in this pass would be planQueued's plan of this replica alone: it is
// planned here (planAtOnce; RunAtlas 5,291 then 5,251 instructions a
// request, the budget test), where a request waits for the slot a
// finish freed, mostly. Stepwise, whose engines do not continue, queues.
func (r *runner) stepEnd(rep *replica) error {
	out, err := rep.edit().Complete(r.now)
	if err != nil {
		return err
	}
	if err := r.account(rep, out); err != nil {
		return err
	}
	// A decode replica where a request landed is asked only when
	// nothing else happens at now (aloneAt, pools.go).
	if rep.continues && !rep.planned && (!rep.landWait || r.aloneAt(rep)) {
		if p := rep.run().Continue(r.now, r.stopping()); p != nil {
			r.continued++
			if len(p.Started) > 0 { // landed requests admitted (engine's continueLanded)
				r.landJoins++
				if len(p.Started) > 1 {
					r.landJoinsMany++
				}
				if len(p.Reserved) > 0 { // and reserved a Remote request that waited
					r.landReserves++
				}
			}
			return r.planned(rep, p) // moves its end later, in place
		}
	}
	if rep.eng.Idle() && !r.cfg.Stepwise {
		// It holds nothing (a prefill replica whose one prompt is
		// handed off, as mostly): its plan would be none
		// (ScheduleUntil's nil). A request that joins it at this
		// instant queues its plan (interrupt). Stepwise plans it, the
		// twin.
		r.ends.remove(rep.idx)
		return nil
	}
	if !r.tw.noPlanAtOnce && rep.continues && len(r.toPlan) == 0 && r.clientHead >= len(r.clientQ) && !r.overloaded && (r.events.len() == 0 || r.events.peek().at > r.now) {
		if !r.tw.noKeepEndAtOnce {
			// Its end, the earliest, stays in the set while it is
			// planned: the plan's set moves it in place (planned),
			// one update instead of remove's and set's. Nothing
			// reads the set in between (plan reads no step end).
			if alone, known := r.ends.aloneTill(rep.idx, r.now); known {
				if !alone {
					r.ends.remove(rep.idx)
					r.queuePlan(rep)
					return nil
				}
				r.atOnce++
				if err := r.plan(rep); err != nil {
					return err
				}
				if !rep.eng.Busy() { // it planned nothing: no end
					r.ends.remove(rep.idx)
				}
				return nil
			}
		}
		r.ends.remove(rep.idx) // nothing plans a replica in between (only planQueued and Continue do)
		if r.ends.len() == 0 || r.ends.peek().at > r.now {
			r.atOnce++
			r.removedAtOnce++
			return r.plan(rep) // what the loop's planQueued does next, in this pass
		}
		r.queuePlan(rep)
		return nil
	}
	r.ends.remove(rep.idx)
	r.queuePlan(rep)
	return nil
}

// settle collects the steps of the replica's move in flight that ended by
// instant t (see engine.Runner.CompleteUntil).
func (r *runner) settle(rep *replica, t time.Duration) error {
	if !rep.eng.Busy() || t >= rep.stepDone {
		return nil // nothing in flight, or its step end at t comes first
	}
	out, err := rep.run().CompleteUntil(t)
	if err != nil {
		return err
	}
	return r.account(rep, out)
}

// interrupt brings the replica to instant now because something happens to
// it (a request joins or leaves): the steps of a run that had not started
// are dropped, to be planned again once everything at now is handled, as a
// step-by-step replica would. With collect, the steps that ended are
// collected first (a request leaving needs its tokens settled); without,
// they stay in flight with the step in flight and are collected with it,
// one move instead of two, the same tokens at the same instants (a request
// joining needs nothing from them). A step observer is told each move, so
// an observed replica always collects, and its step records stay as they
// were.
func (r *runner) interrupt(rep *replica, collect bool) error {
	if !rep.eng.Busy() {
		r.queuePlan(rep)
		return nil
	}
	if r.now >= rep.stepDone {
		// Its move ends at this very instant, and that event, still
		// pending, collects it and plans the next step after everything
		// at now. This happens when another replica's step end at the same
		// instant frees a client slot (or ends a conversation's turn) and
		// the request sent there is routed here: a step-by-step replica
		// would weigh it in that plan too.
		return nil
	}
	if collect || r.steps != nil {
		// Called from inside another replica's accounting (a finish's
		// handoff), settle accounts this one's steps in its turn:
		// accountLazy's joiners are the caller's until it returns, so
		// the nested call takes the spare scratch (nil if it is in use).
		js := r.joiners
		r.joiners, r.spare = r.spare[:0], nil
		err := r.settle(rep, r.now)
		r.spare, r.joiners = r.joiners[:0], js
		if err != nil {
			return err
		}
	}
	inFlight, end, err := rep.run().Truncate(r.now)
	if err != nil {
		return err
	}
	switch {
	case !inFlight:
		r.ends.remove(rep.idx)
		r.queuePlan(rep)
	case end != rep.stepDone:
		r.ends.set(rep.idx, end)
		rep.stepDone = end
	}
	return nil
}

// joinChangesNothing reports whether a request joining the replica's
// waiting queue leaves every step of its move in flight as planned
// (engine.Runner.JoinChangesNothing: the batch is at its sequence cap, or the
// newcomer waits behind the head the move was planned with, which no step
// could admit), so step by step nobody would be admitted before the move
// ends either; the plan at its end weighs the newcomer. The move is not
// cut then, which saves a move a request whenever the batch is full or
// the cache is. An observed replica is cut as before: each move's record
// carries the waiting queue's length, so its engine, which records steps,
// says no (the engine decides: FastPaths, "joins").
func (r *runner) joinChangesNothing(rep *replica) bool {
	eng := rep.eng
	return eng.Busy() && eng.Runner().JoinChangesNothing()
}

// settleAll collects every replica's steps that ended by t.
func (r *runner) settleAll(t time.Duration) error {
	for i := range r.reps {
		if err := r.settle(&r.reps[i], t); err != nil {
			return err
		}
	}
	return nil
}

// queuePlan marks the replica to be planned once every event at the
// current instant is handled.
func (r *runner) queuePlan(rep *replica) {
	if !rep.planned {
		rep.planned = true
		r.toPlan = append(r.toPlan, rep.idx)
	}
}

// planQueued plans the replicas marked since the last instant, in index
// order (deterministic whatever order they were marked in).
func (r *runner) planQueued() error {
	if len(r.toPlan) == 1 {
		// One replica, as mostly: the loop below keeps its slice and
		// index across each plan's call, about 15 instructions a plan
		// more (a disaggregated fleet plans 3.4 times a request, and
		// spent 12,816 instructions a request with the loop alone,
		// 12,765 with this case, cachegrind).
		rep := &r.reps[r.toPlan[0]]
		rep.planned = false
		if err := r.plan(rep); err != nil {
			return err
		}
		r.toPlan = r.toPlan[:0]
		return nil
	}
	if len(r.toPlan) > 1 {
		sortInts(r.toPlan)
	}
	for _, i := range r.toPlan {
		rep := &r.reps[i]
		rep.planned = false
		if err := r.plan(rep); err != nil {
			return err
		}
	}
	r.toPlan = r.toPlan[:0]
	return nil
}

// sortInts sorts a short slice in place (insertion sort: no allocation).
func sortInts(x []int) {
	for i := 1; i < len(x); i++ {
		for j := i; j > 0 && x[j] < x[j-1]; j-- {
			x[j], x[j-1] = x[j-1], x[j]
		}
	}
}
