package sim

import "math/bits"

// maskCounts is keyCounts shared by up to 64 replicas' indexes
// (EventsView's: a fleet's replicas, a band of 64 at a time): one entry
// a key, its hash and the mask of the replicas whose index holds a copy
// of it (bit i: the band's replica i), where one keyCounts a replica
// held an entry a replica. The replicas that hold an arrival's first
// key are found by one lookup (mask), not one a replica. The entries
// are a keyCounts' table (tab: its hashes, and their masks in ms, which
// grow and del move with them); key 0 (hash 0, the empty slot's mark)
// has its mask apart (zero), and a replica's copies of a key past its
// first are counted in a map, as keyCounts counts them.
//
// A replica reads and changes its own bit alone (replicaKeys), so each
// replica's index holds what its own keyCounts would:
// TestMaskCountsIsKeyCounts and FuzzMaskCounts hold it to one keyCounts
// a replica (the key-by-key index, its twin) over random adds, removes
// and lookups of a few replicas; TestSharedTablesAreOwn holds a fleet's
// answers to those of an index a replica (eventsOwnTables).
type maskCounts struct {
	tab     keyCounts         // the keys some replica holds, and (ms) which replicas
	zero    uint64            // the replicas holding key 0
	more    map[moreKey]int32 // a replica's copies of a key past its first, if any; nil until one has
	pools   int               // the blocks of the replicas' pools, summed (sizeFor)
	repeats uint64            // copies added past a replica's first, ever (eventIndex.wakeIn)
}

// moreKey is a replica's key in maskCounts.more: the key's hash and the
// replica's bit number.
type moreKey struct {
	h uint64
	i uint8
}

// newMaskCounts is an empty table of minKeySlots slots.
func newMaskCounts() *maskCounts {
	c := &maskCounts{}
	c.grow()
	return c
}

// maxMaskSlots bounds the table sizeFor asks for: 24 MiB of hashes,
// masks and marks (1,048,576 slots, 524,288 keys), where each
// replica's own table was 512 KiB for Atlas's pool: a fleet of 8 on
// Atlas's pools (229,376 blocks) is sized whole, as its pools fill. At
// 4 MiB it doubled past 131,072 keys: Regime/Fleet8PrefixEvents at
// 6,400 requests (its pools full from about the 3,500th),
// TestInstructionBudget's marginal count between 3,200 and 6,400,
// keyCounts.grow 1,788 instructions a request.
const maxMaskSlots = 1 << 20

// maskSpread is how many times its replicas' pools' blocks the table
// is sized for (sizeFor): past the pools' fill it holds nearly a key a
// block, and sized for them alone (keyCounts' half) it was 0.44 full
// for a fleet of 8 on Atlas's pools, where each removal's probe and
// backward shift (dropFree) and each store's probe (addFree) walk the
// run of taken slots; at twice them, 0.22. Regime/Fleet8PrefixEvents,
// TestInstructionBudget's marginal count between 6,400 and 12,800
// requests: 19,557 then 19,032 instructions a request (dropFree 2,164
// then 1,765, addFree 908 then 798; at 4× its size 19,141 then
// 18,619), the table 12 MiB then 24 MiB (the regime's peak RSS 38 MB
// then 52 MB).
const maskSpread = 2

// sizeFor tells the table that a replica of a pool of n blocks shares
// it: it holds at most the sum of its replicas' pools' keys, and past
// jumpSlots grows at once to the size for maskSpread times them (up to
// maxMaskSlots), as keyCounts.sizeFor.
func (c *maskCounts) sizeFor(n int) {
	c.pools += n
	size := minKeySlots
	for size < maxMaskSlots && size/keyLoadDen*keyLoadNum < maskSpread*c.pools {
		size *= 2
	}
	c.tab.full, c.tab.jump = size, jumpSlots
}

// mask is the replicas holding a copy of key.
func (c *maskCounts) mask(key uint64) uint64 {
	h := key * keyMul
	if h == 0 {
		return c.zero
	}
	if i, ok := c.tab.find(h); ok {
		return c.tab.ms[i]
	}
	return 0
}

// has reports whether the replica of bit has a copy of key: a probe of
// the table (never empty: newMaskCounts), inline in its callers (walk's
// loop) as keyCounts.has was.
func (c *maskCounts) has(key, bit uint64) bool {
	h, hs := key*keyMul, c.tab.hs
	if h == 0 {
		return c.zero&bit != 0
	}
	mask := uint(len(hs) - 1)
	for i := uint(h >> (c.tab.shift & 63)); ; i++ {
		switch hs[i&mask] {
		case h:
			j := i & mask
			if c.tab.ms[j]&bit == 0 {
				return false
			}
			c.tab.ss[j] |= bit // looked up and found (drop)
			return true
		case 0:
			return false
		}
	}
}

// see notes that the replica of bit, holding a copy of each of keys,
// keeps them (eventIndex.keep: walk takes them as held while it drops
// none): drop reports them seen.
func (c *maskCounts) see(keys []uint64, bit uint64) {
	for _, k := range keys {
		if j, ok := c.tab.find(k * keyMul); ok {
			c.tab.ss[j] |= c.tab.ms[j] & bit
		}
	}
}

// addSome is keyCounts.addSome for the replica of bit: it adds a copy
// of each of keys in order until the next would add a key to a table at
// its limit, and returns how many it added. Where the table has room
// for every key as a new one (most calls: a run of stored keys, in a
// table sized for the fleet's pools), addRoom adds them without the
// limit's test; else addNear.
func (c *maskCounts) addSome(keys []uint64, bit uint64) int {
	t := &c.tab
	if len(t.hs) == 0 {
		return 0
	}
	if len(keys) > t.limit-t.held {
		return c.addNear(keys, bit)
	}
	return c.addRoom(keys, bit)
}

// addRoom is addSome in a table with room for every key of keys as a
// new one: no key's add can meet the limit, so none is tested against
// it. Its loop (addFree) calls nothing; a key it stops at (key 0, or a
// copy past the replica's first) is added here (again), and the loop
// goes on past it.
//
// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's marginal count
// (10,242 keys added in its measured half, 12.8 an arrival: the groups'
// prefixes first cached, a fifth of them at a replica holding none
// where another does): addSome 400 instructions a request, about 31 a
// key, then addFree 330, about 26; the whole count 13,277 then 13,224.
// addNear's loop kept the limit and the count of keys in memory, and
// tested the slot the probe stopped at again. A loop that went to a
// call (the probe's) at a key whose home slot was taken, a fifth of
// them, kept its values on the stack for the call: 13,435.
func (c *maskCounts) addRoom(keys []uint64, bit uint64) int {
	t, all := &c.tab, len(keys)
	for {
		n, added, j := addFree(t.hs, t.ms, t.shift, keys, bit)
		t.held += added
		if n == len(keys) {
			return all
		}
		c.again(j, keys[n]*keyMul, bit)
		keys = keys[n+1:]
	}
}

// addFree adds, for the replica of bit, a copy of each of keys in order
// to the table of hashes hs and masks ms (shift its home's) while the
// key is new to the table or held by other replicas alone, and returns
// how many it added and how many of them were new; at a key it does not
// add (key 0, whose hash, 0, is an empty slot's, or a key the replica
// holds), j is the key's slot (0 for key 0). The table has room for
// every key as a new one.
func addFree(hs, ms []uint64, shift uint, keys []uint64, bit uint64) (n, added, j int) {
	if len(hs) == 0 {
		return 0, 0, 0
	}
	ms = ms[:len(hs)]
	mask := uint64(len(hs) - 1)
	shift &= 63
	for x := 0; x < len(keys); x++ {
		h := keys[x] * keyMul
		for i := h >> shift; ; i++ {
			i &= mask
			s := hs[i]
			if s == 0 {
				if h == 0 {
					return x, added, 0
				}
				hs[i], ms[i] = h, bit // new to the table
				added++
				break
			}
			if s == h {
				if ms[i]&bit != 0 {
					return x, added, int(i)
				}
				ms[i] |= bit // held by other replicas
				break
			}
		}
	}
	return len(keys), added, 0
}

// addNear is addSome in a table that may reach its limit: each new key
// is tested against it. The table's shift is read from memory at each
// key and its count of keys kept there, not in locals:
// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS, addSome 570 then
// 490 instructions a request (its locals one more than the registers:
// the probe's index was kept on the stack).
func (c *maskCounts) addNear(keys []uint64, bit uint64) int {
	t := &c.tab
	hs := t.hs
	ms := t.ms[:len(hs)]
	mask := uint(len(hs) - 1)
	for x, k := range keys {
		h := k * keyMul
		i := uint(h >> (t.shift & 63))
		s := hs[i&mask]
		for s != 0 && s != h {
			i++
			s = hs[i&mask]
		}
		if s == 0 && h != 0 { // a new key
			if t.held == t.limit {
				return x
			}
			hs[i&mask], ms[i&mask] = h, bit
			t.held++
			continue
		}
		c.again(int(i&mask), h, bit)
	}
	return len(keys)
}

// add adds a copy of each of keys, in order, for the replica of bit.
func (c *maskCounts) add(keys []uint64, bit uint64) {
	for {
		keys = keys[c.addSome(keys, bit):]
		if len(keys) == 0 {
			return
		}
		c.grow()
	}
}

// grow grows the table, its masks with it.
func (c *maskCounts) grow() {
	if c.tab.ms == nil {
		c.tab.ms = []uint64{} // masked: grow makes them
	}
	c.tab.grow()
}

// addOne adds a copy of key for the replica of bit and reports whether
// it had none before (keyCounts.addOne: probed once, not looked up
// first; by add, a call of one key, Regime/Fleet8PrefixEvents,
// SERVESIM_BUDGET_FUNCS, with longestEach's one lookup (mask), 15,187
// then 15,034 instructions a request).
func (c *maskCounts) addOne(key, bit uint64) bool {
	h, t := key*keyMul, &c.tab
	if h == 0 || t.held == t.limit { // key 0, or a table that may grow first: seldom
		had := c.has(key, bit)
		c.add([]uint64{key}, bit)
		return !had
	}
	mask := uint(len(t.hs) - 1)
	i := uint(h >> (t.shift & 63))
	for t.hs[i&mask] != 0 && t.hs[i&mask] != h {
		i++
	}
	j := int(i & mask)
	if t.hs[j] == 0 {
		t.hs[j], t.ms[j] = h, bit
		t.held++
		return true
	}
	first := t.ms[j]&bit == 0
	c.again(j, h, bit)
	return first
}

// again adds a copy, for the replica of bit, of the key of hash h held
// at slot j (by some replica), or of key 0 (h 0): its first, or one
// past its first.
func (c *maskCounts) again(j int, h, bit uint64) {
	m := &c.zero
	if h != 0 {
		m = &c.tab.ms[j]
	}
	if *m&bit == 0 {
		*m |= bit
		return
	}
	if c.more == nil {
		c.more = map[moreKey]int32{}
	}
	c.more[moreKey{h, uint8(bits.TrailingZeros64(bit))}]++
	c.repeats++
}

// remove removes a copy of key of the replica of bit and reports
// whether the replica has none left, or had none.
func (c *maskCounts) remove(key, bit uint64) bool {
	gone, _ := c.drop(key, bit)
	return gone
}

// drop is remove, and reports too whether the replica's index had
// looked the key up and found it (has), or kept it (see), since its
// copy came: if not, no walk, memo or kept run of the index took it as
// held, and its leaving changes none of them (eventIndex.apply). Key 0,
// and a key the replica did not hold, count as seen.
//
// Past the pools' fill the index drops the requests' own keys at every
// eviction, which no arrival asks about, and each made the memos and
// the kept runs of the group prefixes stale (forgot, forgotAt): walkStale
// checked a prefix's every key at most walks. Regime/Fleet8PrefixEvents,
// TestInstructionBudget's marginal count between 6,400 and 12,800
// requests: 29,694 then 24,048 instructions a request (walkStale 5,224
// then under 300). The marks (keyCounts.ss) are a word a slot: a band's
// table at its largest (maxMaskSlots) is 24 MiB, not 16.
// twins.forgetUnseen counts every dropped key forgotten:
// TestUnseenDropsAreForgotten.
func (c *maskCounts) drop(key, bit uint64) (gone, seen bool) {
	h := key * keyMul
	if len(c.more) > 0 {
		mk := moreKey{h, uint8(bits.TrailingZeros64(bit))}
		if m, ok := c.more[mk]; ok {
			if m > 1 {
				c.more[mk] = m - 1
			} else {
				delete(c.more, mk)
			}
			return false, false
		}
	}
	if h == 0 {
		c.zero &^= bit
	} else if j, ok := c.tab.find(h); ok && c.tab.ms[j]&bit != 0 {
		seen = c.tab.ss[j]&bit != 0
		c.tab.ss[j] &^= bit
		if c.tab.ms[j] &^= bit; c.tab.ms[j] == 0 {
			c.tab.del(j)
		}
		return true, seen
	}
	return true, true
}

// dropUnseen drops, for the replica of bit, a copy of each of keys in
// order while the key is its last copy, unseen (drop's gone and not
// seen: no walk found it and no kept run holds it), and returns how many
// it dropped: at the first key it does not drop (key 0, a key the
// replica holds more than once or not at all, or one it has seen) the
// caller drops it by drop and goes on. Past the pools' fill these are
// nearly all of an index's drops: the requests' own keys, which no
// arrival asks about.
//
// drop's call a key, its test of more, and del's call (its table's
// fields read from memory at each step of the shift) cost
// Regime/Fleet8PrefixEvents about 139 instructions a key dropped, 31
// keys a request past the fill; here, the table's fields in locals for
// the whole run, 78 (callgrind): TestInstructionBudget's marginal count
// between 6,400 and 12,800 requests, 23,910 then 21,706 instructions a
// request (drop and del 4,368, apply 1,249; then dropFree 2,475,
// dropUnseen 262, apply 623). Its slots change as drop's do, in the same
// order: TestDropUnseenIsDrop holds the whole table to drop's key by
// key, and twins.dropEach turns it off (TestUnseenDropsAreDropEach).
func (c *maskCounts) dropUnseen(keys []uint64, bit uint64) int {
	if len(c.more) > 0 { // a key may have copies past the replica's first
		return 0
	}
	t := &c.tab
	n, deleted := dropFree(t.hs, t.ms, t.ss, t.shift, keys, bit)
	t.held -= deleted
	return n
}

// dropFree is dropUnseen's loop over the table of hashes hs, masks ms
// and marks ss (shift its home's): it returns how many keys it dropped
// and how many of them left the table (del's backward shift, here).
func dropFree(hs, ms, ss []uint64, shift uint, keys []uint64, bit uint64) (n, deleted int) {
	if len(hs) == 0 {
		return 0, 0
	}
	ms, ss = ms[:len(hs)], ss[:len(hs)]
	mask := uint64(len(hs) - 1)
	shift &= 63
	for x, k := range keys {
		h := k * keyMul
		if h == 0 {
			return x, deleted
		}
		i := h >> shift & mask
		for s := hs[i]; s != h; s = hs[i] {
			if s == 0 {
				return x, deleted
			}
			i = (i + 1) & mask
		}
		m := ms[i]
		if m&bit == 0 || ss[i]&bit != 0 {
			return x, deleted
		}
		if m &^= bit; m != 0 { // other replicas hold it
			ms[i] = m
			continue
		}
		// del's backward shift: the entries after i in its probe run
		// move back into the hole when their home allows. The loop
		// counts d, j's distance from the hole (del's (j-i)&mask), and
		// masks i where it writes (no bounds check there), and the probe
		// above reads each slot once: the loop so keeps one value less
		// in a register, where it reloaded two and spilled three a slot.
		// Regime/Fleet8PrefixEvents, TestInstructionBudget's marginal
		// count between 6,400 and 12,800 requests: dropFree 2,476 then
		// 2,164 instructions a request (the whole 20,023 then 19,710).
		// It is the register allocator's: i masked after the probe too
		// (a bounds check fewer) made it 2,320.
		for d := uint64(1); ; d++ {
			j := (i + d) & mask
			s := hs[j]
			if s == 0 {
				break
			}
			if (j-s>>shift)&mask >= d {
				i &= mask
				hs[i], ms[i], ss[i] = s, ms[j], ss[j]
				i, d = j, 0
			}
		}
		i &= mask
		hs[i], ms[i], ss[i] = 0, 0, 0
		deleted++
	}
	return len(keys), deleted
}

// replicaKeys is a replica's index's copies of each key: its bit of a
// table it shares (maskCounts), or of one of its own (bit 1).
type replicaKeys struct {
	t   *maskCounts
	bit uint64
}

// ownKeys is a table of a replica's own.
func ownKeys() replicaKeys { return replicaKeys{t: newMaskCounts(), bit: 1} }

func (k *replicaKeys) has(key uint64) bool    { return k.t.has(key, k.bit) }
func (k *replicaKeys) add(keys []uint64)      { k.t.add(keys, k.bit) }
func (k *replicaKeys) addOne(key uint64) bool { return k.t.addOne(key, k.bit) }
func (k *replicaKeys) drop(key uint64) (gone, seen bool) {
	return k.t.drop(key, k.bit)
}
func (k *replicaKeys) see(keys []uint64) { k.t.see(keys, k.bit) }
func (k *replicaKeys) dropUnseen(keys []uint64) int {
	return k.t.dropUnseen(keys, k.bit)
}
