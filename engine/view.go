package engine

import "time"

// What a router reads of a replica, without changing it (no LRU touch, no
// scratch state): see sim.View.

// Outstanding is the work the engine holds at instant t, in tokens: the
// prompt tokens not yet in KV and the output tokens not yet emitted, over
// every request it holds. Inside a run it counts the tokens of the steps
// that ended by t as emitted, as a step-by-step engine would.
func (e *Engine) Outstanding(t time.Duration) int {
	if !e.inFlight || !e.lazy || t < e.plan.Start+e.plan.StepTime {
		return e.outstanding
	}
	j := min(int((t-e.plan.Start)/e.plan.StepTime), e.plan.Steps)
	return e.outstanding - j*e.live
}

// CachedPrefix is how many of a prompt's leading tokens the prefix cache
// holds, for a request not yet added: the blocks of shared content (those
// its prefix ids determine; see prefix.go) found cached, leading run, at
// most all but the block of its last token. Inside a run, call SyncTo
// first so that the cache is what it is at the instant of the question.
func (e *Engine) CachedPrefix(prefix []uint64, prefixBlockTokens, input int) int {
	r := Request{Input: input, Prefix: prefix, PrefixBlockTokens: prefixBlockTokens}
	shared := e.sharedBlocks(&r)
	limit := min(shared, (input-1)/e.cfg.BlockSize)
	s := seq{req: r, shared: shared} // on the stack: content needs the request's shape only
	key := rootKey
	for j := range limit {
		key = mix(key, e.content(&s, j))
		if _, ok := e.pool.lookup(key); !ok {
			return j * e.cfg.BlockSize
		}
	}
	return limit * e.cfg.BlockSize
}
