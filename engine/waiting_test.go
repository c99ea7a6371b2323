package engine

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// The FCFS waiting queue (a run in Add order beside a heap) admits in Add
// order, whatever mix of in-order pushes, older pushes (preemptions) and
// removals from the middle (aborts) it is given: checked against a sorted
// list through long runs, so that the run's holes and its moves down
// (past 64 pops) are exercised; and so does its slow twin, the heap alone
// ordered by the policy's keys.
func TestWaitQueueFCFSAdmitsInAddOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 15))
	for round := range 400 {
		// Every other round is the slow twin: FCFS ordered by the heap
		// alone, as a policy other than FCFS is (fastpaths.go, fcfs-run).
		var q waitQueue
		q.setPolicy(FCFS{}, round%2 == 0)
		var want []*seq // by order
		next := uint64(0)
		insert := func(s *seq) {
			i, _ := slices.BinarySearchFunc(want, s, func(a, b *seq) int { return int(a.order) - int(b.order) })
			want = slices.Insert(want, i, s)
			q.push(s)
		}
		var popped []*seq
		for op := range 2000 {
			switch r := rng.IntN(10); {
			case r < 5: // a new request: the newest
				insert(&seq{order: next, heapIdx: -1})
				next++
			case r < 6 && len(popped) > 0: // a preempted one comes back, older than the newest
				k := rng.IntN(len(popped))
				s := popped[k]
				popped = slices.Delete(popped, k, k+1)
				insert(s)
			case r < 8 && len(want) > 0: // admit the head
				s := q.pop()
				if s != want[0] {
					t.Fatalf("round %d op %d: popped the request of order %d, want %d", round, op, s.order, want[0].order)
				}
				if s.heapIdx != -1 {
					t.Fatalf("round %d op %d: a popped request keeps index %d", round, op, s.heapIdx)
				}
				want = want[1:]
				popped = append(popped, s)
			case len(want) > 0: // abort one anywhere
				k := rng.IntN(len(want))
				q.drop(want[k])
				want = slices.Delete(want, k, k+1)
			}
			if q.len() != len(want) {
				t.Fatalf("round %d op %d: the queue holds %d, want %d", round, op, q.len(), len(want))
			}
			if len(want) > 0 && q.peek() != want[0] {
				t.Fatalf("round %d op %d: peek is the request of order %d, want %d", round, op, q.peek().order, want[0].order)
			}
			for i := q.head; i < len(q.run); i++ {
				if s := q.run[i].s; s != nil && int(s.heapIdx) != runIdx(i) {
					t.Fatalf("round %d op %d: the run's request at %d has index %d", round, op, i, s.heapIdx)
				}
			}
		}
	}
}

// Under FCFS a request pushed to the front (preempted: pushFront) is
// admitted before every waiting request, the last pushed to the front
// first, and the others in Add order behind them: checked against a list
// sorted by that order through long runs of new requests, front pushes,
// pushes at the Add order (unreserve), admissions and aborts, run and
// heap both exercised (a front push into an empty queue starts the run).
func TestWaitQueueFCFSPreemptedFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 2))
	for round := range 200 {
		var q waitQueue
		q.setPolicy(FCFS{}, true)
		key := map[*seq]int64{}
		var want []*seq // by key
		insert := func(s *seq, k int64) {
			key[s] = k
			i, _ := slices.BinarySearchFunc(want, s, func(a, b *seq) int {
				return cmp.Compare(key[a], key[b])
			})
			want = slices.Insert(want, i, s)
		}
		next, front := uint64(0), int64(0)
		var popped []*seq
		for op := range 2000 {
			switch r := rng.IntN(12); {
			case r < 5: // a new request: the newest
				s := &seq{order: next, heapIdx: -1}
				next++
				insert(s, int64(s.order))
				q.push(s)
			case r < 7 && len(popped) > 0: // preempted: to the front
				k := rng.IntN(len(popped))
				s := popped[k]
				popped = slices.Delete(popped, k, k+1)
				front--
				insert(s, front)
				q.pushFront(s)
			case r < 8 && len(popped) > 0: // back at its Add order
				k := rng.IntN(len(popped))
				s := popped[k]
				popped = slices.Delete(popped, k, k+1)
				insert(s, int64(s.order))
				q.push(s)
			case r < 10 && len(want) > 0: // admit the head
				s := q.pop()
				if s != want[0] {
					t.Fatalf("round %d op %d: popped the request of order %d (key %d), want %d (key %d)", round, op, s.order, key[s], want[0].order, key[want[0]])
				}
				want = want[1:]
				popped = append(popped, s)
			case len(want) > 0: // abort one anywhere
				k := rng.IntN(len(want))
				q.drop(want[k])
				want = slices.Delete(want, k, k+1)
			}
			if q.len() != len(want) {
				t.Fatalf("round %d op %d: the queue holds %d, want %d", round, op, q.len(), len(want))
			}
			if len(want) > 0 && q.peek() != want[0] {
				t.Fatalf("round %d op %d: peek is the request of order %d, want %d", round, op, q.peek().order, want[0].order)
			}
		}
		if q.front != front {
			t.Fatalf("round %d: the queue's front key is %d, want %d", round, q.front, front)
		}
	}
}
