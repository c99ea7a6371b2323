package sim

// kids is an approximate tree's edges below one edge's last node, by
// their first id: a slice sorted by id while every id came after the
// ones before it (a synthetic prompt's own ids, fresh from the
// workload's counter, each hung below its group's prefix) or while it
// is short, else a map. An id added past the last is appended, where a
// map's insert hashed it and grew the map: Regime/Fleet8PrefixApprox
// 11,345 then 11,065 instructions a request (SERVESIM_BUDGET_FUNCS; the
// map's insert, mapassign_fast64 and its table's, about 270 then 4, its
// lookups 217 then 164 in mapaccess1_fast64 and 87 in get). Its twin is
// the map alone: TestTreeKidsAreAMap holds every operation to a map's,
// TestTreeEqualsRefTree the tree to refTree's, which keeps maps.
type kids struct {
	s []kid            // sorted by id; nil or empty once m holds them
	m map[uint64]int32 // nil until the slice gives way (kidsSlice)
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

// len is how many kids there are.
func (k *kids) len() int {
	if k.m != nil {
		return len(k.m)
	}
	return len(k.s)
}

// get is the kid whose first id is id; 0: none.
func (k *kids) get(id uint64) int32 {
	if k.m != nil {
		return k.m[id]
	}
	if i := k.at(id); i < len(k.s) && k.s[i].id == id {
		return k.s[i].c
	}
	return 0
}

// put makes c the kid whose first id is id, in place of any other.
func (k *kids) put(id uint64, c int32) {
	if k.m != nil {
		k.m[id] = c
		return
	}
	n := len(k.s)
	if n == 0 || k.s[n-1].id < id {
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
		k.m[id] = c
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
		delete(k.m, id)
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
	k.m = make(map[uint64]int32, len(k.s)+1)
	for _, x := range k.s {
		k.m[x.id] = x.c
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
		for id, c := range k.m {
			f(id, c)
		}
		return
	}
	for _, x := range k.s {
		f(x.id, x.c)
	}
}
