package sim

// kids is an approximate tree's edges below one edge's last node, by
// their first id: a slice sorted by id while every id came after the
// ones before it (a synthetic prompt's own ids, fresh from the
// workload's counter, each hung below its group's prefix) or while it
// is short, else a hash table (idTable). An id added past the last is
// appended, where a map's insert hashed it and grew the map:
// Regime/Fleet8PrefixApprox 11,345 then 11,065 instructions a request
// (SERVESIM_BUDGET_FUNCS; the map's insert, mapassign_fast64 and its
// table's, about 270 then 4, its lookups 217 then 164 in
// mapaccess1_fast64 and 87 in get). Past the slice, idTable in place of
// a Go map: 11,009 then 10,922 (a root's kids, one a group of 256,
// looked up about 1.9 times a request: 103 of mapaccess1_fast64's 164
// gone). Its twin is
// the map alone: TestTreeKidsAreAMap holds every operation to a map's,
// TestTreeEqualsRefTree the tree to refTree's, which keeps maps.
type kids struct {
	s []kid           // sorted by id; nil or empty once m holds them
	m *idTable[int32] // nil until the slice gives way (kidsSlice)
}

// kid is one edge below: its first id and its index.
type kid struct {
	id uint64
	c  int32
}

// kidsSlice is the most kids the slice keeps when one is added within it
// or removed from it (each a copy of the kids past it); past it, the map
// takes them over. Added one past the last, the slice grows without it.
const kidsSlice = 32

// kidsFirst is the room an edge's first kid is given: a group's prefix
// edge gains a kid an arrival of the group (its own ids), and grown from
// one by append it was reallocated at 2, 4 and 8 as well.
// Regime/Fleet8PrefixApprox 10,666 and 10,653 then 10,617 and 10,618
// instructions a request (the budget test: the runtime's growslice and
// allocation; servesim's own 9,930 then 9,933).
const kidsFirst = 8

// len is how many kids there are.
func (k *kids) len() int {
	if k.m != nil {
		return k.m.n
	}
	return len(k.s)
}

// get is the kid whose first id is id; 0: none.
func (k *kids) get(id uint64) int32 {
	if k.m != nil {
		return k.m.get(id)
	}
	if i := k.at(id); i < len(k.s) && k.s[i].id == id {
		return k.s[i].c
	}
	return 0
}

// put makes c the kid whose first id is id, in place of any other.
func (k *kids) put(id uint64, c int32) {
	if k.m != nil {
		k.m.put(id, c)
		return
	}
	n := len(k.s)
	if n == 0 || k.s[n-1].id < id {
		if cap(k.s) == 0 {
			k.s = make([]kid, 0, kidsFirst)
		}
		k.s = append(k.s, kid{id, c})
		return
	}
	i := k.at(id)
	if k.s[i].id == id {
		k.s[i].c = c
		return
	}
	if n >= kidsSlice {
		k.toMap()
		k.m.put(id, c)
		return
	}
	k.s = append(k.s, kid{})
	copy(k.s[i+1:], k.s[i:n])
	k.s[i] = kid{id, c}
}

// del removes the kid whose first id is id, if any.
func (k *kids) del(id uint64) {
	if k.m == nil && len(k.s) > kidsSlice {
		k.toMap()
	}
	if k.m != nil {
		k.m.del(id)
		return
	}
	if i := k.at(id); i < len(k.s) && k.s[i].id == id {
		n := len(k.s)
		copy(k.s[i:], k.s[i+1:])
		k.s = k.s[:n-1]
	}
}

// at is where id is or would go in the slice.
func (k *kids) at(id uint64) int {
	s := k.s
	lo, hi := 0, len(s)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if s[h].id < id {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// toMap moves the slice's kids into the map.
func (k *kids) toMap() {
	k.m = newIDTable[int32](len(k.s) + 1)
	for _, x := range k.s {
		k.m.put(x.id, x.c)
	}
	k.s = k.s[:0]
}

// reset empties k for an edge's next use, keeping the slice's room.
func (k *kids) reset() {
	k.s, k.m = k.s[:0], nil
}

// each calls f with every kid's first id and index, in no set order.
func (k *kids) each(f func(id uint64, c int32)) {
	if k.m != nil {
		k.m.each(f)
		return
	}
	for _, x := range k.s {
		f(x.id, x.c)
	}
}

// idTable is a hash table of ids to values (an edge's kids past the
// slice, a router instance's roots), none of them zero: open addressing,
// linear probing from a Fibonacci hash of the id, deletion by shifting
// the entries after back (no tombstones), at most three quarters full.
// It does what a Go map does for these ids in fewer instructions (a
// lookup is a multiply, a shift and a compare or two, where
// mapaccess1_fast64 hashed with aeshash and probed a group's control
// word). Its twin is a Go map: TestIDTableIsAMap, TestTreeKidsAreAMap.
type idTable[V int32 | uint64] struct {
	slots []idSlot[V] // a power of two of them; V zero: empty
	n     int         // entries held
	shift uint8       // 64 − log2(len(slots))
}

// idSlot is one entry of an idTable.
type idSlot[V int32 | uint64] struct {
	id uint64
	v  V
}

// newIDTable is an empty table with room for n entries.
func newIDTable[V int32 | uint64](n int) *idTable[V] {
	t := &idTable[V]{}
	t.size(n)
	return t
}

// size makes the table's slots (empty) room for n entries.
func (t *idTable[V]) size(n int) {
	b := uint8(4) // 16 slots at least
	for 3<<b < n*4 {
		b++
	}
	t.slots, t.shift = make([]idSlot[V], 1<<b), 64-b
}

// home is the slot id's probe starts from.
func (t *idTable[V]) home(id uint64) int {
	return int((id * 0x9E3779B97F4A7C15) >> t.shift)
}

// get is id's value; zero: none.
func (t *idTable[V]) get(id uint64) V {
	s, m := t.slots, len(t.slots)-1
	for i := t.home(id); ; i = (i + 1) & m {
		if x := &s[i]; x.v == 0 || x.id == id {
			return x.v
		}
	}
}

// put sets id's value to v (not zero), in place of any other.
func (t *idTable[V]) put(id uint64, v V) {
	s, m := t.slots, len(t.slots)-1
	i := t.home(id)
	for ; s[i].v != 0; i = (i + 1) & m {
		if s[i].id == id {
			s[i].v = v
			return
		}
	}
	if (t.n+1)*4 > len(s)*3 {
		t.grow()
		t.put(id, v)
		return
	}
	s[i] = idSlot[V]{id, v}
	t.n++
}

// grow doubles the slots, and places every entry anew.
func (t *idTable[V]) grow() {
	old := t.slots
	t.size(2 * len(old) * 3 / 4)
	for _, x := range old {
		if x.v != 0 {
			t.place(x)
		}
	}
}

// place puts x, whose id the table does not hold, in its first empty
// slot.
func (t *idTable[V]) place(x idSlot[V]) {
	s, m := t.slots, len(t.slots)-1
	i := t.home(x.id)
	for s[i].v != 0 {
		i = (i + 1) & m
	}
	s[i] = x
}

// del removes id, if the table holds it: the entries after it in its
// run move back into the hole where their probe passes it.
func (t *idTable[V]) del(id uint64) {
	s, m := t.slots, len(t.slots)-1
	i := t.home(id)
	for ; s[i].id != id || s[i].v == 0; i = (i + 1) & m {
		if s[i].v == 0 {
			return
		}
	}
	for j := (i + 1) & m; s[j].v != 0; j = (j + 1) & m {
		if h := t.home(s[j].id); (j-h)&m >= (j-i)&m { // its probe passes i
			s[i] = s[j]
			i = j
		}
	}
	s[i] = idSlot[V]{}
	t.n--
}

// each calls f with every entry, in the slots' order.
func (t *idTable[V]) each(f func(id uint64, v V)) {
	for _, x := range t.slots {
		if x.v != 0 {
			f(x.id, x.v)
		}
	}
}
