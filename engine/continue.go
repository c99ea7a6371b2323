package engine

import (
	"time"

	"github.com/servesim/servesim/costmodel"
)

// Continue plans, at instant now, the move that follows the one Complete
// has just ended there, when that move is the pure-decode run of the
// decode cohort that ScheduleUntil(now, until) would plan, and returns
// it; otherwise it returns nil and plans nothing, and the driver plans
// with ScheduleUntil as usual, once every event at now is handled.
//
// It plans when the move that ended was a decode step (or run) of the
// cohort alone (Plan.Cohort > 0, no other request in its batch), every
// running request is still in the cohort, nothing waits, and the cost
// model prices the next step as it priced the last (costmodel.ContextFree,
// with one decode priced as many: Frozen, the Atlas default). Step by step,
// the plan at now then decodes the same requests, less those that
// finished, at the same price: so the run goes on through a request's
// finish without the planning a new move costs (the cohort's plan, its
// joins, the admission check, the price, the run's length). Its length is
// ScheduleUntil's: its steps start before until, none but its last sees a
// member's last token, and the blocks they need are free.
//
// Unlike ScheduleUntil, a driver may call it at the step end itself,
// before its other events at now: the run takes its blocks lazily, its
// first step's too, so until an instant after now the engine reads as a
// step-by-step engine would before planning (its free blocks, its cache).
// An event at now that would change the plan is a join that does not
// leave it unchanged (JoinChangesNothing), or an abort; as for any run,
// the driver first cuts it with Truncate(now) (after CompleteUntil(now),
// for an abort), which drops every step of it, as if it had not been
// planned.
func (e *Engine) Continue(now, until time.Duration) *Plan {
	p, co := &e.plan, &e.co
	if len(p.Batch.Prefill) > 0 || p.Cohort == 0 || len(p.Batch.Decode) > 0 || len(e.running) > 0 || e.waiting.len() > 0 ||
		co.n == 0 || e.inFlight || p.End != now || !co.on || until <= now || !e.flatDecode(p.StepTime) {
		return nil
	}
	d := p.StepTime
	left := e.finMin() - co.tick            // steps until a member's last token
	k := int(min((until-now-1)/d+1, 1<<40)) // every step starts before until
	k = min(k, left)
	// The blocks: ScheduleUntil's cohort plan takes its first step's
	// (coGrow(0, 1)) and its run fits the rest (fitBlocks, coGrow(1, j)),
	// so the run is the longest whose steps need no more than are free.
	// Nothing waits, so no admission could get easier (fitBlocks).
	if avail := e.available(); co.n > e.cfg.MaxBatchedTokens || e.coGrow(0, k) > avail {
		if co.n > e.cfg.MaxBatchedTokens || e.coGrow(0, 1) > avail {
			return nil // the walk plans it: a member is left out, or preempts
		}
		k = e.fitCohort(k, avail)
	}
	// What resetPlan and the cohort's plan would write: the last plan
	// scheduled the cohort alone (no Batch, none started, none preempted
	// but into the waiting queue, which is empty) and counted no residues.
	e.sched = e.sched[:0]
	p.Start, p.Steps, p.StepTime, p.End, p.Cohort = now, k, d, now+time.Duration(k)*d, co.n
	p.Preempted = p.Preempted[:0] // preempted then, and aborted since
	e.minLeft = left
	e.probeK, e.runHead = 0, 0
	e.inFlight, e.lazy, e.runAlloc, e.live = true, true, 0, co.n
	return p
}

// fitCohort is the largest j < k whose first j steps the cohort's members
// find blocks for, given that the first step's fit and the k-th's do not.
func (e *Engine) fitCohort(k, avail int) int {
	lo, hi := 1, k-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if e.coGrow(0, mid) <= avail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// flatDecode reports whether the model prices every pure-decode step d,
// whatever its decodes: it reads none of their contexts
// (costmodel.ContextFree) and prices one decode d, as it priced the move
// that was d. Models are non-decreasing in the decodes a step has, so a
// step of any number between costs d too.
func (e *Engine) flatDecode(d time.Duration) bool {
	if !e.ctxFree {
		return false
	}
	if !e.priced1 {
		e.price1 = e.model.StepTime(costmodel.Batch{Decode: []int{1}})
		e.priced1 = true
	}
	return d == e.price1
}
