package engine

import (
	"time"

	"github.com/servesim/servesim/internal/runthrough"
)

// Runs through finishes: a continued run of the cohort's members alone
// (Continue) that goes on past the steps where members emit their last
// tokens, when a finish changes nothing of the next step but who is in
// it: nothing waits (no admission follows the finish), and the model
// prices every step of up to the run's decodes alike (flatTo: a step of
// fewer decodes costs the same). Step by step, the plan at such a finish
// decodes the members left, a token each, at the same price, and the
// finisher's blocks go to the free queue's tail: the run is those steps.
//
// The finishers stay counted in the cohort's aggregates until the run's
// steps are collected (Complete, CompleteUntil), as if they decoded on,
// and collecting gives back what they were counted for past their last
// step (their tokens, block-steps and outstanding tokens: thruFin). Their
// blocks are released at the collection, not at their steps' ends. That
// is exact when no block the run takes is one a finisher released inside
// it (the run's blocks fit in the free blocks at its start, all ahead of
// the tail: continueRun fits it so), and nothing inside the run sees
// which blocks the run has taken and evicted by then (no KV events, no
// admission: nothing waits, and the driver reads nothing inside it).
// Then, on a pool that has held blocks of content (runsDecided: no
// block is cached before it is set; the plan notes it in thruSkip), the
// run takes from the free
// queue's head what a step-by-step engine takes there and no more: not
// the finishers' blocks in their steps past their last (skipBlocks),
// which would evict cached blocks that the step-by-step engine keeps;
// and a finisher's blocks of content that another request still holds
// count as held in those steps (dropThrough). Not with FreeBlocksFirst
// and blocks of content, where a step-by-step engine's later steps take
// a finisher's never-cached blocks before evicting any cached one. On a
// pool that has held none, every block is anonymous, and the run takes
// the finishers' blocks past their last steps too (coGrow over every
// member), which collecting gives back: cheaper, the same blocks.
//
// So the pool's free count and Outstanding inside such a run are not a
// step-by-step engine's until its steps are collected: only a driver
// that reads neither inside a run and collects it before anything at an
// instant after its first finish inside (thruAt) may ask for such runs
// (internal/runthrough; sim's single replica does). Each finisher is
// listed at the run's collection with its own tokens, those of its steps
// (Emit.Tokens fewer than Outcome.Steps: it emitted its last at the end
// of the step that many after the outcome's first began), in the order
// of their steps, and in running order within one.
//
// The twin is the run that ends at the first finish (allow off), held to
// it by sim's TestRunsThroughFinishesAreStepwise and
// TestRunsThroughCachedFinishesAreStepwise, and to a step a move by
// TestRunsThroughFinishesAreSteps and TestRunsThroughCachedFinishesAreSteps
// (shared prefixes, small pools: runs that evict cached blocks). The
// state is runState's thruOK, thruAt (the run in flight goes on through
// a finish not collected yet when it is not noFinish), thruSkip and
// thru.

// noFinish is thruAt when no member finishes inside the move in flight:
// zero, which no finish inside a run is (its step ends after the run's
// start), and which the zero Engine holds.
const noFinish = time.Duration(0)

func init() {
	runthrough.Allow = func(x any, on bool) {
		e := x.(*Engine)
		e.thruOK = on
		if on && e.thru == nil {
			e.thru = &thruState{}
		}
	}
	runthrough.FinAt = func(x any) *time.Duration { return &x.(*Engine).thruAt }
}

// goesThrough reports whether a continued run of n members, each step
// priced d, may go on through finishes, on an engine whose driver asked
// for them (thruOK, which continueRun tests first): not with
// FreeBlocksFirst and blocks of content in the pool (see above).
func (e *Engine) goesThrough(n int, d time.Duration) bool {
	return n <= int(e.flatTo) && d == e.price1 && (e.pool.cached == 0 || !e.pool.split) && e.co.npub == 0 && !e.co.each && e.pool.pub == nil && !e.record && !e.cfg.RemoteKV
}

// lastFin is the tick of the last live member's last token.
func (e *Engine) lastFin() int {
	q := &e.co.fin
	m := -1
	for i := len(q.run) - 1; i >= q.head; i-- {
		if q.run[i].live() {
			m = q.run[i].tick
			break
		}
	}
	if len(q.heap) == 0 { // most runs: members finish in the order they joined (finqueue.go); RunAtlas 5,620 then 5,619 instructions a request
		return m
	}
	for _, x := range q.heap {
		if x.tick > m && x.live() {
			m = x.tick
		}
	}
	return m
}

// thruFin takes back what a member that finished over steps before the
// cohort's clock (a run through finishes) was counted for past its last
// step, once it has left the cohort's counts (completeCohort): its
// tokens, outstanding tokens and, from the outcome's block-steps, the
// blocks it did not hold in the steps after its last (it still holds
// their blocks, which its release gives back).
func (e *Engine) thruFin(s *seq, over int) {
	c := s.computed // as if it had decoded through the clock (syncMember)
	s.computed -= over
	s.known -= over
	s.emitted -= over
	e.outstanding += over
	sh := e.sh() // a cohort's block size is a power of two
	e.out.BlockSteps -= blockSumSh(c, sh) - blockSumSh(s.computed, sh)
	if e.thruSkip { // on a pool that has held blocks of content
		e.skipFin(s, over)
	}
}

// blockSumSh is blockSum(n, 1<<sh) for n >= 0, by shifts, inlined:
// with thruFin's two calls of the package's blockSum, which divides,
// RunAtlas took 5,624 instructions a request, 5,620 so (cachegrind's
// marginal count, as the budget test takes it).
func blockSumSh(n int, sh uint) int {
	q := n >> sh
	return (q*(q+1)/2)<<sh + (n-q<<sh)*(q+1)
}

// skipFin is thruFin's part on a pool that has held blocks of content
// (thruSkip), where the run took none of s's blocks for its steps after its last
// (skipBlocks): the blocks of content s holds and its release leaves
// held were held in those steps too (dropThrough).
func (e *Engine) skipFin(s *seq, over int) {
	x := s.anon + s.held - e.blocksFor(s.computed) // counted by syncMember, not taken
	s.anon -= x
	e.thru.skipped -= x
	if s.held > 0 && over > 0 {
		e.thru.held = append(e.thru.held, heldOver{s, over})
	}
}

// thruState is what a run through finishes on a pool that has held
// content keeps (Engine.thru): the blocks it did not take for its
// finishers' steps past their last, of those not collected yet
// (skipBlocks, skipFin), and the finishers collected last that hold
// blocks of content, in the order drop releases them, from drop on
// (dropThrough).
type thruState struct {
	skipped int
	held    []heldOver
	drop    int
}

// heldOver is a finisher inside a run through finishes with blocks of
// content, and the steps it was counted for past its last (thruFin).
type heldOver struct {
	s    *seq
	over int
}

// dropThrough releases the blocks of content of s, a finisher inside a
// run through finishes, which drop releases first in thru.held. thruFin
// took back every block s was counted for in its steps past its last;
// but a block another request still holds (a shared prefix's) stayed
// held in those steps, step by step, and it is held still once s
// releases it: so the outcome's block-steps get those back, over steps
// each. (A block that finishers alone held is freed by the last of them
// to release it, the last to finish: drop releases finishers in the
// order of their last steps.)
func (e *Engine) dropThrough(s *seq) {
	th := e.thru
	h := th.held[th.drop]
	if h.s != s {
		panic("engine: invariant run-through broken: a finisher released out of the order of its last step")
	}
	if th.drop++; th.drop == len(th.held) {
		th.held, th.drop = th.held[:0], 0
	}
	free, held := e.pool.free(), s.held
	e.releaseHeld(s)
	e.out.BlockSteps += h.over * (held - (e.pool.free() - free))
}

// skipBlocks is what coGrow(m0, m1) counts of the blocks of the members
// that finish inside the run in flight, in their steps after their last:
// the run does not take them (allocThrough), so that it takes, from the
// free queue's head, the blocks a step-by-step engine takes, no more. (A
// member whose last step is the f-th ahead of the cohort's clock holds
// ⌈(c + j) / BlockSize⌉ blocks j steps ahead as long as j <= f, c its
// tokens at the clock.) It reads the finish queue's entries before the
// m1-th step's end alone: the run's from its front, the heap's below
// those of its nodes that are (heapSkip).
func (e *Engine) skipBlocks(m0, m1 int) int {
	q := &e.co.fin
	t1 := e.co.tick + m1
	n := 0
	for i := q.head; i < len(q.run) && q.run[i].tick < t1; i++ {
		n += e.skipOf(q.run[i], m0, m1)
	}
	if len(q.heap) > 0 && q.heap[0].tick < t1 {
		n += e.heapSkip(0, t1, m0, m1)
	}
	return n
}

// heapSkip is skipBlocks' count over the finish heap's node i, whose
// tick is before t1, and the nodes below it.
func (e *Engine) heapSkip(i, t1, m0, m1 int) int {
	h := e.co.fin.heap
	n := e.skipOf(h[i], m0, m1)
	for c := 2*i + 1; c <= 2*i+2 && c < len(h); c++ {
		if h[c].tick < t1 {
			n += e.heapSkip(c, t1, m0, m1)
		}
	}
	return n
}

// skipOf is skipBlocks' count for one entry of the finish queue, whose
// tick is before the m1-th step ahead's end.
func (e *Engine) skipOf(x finEntry, m0, m1 int) int {
	if !x.live() {
		return 0
	}
	s := x.s
	c := s.computed + e.co.tick - s.t0 // its tokens at the cohort's clock (syncMember)
	return e.blocksFor(c+m1) - e.blocksFor(c+max(m0, x.tick-e.co.tick))
}

// setThruAt notes the first finish inside the run in flight through
// finishes, once its steps up to another are collected (thruAt: a run
// with none left inside it is a plain run).
func (e *Engine) setThruAt() {
	e.thruAt = noFinish
	if e.co.n == 0 {
		return
	}
	p := &e.plan
	if f := e.finMin() - e.co.tick; f < p.Steps {
		e.thruAt = p.Start + time.Duration(f)*p.StepTime
	}
}
