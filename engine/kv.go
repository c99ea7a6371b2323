package engine

// KV block accounting. A request's tokens in KV (computed, plus those
// scheduled in the step in flight) occupy ceil(tokens / BlockSize) blocks:
// shared ones, in prefix-cache units it references, and its own. Every
// block is free, owned by one request, or held by one cache unit:
//
//	free + Σ owned + Σ unit blocks = KVBlocks
//
// Cache units that no request references are evictable: allocation takes
// free blocks first, then evicts the least recently released units.

// need is the number of blocks s lacks to hold tokens.
func (e *Engine) need(s *seq, tokens int) int {
	return e.blocksFor(tokens) - s.blocks - s.shared
}

// available is what an allocation may draw on: free blocks plus evictable
// cached ones.
func (e *Engine) available() int { return e.free + e.cache.evictable }

// take gives s n more blocks of its own, evicting cached units when the
// free blocks do not suffice. The caller has checked n <= available().
func (e *Engine) take(s *seq, n int) {
	if n <= 0 {
		return
	}
	for e.free < n { // rare: only when free blocks are exhausted
		e.free += e.cache.evict()
	}
	e.free -= n
	s.blocks += n
}

// drop frees s's own blocks and releases its cache references.
func (e *Engine) drop(s *seq) {
	e.free += s.blocks
	s.blocks = 0
	e.cache.release(s)
}

// trim returns the blocks s holds beyond what its computed tokens need (the
// allocation of a step that did not run).
func (e *Engine) trim(s *seq) {
	extra := -e.need(s, s.computed)
	e.free += extra
	s.blocks -= extra
}
