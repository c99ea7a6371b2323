package engine

import (
	"slices"

	"github.com/servesim/servesim/internal/kvchain"
	"github.com/servesim/servesim/internal/lateanswers"
)

// The prefix cache, as vLLM V1's automatic prefix caching keeps it: every
// full block of a request's token sequence (prompt and output alike) has a
// content key chained on the key of the block before it, so equal keys mean
// an equal sequence up to that block. A waiting request references the
// leading blocks of its sequence found cached instead of computing them,
// always computing at least its last token (vLLM's max_cache_hit_length =
// num_tokens − 1).
//
// Content comes from the workload: a request's Prefix holds one id per
// PrefixBlockTokens prompt tokens, equal ids meaning identical text, so a
// block wholly inside the units those ids cover has shared content (the ids
// of the units it overlaps and its offset). When the ids go on over the
// output (PrefixCoversOutput), so does shared content: a conversation's
// answer, resent in its next turn's prompt under the same ids, is found
// there, as vLLM finds it (it hashes output tokens as they are appended,
// request.py append_output_token_ids → update_block_hashes). Every other
// block — the rest of the prompt, output tokens without ids — is the
// request's own: only the request itself can find it again, after a
// preemption by recompute.
//
// What servesim skips because nothing could observe it: a block of shared
// content is cached when it is computed (others may reference it at once);
// a block of the request's own content is cached only when the request is
// preempted, since a request that finished or was aborted never comes back
// and nobody else can find its content (vLLM caches it too, unreachable).

// rootKey is the parent key of a sequence's first block.
const rootKey uint64 = 0x5e7e5e7e5e7e5e7e

// mix combines a parent key and a block's content into the block's key (a
// SplitMix64 finaliser over both: equal chains give equal keys, and a
// collision between different chains is a 2⁻⁶⁴ event).
func mix(parent, content uint64) uint64 {
	return finish(parent ^ (content + golden + parent<<6 + parent>>2))
}

// mix0 is mix(0, content), the parent's terms gone: the content of a
// block at offset 0 of its unit (TestMix0IsMix).
func mix0(content uint64) uint64 { return finish(content + golden) }

// finish is SplitMix64's finaliser.
func finish(h uint64) uint64 {
	h ^= h >> 30
	h *= mul1
	h ^= h >> 27
	h *= mul2
	return h ^ h>>31
}

// The constants of mix: SplitMix64's increment and its finaliser's
// multipliers.
const (
	golden = 0x9e3779b97f4a7c15
	mul1   = 0xbf58476d1ce4e5b9
	mul2   = 0x94d049bb133111eb
)

// sharedBlocks is the number of leading blocks of r whose content the
// workload's prefix ids determine: those wholly inside the prompt's units
// that are fully covered by ids, or, with PrefixCoversOutput, inside the
// full units of its prompt and output.
func (e *Engine) sharedBlocks(r *Request) int {
	p := r.PrefixBlockTokens
	if !e.cacheOn || p <= 0 || len(r.Prefix) == 0 {
		return 0
	}
	seqLen := r.Input
	if r.PrefixCoversOutput {
		seqLen += r.Output
	}
	units := min(len(r.Prefix), seqLen/p)
	return units * p / e.cfg.BlockSize
}

// setShared notes the blocks of shared content of s, just added: keyed,
// all of them, and shared, those it caches as it computes them; with
// answers cached late (late), its prompt's alone (lateCache).
func (e *Engine) setShared(s *seq) {
	s.keyed = e.sharedBlocks(&s.req)
	s.shared = s.keyed
	if e.late && s.req.PrefixCoversOutput {
		e.lateShared(s)
	}
}

// lateShared keeps s's blocks cached as computed to its prompt's: its
// answer's are cached late.
func (e *Engine) lateShared(s *seq) {
	s.shared = min(s.keyed, s.req.Input/e.cfg.BlockSize)
}

// Answers cached late: a request whose answer is shared content
// (PrefixCoversOutput) caches its prompt's blocks as its chunks compute
// them, but its answer's at its release (lateCache, called by drop and
// preempt), every one its computed tokens fill, as the decodes would
// have cached them one by one (publishDecode, coPublish, runPublish):
// in order, the blocks it holds then the same, each given its content
// key. It takes and frees no block, so the free queue and the pool's
// evictions are the same either way; what differs is only when a key is
// in the cache, which a lookup of it alone could see: the driver
// promises none before the release (internal/lateanswers), as a
// conversation's next turn, the one request that resends the answer,
// comes once it ended. So the decodes of such a request publish nothing:
// they join the cohort's residue lists and coasts no more, and its runs
// are not cut at their blocks (pubLeft). The twin is every answer cached
// by its decodes (the driver not asking: sim's noLateAnswers).
func init() {
	lateanswers.Allow = func(x any, on bool) { e := x.(*Engine); e.lateAsk = on; e.decideFast() }
}

// lateCache caches the blocks of shared output s's decodes would have
// cached by now, those its first upto tokens fill, when its answer is
// cached late, and caches the rest of them as computed from then on
// (a preempted request's recompute publishes them as its prompt's).
func (e *Engine) lateCache(s *seq, upto int) {
	if s.shared < s.keyed {
		s.shared = s.keyed
		e.cacheThrough(s, min(s.keyed, upto/e.cfg.BlockSize))
	}
}

// sharedContent is the content of block j (of b tokens) of r's shared
// content: the ids of the prefix units it overlaps (r.Prefix, an id every
// r.PrefixBlockTokens tokens) and its offset into the first. It depends on
// nothing else (no replica, no salt, no seed), so every engine of block
// size b keys a prompt alike (PrefixKeys). Every other block is the
// request's own, its content the request's identity (key).
func sharedContent(r *Request, b, j int) uint64 {
	p, lo := r.PrefixBlockTokens, j*b
	c := uint64(lo % p)
	for u, last := lo/p, (lo+b-1)/p; u <= last; u++ {
		c = mix(c, r.Prefix[u])
	}
	return c
}

// key is the content key of s's block j, computed once.
func (e *Engine) key(s *seq, j int) uint64 {
	if j >= len(s.keys) {
		e.extendKeys(s, j+1)
	}
	return s.keys[j]
}

// extendKeys computes the content keys of s's blocks up to its first n,
// in order: its blocks of shared content (appendShared), then its own.
func (e *Engine) extendKeys(s *seq, n int) {
	i := len(s.keys)
	s.keys = slices.Grow(s.keys, n-i)
	parent := rootKey
	if i > 0 {
		parent = s.keys[i-1]
	}
	if i == 0 && s.keyed > 0 { // a prompt's first keys: from the memo where they were keyed before
		s.keys = e.memo.sharedKeys(s.keys, s.req.Prefix, s.req.PrefixBlockTokens, e.cfg.BlockSize, min(n, s.keyed), s.req.PrefixTwoRuns.Two())
		parent = s.keys[len(s.keys)-1]
	} else if i < s.keyed {
		s.keys = appendShared(s.keys, parent, s.req.Prefix, s.req.PrefixBlockTokens, e.cfg.BlockSize, i, min(n, s.keyed))
		parent = s.keys[len(s.keys)-1]
	}
	if len(s.keys) >= n {
		return
	}
	if e.tier != nil {
		// Its own blocks: with a tier, which is offered each decode's
		// block (storeNew), every one of its sequence's at once, where
		// each decode's store keyed its block in a call of its own:
		// Regime/Tiers (cachegrind, SERVESIM_BUDGET_FUNCS), extendKeys
		// 1,267 instructions a request then 534 (45,842 to 44,942 in
		// all). Without a tier, a request's own keys are asked for
		// only when it is preempted (cacheOwn), as far as it computed.
		n = max(n, (s.req.Input+s.req.Output)/e.cfg.BlockSize)
	}
	own := mix(0x0a11ce, s.order) // the request's own content, every block alike
	i = len(s.keys)
	s.keys = slices.Grow(s.keys, n-i)[:n]
	for j := i; j < n; j++ {
		parent = mix(parent, own)
		s.keys[j] = parent
	}
}

// appendShared appends to dst, and returns, the keys of blocks from to
// to−1 of the shared content of a sequence of prefix ids (an id every p
// tokens, in blocks of b tokens), chained on key, the key of block
// from−1 (rootKey for block 0): block j's key is mix(key of j−1,
// sharedContent(j)). When a unit of p tokens holds whole blocks, as it
// does at vLLM's 16-token blocks under the ids of 16, 256 or 512 tokens
// workloads and traces carry, each block's content is its offset mixed
// with one id, and the ids are walked once, not divided for at every
// block (TestAppendSharedIsSharedContent holds the two alike).
func appendShared(dst []uint64, key uint64, prefix []uint64, p, b, from, to int) []uint64 {
	if p%b != 0 { // blocks straddle units: each block's own ids
		r := Request{Prefix: prefix, PrefixBlockTokens: p}
		for j := from; j < to; j++ {
			key = mix(key, sharedContent(&r, b, j))
			dst = append(dst, key)
		}
		return dst
	}
	per := p / b // blocks a unit
	n := len(dst)
	dst = slices.Grow(dst, to-from)[:n+to-from]
	if per == 1 { // a block a unit: each at offset 0 of its own id (mix0)
		kvchain.FillIDs(dst[n:], key, prefix[from:to])
		return dst
	}
	u, k := from/per, from%per
	for i := range dst[n:] {
		key = mix(key, mix(uint64(k*b), prefix[u]))
		dst[n+i] = key
		if k++; k == per {
			u, k = u+1, 0
		}
	}
	return dst
}

// hits finds the cached blocks the waiting request s may reference: the
// leading run of its sequence's full blocks found in the cache, leaving at
// least its last known token to compute. It returns how many, and how
// many of them nobody holds (referencing those takes them out of the
// free queue, so they count against it as an allocation would); a pool
// kept by blocks leaves them in e.scratch, for attach.
func (e *Engine) hits(s *seq) (n, evictable int) {
	if !e.cacheOn || !s.ownCached && s.keyed == 0 {
		return 0, 0 // no content of its own cached, none shared: no hit (and no division)
	}
	return e.walkHits(s)
}

// walkHits is hits for a request that may find some: the walk of its
// keys, or of its runs in a pool kept by runs.
func (e *Engine) walkHits(s *seq) (n, evictable int) {
	limit := (s.known - 1) / e.cfg.BlockSize
	if !s.ownCached {
		limit = min(limit, s.keyed) // its own content was never cached
	}
	if e.pool.runs != nil {
		return e.pool.runHits(e.runsOf(s).path, limit)
	}
	blocks := e.scratch[:0]
	if limit > len(s.keys) { // every one of them is keyed when computed, if not found
		e.extendKeys(s, limit)
	}
	for _, k := range s.keys[:limit] {
		id, ok := e.pool.lookup(k)
		if !ok {
			break
		}
		blocks = append(blocks, id)
		if e.pool.nodes[id].refs == 0 {
			evictable++
		}
	}
	e.scratch = blocks
	return len(blocks), evictable
}

// hitsTouch is walkHits and then attach's references for s, which the
// plan in flight admits whatever it finds (tryAdmit's gate passes with
// no hit), in a pool kept by runs: its blocks found and referenced in
// one pass (runHitsTouch). It returns how many it found; attach's
// accounting is the caller's (found).
func (e *Engine) hitsTouch(s *seq) int {
	limit := (s.known - 1) / e.cfg.BlockSize
	if !s.ownCached {
		limit = min(limit, s.keyed) // its own content was never cached
	}
	return e.pool.runHitsTouch(&s.held, e.runsOf(s), limit)
}

// runsOf is s's side of a pool kept by runs (runpool.go), its path made
// the first time it is asked for (makeRuns). It is asked three or four
// times a request (walkHits, attach, cacheThrough); kept small enough
// to inline, it spends no call on the answer kept (Fleet8LeastLoaded:
// runsOf 104 instructions a request, as a call each time).
func (e *Engine) runsOf(s *seq) *runSeq {
	if r := s.runs; r != nil && len(r.path) > 0 {
		return r
	}
	return e.makeRuns(s)
}

// makeRuns makes s's path of runs, on a runSeq of its own or recycled.
func (e *Engine) makeRuns(s *seq) *runSeq {
	if s.runs == nil {
		s.runs = &runSeq{}
	}
	r := s.runs
	e.pool.runs.walked.path = nil // it may have been a walk of the path this array held before (recycle)
	if s.req.PrefixTwoRuns.Rises() {
		r.path = appendRisingPath(e.memo, r.path, s.req.Prefix, s.req.PrefixBlockTokens, e.cfg.BlockSize, s.keyed, mix(0x0a11ce, s.order))
	} else {
		r.path = appendRunPath(e.memo, r.path, s.req.Prefix, s.req.PrefixBlockTokens, e.cfg.BlockSize, s.keyed, s.req.PrefixTwoRuns.Two(), mix(0x0a11ce, s.order))
	}
	return r
}

// attach makes s, which the plan in flight admits, reference the n blocks
// hits found and skip the tokens they hold, and notes the admission
// (Scheduled's Kind: here, where e and s are at hand, it costs a store).
func (e *Engine) attach(s *seq, n int) {
	s.admitted = e.move + 1
	if n == 0 {
		return // nothing found: nothing changes
	}
	if e.pool.runs != nil {
		e.pool.runTouch(&s.held, e.runsOf(s), n)
	} else {
		blocks := e.scratch[:n]
		for _, id := range blocks {
			e.pool.touch(id)
		}
		s.ids = append(s.ids, blocks...)
		s.held = len(s.ids)
	}
	e.found(s, n)
}

// found is attach's accounting of s's n blocks found cached (n > 0),
// referenced already: it skips the tokens they hold.
func (e *Engine) found(s *seq, n int) {
	e.outstanding -= s.left()
	s.computed += n * e.cfg.BlockSize
	e.outstanding += s.left()
}

// publish caches the full blocks of shared content s will hold once its
// first upto tokens are computed. Like vLLM (allocate_slots caches the
// blocks it allocates), it runs when the step is scheduled, so that a
// request admitted later in the same step can already reference them.
// upto never passes s's known tokens: vLLM caches min(num_computed_tokens
// + num_new_tokens, request.num_tokens) (kv_cache_manager.py,
// allocate_slots), so a block of output (PrefixCoversOutput) is cached by
// the decode that computes its last token, the step after the one that
// sampled it, and a speculative step's drafts are never cached. A
// block whose content another block caches already (both computed it: a
// whole-block prompt repeated, its last block recomputed; a turn's answer
// that the next turn, already running, computed in its prompt) stays s's
// own copy, cached as a second one, as vLLM keeps it (block_pool.py,
// cache_full_blocks does not de-duplicate).
func (e *Engine) publish(s *seq, upto int) {
	if s.shared > 0 { // else there is nothing to cache (and no division)
		e.cacheThrough(s, min(s.shared, min(upto, s.known)/e.cfg.BlockSize))
	}
}

// publishDecode caches the block of shared output (PrefixCoversOutput)
// that s's decode at context c completes, if any, counts s in pubRun and
// notes in pubLeft the steps from this one to the next decode of s that
// completes one. A run of decode steps stops before that decode
// (runLength), so that the plan of its step caches the block, unless the
// run may go on through it (runPublish): each block is cached at the
// instant the step-by-step engine caches it either way. Only a decode of s with blocks of
// shared content still to cache (s.held < s.shared) calls it; a cohort
// member's decodes cache theirs in coPublish, as this would.
//
//go:noinline
func (e *Engine) publishDecode(s *seq, c int) {
	q, r := e.quoRem(c + 1)
	full := q // publish(s, c+1), its division shared, its call made only when it caches
	if s.known < c+1 {
		full = s.known / e.cfg.BlockSize
	}
	if full = min(full, s.shared); full > s.held {
		e.cacheThrough(s, full)
	}
	// Step i of a run computes token c+i and completes a block when
	// (c+i+1) % b == 0: the first such i >= 1, i = b − r, which
	// completes block q+1.
	if q+1 <= s.shared {
		e.pubRun++
		e.pubLeft = min(e.pubLeft, e.cfg.BlockSize-r)
	}
}

// runPublish caches the blocks of shared output (PrefixCoversOutput)
// that the decodes of steps from+1 to m of the run in flight complete, as
// the step-by-step engine's publishDecode caches them when it plans each
// of those steps: step by step, and in a step in the order of the run's
// requests. Step i of a run computes token computed+i−1 of a request,
// which completes a block when computed+i is a multiple of BlockSize.
// allocThrough calls it before it takes those steps' blocks, where the
// step-by-step engine interleaves the two a step at a time: caching
// takes no block and frees none, and the one state both touch, a key
// cached in a free block that an allocation evicts, ends the same either
// way (cached first, the new block is a copy the eviction promotes to
// the index; evicted first, the new block is indexed: the index maps
// the key to the new block, with no copy, in both). Such blocks are a
// plain decode's the run scheduled inline, or a cohort member's, which
// are cached first at each step, as the walk plans the members first
// (runPublishSteps).
//
// It notes once each request that may cache (pubs) with the first step
// whose decode completes one of its blocks, in the order of those steps
// and in a step of sched, and then goes round that list: a request's
// next such step is b steps on, after every other's in the list (b
// apart, all in one round lie within b steps), so each round visits the
// steps in order. That is the caching of a walk of every request at
// every step, in the same order, as caching changes nothing the steps
// depend on but the one request's held blocks.
func (e *Engine) runPublish(from, m int) {
	b := e.cfg.BlockSize
	pubs := e.pubs[:0]
	for i, s := range e.sched {
		if s.aborted || !s.decoding || s.draft != 0 || s.held >= s.shared {
			continue
		}
		at := from + 1 // the first step after from when computed + step is a multiple of b
		if _, r := e.quoRem(s.computed + at); r > 0 {
			at += b - r
		}
		if at <= m {
			pubs = append(pubs, pubAt{i: int32(i), at: at})
		}
	}
	for j := 1; j < len(pubs); j++ { // by step, in sched order within one (stable)
		for k := j; k > 0 && pubs[k].at < pubs[k-1].at; k-- {
			pubs[k], pubs[k-1] = pubs[k-1], pubs[k]
		}
	}
	if e.plan.Cohort > 0 && e.co.npub > 0 {
		e.pubs = e.runPublishSteps(pubs, from, m)
		return
	}
	for live := len(pubs); live > 0; {
		for j := range pubs {
			p := &pubs[j]
			if p.i < 0 {
				continue // nothing left to cache
			}
			if p.at > m {
				live = 0 // and so are those after it, in this round and the next
				break
			}
			if e.pubStep(p) {
				live--
			}
		}
	}
	e.pubs = pubs
}

// pubStep caches the block that the decode of p's request at step p.at
// completes and moves p to the request's next such step, b on. It
// reports whether the request has no block left to cache (p.i is then
// −1).
func (e *Engine) pubStep(p *pubAt) bool {
	s := e.sched[p.i]
	q, _ := e.quoRem(s.computed + p.at)
	e.cacheThrough(s, min(s.shared, q))
	p.at += e.cfg.BlockSize
	if s.held >= s.shared {
		p.i = -1
		return true
	}
	return false
}

// runPublishSteps is runPublish's caching with cohort members that may
// cache (coPublish), step by step: at each step its members first, as
// the walk plans them, then the requests of pubs due there, taken round
// the list as runPublish's rounds take them (the list is by step, and a
// request's next step is b on, after every other's in the list). The
// members' caching of the run's first step was done when it was planned
// (coPlanPublish), but for a continued run's (its from is 0: Continue
// takes nothing when it plans): step i of the run is at the cohort's
// clock + i − 1.
func (e *Engine) runPublishSteps(pubs []pubAt, from, m int) []pubAt {
	j, live := 0, len(pubs)
	co := &e.co
	for i := from + 1; i <= m && (live > 0 || co.npub > 0); i++ { // npub counts the coasting members too
		if live == 0 && (e.pool.runs == nil || len(e.pool.runs.uncoasted) == 0) {
			// A step with no request of pubs due, no settled member to
			// drain and no member at its residue does nothing but move
			// pubT, which the next step visited (or the end) moves
			// again: skipped, a step three loads and a compare (most
			// members coast: 18,277 then 18,092 instructions a request
			// in Regime/Conversations, SERVESIM_BUDGET_FUNCS). With every
			// member coasting, none is listed at a residue: the run's steps
			// are passed at once, not residue by residue, to its end, which
			// moves pubT alone, as the loop's end does (runPublishSteps 311
			// then 272 instructions a request in Regime/Conversations, and
			// 243 with the last step not visited, SERVESIM_BUDGET_FUNCS;
			// TestTwinsOnRandomScenarios fails with the test made >=).
			if t := e.pool.runs; t != nil && t.cst != nil && int(co.npub) == t.cst.n {
				break // none listed at any residue (npub counts the coasting members, cst.n them alone, none settled)
			}
			lists, mask := co.pubs, co.mask
			for x := ^(co.tick + i - 1); i < m && len(lists[x&mask]) == 0; x-- {
				i++
			}
		}
		if t := e.pool.runs; t != nil && t.cst != nil {
			t.cst.pubT = co.tick + i - 1
			if len(e.pool.runs.uncoasted) > 0 {
				e.coDrain()
			}
		}
		if co.npub > 0 && len(co.pubs[^(co.tick+i-1)&co.mask]) > 0 {
			e.coPublish(co.tick + i - 1)
		}
		for live > 0 {
			p := &pubs[j]
			if p.i >= 0 {
				if p.at != i {
					break
				}
				if e.pubStep(p) {
					live--
				}
			}
			if j++; j == len(pubs) {
				j = 0
			}
		}
	}
	if t := e.pool.runs; t != nil && t.cst != nil { // the coasting members' steps, visited or not (coHeld)
		t.cst.pubT = co.tick + m - 1
	}
	return pubs
}

// pubAt is a request of runPublish's, by its index in sched (−1 once it
// has nothing left to cache), and the next step whose decode completes
// one of its blocks.
type pubAt struct {
	i  int32
	at int
}

// cacheThrough gives s's blocks up to full their content keys, in order:
// each becomes a cached block, a second copy if another block caches its
// content already (blockPool.copies).
func (e *Engine) cacheThrough(s *seq, full int) {
	from := s.held
	if full <= from {
		return
	}
	if !e.runsDecided {
		e.decideRuns()
	}
	if e.pool.runs != nil {
		s.anon -= full - from
		e.pool.runCache(&s.held, e.runsOf(s), full)
		return
	}
	if full > len(s.keys) {
		e.extendKeys(s, full)
	}
	s.anon -= full - from
	s.ids = slices.Grow(s.ids, full-from)
	for _, k := range s.keys[from:full] {
		s.ids = append(s.ids, e.pool.cache(k))
	}
	s.held = full
}

// cacheOwn caches every full block of s's first upto tokens (those it
// has computed, or was scheduled to), before a preemption frees them: when
// s is readmitted it finds whatever of them is still cached and recomputes
// only the rest.
func (e *Engine) cacheOwn(s *seq, upto int) {
	if !e.cacheOn || e.noOwnHits {
		return
	}
	e.cacheThrough(s, upto/e.cfg.BlockSize)
	s.ownCached = true
}

// Warm installs the blocks of shared content of a prompt (its prefix ids;
// see Request) in the prefix cache, as if a request had computed them and
// left: cached, free, the most recently freed, evicting the oldest free
// content as an allocation would. It returns how many it added (those not
// cached already, which it moves to the tail instead). A driver warms a
// replica before a run; it is refused with a step in flight, and when the
// prompt is one Add would refuse, of MaxModelLen tokens or more
// (ErrPromptTooLong): its shared blocks then fit the cache.
func (e *Engine) Warm(prefix []uint64, prefixBlockTokens, input int) (int, error) {
	if e.inFlight {
		return 0, ErrStepInFlight
	}
	if input >= e.cfg.MaxModelLen {
		return 0, e.promptTooLong
	}
	r := Request{Input: input, Prefix: prefix, PrefixBlockTokens: prefixBlockTokens}
	n := e.sharedBlocks(&r)
	if n > 0 && !e.runsDecided {
		e.decideRuns()
	}
	if e.pool.runs != nil {
		return e.warmRuns(&r, n), nil
	}
	held := make([]int32, 0, n)
	added := 0
	key := rootKey
	for j := range n {
		key = mix(key, sharedContent(&r, e.cfg.BlockSize, j))
		if id, ok := e.pool.lookup(key); ok {
			e.pool.touch(id)
			held = append(held, id)
			continue
		}
		if e.pool.free() == 0 { // only the blocks this call holds are left
			break
		}
		e.pool.take(1)
		held = append(held, e.pool.cache(key))
		added++
	}
	for i := len(held) - 1; i >= 0; i-- { // freed last first, as a request's
		e.pool.release(held[i])
	}
	return added, nil
}
