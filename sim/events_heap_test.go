package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEventHeapPopsInOrder pushes and pops events at random, of few
// instants and classes so that ties are many, and holds every pop to the
// earliest event pushed and not yet popped by (instant, class, sequence):
// the order the sim handles them in, whatever the heap's layout.
func TestEventHeapPopsInOrder(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 41))
		var h eventHeap
		var want []event // pushed, not popped, in sequence order
		for range 2000 {
			if rng.IntN(5) < 3 || len(want) == 0 {
				e := event{at: time.Duration(rng.IntN(1 + int(seed%40))), class: class(rng.IntN(3)), ref: rng.Int32()}
				h.push(e)
				e.seq = h.seq - 1
				want = append(want, e)
				continue
			}
			k := 0
			for i, e := range want {
				if e.before(want[k]) {
					k = i
				}
			}
			if got := h.pop(); got != want[k] {
				t.Fatalf("seed %d: popped %+v, the earliest is %+v", seed, got, want[k])
			}
			want = slices.Delete(want, k, k+1)
			if h.len() != len(want) {
				t.Fatalf("seed %d: the heap holds %d events, %d are left", seed, h.len(), len(want))
			}
		}
	}
}
