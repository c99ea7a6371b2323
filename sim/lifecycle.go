package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/servesim/servesim/workload"
)

// This file is an autoscaled fleet's replicas coming and going
// (Fleet.Autoscale, autoscale.go): the controller's tick, joins and their
// cold start, leaves and their drain.
//
// A replica's life: warming (requested, not yet serving), serving (in the
// routable list, the router's view), draining (out of routing, finishing
// what it holds), gone. The replicas the run starts with serve from 0. A
// replica is never reused: a join appends one (runner.addReplica), so an
// index names one replica's whole life. Nothing here cuts a replica's
// move but a hand-back and a drain deadline, which abort requests as a
// client deadline does (runner.drop).

// replicaState is where a replica is in its life; the zero value is
// serving, as every replica of a fixed fleet is.
type replicaState uint8

const (
	stateServing replicaState = iota
	stateWarming
	stateDraining
	stateGone
)

// scaling is the runner's state of Fleet.Autoscale; nil without.
type scaling struct {
	cfg      Autoscale // with defaults
	template ReplicaConfig
	slo      SLO
	// routable is the serving replicas, in index order: the router's view
	// (View.idx) and the ScaleView's positions.
	routable          []int32
	warming, draining int
	joins, leaves     int
	handedBack        int // requests handed back by draining replicas
	drained           int // requests aborted at a drain deadline
	jitter            *rand.Rand
	ctl               *scaler // Autoscale.Behavior's state
	view              ScaleView
	refs              []int32 // scratch: a drain's requests
	// The timeline (ScaleSummary): the samples so far, the arrivals
	// counted at the last tick, and the measured requests ended (and
	// good) since; the largest fleet held at once.
	timeline    []ScaleSample
	lastArrived int
	ended, good int
	peak        int
	// The last instant a replica began serving or left routing
	// (ScaleView.Changed).
	changed time.Duration
}

// newScaling is the runner's autoscaling state, nil without a Policy; it
// queues the controller's first tick.
func newScaling(cfg Config, r *runner, slo SLO) *scaling {
	a := cfg.Fleet.Autoscale
	if !a.On() {
		return nil
	}
	a = a.WithDefaults()
	sc := &scaling{cfg: a, template: cfg.replicas()[0], slo: slo, ctl: newScaler(a.Behavior)}
	sc.routable = make([]int32, len(r.reps))
	for i := range sc.routable {
		sc.routable[i] = int32(i)
	}
	if a.ColdStart.Jitter > 0 {
		sc.jitter = workload.NewStream(cfg.Seed, "sim/autoscale")
	}
	sc.view = ScaleView{r: r}
	r.recent = newRecentEnds(a.Policy)
	r.view.idx = &sc.routable
	r.queueTick(a.Interval)
	return sc
}

// size is the fleet's size as the controller counts it: serving plus
// warming replicas.
func (sc *scaling) size() int { return len(sc.routable) + sc.warming }

// tick is the controller's: it asks the policy for the fleet's size,
// applies Autoscale.Behavior and [Min, Max] to it (scaler.normalize),
// joins or leaves replicas to reach it, and queues the next tick.
func (r *runner) tick() error {
	sc := r.scale
	if r.recent != nil {
		r.recent.prune(r.now)
	}
	want := sc.ctl.normalize(r.now, sc.size(), sc.cfg.Policy.Desired(&sc.view), sc.cfg.Min, sc.cfg.Max)
	for n := sc.size(); n < want; n++ {
		if err := r.request(); err != nil {
			return err
		}
	}
	for n := sc.size(); n > want; n-- {
		if err := r.depart(); err != nil {
			return err
		}
	}
	sc.noteTick(r, want)
	r.queueTick(r.now + sc.cfg.Interval)
	return nil
}

// queueTick queues the controller's tick at t. Ticks are counted with
// the window's edges (runner.edges): dropEdges drops one that nothing
// but edges would follow.
func (r *runner) queueTick(t time.Duration) {
	r.events.push(event{at: t, class: classScale})
	r.edges++
}

// request asks for a replica now: it warms for its cold start, then serves.
func (r *runner) request() error {
	sc := r.scale
	if sc.joins >= sc.cfg.MaxJoins {
		return fmt.Errorf("sim: Fleet.Autoscale: the policy asked for replica %d at %v, more than MaxJoins (%d) joins: raise MaxJoins, or damp the policy", sc.joins+1, r.now, sc.cfg.MaxJoins)
	}
	i, err := r.addReplica(sc.template)
	if err != nil {
		return err
	}
	sc.joins++
	rep := &r.reps[i]
	rep.state, rep.requested, rep.readyAt = stateWarming, r.now, Never
	sc.warming++
	cold := sc.cfg.ColdStart.Total()
	if sc.jitter != nil {
		cold += time.Duration(sc.jitter.Int64N(int64(sc.cfg.ColdStart.Jitter)))
	}
	if cold == 0 {
		return r.ready(i)
	}
	r.events.push(event{at: r.now + cold, class: classReady, ref: int32(i)})
	return nil
}

// ready makes a warming replica serve: it joins the routable list, in
// index order. A replica that left while warming is gone already.
func (r *runner) ready(i int) error {
	sc := r.scale
	rep := &r.reps[i]
	if rep.state != stateWarming {
		return nil
	}
	rep.state, rep.readyAt = stateServing, r.now
	sc.warming--
	k := len(sc.routable)
	for k > 0 && sc.routable[k-1] > int32(i) {
		k--
	}
	sc.routable = append(sc.routable, 0)
	copy(sc.routable[k+1:], sc.routable[k:])
	sc.routable[k] = int32(i)
	r.view.n = len(sc.routable)
	sc.changed = r.now
	r.wakeGateway() // a replica with room for the gateway's queue
	return nil
}

// depart takes one replica out of the fleet: a warming one if any (the
// last requested), else the serving one that became ready last (at the
// same instant, the higher index); Kubernetes' ReplicaSet deletes pods in
// that order (controller.ActivePodsWithRanks).
func (r *runner) depart() error {
	sc := r.scale
	sc.leaves++
	if sc.warming > 0 {
		for i := len(r.reps) - 1; i >= 0; i-- {
			if rep := &r.reps[i]; rep.state == stateWarming {
				sc.warming--
				r.retire(rep)
				return nil
			}
		}
	}
	if len(sc.routable) <= 1 {
		return fmt.Errorf("sim: Fleet.Autoscale: a leave would take the last serving replica (an internal error: Min >= 1 keeps one)")
	}
	k := 0
	for j, i := range sc.routable {
		if a, b := &r.reps[i], &r.reps[sc.routable[k]]; a.readyAt > b.readyAt || a.readyAt == b.readyAt && i > sc.routable[k] {
			k = j
		}
	}
	i := int(sc.routable[k])
	sc.routable = append(sc.routable[:k], sc.routable[k+1:]...)
	r.view.n = len(sc.routable)
	sc.changed = r.now
	rep := &r.reps[i]
	rep.state, rep.drainAt = stateDraining, r.now
	sc.draining++
	if sc.cfg.Drain.HandBack {
		if err := r.handBack(rep); err != nil {
			return err
		}
	}
	if rep.state != stateDraining { // a hand-back took all it held
		return nil
	}
	if rep.held == 0 {
		r.drained(rep)
		return nil
	}
	if d := sc.cfg.Drain.Timeout; d > 0 {
		r.events.push(event{at: r.now + d, class: classDrain, ref: int32(i)})
	}
	return nil
}

// retire marks a replica gone now: it stops costing.
func (r *runner) retire(rep *replica) {
	rep.state, rep.goneAt = stateGone, r.now
}

// drained is hold's news that a draining replica holds nothing: it is
// gone.
func (r *runner) drained(rep *replica) {
	r.scale.draining--
	r.retire(rep)
}

// handBack returns a draining replica's never-scheduled requests to the
// router, now, in the order it took them; each keeps its arrival, its
// client deadline and its place in the run.
func (r *runner) handBack(rep *replica) error {
	sc := r.scale
	if err := r.interrupt(rep, true); err != nil {
		return err
	}
	sc.refs = rep.eng.Unstarted(sc.refs[:0])
	for _, ref := range sc.refs {
		if err := rep.edit().Abort(r.now, ref); err != nil {
			return fmt.Errorf("sim: handing back request %d: %w (an internal error)", r.slots[ref].rec.ID, err)
		}
		if r.roots != nil {
			r.roots.out(rep.idx, r.slots[ref].prefix)
		}
		if r.steps != nil {
			rep.aborted = append(rep.aborted, abortedRef{ref, r.slots[ref].rec.ID})
		}
		r.hold(rep, -1)
		r.sysOut()
		sc.handedBack++
		i, err := r.route(&r.slots[ref])
		if err != nil {
			return err
		}
		r.routed++
		if err := r.enter(ref, i, false); err != nil {
			return err
		}
	}
	return nil
}

// drainDeadline aborts what a draining replica still holds when its
// Drain.Timeout runs out, in slot order.
func (r *runner) drainDeadline(i int) error {
	sc := r.scale
	rep := &r.reps[i]
	if rep.state != stateDraining {
		return nil
	}
	sc.refs = sc.refs[:0]
	for ref := range r.slots {
		if s := &r.slots[ref]; s.live && s.rec.Sent && !s.queued && s.rec.Replica == i {
			sc.refs = append(sc.refs, int32(ref))
		}
	}
	reason := fmt.Sprintf("aborted: replica %d drained for Fleet.Autoscale.Drain.Timeout (%v) and stopped", i, sc.cfg.Drain.Timeout)
	for _, ref := range sc.refs {
		sc.drained++
		if err := r.drop(rep, ref, StatusErrored, reason); err != nil {
			return err
		}
	}
	return nil
}

// routableLen is the number of replicas the gateway may send to: the
// serving replicas of an autoscaled fleet, else every replica.
func (r *runner) routableLen() int {
	if r.scale != nil {
		return len(r.scale.routable)
	}
	return len(r.reps)
}

// routableAt is the fleet index of the routable replica at position p.
func (r *runner) routableAt(p int) int {
	if r.scale != nil {
		return int(r.scale.routable[p])
	}
	return p
}

// routablePos is the position of routable replica i.
func (r *runner) routablePos(i int) int {
	if r.scale == nil {
		return i
	}
	p, _ := slices.BinarySearch(r.scale.routable, int32(i))
	return p
}
