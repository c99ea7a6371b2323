package engine

// A run's blocks in aggregate.
//
// Every request of a run of decode steps (see run.go) computes one token a
// step, so the blocks it holds during step m are ⌈(c + m) / B⌉, where c is
// its computed tokens when the run was planned and B the block size.
// Write c = B·q + r: that is q + ⌈(r + m) / B⌉. Summed over the run's
// requests it depends only on Σq and on how many of them have each
// residue r (0 ≤ r < B):
//
//	Σ_i ⌈(c_i + m) / B⌉ = Σq + Σ_r count[r]·⌈(r + m) / B⌉
//
// and so do the run's block-steps, Σ_i Σ_{x=c_i+a+1..c_i+b} ⌈x / B⌉ =
// (b − a)·Σq + Σ_r count[r]·(blockSum(r + b) − blockSum(r + a)). So the
// blocks a run needs (fitBlocks), takes (allocThrough) and holds over
// its steps (runBlockSteps) cost O(B) to count, however many requests the
// run has, instead of a walk of them each. The counts are taken as
// planChunked schedules each plain decode, at no extra walk.
//
// The blocks themselves are taken from the pool in one call: a run's
// blocks are anonymous, and taking n₁ then n₂ blocks from the free
// queue's head is taking n₁ + n₂. A request's own count of anonymous
// blocks is then stale until the run ends; it is derived (anonOf) when
// something reads it inside the run (Abort, Truncate dropping every step,
// Check) and written when the run's steps complete (decoded).
//
// The walks are kept as the slow twin (block sizes the counts cannot
// serve, not a power of two or above maxResidueBlock, recorded steps, and
// the tests' walkRuns: decideFast), held to the counts by the tests
// docs/fastpaths.md names.
type residues struct {
	on    bool    // the plan in flight keeps its run's blocks in aggregate
	count []int32 // the plan's plain decodes by computed tokens mod BlockSize; nil: walk
	q     int     // Σ ⌊computed / BlockSize⌋ over them
	base  int     // steps CompleteUntil has applied to them since
	calls int     // pubSteps calls that counted from them (tests read it)
}

// maxResidueBlock is the largest block size the counts serve: beyond it
// a run rarely has more requests than residues, and walking them is
// cheaper.
const maxResidueBlock = 64

// residuesServe reports whether the counts can serve this engine's runs.
func (e *Engine) residuesServe() bool { return servesResidues(e.cfg.BlockSize) }

// servesResidues reports whether the counts can serve runs of blocks of
// size b: a power of two, up to maxResidueBlock.
func servesResidues(b int) bool { return b&(b-1) == 0 && b <= maxResidueBlock }

// newResidues is the counts for blocks of size b: none (walk) when they
// cannot serve it.
func newResidues(b int) residues {
	if !servesResidues(b) {
		return residues{}
	}
	return residues{count: make([]int32, b)}
}

// resetResidues empties the counts for a new plan. Only a plan's inline
// decodes count (planChunked), so after a plan that had none they are
// still empty: clearing them was a call a move.
func (e *Engine) resetResidues() {
	if e.res.count != nil && e.inline > 0 {
		clear(e.res.count)
	}
	e.res.q, e.res.base, e.res.on = 0, 0, false
}

// useResidues reports whether the run being planned should keep its
// blocks in aggregate: every request of it was counted, no step is
// recorded (the step log notes each step's cached blocks as it takes
// them), and there are enough requests for the counts to be the cheaper.
func (e *Engine) useResidues() bool {
	return e.fast.residues && e.inline == len(e.sched) && 2*len(e.sched) >= e.cfg.BlockSize
}

// resBlocks is Σ_i ⌈(c_i + m) / B⌉ over the counted requests, where c_i
// is a request's computed tokens when the run was planned.
func (e *Engine) resBlocks(m int) int {
	b1 := e.cfg.BlockSize - 1
	sum := e.res.q
	for r, n := range e.res.count {
		if n != 0 {
			sum += int(n) * ((r + m + b1) >> e.sh())
		}
	}
	return sum
}

// resBlockSteps is Σ_i Σ_{x=c_i+a+1..c_i+b} ⌈x / B⌉: the blocks the
// counted requests hold summed over the steps after the run's a-th
// through its b-th.
func (e *Engine) resBlockSteps(a, b int) int {
	sum := (b - a) * e.res.q
	for r, n := range e.res.count {
		if n != 0 {
			sum += int(n) * (e.blockSum(r+b) - e.blockSum(r+a))
		}
	}
	return sum
}

// anonOf is the number of anonymous blocks s holds. Inside a run whose
// blocks are kept in aggregate, s's own count is stale: it holds the
// blocks for its computed tokens and the steps whose blocks were taken.
func (e *Engine) anonOf(s *seq) int {
	if e.res.on && s.sched > 0 && !s.aborted {
		return e.blocksFor(s.computed+e.runAlloc) - s.held
	}
	return s.anon
}

// leaveResidues writes s's count of blocks and takes it out of the run's
// counts: it leaves the run in flight (an abort in its last step).
func (e *Engine) leaveResidues(s *seq) {
	if !e.res.on || s.sched == 0 || s.aborted {
		return
	}
	s.anon = e.anonOf(s)
	c := s.computed - e.res.base // its computed tokens when the run was planned
	e.res.count[c&(e.cfg.BlockSize-1)]--
	e.res.q -= c >> e.sh()
}

// settleResidues writes every request's count of blocks and stops keeping
// the run's blocks in aggregate.
func (e *Engine) settleResidues() {
	if !e.res.on {
		return
	}
	for _, s := range e.sched {
		s.anon = e.anonOf(s)
	}
	e.res.on = false
}
