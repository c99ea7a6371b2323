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

// fitBlocks is the largest j <= k whose run needs no more blocks than are
// free (the first step's blocks are already allocated): a pure-decode run
// never preempts. No step of the run could admit the waiting queue's head,
// which the first could not: each block a step takes leaves one fewer free,
// and if it evicts a cached block the head would reference, that block is
// the deepest of the head's hits (blocks are freed last first, and a
// request holding a block holds those before it), so the head needs one
// block more and pins one less: its admission never gets easier.
func (e *Engine) fitBlocks(k int) int {
	avail := e.available()
	if e.headFirst && e.waiting.len() > 0 {
		// Freed first to last, an evicted hit may be the head of the
		// chain and cut every hit after it: admission may get easier.
		return 1
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
