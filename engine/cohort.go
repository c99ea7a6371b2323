package engine

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The decode cohort: the running requests in a decode streak, kept in
// aggregate so that a step costs O(1) in them, not a walk.
//
// A request joins when, at the head of the running list, it is a plain
// decode (it emitted at the end of the last outcome, and its one known
// token not in KV is the one it samples next) holding exactly the blocks of
// its computed tokens. The members are the running list's first requests,
// in order (e.running holds the others, after them). Each member's
// computed, known and emitted tokens are its fields plus the steps the
// cohort has decoded since the fields were written (tick − t0), and its
// anonymous blocks those of its computed tokens and of the steps whose
// blocks the cohort has taken ahead of them (ahead).
//
// A step plans the cohort at once when its members fit the token budget
// and the blocks they need are free: then each of them decodes one token,
// in any order, and none is preempted, exactly as the walk would have it.
// Their blocks are counted from the residues of their computed tokens as
// residues.go counts a run's, and taken in one call. Otherwise, and when
// RecordSteps is on, the members are written back into the running list
// (materialize) and the step is planned by the walk.
//
// The price of a step needs its decodes' contexts, which the cohort does
// not keep: it runs only for a cost model that says its price does not
// depend on them (costmodel.ContextFree, as Frozen, the Atlas default),
// and only for a driver that asked for streaks to be left out of the
// outcome (OmitStreaks), so that completing a step does not list them
// either. Plan.Batch.Decode then lists the contexts of the decodes outside
// the cohort, and Plan.Cohort counts the cohort's.
//
// A member finishes at a known tick (the cohort's finish heap), so the
// longest run none finishes before is read off the heap, and a step's
// finishers are popped from it and reported in running order.
//
// The walk is the slow twin: FuzzEngine drives an engine without the
// cohort beside one with it and compares every answer; sim's differential
// tests compare a run with it against the step-by-step run.
type cohort struct {
	on      bool    // the engine keeps a cohort
	members []*seq  // in running order, before every request of e.running
	tick    int     // decode steps the cohort has taken: its clock
	ahead   int     // steps whose blocks the members hold beyond their computed tokens
	count   []int32 // members by (computed − t0) mod BlockSize
	suf     []int32 // suf[k] = Σ count[k:], suf[BlockSize] = 0: the members
	q       int     // Σ ⌊(computed − t0) / BlockSize⌋ over the members
	fin     finHeap // members by the tick of their last token
	planned int     // members the plan in flight schedules
	joins   uint64  // members so far: a member's rank is its running order
	zeros   []int   // decode contexts for a context-free price
	scratch []*seq  // finishers, and the running list being rebuilt
}

// finHeap orders members by the tick at which they emit their last token.
type finHeap []*seq

func (h finHeap) Len() int           { return len(h) }
func (h finHeap) Less(i, j int) bool { return h[i].finTick < h[j].finTick }
func (h finHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].finIdx, h[j].finIdx = i, j
}
func (h *finHeap) Push(x any) {
	s := x.(*seq)
	s.finIdx = len(*h)
	*h = append(*h, s)
}
func (h *finHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.finIdx = -1
	return s
}

// setCohort decides whether the engine keeps a cohort, after a setting
// changed. A cohort that is no longer kept is written back into the
// running list at the next planning.
func (e *Engine) setCohort() {
	e.co.on = e.omit && !e.noCohort && e.ctxFree && e.residuesServe() &&
		!e.record && !e.cfg.DisableChunkedPrefill && e.cfg.SpeculativeTokens == 0
	if e.co.on && e.co.count == nil {
		e.co.count = make([]int32, e.cfg.BlockSize)
		e.co.suf = make([]int32, e.cfg.BlockSize+1)
		e.co.zeros = make([]int, e.cfg.MaxSeqs)
	}
}

// countMember adds d members whose computed tokens when the clock read 0
// would be c (computed − t0) to the counts: O(BlockSize), once per join or
// leave, so that coBlocks is O(1) per step.
func (e *Engine) countMember(c, d int) {
	co := &e.co
	r := c & (e.cfg.BlockSize - 1)
	co.count[r] += int32(d)
	for k := range co.suf[:r+1] {
		co.suf[k] += int32(d)
	}
	co.q += d * (c >> e.shift)
}

// nrunning is the number of running requests, in the cohort or not.
func (e *Engine) nrunning() int { return len(e.co.members) + len(e.running) }

// coBlocks is Σ ⌈(c + m) / BlockSize⌉ over the members, c a member's
// computed tokens now: the blocks they hold m steps ahead.
//
// A member counted with residue r (its computed tokens are B·⌊C/B⌋ + r +
// tick) holds ⌊C/B⌋ + a + ⌈(r + b) / B⌉ blocks, where tick + m = B·a + b
// (0 ≤ b < B); and ⌈(r + b) / B⌉ is 0 when r + b = 0, 2 when r + b > B,
// and 1 otherwise: so the sum is Σ⌊C/B⌋ + N·(a + 1), less the members at
// residue 0 when b = 0, plus those above B − b (a suffix sum) when not.
func (e *Engine) coBlocks(m int) int {
	co := &e.co
	bs := e.cfg.BlockSize
	t := co.tick + m
	a, b := t>>e.shift, t&(bs-1)
	n := int(co.suf[0])
	sum := co.q + n*(a+1)
	if b == 0 {
		return sum - int(co.count[0])
	}
	return sum + int(co.suf[bs-b+1])
}

// coBlockSteps is Σ over the members of Σ_{x=c+1..c+j} ⌈x / BlockSize⌉:
// the blocks they hold summed over their next j steps.
//
// The clock grows without bound, so it enters as t = B·a + b: adding B·a
// to every argument adds j·a to each member's sum (⌈(x + B·a) / B⌉ =
// a + ⌈x / B⌉), and blockSum only ever sees small arguments.
func (e *Engine) coBlockSteps(j int) int {
	co := &e.co
	bs := e.cfg.BlockSize
	a, b := co.tick>>e.shift, co.tick&(bs-1)
	sum := j * (co.q + int(co.suf[0])*a)
	for r, n := range co.count {
		if n != 0 {
			sum += int(n) * (e.blockSum(r+b+j) - e.blockSum(r+b))
		}
	}
	return sum
}

// syncMember writes a member's fields: its tokens now, and its anonymous
// blocks.
func (e *Engine) syncMember(s *seq) {
	d := e.co.tick - s.t0
	s.computed += d
	s.known += d
	s.emitted += d
	s.t0 = e.co.tick
	s.anon = e.blocksFor(s.computed+e.co.ahead) - len(s.ids)
}

// joinCohort moves the running list's leading plain decodes into the
// cohort (planning, nothing in flight).
func (e *Engine) joinCohort() {
	co := &e.co
	k := 0
	for _, s := range e.running {
		if !(s.emitted > 0 && s.known-s.computed == 1 && s.look == 0 && s.lastMove == e.move && e.move != 0 &&
			s.blocks() == e.blocksFor(s.computed)) {
			break
		}
		s.member, s.t0, s.rank = true, co.tick, co.joins
		co.joins++
		e.countMember(s.computed-co.tick, 1)
		s.finTick = co.tick + s.req.Output - s.emitted
		heap.Push(&co.fin, s)
		co.members = append(co.members, s)
		k++
	}
	if k > 0 {
		n := copy(e.running, e.running[k:])
		clear(e.running[n:])
		e.running = e.running[:n]
	}
}

// uncount takes a synced member out of the cohort's counts and its heap.
func (e *Engine) uncount(s *seq) {
	co := &e.co
	e.countMember(s.computed-co.tick, -1)
	if s.finIdx >= 0 {
		heap.Remove(&co.fin, s.finIdx)
	}
	s.member = false
}

// leaveCohort takes one member out of the cohort (an abort), its fields
// written.
func (e *Engine) leaveCohort(s *seq) {
	e.syncMember(s)
	e.uncount(s)
	co := &e.co
	for i, m := range co.members {
		if m == s {
			copy(co.members[i:], co.members[i+1:])
			co.members[len(co.members)-1] = nil
			co.members = co.members[:len(co.members)-1]
			return
		}
	}
	panic("engine: invariant cohort-membership broken: a member is not in the cohort")
}

// materialize writes every member back into the running list, ahead of
// the others, and empties the cohort (planning, nothing in flight).
func (e *Engine) materialize() {
	co := &e.co
	if len(co.members) == 0 {
		return
	}
	for _, s := range co.members {
		e.syncMember(s)
		s.member, s.finIdx = false, -1
		s.lastMove = e.move // it emitted in every outcome since it joined
	}
	clear(co.fin)
	co.fin = co.fin[:0]
	clear(co.count)
	clear(co.suf)
	co.q = 0
	list := append(append(co.scratch[:0], co.members...), e.running...)
	co.scratch = e.running[:0]
	e.running = list
	clear(co.members)
	co.members = co.members[:0]
}

// planCohort schedules the cohort's members for the step being planned,
// one token each, when they fit budget and the free blocks; otherwise it
// writes them back into the running list for the walk. It returns the
// budget left.
func (e *Engine) planCohort(budget int) int {
	co := &e.co
	if !co.on {
		e.materialize() // the cohort was given up
		return budget
	}
	e.joinCohort()
	n := len(co.members)
	if n == 0 {
		return budget
	}
	need := e.coBlocks(1) - e.coBlocks(0)
	if n > budget || need > e.available() {
		e.materialize() // a member is left out or preempts: walk
		return budget
	}
	e.pool.take(need)
	co.ahead, co.planned = 1, n
	e.plan.Cohort = n
	e.minLeft = min(e.minLeft, co.fin[0].finTick-co.tick)
	return budget - n
}

// priceBatch is the batch the cost model prices: the plan's, with the
// cohort's decodes as contexts it does not read.
func (e *Engine) priceBatch() costmodel.Batch {
	b := e.plan.Batch
	if n := e.plan.Cohort; n > 0 {
		b.Decode = e.co.zeros[:n+len(b.Decode)]
	}
	return b
}

// completeCohort applies steps decode steps to the cohort's members: their
// tokens advance by the clock, and those whose last token it was are
// reported, in running order, and leave. It returns them (valid until the
// next call), to be freed after the other requests' outcomes.
func (e *Engine) completeCohort(steps int, done bool) []*seq {
	co := &e.co
	if e.plan.Cohort == 0 {
		return nil
	}
	co.tick += steps
	co.ahead -= steps
	if done {
		co.ahead, co.planned = 0, 0
	}
	e.outstanding -= steps * len(co.members)
	fin := co.scratch[:0]
	for len(co.fin) > 0 && co.fin[0].finTick <= co.tick {
		fin = append(fin, heap.Pop(&co.fin).(*seq))
	}
	if e.prev == 0 && e.omit { // not back to back: every member is listed
		for _, s := range co.members {
			em := Emit{Ref: s.req.Ref, Tokens: steps}
			if s.finIdx < 0 && s.finTick <= co.tick {
				em.Done = true
			}
			e.emit(s, em)
		}
		if len(fin) > 0 {
			fin = e.sortByRank(fin)
		}
	} else {
		e.out.Streak += len(co.members) - len(fin)
		if len(fin) > 0 {
			fin = e.sortByRank(fin)
			for _, s := range fin {
				e.out.Emitted = append(e.out.Emitted, Emit{Ref: s.req.Ref, Tokens: steps, Done: true})
			}
		}
	}
	if len(fin) == 0 {
		co.scratch = fin
		return nil
	}
	for _, s := range fin {
		e.syncMember(s)
		e.countMember(s.computed-co.tick, -1)
		s.member = false
	}
	k := 0
	for _, s := range co.members {
		if s.member {
			co.members[k] = s
			k++
		}
	}
	clear(co.members[k:])
	co.members = co.members[:k]
	co.scratch = fin
	return fin
}

// sortByRank sorts a few members into running order.
func (e *Engine) sortByRank(a []*seq) []*seq {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].rank < a[j-1].rank; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	return a
}

// truncateCohort gives back the blocks the members took for the steps of
// the plan in flight that will not run: all of them (Truncate before the
// plan's first step).
func (e *Engine) truncateCohort() {
	co := &e.co
	if co.planned == 0 {
		return
	}
	e.pool.pushRun(e.coBlocks(co.ahead) - e.coBlocks(0))
	co.ahead, co.planned = 0, 0
}

// abortMember is Abort of a member: it leaves the cohort with its fields
// written, and is freed at once (the cohort's outcome will not list it).
func (e *Engine) abortMember(now time.Duration, s *seq) error {
	co := &e.co
	inPlan := e.inFlight && e.plan.Cohort > 0
	if inPlan && e.plan.Steps > 1 {
		return fmt.Errorf("%w: request %d at %v, %d steps of %v from %v", ErrUnsettledRun, s.req.Ref, now, e.plan.Steps, e.plan.StepTime, e.plan.Start)
	}
	e.leaveCohort(s)
	if inPlan {
		co.planned--
		if e.lazy {
			e.live--
		}
	}
	e.drop(s)
	e.release(s)
	return nil
}
