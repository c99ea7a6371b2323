package engine

import "math/bits"

// blockIndex maps a cached block's key to its node: the prefix cache's
// hash table (vLLM's cached_block_hash_to_block). It replaces a Go map,
// whose lookups, inserts and deletes were a quarter of a run under KV
// pressure (BenchmarkRunKVBound: a preempted request caches its blocks,
// and its re-admission finds them), with open addressing: linear probing
// in a power-of-two array kept at most a quarter full, deletion by
// backward shift (no tombstones), keys spread by a multiplicative hash.
// At most a quarter full (16 to 32 bytes a key held, a cache of KVBlocks
// blocks holding at most that many keys), the run of entries a deletion
// shifts back is about half as long as at half full: a replay whose every
// block is cached and evicted (the Mooncake trace: 820 blocks a request)
// spent 106 instructions a deletion, 67 now (cachegrind). It answers
// exactly as the map did; nothing reads its order but Check, which
// accepts any. TestBlockIndexIsAMap and FuzzBlockIndex hold it to a map.
type blockIndex struct {
	slots []indexSlot
	n     int
	shift uint // 64 − log2(len(slots))
}

// indexSlot is one entry: id is the node + 1, so the zero value is empty
// and every key, 0 included, can be stored.
type indexSlot struct {
	key uint64
	id  int32
}

const minIndexSlots = 64

func (t *blockIndex) home(key uint64) int {
	return int((key * 0x9e3779b97f4a7c15) >> t.shift)
}

// len is the number of keys held.
func (t *blockIndex) len() int { return t.n }

// get returns the node holding key.
func (t *blockIndex) get(key uint64) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// put maps key to id, replacing any node it mapped to.
func (t *blockIndex) put(key uint64, id int32) {
	if 4*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = indexSlot{key: key, id: id + 1}
			t.n++
			return
		}
		if s.key == key {
			s.id = id + 1
			return
		}
	}
}

// add maps key to id unless key is held: it returns the node key maps
// to and false then, id and true when it added it (get, then put, in one
// probe).
func (t *blockIndex) add(key uint64, id int32) (int32, bool) {
	if 4*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = indexSlot{key: key, id: id + 1}
			t.n++
			return id, true
		}
		if s.key == key {
			return s.id - 1, false
		}
	}
}

// del removes key, if held: the entries after it in its probe run move
// back into the hole when their home allows (Knuth's algorithm R).
func (t *blockIndex) del(key uint64) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(key)
	for {
		s := &t.slots[i]
		if s.id == 0 {
			return
		}
		if s.key == key {
			break
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].id != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if h := t.home(t.slots[j].key); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = indexSlot{}
	t.n--
}

// each calls f for every key and its node, in no particular order.
func (t *blockIndex) each(f func(key uint64, id int32)) {
	for _, s := range t.slots {
		if s.id != 0 {
			f(s.key, s.id-1)
		}
	}
}

func (t *blockIndex) grow() {
	old := t.slots
	size := max(minIndexSlots, 2*len(old))
	t.slots = make([]indexSlot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	t.n = 0
	for _, s := range old {
		if s.id != 0 {
			t.put(s.key, s.id-1)
		}
	}
}
