// Package kvtier is a KV-cache tier below a replica's HBM, as a pure data
// structure: an LRU of KV blocks by chained content key, with a capacity
// in blocks, pins for loads in flight and anonymous runs for blocks no
// later request can hit. It owns no clock, randomness, goroutine or I/O;
// the engine and the runner (issue 39) decide when to store, look up,
// load and evict, and price the transfers.
//
// What it mirrors. vLLM's CPU offloading tier (OffloadingConnector with
// CPUOffloadingSpec), read at vLLM 28be48fa (main, 24 May 2026); the rules
// used here are the same in the 0.19 window (bb39382b). Paths are under
// vllm/:
//   - v1/kv_offload/cpu/policies/lru.py:26-29: touch moves a request's
//     keys to the most recent end in reverse, so a chain's first block
//     ends most recent (LRU.Touch).
//   - lru.py:34-49: eviction walks from the least recent end, skipping
//     blocks with ref_cnt != 0 (loads in flight) and the blocks of the
//     current store (protected); if it cannot free enough, the store is
//     refused (LRU.Insert's ok; "cannot store blocks",
//     distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py:677-679).
//   - v1/kv_offload/cpu/manager.py:139-194 (prepare_store): blocks already
//     stored are filtered out and not touched (147); the new blocks are
//     inserted at the most recent end in the order given (184-185).
//   - manager.py:113-137: prepare_load raises a block's ref_cnt,
//     complete_load lowers it (LRU.Pin, LRU.Unpin). A load does not remove
//     the block: vLLM's tier is inclusive, write-through of full blocks as
//     computed (offloading/scheduler.py:604-772, build_connector_meta
//     774-800), not a store on eviction.
//   - manager.py:109-110: a block whose store is still in flight answers
//     "retry"; readiness is the caller's (the engine's) business, not this
//     package's.
//
// LMCache's local CPU backend keeps the same policy (an OrderedDict whose
// head is evicted, pinned entries skipped:
// storage_backend/cache_policy/lru.py@216b8e4), over chunks of 256 tokens
// (lmcache/v1/config.py@3ecd72f) keyed by a chained hash per chunk
// (token_database.py@00e744e); a caller models a chunk as the key of its
// last block. Its store is write-through to every backend
// (storage_manager.py@3ecd72f, batched_put).
//
// The identities the tests hold it to (the issue's "at infinite bandwidth
// and zero latency"): an exclusive two-level cache of two LRUs (H and C
// blocks; a level-1 eviction demoted to level 2's most recent end, a
// level-2 hit promoted into level 1 and removed from level 2) finds
// exactly the hits of one LRU of H+C blocks; a write-through inclusive
// pair with C >= H finds exactly the hits of one LRU of C blocks.
//
// Reading guide:
//   - config.go: Config (the capacity; zero = no tier) and Validate.
//   - lru.go: LRU, an index (internal/keyindex) from key to a node of an
//     intrusive doubly linked list kept in a slice (no allocation per
//     operation once warm), and its Counters. Touch moves a chain's keys
//     by runs already in order, one lookup a run; touchEach, key by key,
//     is its slow twin. The index grows by taking its keys back from the
//     nodes (reindex; the index's own growth is its twin).
//   - segments.go: the runs a touch or a Store placed, their keys in an
//     array, so that the next touch matches its keys against the array
//     instead of walking the list; the arrays cut from slabs (segRoom).
//     A tier whose keys are chained (Config.Chained) matches them by
//     single keys (chained runs), one not so compares them as memory.
//   - store.go: Store, an Insert and the touch after it, the new keys
//     put in as the touch leaves them, in a segment; storeEach, Insert
//     then Touch, is its slow twin. InsertChain: Store's insert without
//     its touch, for a caller that touches the chain later (sim's lazy
//     touches); Insert is its twin once the chain is touched.
//   - cold.go: the keys of the last touch that held none, so that the
//     same touch again, with none of them inserted since, returns at
//     once; and the last TouchHeld, answered again while nothing
//     changed the list.
//   - lru_test.go, twolevel_test.go, fuzz_test.go, touch_test.go,
//     example_test.go: the rules, the two identities, a fuzzer against a
//     slice in recency order, Touch held to touchEach (and Store to
//     Insert and touchEach), and an example.
package kvtier
