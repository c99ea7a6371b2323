package sim

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestIDTableIsAMap holds idTable to a Go map: random puts, overwrites,
// deletions (present and absent ids) and lookups, over ids drawn from a
// span small enough that runs of probes collide and wrap the slots'
// end, and from ids spaced as a fleet's group roots are (multiples of
// 256). After every operation, the count, the entries (each) and a
// lookup of every id of the span agree with the map's.
func TestIDTableIsAMap(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 48))
		tab := newIDTable[uint64](rng.IntN(40))
		want := map[uint64]uint64{}
		got := map[uint64]uint64{}
		span := 1 + rng.IntN(200)
		stride := uint64(1)
		if rng.IntN(2) == 0 {
			stride = 256
		}
		for op := range 600 {
			id := uint64(rng.IntN(span)) * stride
			if rng.IntN(3) == 0 {
				tab.del(id)
				delete(want, id)
			} else {
				v := 1 + uint64(rng.IntN(1<<20))
				tab.put(id, v)
				want[id] = v
			}
			if tab.n != len(want) {
				t.Fatalf("seed %d op %d: %d entries, want %d", seed, op, tab.n, len(want))
			}
			clear(got)
			tab.each(func(id, v uint64) { got[id] = v })
			if !maps.Equal(want, got) {
				t.Fatalf("seed %d op %d: entries %v, want %v", seed, op, got, want)
			}
			for k := range uint64(span + 2) {
				if tab.get(k*stride) != want[k*stride] {
					t.Fatalf("seed %d op %d: get(%d) = %d, want %d", seed, op, k*stride, tab.get(k*stride), want[k*stride])
				}
			}
			if 4*tab.n > 3*len(tab.slots) {
				t.Fatalf("seed %d op %d: %d entries in %d slots", seed, op, tab.n, len(tab.slots))
			}
		}
	}
}
