package engine

import "github.com/servesim/servesim/internal/keyindex"

// blockIndex maps a cached block's key to its node: the prefix cache's
// hash table (vLLM's cached_block_hash_to_block). It is a keyindex.Index
// (open addressing; it replaced a Go map, whose lookups, inserts and
// deletes were a quarter of a run under KV pressure, BenchmarkRunKVBound:
// a preempted request caches its blocks, and its re-admission finds
// them), which answers exactly as the map did; nothing reads its order
// but Check, which accepts any.
//
// Its methods are keyindex's, each inlined where it is called (get too:
// keyindex.Index.Get is kept within the inliner's budget with room for
// this call; blockPool.lookup, a probe a cached block, measured it).
type blockIndex keyindex.Index

// len is the number of keys held.
func (t *blockIndex) len() int { return (*keyindex.Index)(t).Len() }

// get returns the node holding key.
func (t *blockIndex) get(key uint64) (int32, bool) { return (*keyindex.Index)(t).Get(key) }

// put maps key to id, replacing any node it mapped to.
func (t *blockIndex) put(key uint64, id int32) { (*keyindex.Index)(t).Put(key, id) }

// add maps key to id unless key is held: it returns the node key maps to
// and false then, id and true when it added it (get, then put, in one
// probe).
func (t *blockIndex) add(key uint64, id int32) (int32, bool) {
	return (*keyindex.Index)(t).Add(key, id)
}

// del removes key, if held.
func (t *blockIndex) del(key uint64) { (*keyindex.Index)(t).Del(key) }

// each calls f for every key and its node, in no particular order.
func (t *blockIndex) each(f func(key uint64, id int32)) { (*keyindex.Index)(t).Each(f) }
