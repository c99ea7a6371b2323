// Package keyindex is a hash table from uint64 keys to int32 ids: the
// prefix cache's (the engine's cached_block_hash_to_block) and a KV tier's
// (kvtier.LRU's), where a Go map's lookups, inserts and deletes were a
// quarter of a run and more.
package keyindex

import "slices"

// Index maps a key to an id. It replaces a Go map with open addressing:
// linear probing in a power-of-two array kept at most a quarter full,
// deletion by backward shift (no tombstones), keys spread by a
// multiplicative hash. At most a quarter full (16 to 32 bytes a key
// held), the run of entries a deletion shifts back is about half as long
// as at half full: a replay whose every block is cached and evicted (the
// Mooncake trace, 820 blocks a request) spent 106 instructions a
// deletion at half full, 67 at a quarter (cachegrind). It answers exactly as the map would; nothing should read its
// order (Each's) but a consistency check, which accepts any.
// TestIndexIsAMap and FuzzIndex hold it to a map. The zero value is an
// empty index.
type Index struct {
	slots []slot
	n     int
}

// slot is one entry: id is the id + 1, so the zero value is empty and
// every key, 0 included, can be stored.
type slot struct {
	key uint64
	id  int32
}

const minSlots = 64

// mul spreads the keys: 2⁶⁴ over the golden ratio (Fibonacci hashing).
const mul = 0x9e3779b97f4a7c15

// home is key's first slot: bits 32 and up of the hash, as many as the
// table's size needs (homeShift).
func (t *Index) home(key uint64) int {
	return int((key*mul)>>homeShift) & (len(t.slots) - 1)
}

// homeShift is the bit of the hash a home begins at: a constant, where
// the top bits (a shift by 64 − log2(len(slots)), a variable) took the
// shift's count in CX, which amd64 reads a variable shift's from, and the
// loops below moved their own value out of CX and back at every key
// (addLead: 22 instructions a key added so, 19 this way). A table holds
// at most 2³² slots' worth of distinct homes; the hash's middle bits
// spread the content keys (mixes) as its top ones do.
const homeShift = 32

// Len is the number of keys held.
func (t *Index) Len() int { return t.n }

// Get returns the id key maps to. It computes the home inline, not by
// home, to stay within the inliner's budget (cost 65 of 80) with room
// for the engine's wrapper (blockIndex.get, 78), which every probe of the
// prefix cache calls.
func (t *Index) Get(key uint64) (id int32, ok bool) {
	if t.n == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := int((key*mul)>>homeShift) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.key == key {
			return s.id - 1, true
		}
	}
}

// Put maps key to id (0 or more), replacing any id it mapped to (a key
// held already, rare where the engine and kvtier put, is deleted and
// added again: nothing reads which slot holds it).
func (t *Index) Put(key uint64, id int32) {
	if _, added := t.Add(key, id); !added {
		t.Del(key)
		t.Add(key, id)
	}
}

// Add maps key to id unless key is held: it returns the id key maps to
// and false then, id and true when it added it (Get, then Put, in one
// probe).
func (t *Index) Add(key uint64, id int32) (int32, bool) {
	if 4*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			*s = slot{key: key, id: id + 1}
			t.n++
			return id, true
		}
		if s.key == key {
			return s.id - 1, false
		}
	}
}

// AddNew adds each of keys not held, in order, as Add would: the first
// it adds maps to id, the next to id+1, and so on (a key given twice is
// added once). It appends the keys it added to added and returns it: a
// store of a run of keys in one call, where a loop of Adds pays a call
// a key.
func (t *Index) AddNew(keys []uint64, id int32, added []uint64) []uint64 {
	t.Reserve(t.n + len(keys))
	// Room for every key in added first, so that the loop calls nothing
	// and keeps its state in registers: with an append in it, the
	// growth's call spilled them around each probe (Regime/Tiers,
	// cachegrind: AddNew 7,010 instructions a request so, 6,775 this way).
	out := slices.Grow(added, len(keys))[:len(added)+len(keys)]
	c := addNew(t, keys, out[len(added):], id)
	if c == 0 {
		return added // none added: added as it was, nil if nil
	}
	return out[:len(added)+c]
}

// addNew is AddNew's loop: it adds each of keys not held, the first it
// adds mapped to id, copies the keys it added to dst (len(keys) long)
// and returns how many. Apart from AddNew's setup, whose values (added,
// out) kept the loop's own on the stack, spilled and loaded again a
// key; and a slot is found as slots[i&mask], which the compiler knows
// in bounds (len(slots) > 0), where slots[i] checked it at every probe.
// Regime/Tiers (cachegrind): AddNew took 6,775 instructions a request
// with its loop inline, 4,990 so (26 a key offered). Missing and PutNew
// probe as slots[i&mask] too (Missing 4,112 to 3,829; PutNew 1,037 to
// 988).
//
// The keys before the first held one (or one given twice) are each
// added (addLead) and copied to dst after, in one move, where the loop
// stored each to dst and counted it: past a store's held lead, which
// kvtier's insertStacked does not give, its keys are mostly all new.
// The keys after a held one go through addSome, the loop that copies
// key by key. Regime/Tiers (budget test, SERVESIM_BUDGET_FUNCS): 38,541
// instructions a request with one loop (addNew 3,148, memmove 1,271),
// 37,910 so (addLead 2,531, memmove 1,432).
func addNew(t *Index, keys, dst []uint64, id int32) int {
	n := addLead(t, keys, id)
	copy(dst, keys[:n])
	if n == len(keys) {
		return n
	}
	// keys[n] is held: the keys after it go in after the n added.
	return n + addSome(t, keys[n+1:], dst[n:], id+int32(n), nil)
}

// addLead adds keys from the first, the first mapped to id, up to the
// first held (or given twice), and returns how many it added.
func addLead(t *Index, keys []uint64, id int32) int {
	slots := t.slots
	if len(slots) == 0 {
		return 0 // never: AddNew reserved (it tells the compiler that slots[i&mask] is in bounds)
	}
	mask := uint(len(slots) - 1)
	for x, k := range keys {
		i := uint(k*mul) >> homeShift
		s := &slots[i&mask]
		for s.id != 0 {
			if s.key == k {
				t.n += x
				return x
			}
			i++
			s = &slots[i&mask]
		}
		id++ // a slot holds the id + 1
		s.key, s.id = k, id
	}
	t.n += len(keys)
	return len(keys)
}

// addSome is addNew's loop past a held key: each of keys not held
// added, the first mapped to id (the c-th to ids[c] if ids is not nil:
// AddIDs' loop), and copied to dst (as many as keys).
func addSome(t *Index, keys, dst []uint64, id int32, ids []int32) int {
	slots := t.slots
	if len(slots) == 0 {
		return 0 // never: AddNew reserved (it tells the compiler that slots[i&mask] is in bounds)
	}
	mask := uint(len(slots) - 1)
	c := 0
keys:
	for _, k := range keys {
		i := uint(k*mul) >> homeShift
		s := &slots[i&mask]
		for s.id != 0 {
			if s.key == k {
				continue keys
			}
			i++
			s = &slots[i&mask]
		}
		id++ // a slot holds the id + 1
		if ids != nil {
			id = ids[c] + 1
		}
		s.key, s.id = k, id
		dst[c] = k
		c++
	}
	t.n += c
	return c
}

// AddIDs is AddNew with the ids given: the first key it adds maps to
// ids[0], the next to ids[1], and so on (ids holds as many as keys).
// kvtier's store into a full tier, its nodes taken from its free list,
// where a loop of Adds paid a call and the growth's test a key.
func (t *Index) AddIDs(keys []uint64, ids []int32, added []uint64) []uint64 {
	t.Reserve(t.n + len(keys))
	out := slices.Grow(added, len(keys))[:len(added)+len(keys)]
	c := addSome(t, keys, out[len(added):], 0, ids[:len(keys)])
	if c == 0 {
		return added // none added: added as it was, nil if nil
	}
	return out[:len(added)+c]
}

// Missing returns how many of keys, from the first, are not held: Get
// key by key up to the first held, in one call (a loop of Gets inlined
// in a caller's loop pays for the caller's state around each). Not
// inlined: inlined in kvtier's touch, its loop shared the touch's
// registers (Regime/Tiers, cachegrind: 108,756 instructions a request
// inlined, 106,272 not).
//
//go:noinline
func (t *Index) Missing(keys []uint64) int {
	slots := t.slots
	if t.n == 0 || len(slots) == 0 {
		return len(keys)
	}
	mask := uint(len(slots) - 1)
	for x, k := range keys {
		i := uint(k*mul) >> homeShift
		for s := &slots[i&mask]; s.id != 0; s = &slots[i&mask] {
			if s.key == k {
				return x
			}
			i++
		}
	}
	return len(keys)
}

// MissingPut is Missing that puts each key it finds not held (those
// before the first held one, or all) where its probe ended, the first
// empty slot from its home, mapped to ids[0], ids[1], and so on (ids
// holds as many as keys), as a loop of Adds would put them. The table must hold
// the keys at most a quarter full as it is (Grows false): it does not
// grow. kvtier's store into a full tier, whose eviction counted its new
// keys (Missing) and whose insert then put them in (a PutIDs), each key's
// home computed and probed twice. Each key is given once (a key given
// twice stops it at its second place, put at its first).
func (t *Index) MissingPut(keys []uint64, ids []int32) int {
	if t.slots == nil { // the zero value's (Grows false)
		t.Reserve(len(keys))
	}
	slots := t.slots
	if len(slots) == 0 {
		return 0 // never (it tells the compiler that slots[i&mask] is in bounds)
	}
	ids = ids[:len(keys)] // so that the loop checks no index
	mask := uint(len(slots) - 1)
	for x, k := range keys {
		i := uint(k*mul) >> homeShift
		for s := &slots[i&mask]; s.id != 0; s = &slots[i&mask] {
			if s.key == k {
				t.n += x
				return x
			}
			i++
		}
		slots[i&mask] = slot{key: k, id: ids[x] + 1} // a slot holds the id + 1
	}
	t.n += len(keys)
	return len(keys)
}

// FilterBits sizes a Filter: 2^FilterBits bytes.
const FilterBits = 16

// Filter is a byte a slot of keys' hashes (FilterSlot), which
// MissingMark sets: kvtier's cold chain's marks.
type Filter [1 << FilterBits]uint8

// FilterSlot is key's slot in a Filter: the top bits of the hash whose
// middle ones find its home.
func FilterSlot(key uint64) uint64 { return (key * mul) >> (64 - FilterBits) }

// MissingMark is Missing, and it sets f's slot of each key it finds not
// held (FilterSlot) to v: the keys before the first held one, or all.
// Its loop is Missing's with the store added, the hash computed once
// for the home and the slot, where a caller's loop after Missing's
// computed it again. Not inlined, as Missing.
//
//go:noinline
func (t *Index) MissingMark(keys []uint64, f *Filter, v uint8) int {
	slots := t.slots
	if t.n == 0 || len(slots) == 0 {
		for _, k := range keys {
			f[(k*mul)>>(64-FilterBits)] = v
		}
		return len(keys)
	}
	mask := uint(len(slots) - 1)
	for x, k := range keys {
		h := k * mul
		i := uint(h) >> homeShift
		for s := &slots[i&mask]; s.id != 0; s = &slots[i&mask] {
			if s.key == k {
				return x
			}
			i++
		}
		f[h>>(64-FilterBits)] = v
	}
	return len(keys)
}

// Del removes key, if held: the entries after it in its probe run move
// back into the hole when their home allows (Knuth's algorithm R).
func (t *Index) Del(key uint64) {
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
	t.slots[i] = slot{}
	t.n--
}

// DelKeys removes each of keys held, in order, as a loop of Dels would,
// leaving the table as it leaves it: kvtier's eviction, which deleted
// its evicted keys one call a key (about 92 a request past Regime/Tiers'
// fill), the call's spills around each in its own loop. Its loop keeps
// the table in registers and finds a slot as slots[i&mask], which the
// compiler knows in bounds, as addLead does.
func (t *Index) DelKeys(keys []uint64) {
	slots := t.slots
	if t.n == 0 || len(slots) == 0 {
		return
	}
	mask := uint(len(slots) - 1)
	n := t.n
keys:
	for _, k := range keys {
		i := uint(k*mul) >> homeShift
		for {
			s := &slots[i&mask]
			if s.id == 0 {
				continue keys // not held
			}
			if s.key == k {
				break
			}
			i++
		}
		// Del's backward shift: the entry at j may fill the hole at i
		// unless its home lies cyclically in (i, j].
		for j := i + 1; ; j++ {
			s := &slots[j&mask]
			if s.id == 0 {
				break
			}
			if h := uint(s.key*mul) >> homeShift; (j-h)&mask >= (j-i)&mask {
				slots[i&mask] = *s
				i = j
			}
		}
		slots[i&mask] = slot{}
		n--
	}
	t.n = n
}

// Each calls f for every key and its id, in no particular order.
func (t *Index) Each(f func(key uint64, id int32)) {
	for _, s := range t.slots {
		if s.id != 0 {
			f(s.key, s.id-1)
		}
	}
}

// Misplace breaks the index for a test of a consistency check: it moves
// an entry to the slot before its home, where Get no longer finds it,
// and returns its key and id (ok false if no entry could be moved).
func (t *Index) Misplace() (key uint64, id int32, ok bool) {
	mask := len(t.slots) - 1
	for i, s := range t.slots {
		if s.id == 0 {
			continue
		}
		// A probe from its home meets an empty slot first.
		j := (t.home(s.key) - 1) & mask
		if t.slots[j].id != 0 {
			continue
		}
		t.slots[j], t.slots[i] = s, slot{}
		if _, found := t.Get(s.key); found {
			t.slots[i], t.slots[j] = s, slot{}
			continue
		}
		return s.key, s.id - 1, true
	}
	return 0, 0, false
}

func (t *Index) grow() { t.resize(max(minSlots, 2*len(t.slots))) }

// Grows reports whether Reserve(n) would grow the table.
func (t *Index) Grows(n int) bool { return 4*n > max(minSlots, len(t.slots)) }

// Clear empties the index into a table that holds n keys at most a
// quarter full (Reserve's size, never smaller than the table was), for
// a caller that puts its keys back from a list of its own (PutNew):
// moving the keys from the old table (resize) reads every slot of it,
// three empty ones and more a key.
func (t *Index) Clear(n int) {
	size := max(minSlots, len(t.slots))
	for 4*n > size {
		size *= 2
	}
	t.slots = make([]slot, size)
	t.n = 0
}

// PutNew maps keys, none of them held and each given once, to id, id+1,
// and so on, in order.
func (t *Index) PutNew(keys []uint64, id int32) {
	t.Reserve(t.n + len(keys))
	slots := t.slots
	if len(slots) == 0 {
		return // never: Reserve made some (it tells the compiler that slots[i&mask] is in bounds)
	}
	mask := uint(len(slots) - 1)
	for _, k := range keys {
		i := uint(k*mul) >> homeShift
		for slots[i&mask].id != 0 {
			i++
		}
		id++ // a slot holds the id + 1
		slots[i&mask] = slot{key: k, id: id}
	}
	t.n += len(keys)
}

// Reserve makes room for n keys in all: the table grows at once to the
// size that holds them at most a quarter full, if it is smaller. A
// caller that knows its index will grow far (kvtier's, from 64 slots to
// hundreds of thousands) saves the doublings between.
func (t *Index) Reserve(n int) {
	size := max(minSlots, len(t.slots))
	for 4*n > size {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// resize moves every key into a new table of size slots (a power of two,
// more than four times the keys).
func (t *Index) resize(size int) {
	old := t.slots
	t.slots = make([]slot, size)
	// Every key is new to the table and it has room: each goes in the
	// first empty slot from its home, as Put would put it.
	mask := size - 1
	for _, s := range old {
		if s.id != 0 {
			i := t.home(s.key)
			for t.slots[i].id != 0 {
				i = (i + 1) & mask
			}
			t.slots[i] = s
		}
	}
}
