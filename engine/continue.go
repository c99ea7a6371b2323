package engine

import "time"

// Continue plans, at instant now, the move that follows the one Complete
// has just ended there, when that move is the pure-decode run of the
// decode cohort that ScheduleUntil(now, until) would plan, and returns
// it; otherwise it returns nil and plans nothing, and the driver plans
// with ScheduleUntil as usual, once every event at now is handled.
//
// It plans when nothing waits, every running request is in the cohort or
// joins it now (a plain decode that emitted at the end of the move, as a
// prompt's last chunk does), their next step's blocks are free, and the
// cost model reads no decode context (costmodel.ContextFree): step by
// step, the plan at now then decodes every running request, a token each,
// priced by how many there are, up to the first finish. So a run goes on
// through a request's finish, and after the step that prefilled a prompt,
// without the planning a new move costs (the walk of the running list,
// the admission check, the run's length): the price is the model's for
// that many decodes, read from one decode's when a step of at least as
// many was priced the same (a model flat in the count, as Frozen, the
// Atlas default, is priced once). Its length is ScheduleUntil's: its
// steps start before until, none but its last sees a member's last token,
// and the blocks they need are free.
//
// Unlike ScheduleUntil, a driver may call it at the step end itself,
// before its other events at now: the run takes its blocks lazily, its
// first step's too, so until an instant after now the engine reads as a
// step-by-step engine would before planning (its free blocks, its cache;
// which running requests the cohort keeps is not read). An event at now
// that would change the plan is a join that does not leave it unchanged
// (JoinChangesNothing), or an abort; as for any run, the driver first
// cuts it with Truncate(now) (after CompleteUntil(now), for an abort),
// which drops every step of it, as if it had not been planned.
func (e *Engine) Continue(now, until time.Duration) *Plan {
	p, co := &e.plan, &e.co
	if !e.fast.cont || e.waiting.len() > 0 || e.inFlight || p.End != now || until <= now || !e.allJoin() {
		return nil
	}
	e.joinCohort()
	n := co.n
	if n == 0 || n > e.cfg.MaxBatchedTokens || e.coGrow(0, 1) > e.available() {
		return nil // idle, or the walk plans it: a member is left out, or preempts
	}
	e.resetPlan(now)
	e.probeK, e.runHead = 0, 0 // no probe (a model that reads no context), nothing waits
	p.Cohort = n
	d := e.decodePrice(n)
	if d <= 0 {
		return nil // ScheduleUntil reports the model
	}
	left := e.finMin() - co.tick            // steps until a member's last token
	k := int(min((until-now-1)/d+1, 1<<40)) // every step starts before until
	k = min(k, left)
	// The blocks: ScheduleUntil's cohort plan takes its first step's
	// (coGrow(0, 1)) and its run fits the rest (fitBlocks, coGrow(1, j)),
	// so the run is the longest whose steps need no more than are free.
	// Nothing waits, so no admission could get easier (fitBlocks).
	if avail := e.available(); e.coGrow(0, k) > avail {
		k = lastTrue(1, k-1, func(j int) bool { return e.coGrow(0, j) <= avail })
	}
	p.Steps, p.StepTime, p.End = k, d, now+time.Duration(k)*d
	e.minLeft = left
	e.inFlight, e.lazy, e.runAlloc, e.live = true, true, 0, n
	return p
}

// allJoin reports whether every running request outside the cohort would
// join it at the next plan (joinCohort).
func (e *Engine) allJoin() bool {
	for _, s := range e.running {
		if !e.joins(s) {
			return false
		}
	}
	return true
}

// decodePrice is the model's price of a step of n decodes and nothing
// else, for a model that reads no decode context: one decode's price
// when a step of at least n was priced the same (models are
// non-decreasing in the decodes a step has), else the model's, read
// through the plan (price, whose Batch is the cohort's n decodes).
func (e *Engine) decodePrice(n int) time.Duration {
	if n <= e.flatTo {
		return e.price1
	}
	d := e.price()
	if d == e.price1 {
		e.flatTo = n
	}
	return d
}
