package sim

import "math/bits"

// keyCounts counts copies of uint64 keys (EventsView's index: the copies
// of each block key an engine's KV events told it are cached). It
// replaces a Go map, whose inserts cost the runtime 8,500 instructions a
// request in Regime/Fleet8PrefixEvents (mapassign_fast64, cachegrind):
// a set of the keys held, by open addressing, linear probing in a
// power-of-two table at most keyLoadNum/keyLoadDen full, deletion by
// backward shift (no tombstones); and a Go map of the copies past the
// first, which few keys have (72 of the regime's 113,129 stores). A slot
// holds its key's hash, key × keyMul, not the key: the product is one to
// one (keyMul is odd), its top bits are the key's home (Fibonacci
// hashing: the keys are engines' chained hashes, but nothing here relies
// on that), and a doubling moves each entry without computing it again.
// Hash 0 (key 0) marks an empty slot; key 0's copies are counted apart.
//
// Nothing reads the table's or the map's order. TestKeyCountsIsAMap and
// FuzzKeyCounts hold it to a map[uint64]int32 over random adds, removes
// and lookups. The zero value is empty.
type keyCounts struct {
	hs    []uint64         // by slot: the hash of a key held; 0: empty
	more  map[uint64]int32 // by hash: the copies past the first of a key held, if any; nil until one has
	zero  int32            // the copies of key 0
	held  int              // keys in the table (key 0 not among them)
	limit int              // held at which the next new key doubles the table
	shift uint             // 64 − log2(len(hs))
	full  int              // the slots of a table for all the keys it may hold (sizeFor); 0: none known
	jump  int              // the largest table grown to by doubling before full's (jumpSlots); 0: none
	// ms is, by slot, the replicas holding the slot's key when the table
	// is maskCounts' (more and zero unused then), nil otherwise: grow
	// and del move it with hs.
	ms []uint64
	// ss is, by slot, the replicas whose index has looked the slot's key
	// up and found it, or kept it, since its copy came
	// (maskCounts.has and see: maskCounts.drop), with ms; grow and del
	// move it with hs.
	ss []uint64
}

// keyMul spreads the keys: 2⁶⁴ over the golden ratio (sim's Fibonacci
// hashing: keyCounts, gapCounts, the fleet's chain memo, a host port's
// touch notes).
const keyMul = 0x9e3779b97f4a7c15

// minKeySlots is the smallest table: 512 bytes.
const minKeySlots = 64

// keyLoadNum/keyLoadDen is the most of a table's slots held: a half. At
// Regime/Fleet8PrefixEvents' end a replica holds 12,856 to 16,619 keys:
// grown by doubling, 32,768 slots (256 KiB), and 65,536 for the one past
// 16,384 (512 KiB), where the Go map, sized for 16,384 keys, took
// 577 KiB each; sized for the pool (sizeFor), 65,536 from 2,048 keys.
const keyLoadNum, keyLoadDen = 1, 2

// maxFullSlots bounds the table sizeFor asks for: 512 KiB.
const maxFullSlots = 1 << 16

// jumpSlots is the largest table grown to by doubling when sizeFor has
// told the keys it may hold: past it, the table grows to the size for
// them at once (32 KiB: 2,048 keys).
const jumpSlots = 1 << 12

// sizeFor tells the table that it holds at most n keys: once it holds
// more than jumpSlots/2, it grows at once to hold n without a doubling
// (up to maxFullSlots). EventsView's index holds no more keys than its
// engine's pool has blocks (a block holds one key, and the events come
// in the order the cache changed), so sized for the pool it doubles no
// more: Regime/Fleet8PrefixEvents, TestInstructionBudget, 20,621 then
// 19,552 instructions a request (grow's 859 gone, and fewer probes at a
// lower load). Memory: a replica's index that held more than 2,048 keys
// is 512 KiB for Atlas's 28,672 blocks, where by doubling it grew to
// 256 KiB, or 512 KiB past 16,384 keys, by the regime's end, and to
// 512 KiB once its pool is full; one of fewer keys is as before.
func (c *keyCounts) sizeFor(n int) {
	size := minKeySlots
	for size < maxFullSlots && size/keyLoadDen*keyLoadNum < n {
		size *= 2
	}
	c.full, c.jump = size, jumpSlots
}

// has reports whether key has a copy.
func (c *keyCounts) has(key uint64) bool {
	h := key * keyMul
	if h == 0 {
		return c.zero > 0
	}
	hs := c.hs
	if len(hs) == 0 {
		return false
	}
	mask := uint(len(hs) - 1)
	for i := uint(h >> (c.shift & 63)); ; i++ {
		switch hs[i&mask] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

// find is the slot of the key of hash h (not 0), ok false if it is not
// held.
func (c *keyCounts) find(h uint64) (int, bool) {
	hs := c.hs
	if len(hs) == 0 {
		return 0, false
	}
	mask := uint(len(hs) - 1)
	for i := uint(h >> (c.shift & 63)); ; i++ {
		switch hs[i&mask] {
		case h:
			return int(i & mask), true
		case 0:
			return 0, false
		}
	}
}

// add adds a copy of each of keys, in order (a key given twice gains
// two).
func (c *keyCounts) add(keys []uint64) {
	for {
		keys = keys[c.addSome(keys):]
		if len(keys) == 0 {
			return
		}
		c.grow()
	}
}

// addSome is add's loop: it adds a copy of each of keys in order until
// the next would add a key to a table at its limit, and returns how
// many it added. Its state stays in locals, the loop calling nothing
// but for a key held already, or key 0.
func (c *keyCounts) addSome(keys []uint64) int {
	hs, shift := c.hs, c.shift&63
	if len(hs) == 0 {
		return 0
	}
	mask := uint(len(hs) - 1)
	room := c.limit - c.held
	for x, k := range keys {
		h := k * keyMul
		i := uint(h >> shift)
		s := hs[i&mask]
		for s != 0 && s != h {
			i++
			s = hs[i&mask]
		}
		if s == 0 && h != 0 { // a new key
			if room == 0 {
				c.held = c.limit
				return x
			}
			hs[i&mask] = h
			room--
			continue
		}
		c.again(h)
	}
	c.held = c.limit - room
	return len(keys)
}

// addOne adds a copy of key and reports whether it had none before: add
// of one key, probed once, not looked up first (EventsView's storeChain,
// a run's first key: has then add, Regime/Fleet8PrefixEvents,
// TestInstructionBudget, 15,937 then 15,857 instructions a request).
func (c *keyCounts) addOne(key uint64) bool {
	h := key * keyMul
	if h == 0 {
		c.zero++
		return c.zero == 1
	}
	for {
		if hs := c.hs; len(hs) > 0 {
			mask := uint(len(hs) - 1)
			i := uint(h >> (c.shift & 63))
			for hs[i&mask] != 0 && hs[i&mask] != h {
				i++
			}
			if hs[i&mask] == h {
				c.again(h)
				return false
			}
			if c.held < c.limit {
				hs[i&mask] = h
				c.held++
				return true
			}
		}
		c.grow()
	}
}

// again adds a copy of the key of hash h, held already, or key 0.
func (c *keyCounts) again(h uint64) {
	if h == 0 {
		c.zero++
		return
	}
	if c.more == nil {
		c.more = map[uint64]int32{}
	}
	c.more[h]++
}

// remove removes a copy of key and reports whether the key has none
// left, or had none (the key leaves, or was not there).
func (c *keyCounts) remove(key uint64) bool {
	h := key * keyMul
	if h == 0 {
		if c.zero > 1 {
			c.zero--
			return false
		}
		c.zero = 0
		return true
	}
	if len(c.more) > 0 {
		if m, ok := c.more[h]; ok {
			if m > 1 {
				c.more[h] = m - 1
			} else {
				delete(c.more, h)
			}
			return false
		}
	}
	i, ok := c.find(h)
	if ok {
		c.del(i)
	}
	return true
}

// del empties slot i: the entries after it in its probe run move back
// into the hole when their home allows (Knuth's algorithm R).
func (c *keyCounts) del(i int) {
	hs := c.hs
	mask := len(hs) - 1
	for j := (i + 1) & mask; hs[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j].
		if h := int(hs[j] >> (c.shift & 63)); (j-h)&mask >= (j-i)&mask {
			hs[i] = hs[j]
			if c.ms != nil {
				c.ms[i], c.ss[i] = c.ms[j], c.ss[j]
			}
			i = j
		}
	}
	hs[i] = 0
	if c.ms != nil {
		c.ms[i], c.ss[i] = 0, 0
	}
	c.held--
}

// grow doubles the table (from minKeySlots), or past jumpSlots makes it
// full's at once, and moves every entry into it.
func (c *keyCounts) grow() {
	size := max(minKeySlots, 2*len(c.hs))
	if c.jump > 0 && size > c.jump {
		size = max(size, c.full)
	}
	hs := make([]uint64, size)
	var ms, ss []uint64
	if c.ms != nil {
		ms, ss = make([]uint64, size), make([]uint64, size)
	}
	mask := uint(size - 1)
	shift := uint(64-bits.TrailingZeros(uint(size))) & 63
	for j, h := range c.hs {
		if h != 0 {
			i := uint(h >> shift)
			for hs[i&mask] != 0 {
				i++
			}
			hs[i&mask] = h
			if ms != nil {
				ms[i&mask], ss[i&mask] = c.ms[j], c.ss[j]
			}
		}
	}
	c.hs, c.ms, c.ss, c.shift, c.limit = hs, ms, ss, shift, size/keyLoadDen*keyLoadNum
}
