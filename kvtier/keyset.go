package kvtier

// keySet is Insert's scratch set of the new keys of one call, to count
// those given twice once: open addressing in a power-of-two array at most
// half full, each slot stamped with the call it was filled in (gen), so
// that emptying it for the next call is a new stamp, not a clear. A Go
// map there, cleared at each call, cost a full tier's Insert its table's
// size each time (the runtime's map clear and memclr): Regime/Tiers past
// its tiers' fill (cachegrind, SERVESIM_BENCH_SCALE=4), the map's
// assign, clear and memclr were about 36,000 instructions a request of
// 143,859. TestKeySetIsAMap holds it to a map. The zero value is an
// empty set with no room: reset makes some.
type keySet struct {
	slots []stampedKey
	gen   uint32
}

type stampedKey struct {
	key uint64
	gen uint32 // the reset the slot was filled after; 0 never
}

// reset empties the set for at most n keys.
func (s *keySet) reset(n int) {
	size := max(64, len(s.slots))
	for size < 2*n {
		size *= 2
	}
	if size > len(s.slots) {
		s.slots, s.gen = make([]stampedKey, size), 0
	}
	s.gen++
	if s.gen == 0 { // after 2³² resets: no slot may keep a stale stamp
		clear(s.slots)
		s.gen = 1
	}
}

// add adds key and reports whether it was not in the set. The set must
// have room (reset's n).
func (s *keySet) add(key uint64) bool {
	slots := s.slots
	mask := uint(len(slots) - 1)
	for i := uint(key*keySetMul) >> 32; ; i++ {
		sl := &slots[i&mask]
		if sl.gen != s.gen {
			*sl = stampedKey{key: key, gen: s.gen}
			return true
		}
		if sl.key == key {
			return false
		}
	}
}

// keySetMul spreads the keys: 2⁶⁴ over the golden ratio.
const keySetMul = 0x9e3779b97f4a7c15
