package engine

// finQueue orders the cohort's members by the tick at which they emit
// their last token. A member that leaves before its last token (an abort)
// leaves its entry behind, stale: it no longer matches the member's rank,
// and is dropped when it reaches the front, at its tick at the latest.
//
// Members mostly join in the order they finish (equal answers, or answers
// drawn before their prompts arrive, finish in the order they started), so
// the queue keeps the entries pushed in order in a plain run, read from its
// front, and only the others in a heap (finHeap): a push in order is an
// append, and the front is the earlier of the two fronts. The order in
// which entries of one tick leave does not matter: a step's finishers are
// sorted into running order (sortByRank), and finMin reads only a tick.
// The heap alone was 2 % of BenchmarkRunAtlas's instructions and its
// likeliest mispredicted branch.
type finQueue struct {
	run  []finEntry // entries in tick order, from head on
	head int
	heap finHeap // the entries pushed out of order
}

type finEntry struct {
	tick int
	rank uint64
	s    *seq
}

// live reports whether the entry's member is still in the cohort.
func (x finEntry) live() bool { return x.s.member && x.s.rank == x.rank }

func (q *finQueue) len() int { return len(q.run) - q.head + len(q.heap) }

func (q *finQueue) push(x finEntry) {
	if n := len(q.run); n == q.head || q.run[n-1].tick <= x.tick {
		q.run = append(q.run, x)
		return
	}
	q.heap.push(x)
}

// fromRun reports whether the front entry is the run's (there is one).
func (q *finQueue) fromRun() bool {
	return q.head < len(q.run) && (len(q.heap) == 0 || q.run[q.head].tick <= q.heap[0].tick)
}

// front is the entry of the least tick (there is one).
func (q *finQueue) front() finEntry {
	if q.fromRun() {
		return q.run[q.head]
	}
	return q.heap[0]
}

// pop removes and returns the front entry.
func (q *finQueue) pop() finEntry {
	if !q.fromRun() {
		return q.heap.pop()
	}
	return q.popRun()
}

// runDue reports whether the run's front entry's tick is tick at the
// latest, and heapDue the heap's: completeCohort pops the due entries of
// each in turn (popRun, heap.pop), not in tick order. Both inline,
// reading the run and the heap themselves: a move's last test, which
// finds none, costs no call. (They replace due, which asked whether
// either front was due, kept as one of five inlining splits worth 3.9 %
// together, 0.56 % of RunAtlas's instructions, measured 2026-12-04:
// docs/scale.md, "What the inlining contortions are worth".)
func (q *finQueue) runDue(tick int) bool { return q.head < len(q.run) && q.run[q.head].tick <= tick }

func (q *finQueue) heapDue(tick int) bool { return len(q.heap) > 0 && q.heap[0].tick <= tick }

// popRun removes and returns the run's front entry (there is one).
func (q *finQueue) popRun() finEntry {
	// Its place is not cleared: the engine keeps its sequences for its
	// lifetime (spare), and the clear was a write barrier a finish.
	x := q.run[q.head]
	q.head++
	switch {
	case q.head == len(q.run):
		q.run, q.head = q.run[:0], 0
	case q.head >= 64 && 2*q.head >= len(q.run): // amortized O(1) a pop
		n := copy(q.run, q.run[q.head:])
		clear(q.run[n:])
		q.run, q.head = q.run[:n], 0
	}
	return x
}

// reset empties the queue.
func (q *finQueue) reset() {
	clear(q.run)
	clear(q.heap)
	q.run, q.head, q.heap = q.run[:0], 0, q.heap[:0]
}

// all is every entry, the run's in order and then the heap's array.
func (q *finQueue) all() []finEntry {
	return append(append([]finEntry(nil), q.run[q.head:]...), q.heap...)
}

// finHeap is a min-heap of entries by tick, kept by value (sifting reads
// no member).
type finHeap []finEntry

func (h *finHeap) push(x finEntry) {
	a := append(*h, x)
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if a[p].tick <= x.tick {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = x
	*h = a
}

func (h *finHeap) pop() finEntry {
	a := *h
	top := a[0]
	n := len(a) - 1
	x := a[n]
	a[n] = finEntry{}
	a = a[:n]
	if n > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= n {
				break
			}
			if c+1 < n && a[c+1].tick < a[c].tick {
				c++
			}
			if x.tick <= a[c].tick {
				break
			}
			a[i] = a[c]
			i = c
		}
		a[i] = x
	}
	*h = a
	return top
}
