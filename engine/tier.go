package engine

import "fmt"

// KV tiers below HBM: vLLM's KV offloading.
//
// A Tier keeps copies of KV blocks outside the replica's HBM (host memory,
// a store shared by replicas) and loads them back on a prefix hit that
// HBM lost. It mirrors vLLM V1's OffloadingConnector with its CPU spec
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py,
// "osched" below, and vllm/v1/kv_offload/cpu/; local-inference-lab/vllm
// commit 28be48fa of 24 May 2026, whose rules are those of the 0.19
// window, bb39382b of 1 April 2026):
//
//   - Which blocks are stored, and when: write-through. At every step,
//     the connector offers each scheduled request's full blocks up to
//     min(num_computed_tokens + num_scheduled_tokens, num_tokens)
//     (_build_store_jobs, osched.py:604-772; the bound at 636-639),
//     prompt and output alike, each once (next_stored_block_idx); a
//     request that loaded blocks from the tier skips them and its HBM
//     hits (update_state_after_alloc sets next_stored_block_idx to the
//     blocks it holds, 564-568); a block the tier holds already is not
//     stored again (prepare_store, kv_offload/cpu/manager.py:147). The
//     engine calls Store once for each such block, in order, when the
//     plan that schedules it is accepted.
//   - Lookup: after the HBM prefix cache's hits (get_computed_blocks),
//     the connector looks up the blocks that follow, stopping at the
//     first miss, and reports a hit only if it gains at least one whole
//     block (osched.py:314-450, 354-356); it touches the request's keys
//     (its LRU's most recent end, osched.py:493). It answers "ask again
//     later" (None) when a hit block is being loaded for another request
//     (417-441): the scheduler skips the request this step and goes on
//     down the queue (scheduler.py:605-611). Find is that lookup.
//   - Loading is asynchronous (load_kv_async, osched.py:495): the waiting
//     loop allocates blocks for the hit tokens only, under the
//     full-sequence gate, and the request leaves the queue in
//     WAITING_FOR_REMOTE_KVS, asking no token budget and no sequence slot
//     (scheduler.py:645-648, 721-782), exactly as a Remote request
//     (remote.go). The load runs on its own CUDA stream while the batch
//     computes (offloading/worker.py:295-304), so the step's price does
//     not change. When the driver says it landed (Land), the blocks are
//     cached and the request is admitted at a later plan as a request
//     with those tokens computed: it prefills the rest of its prompt
//     (scheduler.py:634-639, 2066-2115).
//   - The tier pins the blocks of a load in flight so that it does not
//     evict them (prepare_load, manager.py:113-125): Load and Release.
//
// servesim's differences: the lookup stops one token short of the known
// sequence, as the HBM cache's does (hits), where vLLM's connector may
// load a prompt's every block and recompute its last token
// (scheduler.py:2095-2096); a block is ready to load once the plan that
// computes it is accepted, where vLLM's store completes after the next
// step's device-to-host copy (complete_store): while the request runs the
// block is in HBM anyway, so only a lookup in that window can tell; the
// tier's block is the engine's block (vLLM's offloaded block may be a
// multiple, block_size_factor); loads never fail (vLLM's
// kv_load_failure_policy is not modelled); a landed load is admitted
// with the landed Remote requests, ahead of the waiting queue, as vLLM's
// skipped_waiting queue goes before waiting under FCFS; and a load holds,
// from its reservation, every block its admission's gate counts (its
// known sequence; with AdmitOnFirstChunk its first chunk after the loaded
// tokens), where vLLM allocates the loaded tokens' blocks at the lookup
// and the rest when it admits the landed request (allocate_slots with
// num_new_tokens 0, kv_cache_manager.py:362-365). Under vLLM's rule,
// loads that landed can together hold blocks that none of them can be
// admitted with, and with nothing running they never clear: FuzzEngine
// found two landed loads of 25 and 12 blocks on a replica of 53, the
// first needing 23 more and the second waiting behind it. Holding the
// gate's blocks, a landed load needs none to be admitted, as a landed
// Remote request. The blocks are held a little earlier (for the load's
// duration, about a step) than vLLM holds them.
//
// What the tier is (host memory, a shared store, both; its size and its
// eviction) is the driver's: the engine only stores, finds, pins and
// releases by content key. Without a Tier (the default) none of this
// code runs.

// Tier is a store of KV blocks below HBM, keyed by the content keys of
// the engine's prefix cache (BlockKeys; a request's own blocks have keys
// no other request computes). The engine calls it from Schedule and
// ScheduleUntil (Store, Find, Load), Land, Abort and a refused plan
// (Release), on the driver's goroutine; it must not call the engine.
type Tier interface {
	// Store offers the block with content key key, which a plan just
	// accepted computes (write-through). A tier that holds it already,
	// or has no room, ignores it.
	Store(key uint64)
	// Find looks up a waiting request's blocks: keys are its content keys
	// from its first block to the lookup's limit, the first hbm of them
	// found in HBM. It returns how many of keys[hbm:], from the first,
	// the tier can load, and busy true if the request must wait ("ask
	// again later": a block it would load is being loaded for another
	// request), in which case n is ignored. It may change the recency
	// of the keys it is shown.
	Find(keys []uint64, hbm int) (n int, busy bool)
	// Load says the plan in flight reserved HBM blocks for request ref
	// to load keys (the first n Find reported): the tier keeps them
	// until Release.
	Load(ref int32, keys []uint64)
	// Release ends request ref's load: it landed, its request was
	// aborted while loading, or the plan that started it was refused.
	Release(ref int32)
}

// SetTier gives the engine a tier below HBM (nil: none). Set it before
// the first step, as PublishKVEvents: it turns the fast paths off (a
// load lands between steps, as a Remote request's KV does, and the
// stores are offered step by step), and it needs the prefix cache on.
func (e *Engine) SetTier(t Tier) error {
	if t != nil && !e.cacheOn {
		return fmt.Errorf("engine: SetTier with the prefix cache off (Config.PrefixCache): a tier is keyed by the cache's content keys")
	}
	e.tier = t
	e.decideFast()
	return nil
}

// The stages of a request loading from the tier (seq.rstate), after the
// Remote ones.
const (
	tierReserved = remoteLanded + 1 + iota // blocks reserved, its KV loading from the tier
	tierLanded                             // loaded: waits for admission, holding its blocks
)

// reserveTier is the waiting loop's step for s, the ordinary request at
// the head of the waiting queue, when the engine has a tier: it looks up
// the blocks that follow its HBM hits in the tier and, when the tier
// holds at least one, reserves blocks for the hits and the loaded tokens
// under the gate, pins them (Load) and takes s out of the queue, asking no
// budget and no sequence slot. It reports whether s was reserved, whether
// the tier asked to skip s (it stays waiting, passed over by this plan),
// and whether admission must stop (the gate did not fit). With nothing to
// load it reports all false, and the caller admits s as usual.
func (e *Engine) reserveTier(s *seq) (reserved, skip, stop bool) {
	b := e.cfg.BlockSize
	limit := (s.known - 1) / b
	if stored := int(s.stored); stored <= s.shared {
		// Only shared content, and its own blocks it stored itself,
		// can be in the tier.
		limit = min(limit, max(s.shared, stored))
	}
	hit, pinned := e.hits(s)
	if limit <= len(hit) {
		return false, false, false
	}
	e.key(s, limit-1)
	keys := s.keys[:limit]
	n, busy := e.tier.Find(keys, len(hit))
	if busy {
		return false, true, false
	}
	if n <= 0 {
		return false, false, false
	}
	n = min(n, limit-len(hit))
	loaded := (len(hit) + n) * b
	// It holds, from now on, the blocks its admission's gate counts: its
	// known sequence, or with AdmitOnFirstChunk the loaded tokens and the
	// first chunk after them (tier.go's doc says why).
	upto := s.known
	if e.cfg.AdmitOnFirstChunk {
		upto = min(s.known, loaded+e.newTokens(s, loaded))
	}
	keep := e.wmBlocks
	if e.nrunning() == 0 {
		keep = 0
	}
	if e.blocksFor(upto)-len(hit)+pinned+keep > e.available() {
		return false, false, true
	}
	e.waiting.pop()
	e.attach(s, hit)
	e.take(s, e.need(s, upto))
	s.tierHit, s.tierLoad, s.tierHold = int32(len(hit)*b), int32(n*b), int32(upto)
	s.phase, s.rstate = phaseReserved, tierReserved
	e.reserved = append(e.reserved, s)
	e.plan.Reserved = append(e.plan.Reserved, Reservation{Ref: s.req.Ref, Tokens: n * b, Cached: len(hit) * b, Tier: true})
	e.tier.Load(s.req.Ref, keys[len(hit):len(hit)+n])
	return true, false, false
}

// landTier is Land for a request loading from the tier: its loaded
// tokens are computed, its blocks of shared content cached, the tier's
// pins released, and it is not offered to the tier again up to there.
func (e *Engine) landTier(s *seq) {
	e.outstanding -= s.left()
	s.computed = int(s.tierHit + s.tierLoad)
	e.outstanding += s.left()
	e.publish(s, s.computed)
	s.stored = max(s.stored, int32(s.computed/e.cfg.BlockSize))
	e.tier.Release(s.req.Ref)
	s.phase, s.rstate = phaseLanded, tierLanded
}

// admitTierLanded admits s, a landed tier load at the head of the landed
// list, as tryAdmit admits the waiting head: a chunk of its remaining
// prompt (with chunked prefill off, all of it or nothing), under the
// gate for its known sequence (its first chunk with AdmitOnFirstChunk)
// and the watermark. It returns the tokens scheduled and false when
// admission must stop.
func (e *Engine) admitTierLanded(s *seq, budget int) (int, bool) {
	n := e.newTokens(s, s.computed)
	if e.cfg.DisableChunkedPrefill && n > budget {
		return 0, false
	}
	n = min(n, budget)
	keep := e.wmBlocks
	if e.nrunning() == 0 {
		keep = 0
	}
	upto := s.known
	if e.cfg.AdmitOnFirstChunk {
		upto = s.computed + n
	}
	if e.need(s, upto)+keep > e.available() {
		return 0, false
	}
	e.landed = removeSeq(e.landed, s)
	// Admitted, it holds what vLLM's allocate_slots gives it: the blocks
	// of its computed and scheduled tokens. The rest go back to the free
	// queue (they hold no content).
	if extra := s.blocks() - e.blocksFor(s.computed+n); extra > 0 {
		x := min(extra, s.anon)
		e.pool.pushRun(x)
		s.anon -= x
	}
	s.phase, s.rstate = phaseRunning, remoteNone
	s.admitted = e.move + 1
	e.running = append(e.running, s)
	if !s.started {
		e.start(s, int(s.tierHit))
	}
	e.schedule(s, n)
	return n, true
}

// storeTier offers the tier the full blocks the accepted plan computes:
// each scheduled request's, up to its computed and scheduled tokens (not
// past its known ones: drafts are never stored), from the first it has
// not offered.
func (e *Engine) storeTier() {
	b := e.cfg.BlockSize
	for _, s := range e.sched {
		full := min(s.computed+s.sched, s.known) / b
		for j := int(s.stored); j < full; j++ {
			e.tier.Store(e.key(s, j))
		}
		s.stored = max(s.stored, int32(full))
	}
}

// unreserveTier returns s, whose tier load a refused plan reserved, to
// the waiting queue without its blocks.
func (e *Engine) unreserveTier(s *seq) {
	e.tier.Release(s.req.Ref)
	e.drop(s)
	e.outstanding -= s.left()
	s.computed = 0
	e.outstanding += s.left()
	s.phase, s.rstate, s.admitted = phaseWaiting, remoteNone, 0
	s.tierHit, s.tierLoad, s.tierHold = 0, 0, 0
	if s.preempts > 0 {
		e.waiting.pushFront(s)
	} else {
		e.waiting.push(s)
	}
}
