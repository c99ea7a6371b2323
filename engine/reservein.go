package engine

import "time"

// Reservations inside a run: the fast path "reserves" (docs/fastpaths.md).
//
// A Remote request handed to a decode replica inside a run of decode
// steps waits, step by step, for the plan of the run's next step: that
// plan schedules the running requests as the run's step does (nothing
// else changed), and its waiting loop then reserves the request's blocks
// if they fit (reserve), which changes no token of the step and none of
// the run's later steps but for their blocks. So instead of cutting the
// run at the Add (Truncate) and planning its next step afresh, a driver
// may ask ReserveLater for the instant that step starts and call
// ReserveInRun there, once everything at that instant is handled: the
// engine takes the blocks of the run's steps up to that one, then
// reserves, as the step's plan would, and cuts the run after that step
// only if its later steps no longer find their blocks (the plan of the
// first step that lacks them would preempt). The slow twin is the cut:
// Truncate at the Add, and the plan at the step's end.

// ReserveLater is called by a driver right after Add of a Remote request
// at now, inside the run in flight: it reports whether the run may go on
// uncut until the start of its next step, returned, where the driver
// calls ReserveInRun once every event at that instant is handled. It
// holds when the request waits alone (or behind, or before, requests
// handed over earlier inside the same step, whose reservation is pending
// at that step start, which it then joins: the same instant is
// returned, reserveWith), nothing landed waits, the step
// leaves it budget and a sequence slot (as it left the run's first
// step), the run is a plain run of decodes whose blocks are taken
// without noting each step (no recorded steps, no KV events, no block of
// shared output left to cache), and a step of it started before now and
// another starts at or after now. Otherwise the driver cuts the run
// (Truncate), as at an arrival. Any cut of the run before that step
// drops the reservation with it.
func (r *Runner) ReserveLater(now time.Duration) (at time.Duration, ok bool) {
	return (*Engine)(r).reserveLater(now)
}

// ReserveInRun is the waiting loop of the step of the run in flight that
// starts at now, which ReserveLater named: it reserves the waiting
// Remote requests' blocks, in the queue's order, while they fit, after
// the blocks of the run's steps up to this one, and returns the
// reservations (empty if the first did not fit: the requests wait, as
// step by step) and the move's End, which
// is this step's end if the run's later steps no longer find their
// blocks. It reports false, and does nothing, when the run was cut
// since, or now is not that step's start. Nothing may cut the run at now
// after it (Truncate(now) would drop this step): a transfer it starts
// must not land at once.
func (r *Runner) ReserveInRun(now time.Duration) (res []Reservation, end time.Duration, ok bool) {
	return (*Engine)(r).reserveInRun(now)
}

func (e *Engine) reserveLater(now time.Duration) (time.Duration, bool) {
	p := &e.plan
	if !e.fast.reserves || !e.inFlight || !e.lazy || e.resBefore > 0 || len(p.Batch.Prefill) > 0 || e.pubRun > 0 || e.headFirst {
		return 0, false
	}
	if e.pendAt > 0 && e.pendAt >= now {
		return e.reserveWith(now)
	}
	k := e.started(now) // steps started before now
	if k == 0 || k >= p.Steps {
		// A run planned at now (Continue, before the events at now):
		// step by step its first step is planned after them. Or its last
		// step is in flight: the plan at its end reserves.
		return 0, false
	}
	if e.waiting.len() != 1 || len(e.landed) > 0 || e.waiting.peek().rstate != remoteWaiting {
		return 0, false
	}
	if len(e.sched)+p.Cohort >= e.cfg.MaxBatchedTokens || e.nrunning() >= e.cfg.MaxSeqs {
		return 0, false // its waiting loop does not reach the request
	}
	e.pendAt = p.Start + time.Duration(k)*p.StepTime
	return e.pendAt, true
}

// reserveWith is reserveLater for a Remote request added while a
// reservation is pending at pendAt, the start of the run's next step
// (an earlier request handed over inside this step: pendAt is at or
// after now, and no step starts in between): that step's waiting loop
// reaches this one too, behind the others or before them in the
// queue's order, and reserves each while they fit, as ReserveInRun
// does. It holds while every waiting request is a Remote one not yet
// reserved (the queue held none but them when the first was deferred,
// and a request added otherwise cuts the run, which drops the
// reservation) and nothing landed waits; the step's budget and
// sequence slot are the first request's, as reservations take
// neither. Until issue 41's twenty-sixth round such a request cut the
// run (Truncate), and the plan at the step's end reserved them
// (sim's twins.reserveAlone keeps that): 218 of 2,000 requests in
// Regime/Disagg.
func (e *Engine) reserveWith(now time.Duration) (time.Duration, bool) {
	if len(e.landed) > 0 || e.started(now) >= e.plan.Steps {
		return 0, false
	}
	q := &e.waiting
	for _, it := range q.items {
		if it.s.rstate != remoteWaiting {
			return 0, false
		}
	}
	for _, it := range q.run[q.head:] {
		if it.s != nil && it.s.rstate != remoteWaiting {
			return 0, false
		}
	}
	return e.pendAt, true
}

func (e *Engine) reserveInRun(now time.Duration) ([]Reservation, time.Duration, bool) {
	p := &e.plan
	if !e.inFlight || e.pendAt != now { // a cut since dropped it (truncate)
		return nil, 0, false
	}
	e.pendAt = 0
	k := e.started(now) // this step is the k+1-th of the plan as it stands (CompleteUntil moves its Start)
	e.allocThrough(k + 1)
	p.Reserved = p.Reserved[:0]
	held := e.pool.held()
	for e.waiting.len() > 0 { // the step's waiting loop: only Remote requests wait (reserveLater, reserveWith)
		s := e.waiting.peek()
		if s.rstate != remoteWaiting {
			panic("engine: invariant reserve-in-run broken: a request other than a Remote one waits")
		}
		if !e.reserve(s) {
			break // it waits, and those behind it
		}
	}
	if len(p.Reserved) == 0 {
		return nil, p.End, true
	}
	e.resHeld, e.resBefore = e.pool.held()-held, k
	if e.runAhead(p.Steps) > e.available() { // the run ends after this step
		p.Steps, e.runAlloc = k+1, k+1
		p.End = p.Start + time.Duration(k+1)*p.StepTime
	}
	return p.Reserved, p.End, true
}

// resCorrect is the blocks a reservation inside the run in flight did
// not hold in the first j steps of the plan as it stands, negated, those
// steps being collected (runBlockSteps counts the blocks held at
// collection, the reservation's too, as held by every step).
func (e *Engine) resCorrect(j int) int {
	n := min(j, e.resBefore) * e.resHeld
	e.resBefore -= min(j, e.resBefore)
	return -n
}

// runAhead is the number of blocks the run in flight's steps after those
// whose blocks are taken need, through its m-th step: allocThrough(m)'s
// count for a run of decodes whose steps are not noted one by one.
func (e *Engine) runAhead(m int) int {
	n := 0
	if e.plan.Cohort > 0 {
		n = e.coGrow(e.co.ahead, m)
	}
	if e.res.on {
		base := e.res.base
		return n + e.resBlocks(base+m) - e.resBlocks(base+e.runAlloc)
	}
	for _, s := range e.sched {
		if !s.aborted {
			n += e.need(s, s.computed+m)
		}
	}
	return n
}
