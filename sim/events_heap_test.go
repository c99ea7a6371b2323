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
// starts again; it must be reached. A third of the seeds keep the heap
// alone (heapOnly, as sim's Stepwise does); the others' heaps hold a sorted
// list up to sortedMax events and turn between the two (a third of the
// seeds push less than they pop every other 400 events, so that their
// heaps grow past sortedMax and shrink to sortedMin): both turns must be
// reached. Half the others are pushed by pushAlone first (push when it
// declines), which must push 1,000 or more.
func TestEventHeapPopsInOrder(t *testing.T) {
	fed, heaped, unheaped, alone := 0, 0, 0, 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 41))
		var h eventHeap
		only := seed%3 == 0
		h.heapOnly(only)
		var want []event // pushed, not popped, in sequence order
		rising := time.Duration(0)
		for i := range 2000 {
			was := h.heaped
			pushes := 3 // in 5
			if seed%3 == 1 && i/400%2 == 1 {
				pushes = 1 // so that the heap shrinks again
			}
			if rng.IntN(5) < pushes || len(want) == 0 {
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
				} else if rng.IntN(2) > 0 || !h.pushAlone(e) { // pushAlone, as an open-loop source's arrival, when the heap is empty
					h.push(e)
				} else {
					alone++
				}
				e.seq = h.seq - 1
				want = append(want, e)
				if h.heaped && !was {
					heaped++
				}
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
			if was && !h.heaped {
				unheaped++
			}
			if only && !h.heaped {
				t.Fatalf("seed %d: a heap alone left the heap", seed)
			}
			if !h.heaped && !slices.IsSortedFunc(h.items, func(a, b event) int {
				if a.before(b) {
					return -1
				}
				return 1
			}) {
				t.Fatalf("seed %d: a list not sorted in sorted mode", seed)
			}
			if h.len()+len(h.ahead)-h.next != len(want) {
				t.Fatalf("seed %d: the heap holds %d events, %d are left", seed, h.len(), len(want))
			}
		}
	}
	if fed < 1000 {
		t.Fatalf("the ordered runs held %d events waiting beside the heap, want 1,000 or more", fed)
	}
	if alone < 1000 {
		t.Fatalf("pushAlone pushed %d events, want 1,000 or more", alone)
	}
	if heaped < 100 || unheaped < 100 {
		t.Fatalf("sorted lists turned heaps %d times and heaps sorted lists %d times, want 100 or more each", heaped, unheaped)
	}
}
