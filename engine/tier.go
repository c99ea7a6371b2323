package engine

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/servesim/servesim/internal/tierdone"
)

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
//     engine calls Store once a request, with that request's blocks and
//     its chain of keys, in vLLM's order (storeTier), when the plan that
//     schedules them is accepted (inside a run, when the run reaches the
//     step: storeRun).
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
// skipped_waiting queue goes before waiting under FCFS, but a request the
// tier asked to skip goes back to its place in the waiting queue, where
// vLLM keeps it in skipped_waiting (scheduler.py:605-611, 820-822), ahead
// of requests preempted after it and of loads that land after it; and
// where vLLM's rule stalls a replica for good (loads that landed hold
// blocks none of them can be admitted with, and nothing runs to free
// one: FuzzEngine found two landed loads of 25 and 12 blocks on a replica
// of 53, the first needing 23 more), unstall returns landed loads to the
// queue without their blocks.
//
// A differential run against vLLM's scheduler with its own
// OffloadingConnector scheduler side (28be48fa, a fake worker: stores
// complete a step later, loads after 1 to 4 steps; sessions with shared
// prefixes under KV pressure, a CPU tier that evicts; 475 to 8,973 steps
// a regime) found every step identical until the first difference
// above, and two rules this file now mirrors that it had not: the
// stores of a step are one a request, in the scheduler output's order,
// the request's chain touched after (storeTier), and a load that lands
// after a preemption offers again the blocks past those it loaded
// (landTier); a load also held its admission's whole gate from its
// reservation, where vLLM takes the rest at admission, as it now does.
//
// What the tier is (host memory, a shared store, both; its size and its
// eviction) is the driver's: the engine only stores, finds, pins and
// releases by content key. Without a Tier (the default) none of this
// code runs.

// Tier is a store of KV blocks below HBM, keyed by the content keys of
// the engine's prefix cache (BlockKeys; a request's own blocks have keys
// no other request computes). The engine calls it from Schedule and
// ScheduleUntil (Store, Find, Load), Land, Abort and a refused plan
// (Release), and, a PrivateTier's, from the calls that bring a run to an
// instant (Store: SyncTo, CompleteUntil, Truncate, Complete, Abort), on
// the driver's goroutine; it must not call the engine.
type Tier interface {
	// Store offers one request's full blocks keys, which a plan just
	// accepted computes (write-through), as one store: a tier ignores
	// those it holds already (and keeps them from eviction by this
	// store), and reports false if it has no room for the rest, refusing
	// the store whole (the engine offers them again at the request's next
	// step). chain is the request's keys of every full block of its known
	// tokens, keys among them: a tier that stored something new touches
	// them (vLLM's _touch after a store, osched.py:684). The slices are
	// the engine's, valid during the call.
	Store(keys, chain []uint64) bool
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

// PrivateTier is a Tier that may say whether this engine alone calls it
// (a replica's own host memory), its driver only through the engine.
// Such a tier sees its calls in the engine's order whenever the engine
// makes them, so a run of several steps (Runner.ScheduleUntil) may offer
// its later steps' stores as the driver brings it to an instant
// (SyncTo, CompleteUntil, Truncate, Complete, Land and Abort after
// SyncTo), each step's in the order a step-by-step engine offers them
// at its start. A tier that other engines call too (a store shared by
// replicas) would see those stores late, after calls other engines made
// in between: with it, or with a Tier that is no PrivateTier, runs are
// off.
type PrivateTier interface {
	Tier
	// Private reports whether only this engine calls the tier.
	Private() bool
}

// SetTier gives the engine a tier below HBM (nil: none). Set it before
// the first step, as PublishKVEvents: it turns some fast paths off
// (FastPaths says which: Continue, whose plan offers no store; the
// decode cohort with KV events published too; and runs and joins, unless
// the tier is a PrivateTier whose Private reports true), and it needs
// the prefix cache on.
func (e *Engine) SetTier(t Tier) error {
	if t != nil && !e.cacheOn {
		return fmt.Errorf("engine: SetTier with the prefix cache off (Config.PrefixCache): a tier is keyed by the cache's content keys")
	}
	if e.pool.runs != nil {
		e.pool.runs.settleAll() // its stores go block by block from now on (deferHeld)
	}
	e.tier = t
	pt, ok := t.(PrivateTier)
	e.tierPrivate = ok && pt.Private()
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
	limit := e.tierLimit(s)
	hit, pinned := e.hits(s)
	if limit <= hit {
		return false, false, false
	}
	e.key(s, limit-1)
	keys := s.keys[:limit]
	n, busy := e.tier.Find(keys, hit)
	if busy {
		return false, true, false
	}
	if n <= 0 {
		return false, false, false
	}
	n = min(n, limit-hit)
	loaded := (hit + n) * b
	// The gate counts its known sequence (its first chunk after the
	// loaded tokens with AdmitOnFirstChunk), but it takes the blocks of
	// its hits and loaded tokens only, the rest at admission
	// (allocate_slots with num_new_tokens 0, kv_cache_manager.py:362-365).
	upto := s.known
	if e.cfg.AdmitOnFirstChunk {
		upto = min(s.known, loaded+e.newTokens(s, loaded))
	}
	keep := e.keepFree()
	if e.blocksFor(upto)-hit+pinned+keep > e.available() {
		return false, false, true
	}
	e.waiting.pop()
	e.attach(s, hit)
	e.take(s, e.need(s, loaded))
	s.tierHit, s.tierLoad = int32(hit*b), int32(n*b)
	s.phase, s.rstate = phaseReserved, tierReserved
	e.reserved = append(e.reserved, s)
	e.plan.Reserved = append(e.plan.Reserved, Reservation{Ref: s.req.Ref, Tokens: n * b, Cached: hit * b, Tier: true})
	e.tier.Load(s.req.Ref, keys[hit:hit+n])
	return true, false, false
}

// tierLimit is the blocks of s, waiting, that a lookup in the tier may
// find (reserveTier): those of its known tokens but the last, and of
// them only shared content and its own blocks it stored itself.
func (e *Engine) tierLimit(s *seq) int {
	limit := (s.known - 1) / e.cfg.BlockSize
	if stored := int(s.stored); stored <= s.keyed {
		limit = min(limit, max(s.keyed, stored))
	}
	return limit
}

// lookHead is the tier lookup of the waiting head s that the plan of a
// later step of the run in flight makes (tierRuns): reserveTier's up to
// its gate, which refuses s, as it or tryAdmit refused it at the run's
// first step: every block a step takes leaves one fewer free, and a hit
// it evicts is a free one, which s needs as one more block and pins as
// one fewer (fitBlocks), while its known sequence, the gate's measure
// (AdmitOnFirstChunk is off), stays. No load is in flight, so none of
// its blocks is busy. Strict mode checks the refusal.
func (e *Engine) lookHead(s *seq) {
	limit := e.tierLimit(s)
	hit, pinned := e.hits(s)
	if limit <= hit {
		return // no lookup: tryAdmit refuses s
	}
	e.key(s, limit-1)
	n, busy := e.tier.Find(s.keys[:limit], hit)
	if e.strict && (busy || n > 0 && e.blocksFor(s.known)-hit+pinned+e.keepFree() <= e.available()) {
		panic(fmt.Sprintf("engine: invariant tier-run broken: request %d, refused at the run's first step, found %d blocks in the tier (busy %v) and fits a later step's gate", s.req.Ref, n, busy))
	}
}

// landTier is Land for a request loading from the tier: its loaded
// tokens are computed, its blocks of shared content cached, the tier's
// pins released, and it is not offered to the tier again up to there.
func (e *Engine) landTier(s *seq) {
	e.outstanding -= s.left()
	s.computed = int(s.tierHit + s.tierLoad)
	e.outstanding += s.left()
	e.publish(s, s.computed)
	s.stored = int32(s.computed / e.cfg.BlockSize) // as vLLM's update_state_after_alloc (osched.py:564-568): a preempted request offers again what it recomputes
	e.tier.Release(s.req.Ref)
	s.phase, s.rstate = phaseLanded, tierLanded
}

// admitTierLanded admits s, a landed tier load at the head of the landed
// list, as tryAdmit admits the waiting head: a chunk of its remaining
// prompt (with chunked prefill off, all of it or nothing), if the blocks
// its known sequence (its first chunk with AdmitOnFirstChunk) lacks and
// the watermark fit. With nothing running, when they do not, unstall
// frees what holds them. It returns the tokens scheduled and false when
// admission must stop.
func (e *Engine) admitTierLanded(s *seq, budget int) (int, bool) {
	n := e.newTokens(s, s.computed)
	if e.cfg.DisableChunkedPrefill && n > budget {
		return 0, false
	}
	n = min(n, budget)
	keep := e.keepFree()
	upto := s.known
	if e.cfg.AdmitOnFirstChunk {
		upto = s.computed + n
	}
	if e.need(s, upto)+keep > e.available() {
		if e.nrunning() > 0 {
			return 0, false
		}
		e.unstall(s, e.need(s, upto))
		if s.rstate != tierLanded {
			return 0, true // it went back to the queue: admission goes on
		}
	}
	e.landed = removeSeq(e.landed, s)
	s.phase, s.rstate = phaseRunning, remoteNone
	s.admitted = e.move + 1
	e.running = append(e.running, s)
	if !s.started {
		e.start(s, int(s.tierHit))
	}
	e.schedule(s, n)
	return n, true
}

// unstall breaks a stall vLLM's rule can reach: with nothing running,
// the landed load s at the head needs need blocks that loads reserved or
// landed behind it hold. vLLM stops admission there ("if new_blocks is
// None: break") with nothing to free a block, and never moves again. The
// engine instead returns the landed loads behind s, last first, to the
// waiting queue without their blocks (their loaded blocks of shared
// content stay cached, free: a later lookup finds them in HBM) until s
// fits; if it still does not, s goes back too, and the next plan goes on
// with the rest (the loads in flight land meanwhile). No run of the
// differential harness against vLLM stalled; FuzzEngine did, on a replica
// of 53 blocks.
//
//go:noinline
func (e *Engine) unstall(s *seq, need int) {
	for i := len(e.landed) - 1; i > 0 && need > e.available(); i-- {
		if t := e.landed[i]; t.rstate == tierLanded {
			e.requeueLanded(t)
		}
	}
	if need > e.available() {
		e.requeueLanded(s)
	}
	e.stalls++
}

// requeueLanded returns t, a landed tier load, to the waiting queue
// without its blocks.
func (e *Engine) requeueLanded(t *seq) {
	e.landed = removeSeq(e.landed, t)
	e.requeueTier(t)
}

// requeueTier returns s, a tier load taken out of its list, to the
// waiting queue without its blocks, at its place: keyed by its Add
// order, or, preempted, at the front.
func (e *Engine) requeueTier(s *seq) {
	e.drop(s)
	e.outstanding -= s.left()
	s.computed = 0
	e.outstanding += s.left()
	s.phase, s.rstate, s.admitted = phaseWaiting, remoteNone, 0
	s.tierHit, s.tierLoad = 0, 0
	if s.preempts > 0 {
		e.waiting.pushFront(s)
	} else {
		e.waiting.push(s)
	}
}

// storeTier offers the tier the full blocks the accepted plan computes:
// each scheduled request's, up to its computed and scheduled tokens (not
// past its known ones: drafts are never stored), from the first it has
// not offered.
//
// As vLLM's build_connector_meta (_build_store_jobs, osched.py:604-700,
// over yield_req_data, kv_connector/utils.py:302-319), each request's
// blocks are one store, and the requests go in the scheduler output's
// order: those admitted for the first time (scheduled_new_reqs, in
// admission order), then those that ran before (the running loop's, in
// its order), then those resumed after a preemption (in admission order;
// scheduler.py:789-792, 881-887). A store the tier refuses whole is
// offered again at the request's next step (vLLM's "cannot store blocks"
// leaves next_stored_block_idx where it was).
func (e *Engine) storeTier() {
	admitted := e.move + 1
	if !slices.ContainsFunc(e.sched, func(s *seq) bool { return s.admitted == admitted }) {
		// Nothing admitted by this plan: the second pass alone.
		if e.plan.Cohort > 0 {
			e.coStore(e.co.tick) // the members: the running list's first
		}
		for _, s := range e.sched {
			e.storeThrough(s, s.computed+s.sched, s.known)
		}
		return
	}
	for pass := range 3 {
		if pass == 1 && e.plan.Cohort > 0 {
			e.coStore(e.co.tick) // the members ran before: the running list's first
		}
		for _, s := range e.sched {
			fresh := s.admitted == admitted
			if pass == 0 && !(fresh && s.preempts == 0) || pass == 1 && fresh || pass == 2 && !(fresh && s.preempts > 0) {
				continue
			}
			e.storeThrough(s, s.computed+s.sched, s.known)
		}
	}
}

// storeThrough offers the tier s's full blocks of its first upto tokens
// (computed once the step ends), from the first it has not stored, with
// its chain of every full block of its first known tokens (known at the
// step's start: drafts are never stored).
//
// Nine calls in ten offer nothing (Regime/Tiers: about 200,000 calls,
// 20,895 stores): they are told apart without a division, here, small
// enough to inline in the loops that call it (storeTier, storeRun), and
// the stores go on in storeNew (measured: 3,130 instructions a request
// of Regime/Tiers less than with the test inside the call).
func (e *Engine) storeThrough(s *seq, upto, known int) {
	if upto = min(upto, known); upto >= (int(s.stored)+1)*e.cfg.BlockSize {
		e.storeNew(s, upto, known)
	}
}

// storeNew is storeThrough for s, which has a full block to offer.
func (e *Engine) storeNew(s *seq, upto, known int) {
	var full, chain int // upto's and known's full blocks
	if e.shift >= 0 {
		full, chain = upto>>e.sh(), known>>e.sh()
	} else {
		full, chain = upto/e.cfg.BlockSize, known/e.cfg.BlockSize
	}
	from := int(s.stored)
	e.key(s, chain-1) // its chain: every full block of its known tokens (vLLM's offload_keys)
	if e.tier.Store(s.keys[from:full], s.keys[:chain]) {
		s.stored = int32(full)
	}
}

// storeRun offers the tier the stores of steps from+1 to m of the run in
// flight (its first step's were offered when it was planned: storeTier),
// each step's as a step-by-step engine offers them once its plan is
// accepted (storeTier): a step after a run's first admits nobody, so its
// requests go in the running loop's order, which is the run's (every
// running request is scheduled, an admitted one at the tail), each with
// the tokens it computed and knew at the step's start. A request aborted
// in the run's last step is offered nothing from the step after its
// Abort (it leaves the scheduled list there), as it takes no block.
func (e *Engine) storeRun(from, m int) {
	if m-from < storeJumps || storeEachStep {
		e.storeRunEach(from, m)
		return
	}
	for step := e.storeFrom(from, m); step <= m; {
		step = e.storeStep(step, m)
	}
}

// storeFrom notes, for each scheduled request, its next step after from,
// up to m, with a block to offer (storeAt, in seq.tierNext), and returns
// the first of those steps: storeStep offers the steps' stores in order,
// each request's at its step in the running loop's order, as
// storeRunEach offers them, and the steps between, which offer nothing,
// are not tried.
func (e *Engine) storeFrom(from, m int) int {
	first := m + 1
	if e.plan.Cohort > 0 {
		e.co.ts.tnext = e.coNext(from, m)
		first = e.co.ts.tnext
	}
	for _, s := range e.sched {
		t := e.storeAt(s, from, m)
		s.tierNext = int32(t)
		first = min(first, t)
	}
	return first
}

// storeStep offers the stores of step, the first step at which a
// scheduled request has a block to offer (storeFrom), in the running
// loop's order, and returns the next such step (m+1 if none).
func (e *Engine) storeStep(step, m int) int {
	after := m + 1
	if co := &e.co; e.plan.Cohort > 0 {
		if co.ts.tnext == step {
			e.coStore(co.tick + step - 1)
			co.ts.tnext = e.coNext(step, m)
		}
		after = co.ts.tnext
	}
	for _, s := range e.sched {
		t := int(s.tierNext)
		if t == step {
			known := s.known
			if s.decoding {
				known += step - 1
			}
			e.storeThrough(s, s.computed+step*s.sched, known)
			t = e.storeAt(s, step, m)
			s.tierNext = int32(t)
		}
		after = min(after, t)
	}
	return after
}

// storeJumps is the fewest steps for which storeRun (and allocTierSteps)
// find the steps with something to store, rather than try every request
// at every step: nine tries in ten offered nothing. Regime/Tiers
// (cachegrind): storeRun took 3,699 instructions a request trying each
// step, 2,706 with storeFrom, storeStep and storeAt (84,317 in all, from
// 85,392).
const storeJumps = 2

// storeEachStep turns storeRun's jumps off (a test's switch): every
// request is tried at every step (storeRunEach).
var storeEachStep = false

// storeAt is the first step of the run in flight after step after, and
// at most m, at which s, scheduled, has a full block to offer (s offers
// blocks at step t when min(computed + t·sched, known at t) reaches
// past its stored blocks: storeThrough), or m+1 if none.
func (e *Engine) storeAt(s *seq, after, m int) int {
	if s.aborted {
		return m + 1
	}
	need := (int(s.stored) + 1) * e.cfg.BlockSize
	t := after + 1
	if d := need - s.computed; d > 0 {
		if s.sched <= 0 {
			return m + 1
		}
		t = max(t, (d+s.sched-1)/s.sched)
	}
	if s.decoding {
		t = max(t, need-s.known+1) // known at t: s.known + t − 1
	} else if s.known < need {
		return m + 1
	}
	return min(t, m+1)
}

// storeRunEach is storeRun's slow twin: every request tried at every
// step.
func (e *Engine) storeRunEach(from, m int) {
	for step := from + 1; step <= m; step++ {
		if e.plan.Cohort > 0 {
			e.coStore(e.co.tick + step - 1)
		}
		for _, s := range e.sched {
			if s.aborted {
				continue
			}
			known := s.known
			if s.decoding {
				known += step - 1 // a token sampled a step
			}
			e.storeThrough(s, s.computed+step*s.sched, known)
		}
	}
}

// The decode cohort's stores. A member offers the tier its blocks as
// any decode does (storeThrough): at the step whose decode completes a
// block (its tokens computed, and known, at the step's end a multiple of
// BlockSize), and, once the tier refused its store, at every step until
// the tier takes one. The members are the running list's first requests,
// so a step's stores are theirs first, in running order (storeTier,
// storeRun): the cohort lists them by residue, as coPublish's pubs, and
// those that lag apart.
//
// A step's member stores offered in one call (an optional Tier method
// taking the step's chains, each ending in its decode's block, the host
// port inserting their keys in one kvtier call and noting their touches
// after) does not pay: a step's members complete 1.45 blocks on average
// (Regime/Tiers, 1,000 requests: 5,445 steps of one, 2,106 of two, 511
// of three and 185 of four to seven), and most of a block's cost is
// the tier's insert and its noted touch, which a batch leaves as they
// are. Regime/Tiers (budget test): 42,430 instructions a request so,
// 43,381 with every step's blocks in one call, 42,686 with two or more
// only (one alone by Store). Measured again with decode blocks put off
// (sim's deferDecode), where a block's tier cost is a noted touch:
// 38,083 a request by Store, 39,438 with a step's blocks handed to the
// port in one call of an internal hook (a buffer of chains and of
// members, the port calling its Store for each; coStore, coStoreOne (now in coStore) and
// the decode share of storeNew about 2,070, the batch loop 2,188 and
// the port's loop 439). A member's blocks of a run in one call saves
// less: of 11,976 member blocks (1,000 requests), 6,083 are offered in
// runs, 5,363 member-runs offer one, 357 two and 2 three (361 calls
// saved at most, 0.36 a request), and between every two of a member's
// blocks of a run another member's store falls, which a batch would
// have to keep in its place (the port's notes move to the log's end in
// store order, and their order is the settle's touches').

// coStores is the cohort's lists for its members' stores, made at the
// first join with a tier (behind a pointer: a replica's setup stays
// within its 6 KB, TestFleetSetupAllocatesEachReplicaOnce).
type coStores struct {
	stores [][]pubMember // the members by residue, as count: a member offers its blocks at the steps whose decode completes one
	lag    []pubMember   // the members whose store the tier refused: they offer at every step until it takes one
	tbuf   []pubMember   // scratch (coStoreLag)
	tnext  int           // the next step of the run in flight with a member's store (storeFrom)
}

// clear empties the lists (materialize).
func (ts *coStores) clear() {
	for r := range ts.stores {
		clear(ts.stores[r])
		ts.stores[r] = ts.stores[r][:0]
	}
	clear(ts.lag)
	ts.lag = ts.lag[:0]
}

// joinStores lists s, joining the cohort, for its stores: by the
// residue at which its decodes complete a block, and as lagging if it
// offers at its first step a block before the one that step completes.
func (e *Engine) joinStores(s *seq) {
	co := &e.co
	if co.ts == nil {
		co.ts = &coStores{stores: make([][]pubMember, e.cfg.BlockSize)}
	}
	ts := co.ts
	x := pubMember{s: s, rank: s.rank}
	r := (s.computed - co.tick) & co.mask
	ts.stores[r] = append(ts.stores[r], x)
	s.tierLag = int(s.stored) < s.computed>>e.sh()
	if s.tierLag {
		ts.lag = append(ts.lag, x)
	}
}

// coStore offers the tier the members' stores of the step at clock t,
// in running order: those whose decode there completes a block (residue
// ^t & mask, as coPublish), and those that lag.
func (e *Engine) coStore(t int) {
	ts := e.co.ts
	if len(ts.lag) > 0 {
		e.coStoreLag(t)
		return
	}
	r := ^t & e.co.mask
	l := ts.stores[r]
	k := 0
	for i, x := range l { // keepMembers' loop, the member's store in it
		if !x.in() {
			continue
		}
		// The member's store, as storeTier offers a decode's (its
		// tokens computed at the step's end, its known at its start,
		// are one more than its context); noted as lagging if the tier
		// refused it.
		s := x.s
		c := s.computed + t - s.t0 + 1
		e.storeThrough(s, c, c)
		if lag := int(s.stored) < c>>e.sh(); lag != s.tierLag {
			s.tierLag = lag
			if lag {
				ts.lag = append(ts.lag, x)
			}
		}
		if k != i {
			l[k] = x
		}
		k++
	}
	if k < len(l) {
		clear(l[k:])
		ts.stores[r] = l[:k]
	}
}

// coStoreLag is coStore while some members lag: those of the step's
// residue and those that lag, merged in running order (rank).
func (e *Engine) coStoreLag(t int) {
	ts := e.co.ts
	buf := ts.tbuf[:0]
	for _, x := range ts.stores[^t&e.co.mask] {
		if x.in() && !x.s.tierLag {
			buf = append(buf, x)
		}
	}
	for _, x := range ts.lag {
		if x.in() && x.s.tierLag {
			buf = append(buf, x)
		}
	}
	for i := 1; i < len(buf); i++ {
		for j := i; j > 0 && buf[j].rank < buf[j-1].rank; j-- {
			buf[j], buf[j-1] = buf[j-1], buf[j]
		}
	}
	old := len(ts.lag)
	lag := ts.lag[:0] // buf holds its entries: written over in place
	for _, x := range buf {
		s := x.s
		c := s.computed + t - s.t0 + 1
		e.storeThrough(s, c, c)
		s.tierLag = int(s.stored) < c>>e.sh()
		if s.tierLag {
			lag = append(lag, x)
		}
	}
	if len(lag) < old {
		clear(ts.lag[len(lag):old])
	}
	ts.lag = lag
	clear(buf)
	ts.tbuf = buf[:0]
}

// coNext is the first step of the run in flight after step after, and
// at most m, at which a member may offer a block (coStore), or m+1 if
// none: the next, while one lags. A list with a member still in is left
// as it is (coStore drops the others when it offers that step's stores,
// as keepMembers would here); one with none is emptied. Every reader of
// the lists (coStore, coStoreLag, coNext) tests each entry's in(), and
// an entry not in is never in again (a rank is the count of joins, which
// only grows), so an entry kept longer changes no store. Regime/Tiers
// (budget test, SERVESIM_BUDGET_FUNCS): 38,083 instructions a request
// with every nonempty list compacted here (keepMembers), 37,698 so
// (coNext 826 to 554).
func (e *Engine) coNext(after, m int) int {
	co, ts := &e.co, e.co.ts
	if len(ts.lag) > 0 {
		return min(after+1, m+1)
	}
	for k := after + 1; k <= min(m, after+e.cfg.BlockSize); k++ {
		r := ^(co.tick + k - 1) & co.mask
		if l := ts.stores[r]; len(l) > 0 { // an empty list stays so
			for i, x := range l {
				if x.in() {
					if i > 0 {
						coNextPastOut.Add(1)
					}
					return k
				}
			}
			clear(l)
			ts.stores[r] = l[:0]
		}
	}
	return m + 1
}

// coNextPastOut counts the steps coNext found by a member listed after
// one no longer in (the tests' measure that lists hold such entries:
// TestTierCohortMembersLeaveMidList; atomic, as sim's parallel tests
// run tiers at once).
var coNextPastOut atomic.Int64

// tierFinished tells a tier of this module's (tierdone.Finisher) that
// s finished (drop, just before its release), with its stored blocks'
// keys, the last of them past its shared content its own: the host port
// keeps a finished request's own blocks put off as anonymous blocks, not
// by key (sim's Finished). It is asked where drop returns a request's
// cached blocks, which the Atlas default's requests, without content,
// do not reach: asked in release, for every request, it took RunAtlas's
// release from 100 instructions a request to 103 (SERVESIM_BUDGET_FUNCS).
// A request ended otherwise (aborted, cut at MaxModelLen, or holding no
// cached block) is not told: its blocks put off go in by key.
func (e *Engine) tierFinished(s *seq) {
	own := int(s.stored) - s.keyed
	if own <= 0 || int(s.stored) > len(s.keys) {
		return
	}
	if f, ok := e.tier.(tierdone.Finisher); ok {
		f.Finished(tierdone.Mark{}, s.keys[:s.stored], own)
	}
}

// unreserveTier returns s, whose tier load a refused plan reserved, to
// the waiting queue without its blocks.
func (e *Engine) unreserveTier(s *seq) {
	e.tier.Release(s.req.Ref)
	e.requeueTier(s)
}
