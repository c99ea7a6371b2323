package engine

// waitQueue is a binary heap of waiting requests ordered by a Policy. It is
// typed (not container/heap) so that pushes do not box, and it keeps each
// seq's index so that an abort can remove it from the middle.
//
// Under FCFS each item carries a queue key, and the queue admits in key
// order: a request Added (or returned by unreserve) is keyed by its Add
// order, and a preempted one (pushFront) by a counter that starts below
// every Add order and decreases, so that it goes ahead of every waiting
// request, the last preempted first, as vLLM's FCFS deque prepends it
// (scheduler.py _preempt_request: self.waiting.prepend_request(request);
// vLLM 28be48fa line 949). Without Remote requests this is the Add order
// among the requests waiting at once: FCFS admits in Add order, so the
// running list is in Add order, its tail (the victim) is later than every
// request preempted before it and earlier than every request not yet
// admitted. A landed Remote request, admitted ahead of the queue, breaks
// that, and only the keys give vLLM's order.
//
// Under FCFS the requests pushed in key order, each after the last
// pushed, wait in a run outside the heap (run[head:], in order), as the
// cohort's finish queue keeps its members: a push appends and a pop
// advances the head, with no sift. The heap holds the others (requests
// preempted back into the queue, keyed before the run's last); a pop
// takes the earlier of the two fronts, so the order is the heap's own. An
// abort leaves a hole (nil) in the run, passed when the head reaches it.
// Under KV pressure the sifts of the newest requests' pops were a
// fortieth of BenchmarkRunKVBound.
//
// Each item carries its request's key (its Add order off FCFS), and off
// FCFS a parallel array its Queued value (constant while the request
// lives: it reads only the request and its Add order), so a comparison
// reads the heap's own arrays, not two requests scattered in memory, and
// under FCFS, the default, it compares the keys inline instead of calling
// the Policy. Sifts move a hole instead of swapping: the same comparisons
// and the same final array as swaps, with one index write per moved
// request. Under KV pressure the queue holds the preempted requests, and
// the comparisons were a tenth of BenchmarkRunKVBound.
type waitQueue struct {
	items  []waitItem
	keys   []Queued // items[i]'s request's Queued value, under a policy other than FCFS (nil under FCFS)
	policy Policy
	fcfs   bool  // policy is FCFS: order by the items' keys, and keep no Queued values
	front  int64 // FCFS: the key of the request preempted last (0: none yet); the next is below it

	run  []waitItem // FCFS: requests in key order from head on; a hole has a nil s
	head int        // run[head] is live when head < len(run)
	live int        // requests in run[head:]
}

// A request in the run has heapIdx runIdx(i), i its index in run: below
// -1, which marks one not waiting.
func runIdx(i int) int   { return -2 - i }
func runPos(idx int) int { return -2 - idx }

// waitItem is a waiting request and its key (Add order, or below 0 for a
// request preempted under FCFS): all FCFS compares, so that under the
// default a sift moves 16 bytes an item, not its whole Queued value (the
// 64-byte items were half the queue's instructions).
type waitItem struct {
	key int64
	s   *seq
}

// setPolicy orders the queue by p; fcfs says p is FCFS (decideFast).
func (q *waitQueue) setPolicy(p Policy, fcfs bool) {
	q.policy = p
	q.fcfs = fcfs
}

func (q *waitQueue) len() int { return len(q.items) + q.live }

// peek is the request admitted next (there is one).
func (q *waitQueue) peek() *seq {
	if q.fromRun() {
		return q.run[q.head].s
	}
	return q.items[0].s
}

// fromRun reports whether the request admitted next is the run's.
func (q *waitQueue) fromRun() bool {
	return q.live > 0 && (len(q.items) == 0 || q.run[q.head].key < q.items[0].key)
}

// before reports whether the item it, with key k (read only off FCFS), is
// admitted before the item at j.
func (q *waitQueue) before(it waitItem, k *Queued, j int) bool {
	if q.fcfs {
		return it.key < q.items[j].key
	}
	return q.policy.Less(*k, q.keys[j])
}

// place puts it, with key k (read only off FCFS), at index i.
func (q *waitQueue) place(i int, it waitItem, k *Queued) {
	q.items[i] = it
	it.s.heapIdx = int32(i)
	if !q.fcfs {
		q.keys[i] = *k
	}
}

// move moves the item at j to i.
func (q *waitQueue) move(i, j int) {
	it := q.items[j]
	q.items[i] = it
	it.s.heapIdx = int32(i)
	if !q.fcfs {
		q.keys[i] = q.keys[j]
	}
}

// push adds s, keyed by its Add order: a request Added, or one unreserve
// returns to the place it had.
func (q *waitQueue) push(s *seq) { q.pushKey(s, int64(s.order)) }

// pushFront adds s, preempted: under FCFS ahead of every waiting request,
// keyed below every key handed out so far (see waitQueue); under another
// policy at its place by the policy, as push.
func (q *waitQueue) pushFront(s *seq) {
	if !q.fcfs {
		q.push(s)
		return
	}
	q.front--
	q.pushKey(s, q.front)
}

// pushKey adds s with the FCFS key k (its Add order off FCFS).
func (q *waitQueue) pushKey(s *seq, k int64) {
	if q.fcfs && (q.live == 0 || q.run[len(q.run)-1].key < k) {
		if q.live == 0 { // empty, holes and all: start again at 0
			q.run, q.head = q.run[:0], 0
		}
		s.heapIdx = int32(runIdx(len(q.run)))
		q.run = append(q.run, waitItem{key: k, s: s})
		q.live++
		return
	}
	j := len(q.items)
	q.items = append(q.items, waitItem{key: k, s: s})
	if q.fcfs && (j == 0 || q.items[(j-1)/2].key < k) {
		s.heapIdx = int32(j) // the usual FCFS push, the newest request: in place
		return
	}
	if !q.fcfs {
		q.keys = append(q.keys, s.queued())
	}
	q.up(len(q.items) - 1)
}

// pop removes the request admitted next (there is one).
func (q *waitQueue) pop() *seq {
	if !q.fromRun() {
		return q.remove(0)
	}
	// The head's place is not cleared: the engine keeps its requests for
	// its lifetime (spare), and the clear was a write barrier a pop.
	s := q.run[q.head].s
	s.heapIdx = -1
	q.head++
	q.live--
	if q.head < len(q.run) && q.run[q.head].s == nil || q.head >= 64 {
		q.passHoles()
	}
	return s
}

// drop removes s, which waits.
func (q *waitQueue) drop(s *seq) {
	if s.heapIdx >= 0 {
		q.remove(int(s.heapIdx))
		return
	}
	i := runPos(int(s.heapIdx))
	q.run[i].s = nil // a hole, passed when the head reaches it
	s.heapIdx = -1
	q.live--
	if i == q.head {
		q.passHoles()
	}
}

// passHoles moves the head past the holes before the next request, and
// moves the run down once its head passes half of it.
func (q *waitQueue) passHoles() {
	for q.head < len(q.run) && q.run[q.head].s == nil {
		q.head++
	}
	if q.head >= 64 && 2*q.head >= len(q.run) { // amortized O(1) a pop
		n := copy(q.run, q.run[q.head:])
		clear(q.run[n:])
		q.run, q.head = q.run[:n], 0
		for j, it := range q.run {
			if it.s != nil {
				it.s.heapIdx = int32(runIdx(j))
			}
		}
	}
}

// remove removes the heap's request at i.
func (q *waitQueue) remove(i int) *seq {
	n := len(q.items) - 1
	s := q.items[i].s
	if n == 0 && q.fcfs { // the only one: nothing to sift
		q.items[0] = waitItem{}
		q.items = q.items[:0]
		s.heapIdx = -1
		return s
	}
	if i != n {
		q.move(i, n)
	}
	q.items[n] = waitItem{}
	q.items = q.items[:n]
	if !q.fcfs {
		q.keys[n] = Queued{}
		q.keys = q.keys[:n]
	}
	if i != n {
		if !q.down(i) {
			q.up(i)
		}
	}
	s.heapIdx = -1
	return s
}

// up sifts the item at j toward the root.
func (q *waitQueue) up(j int) {
	it := q.items[j]
	var k Queued
	if !q.fcfs {
		k = q.keys[j]
	}
	for j > 0 {
		i := (j - 1) / 2
		if !q.before(it, &k, i) {
			break
		}
		q.move(j, i)
		j = i
	}
	q.place(j, it, &k)
}

// down sifts the item at i0 toward the leaves and reports whether it moved.
func (q *waitQueue) down(i0 int) bool {
	i, n := i0, len(q.items)
	it := q.items[i]
	var k Queued
	if !q.fcfs {
		k = q.keys[i]
	}
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.less(r, l) {
			j = r
		}
		if !q.ahead(j, it, &k) {
			break
		}
		q.move(i, j)
		i = j
	}
	q.place(i, it, &k)
	return i > i0
}

// less reports whether the item at a is admitted before the item at b.
func (q *waitQueue) less(a, b int) bool {
	if q.fcfs {
		return q.items[a].key < q.items[b].key
	}
	return q.lessKeys(a, b)
}

// lessKeys is less by the policy's keys. It and aheadKey are kept out of
// line: inlined, their copies of the keys sit between the FCFS lines
// the sifts run.
//
//go:noinline
func (q *waitQueue) lessKeys(a, b int) bool {
	return q.policy.Less(q.keys[a], q.keys[b])
}

// ahead reports whether the item at j is admitted before it, whose key is
// k (read only off FCFS).
func (q *waitQueue) ahead(j int, it waitItem, k *Queued) bool {
	if q.fcfs {
		return q.items[j].key < it.key
	}
	return q.aheadKey(j, k)
}

// aheadKey is ahead by the policy's keys (out of line, as lessKeys).
//
//go:noinline
func (q *waitQueue) aheadKey(j int, k *Queued) bool {
	return q.policy.Less(q.keys[j], *k)
}
