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
// the order the sim handles them in, whatever the heap's layout. Half
// the seeds push some events as pushOrdered (a closed-loop source's
// arrivals), mostly rising, so that its ordered run grows, ends and
// starts again; it must be reached.
func TestEventHeapPopsInOrder(t *testing.T) {
	fed := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 41))
		var h eventHeap
		var want []event // pushed, not popped, in sequence order
		rising := time.Duration(0)
		for range 2000 {
			if rng.IntN(5) < 3 || len(want) == 0 {
				e := event{at: time.Duration(rng.IntN(1 + int(seed%40))), class: class(rng.IntN(3)), ref: int32(h.seq)} // refs of their own, as arrivals' slots (popped)
				if seed%2 == 1 && rng.IntN(2) == 0 {
					if rng.IntN(8) > 0 {
						rising += time.Duration(rng.IntN(3))
						e.at = rising % 50
					}
					h.pushOrdered(e)
					if len(h.ahead) > h.next {
						fed++
					}
				} else {
					h.push(e)
				}
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
			got := h.pop()
			h.popped(got.ref) // as the runner does at an arrival
			if got != want[k] {
				t.Fatalf("seed %d: popped %+v, the earliest is %+v", seed, got, want[k])
			}
			want = slices.Delete(want, k, k+1)
			if h.len()+len(h.ahead)-h.next != len(want) {
				t.Fatalf("seed %d: the heap holds %d events, %d are left", seed, h.len(), len(want))
			}
		}
	}
	if fed < 1000 {
		t.Fatalf("the ordered runs held %d events waiting beside the heap, want 1,000 or more", fed)
	}
}
