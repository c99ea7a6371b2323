package sim

import (
	"math"
	"time"
)

// ScaleSummary is what an autoscaled fleet (Fleet.Autoscale) did over the
// run: the replica-time it paid for, by state, over the declared window,
// its joins and leaves, and a sample of the fleet at every tick of the
// controller. Summary.Scale is nil for a fixed fleet, and in a summary
// made from records alone (Summarize): records do not say when replicas
// came and went.
//
// A replica costs from the tick that requests it to the instant it is
// gone: Warming (its cold start), Serving (in the router's view) and
// Draining (out of it, finishing what it held). ReplicaHours is their sum,
// what a cloud bills: a price per replica-hour times ReplicaHours is what
// the window cost (Cost). The replicas the run starts with serve from 0.
// Each figure is clipped to the declared window, as Summary's integrals
// are, and summed exactly, in nanoseconds, before it is turned to hours.
type ScaleSummary struct {
	Warming, Serving, Draining float64 // replica-hours in the window
	ReplicaHours               float64 // Warming + Serving + Draining
	// MeanServing is Serving over the window's hours: the mean number of
	// replicas serving. NaN for an empty window.
	MeanServing float64
	// Joins and Leaves are the replicas the controller requested and
	// removed over the whole run (a leave of a warming replica included);
	// PeakReplicas the largest fleet it held at once, serving, warming or
	// draining.
	Joins, Leaves, PeakReplicas int
	// HandedBack is the requests draining replicas handed back to the
	// router (Drain.HandBack), Drained those aborted at a drain deadline
	// (Drain.Timeout).
	HandedBack, Drained int
	// Timeline is the fleet at every tick of the controller, in order,
	// and at the run's end when a request arrived or a measured one
	// ended after the last tick (a tick that nothing would follow is
	// dropped: sim.Autoscale), so that its samples count every arrival
	// and every measured end.
	Timeline []ScaleSample
}

// ScaleSample is the fleet at one tick, after the tick acted, and what
// happened since the previous tick (or the start of the run).
type ScaleSample struct {
	At time.Duration
	// Desired is the size the controller set (after Behavior and [Min,
	// Max]); Serving, Warming and Draining the replicas in each state.
	Desired, Serving, Warming, Draining int
	// Arrived is the requests that arrived since the previous tick; Ended
	// and Good the measured requests that ended since, and of those the
	// ones that met their SLO: Good/Ended is the attainment of the
	// interval.
	Arrived, Ended, Good int
}

// Cost is what the window's replica-hours cost at price per
// replica-hour.
func (s *ScaleSummary) Cost(pricePerReplicaHour float64) float64 {
	return s.ReplicaHours * pricePerReplicaHour
}

// noteTick samples the fleet at the tick that just acted (tick).
func (sc *scaling) noteTick(r *runner, desired int) {
	sc.timeline = append(sc.timeline, ScaleSample{At: r.now, Desired: desired, Serving: len(sc.routable), Warming: sc.warming,
		Draining: sc.draining, Arrived: r.arrived - sc.lastArrived, Ended: sc.ended, Good: sc.good})
	sc.lastArrived, sc.ended, sc.good = r.arrived, 0, 0
	sc.peak = max(sc.peak, len(sc.routable)+sc.warming+sc.draining)
}

// summary is the run's ScaleSummary over the declared window [opens,
// closes).
func (sc *scaling) summary(r *runner, opens, closes time.Duration) *ScaleSummary {
	if r.arrived > sc.lastArrived || sc.ended > 0 { // what the last tick did not see
		if n := len(sc.timeline); n > 0 && sc.timeline[n-1].At == r.now { // after a tick at this very instant: its sample takes it
			last := &sc.timeline[n-1]
			last.Arrived, last.Ended, last.Good = last.Arrived+r.arrived-sc.lastArrived, last.Ended+sc.ended, last.Good+sc.good
		} else {
			sc.noteTick(r, sc.size())
		}
	}
	var warm, serve, drain, total wide
	clip := func(acc *wide, a, b time.Duration) {
		if b == Never {
			b = closes
		}
		if lo, hi := max(a, opens), min(b, closes); hi > lo {
			acc.add(1, uint64(hi-lo))
			total.add(1, uint64(hi-lo))
		}
	}
	first := func(a, b time.Duration) time.Duration { // the earlier that happened
		if a == Never || b != Never && b < a {
			return b
		}
		return a
	}
	initial := len(r.reps) - sc.joins
	for i := range r.reps {
		rep := &r.reps[i]
		if i >= initial { // a join: it warmed
			clip(&warm, rep.requested, first(rep.readyAt, rep.goneAt))
		}
		if rep.readyAt != Never {
			clip(&serve, rep.readyAt, first(rep.drainAt, rep.goneAt))
		}
		if rep.drainAt != Never {
			clip(&drain, rep.drainAt, rep.goneAt)
		}
	}
	hours := func(w wide) float64 { return w.seconds() / 3600 }
	s := &ScaleSummary{Warming: hours(warm), Serving: hours(serve), Draining: hours(drain),
		ReplicaHours: hours(total), Joins: sc.joins, Leaves: sc.leaves, PeakReplicas: max(sc.peak, initial),
		HandedBack: sc.handedBack, Drained: sc.drained, Timeline: sc.timeline, MeanServing: math.NaN()}
	if w := closes - opens; w > 0 {
		s.MeanServing = serve.seconds() / w.Seconds()
	}
	return s
}

// noteEnd counts a measured request that ended, for the tick's sample.
func (sc *scaling) noteEnd(rec *Record, slo SLO) {
	sc.ended++
	if slo.met(rec) {
		sc.good++
	}
}

// met reports whether a record met the SLO: ok, and within every bound
// (the collector's attribute, without its tallies).
func (s SLO) met(r *Record) bool {
	if r.Status != StatusOK {
		return false
	}
	itl := r.MaxITL
	if s.ITLSeries == PerToken {
		itl = r.MaxTokenITL
	}
	return r.TTFT() <= s.TTFT && itl <= s.ITL && !(r.Emitted > 1 && r.TPOT() > s.TPOT) && r.E2E() <= s.E2E
}

// present is the part of [opens, closes) the replica served or drained:
// from ready to gone (an autoscaled fleet's ReplicaSummary divides its
// busy time, KV occupancy and requests held by it, not by the window).
func (sc *scaling) present(rep *replica, opens, closes time.Duration) time.Duration {
	if rep.readyAt == Never {
		return 0
	}
	end := rep.goneAt
	if end == Never {
		end = closes
	}
	return max(0, min(end, closes)-max(rep.readyAt, opens))
}
