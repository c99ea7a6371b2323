package engine

import (
	"time"

	"github.com/servesim/servesim/internal/kvchain"
)

// KV events, as vLLM publishes them (vllm/distributed/kv_events.py,
// KVEventBatch of BlockStored and BlockRemoved, sent over ZMQ by the
// engine core when kv_events_config.enable_kv_cache_events is on; the
// block pool emits them in cache_full_blocks and in
// _maybe_evict_cached_block, vllm/v1/core/block_pool.py): a block of the
// prefix cache gets its content key (stored) or loses it to an allocation
// (removed). llm-d's precise prefix-cache scorer builds its index of which
// pod holds which block from these (llm-d-kv-cache-manager,
// pkg/kvcache/kvevents). A driver that wants them sets a KVEventSink
// before the first step (PublishKVEvents); an engine without one spends
// nothing on them.

// KVEvent is one change of the prefix cache: the block with content key
// Key was stored (cached, Removed false) or removed (evicted, Removed
// true) at instant At, the start of the step whose scheduling did it
// (Warm's blocks carry the end of the last step, 0 before the first).
// A key cached by two blocks (a second copy, see Engine's prefix cache)
// is stored twice and removed twice: it stays cached until its last copy
// is removed, so an index that counts the copies answers as the cache.
// vLLM sends one BlockStored for the blocks a step caches (with their
// parent hash and tokens) and one BlockRemoved per evicted block; servesim
// sends one event a block, in the order the engine changed them.
type KVEvent struct {
	At      time.Duration
	Key     uint64
	Removed bool
}

// KVEventSink receives an engine's KV events (PublishKVEvents), in the
// order they happened, during the engine call that made them (Schedule,
// ScheduleUntil, SyncTo, CompleteUntil, Truncate, Complete, Warm). It
// must not call the engine.
type KVEventSink interface {
	KVEvent(KVEvent)
}

// KVEventRunSink is a KVEventSink that also takes a run of events at
// once: KVEvents(at, keys, removed) is the events {at, k, removed} for
// each k of keys, in order, as that many KVEvent calls would deliver
// them (like vLLM's BlockStored, which names the blocks a step caches
// together). An engine publishing to one sends the blocks it caches in
// one go so; keys is the engine's, read only during the call.
type KVEventRunSink interface {
	KVEventSink
	KVEvents(at time.Duration, keys []uint64, removed bool)
}

// kvChainSink is a KVEventRunSink that also takes a run of stored
// blocks along consecutive ids by name: KVStoredChain(at, c) is
// KVEvents(at, keys, false) with keys c's (kvchain.Run.Keys), left to
// the sink to compute when it needs them (sim's EventsView index, which
// looks up few of a request's own blocks). An interface of package
// engine's own, its argument internal: no exported form. The run pool
// names so the blocks of an edge along consecutive ids whose keys it has
// not computed (runTree.chainAt); the twin tests give one of their twins
// a chainLog, which computes every run's keys.
type kvChainSink interface {
	KVEventRunSink
	KVStoredChain(at time.Duration, c kvchain.Run)
}

// kvChainKeysSink is a kvChainSink that may take a run's keys in place
// of its name: while ChainKeys() reports true, the engine computes the
// keys of a run it would name (keys it computes at the run's eviction
// anyway, and keeps) and gives them by KVStoredChainKeys(at, keys),
// which is KVStoredChain(at, c) with keys c's. sim's EventsView index
// asks for them past its first removal, when a removal wakes every run
// it took by name (computing their keys a second time) before the next
// store comes. An interface of package engine's own: no exported form.
type kvChainKeysSink interface {
	kvChainSink
	ChainKeys() bool
	KVStoredChainKeys(at time.Duration, keys []uint64)
}

// kvRemovedSink is a KVEventRunSink that also takes an eviction's run of
// removals in the blocks' order: KVRemovedLastFirst(at, keys) is
// KVEvents(at, rev, true) with rev keys last first (an eviction's
// order). The sink reverses them as it copies them (sim's EventsView
// index queues every run's keys), not the engine into a buffer first
// (emitRemoved). An interface of package engine's own: no exported form.
type kvRemovedSink interface {
	KVEventRunSink
	KVRemovedLastFirst(at time.Duration, keys []uint64)
}

// kvQuietSink is a KVEventSink that takes, when the engine starts to
// publish to it (PublishKVEvents), two probes of the engine's plan in
// flight: quiet() reports that the steps of that plan whose blocks are
// not taken yet publish no event (quietRun), so that a SyncTo now would
// publish nothing; next(t) is the start of its first step that starts
// at or after t (nextStart: a mixed move's later steps start lead after
// a grid of StepTime from its start, mixed.go). sim's EventsView index
// asks them before and after it brings a replica to an instant
// (eventIndex.mustSync, synced). An interface of package engine's own:
// no exported form.
type kvQuietSink interface {
	KVEventSink
	KVQuietProbe(quiet func() bool, next func(t time.Duration) time.Duration)
}

// kvPublisher is what the block pool needs to publish: the sink (runs,
// when it takes runs too; chains, when it takes runs by name), and the
// engine, whose plan stamps each event with its step's start.
type kvPublisher struct {
	sink   KVEventSink
	runs   KVEventRunSink
	chains kvChainSink
	keyed  kvChainKeysSink
	revs   kvRemovedSink
	e      *Engine
	step   int      // the step of the run in flight whose blocks are being taken (allocThrough); 0: none
	rev    []uint64 // emitRemoved's keys, last first
}

// at is the instant of the events the engine makes now.
func (p *kvPublisher) at() time.Duration {
	e := p.e
	if e.inFlight {
		if p.step > 1 { // the j-th step (j >= 2) starts at Start + lead + (j−1) × StepTime (lead: a mixed move's, mixed.go)
			return e.plan.Start + e.lead() + time.Duration(p.step-1)*e.plan.StepTime
		}
		return e.plan.Start
	}
	return e.plan.End // planning (End is the plan's start until it is priced), or Warm
}

// emit stamps and sends one event.
func (p *kvPublisher) emit(key uint64, removed bool) {
	p.sink.KVEvent(KVEvent{At: p.at(), Key: key, Removed: removed})
}

// emitRun sends an event for each of keys, in order, all made now: as a
// run to a sink that takes runs, else one by one.
func (p *kvPublisher) emitRun(keys []uint64, removed bool) {
	if p.runs != nil {
		p.runs.KVEvents(p.at(), keys, removed)
		return
	}
	for _, k := range keys {
		p.emit(k, removed)
	}
}

// emitRemoved sends the removal of the blocks of keys, last first (an
// eviction's order, evictSegmentAside's), as one run to a sink that
// takes runs (runs not nil), not an event a block: an eviction of a
// segment's blocks (4.7 a call in Regime/Fleet8PrefixEvents past its
// pools' fill) made one emit and one call of the sink a block. Its
// twin is a sink that takes events alone (emit a block):
// TestKVEventsRunsAreSteps holds runLog's and chainLog's logs to
// eventLog's. Regime/Fleet8PrefixEvents at 6,400 requests,
// TestInstructionBudget's marginal count between 3,200 and 6,400:
// 31,285 then 29,959 instructions a request.
//
// A sink that takes them in the blocks' order (kvRemovedSink) is given
// keys as they are, and reverses them in place as it queues them (a
// copy and a swap a pair, not an append a key here and a copy there):
// Regime/Fleet8PrefixEvents past its pools' fill, TestInstructionBudget's
// marginal count between 6,400 and 12,800 requests, 21,706 then 21,593
// instructions a request (emitRemoved 418 and the sink's KVEvents 277,
// then the sink's KVRemovedLastFirst 461).
func (p *kvPublisher) emitRemoved(keys []uint64) {
	if p.revs != nil {
		p.revs.KVRemovedLastFirst(p.at(), keys)
		return
	}
	rev := p.rev[:0]
	for i := len(keys) - 1; i >= 0; i-- {
		rev = append(rev, keys[i])
	}
	p.rev = rev
	p.runs.KVEvents(p.at(), rev, true)
}

// PublishKVEvents sends every change of the prefix cache to sink from
// now on (nil: none), in runs when it takes them (KVEventRunSink). Set
// it before the first step, as RecordSteps: a
// run's blocks are then taken step by step, so that each eviction carries
// its own step's start, which turns off the reservations inside a run
// (FastPaths says so). With no sink, nothing is published and nothing is
// spent.
func (e *Engine) PublishKVEvents(sink KVEventSink) {
	if e.pool.runs != nil {
		e.pool.runs.settleAll() // its events go block by block from now on (deferHeld)
	}
	if sink == nil {
		e.pool.pub = nil
	} else {
		e.pool.pub = &kvPublisher{sink: sink, e: e}
		e.pool.pub.runs, _ = sink.(KVEventRunSink)
		e.pool.pub.chains, _ = sink.(kvChainSink)
		e.pool.pub.keyed, _ = sink.(kvChainKeysSink)
		e.pool.pub.revs, _ = sink.(kvRemovedSink)
		if q, ok := sink.(kvQuietSink); ok {
			q.KVQuietProbe(e.quietRun, e.nextStart)
		}
	}
	e.decideFast()
}

// quietRun reports whether the steps of the plan in flight whose blocks
// are not taken yet publish no event: none is in flight, or its blocks
// are all taken (not lazy), or it is a run of the cohort's members alone
// (no other scheduled request, residue count, tier or remote KV) whose
// decodes cache nothing (pubRun 0) and whose steps' blocks, from those
// taken on, are fewer than the never-cached run at the free queue's head
// (headRun): each later take is pubAtOnce's, which evicts nothing, and
// the run at the head shrinks only by them (a release joins the queue's
// tail).
//
// The run at the head is read first: past a pool's fill there is none
// (every block has been cached), and no count of blocks is fewer than
// none, so the plan is not quiet whatever the rest (the cohort's
// growth, coGrow, its 25 instructions among them). Regime/Fleet8PrefixEvents
// past its pools' fill, TestInstructionBudget's marginal count, 18,653
// then 18,556 instructions a request (quietRun 218, 5.5 calls a
// request, then under 124: out of the 40 dearest functions).
func (e *Engine) quietRun() bool {
	if !e.inFlight || !e.lazy {
		return true
	}
	head := e.pool.headRun()
	return head > 0 && e.pubRun == 0 && e.plan.Cohort > 0 && e.co.each && len(e.sched) == 0 && !e.res.on &&
		e.tier == nil && !e.cfg.RemoteKV && e.coGrow(e.runAlloc, e.plan.Steps) < head
}

// nextStart is the start of the first step of the plan in flight that
// starts at or after t: its first at Start, the j-th (j >= 2) at Start +
// lead + (j−1) × StepTime (started's steps, mixed.go), past its last
// step the grid's next; t itself with none in flight. A step starting
// then or later has not been taken by a SyncTo(t).
func (e *Engine) nextStart(t time.Duration) time.Duration {
	p := &e.plan
	if !e.inFlight || p.StepTime <= 0 {
		return t
	}
	if t <= p.Start {
		return p.Start
	}
	first := p.Start + e.lead() + p.StepTime // the second step's start
	if t <= first {
		return first
	}
	return first + (t-first+p.StepTime-1)/p.StepTime*p.StepTime
}

// BlockKeys appends to dst the content keys of a prompt's leading blocks
// of shared content (those its prefix ids determine; see Request), at
// most all but the block of its last token: the keys CachedPrefix looks
// up, in order, each chained on the one before. A router's own index of
// the cache (the KV events of PublishKVEvents) is keyed by them. It reads
// the engine's configuration only (block size, prefix cache on): it is
// PrefixKeys at the engine's block size, or none with the cache off.
func (e *Engine) BlockKeys(dst []uint64, prefix []uint64, prefixBlockTokens, input int) []uint64 {
	if !e.cacheOn {
		return dst
	}
	return PrefixKeys(dst, prefix, prefixBlockTokens, input, e.cfg.BlockSize)
}
