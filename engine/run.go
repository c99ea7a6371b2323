package engine

import (
	"time"

	"github.com/servesim/servesim/costmodel"
)

// extendRun turns the planned step into a run of identical pure-decode
// steps when nothing can differ between them (see ScheduleUntil). It must
// be called with exactly one step planned and priced.
func (e *Engine) extendRun(now, until time.Duration) {
	k := e.runLength(now, until)
	if k <= 1 {
		return
	}
	for _, s := range e.sched {
		e.take(s, e.need(s, s.computed+k))
		s.sched = k
	}
	e.plan.Steps = k
}

// runLength is the number of identical steps the plan may stand for.
func (e *Engine) runLength(now, until time.Duration) int {
	p := &e.plan
	if len(p.Batch.Prefill) > 0 || len(p.Preempted) > 0 || len(p.Started) > 0 || len(e.sched) != len(e.running) {
		return 1
	}
	// Every step must start before until: now + (k-1)·d < until.
	d := p.StepTime
	k := int((until - now + d - 1) / d)
	for _, s := range e.sched {
		k = min(k, s.req.Output-s.emitted) // none finishes before the last step
	}
	if k <= 1 {
		return k
	}
	k = e.fitBlocks(k)
	if !e.samePrice(k) {
		k = e.fitPrice(k)
	}
	return k
}

// fitBlocks is the largest j <= k whose run needs no more blocks than it
// may draw on (the first step's blocks are already allocated): a
// pure-decode run never preempts. It may draw on evictable cached blocks
// only when no eviction could let a waiting request in: without eviction
// each step leaves fewer blocks for admission, so a request that did not
// fit in the first step fits in none of the run; but evicting a cached unit
// the head of the waiting queue would reference frees the whole unit for
// one block, and may let it in (stepwise, it would be admitted then).
func (e *Engine) fitBlocks(k int) int {
	avail := e.available()
	if e.evictionMayAdmit() {
		avail = e.free
	}
	needs := func(j int) bool {
		n := 0
		for _, s := range e.sched {
			n += e.need(s, s.computed+j)
		}
		return n <= avail
	}
	if needs(k) { // the usual case: blocks to spare
		return k
	}
	lo, hi := 1, k-1 // needs(lo) holds
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if needs(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// evictionMayAdmit reports whether evicting cached units during a run could
// change whether the head of the waiting queue is admitted: it is waiting,
// admission is not ruled out by the sequence cap or the budget, and it
// would reference cached units.
func (e *Engine) evictionMayAdmit() bool {
	if e.waiting.len() == 0 || len(e.running) >= e.cfg.MaxSeqs {
		return false
	}
	if !e.cfg.DisableChunkedPrefill && len(e.sched) >= e.cfg.MaxBatchedTokens {
		return false // the decodes use the whole budget
	}
	units, _, _, _ := e.hits(e.waiting.peek())
	return len(units) > 0
}

// samePrice reports whether the k-th step of the run is priced like the
// first. Models are non-decreasing in context, so then every step between is
// priced the same too.
func (e *Engine) samePrice(k int) bool {
	e.shifted = e.shifted[:0]
	for _, c := range e.plan.Batch.Decode {
		e.shifted = append(e.shifted, c+k-1)
	}
	return e.model.StepTime(costmodel.Batch{Decode: e.shifted}) == e.plan.StepTime
}

// fitPrice is the largest j < k whose j-th step is priced like the first.
func (e *Engine) fitPrice(k int) int {
	lo, hi := 1, k-1 // samePrice(1) holds
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if e.samePrice(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
