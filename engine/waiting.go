package engine

// waitQueue is a binary heap of waiting requests ordered by a Policy. It is
// typed (not container/heap) so that pushes do not box, and it keeps each
// seq's index so that an abort can remove it from the middle.
//
// Each item carries its request's Queued value (constant while the request
// lives: it reads only the request and its Add order), so a comparison
// reads the heap's own array, not two requests scattered in memory, and
// under FCFS, the default, it compares the Add orders inline instead of
// calling the Policy. Sifts move a hole instead of swapping: the same
// comparisons and the same final array as swaps, with one index write per
// moved request. Under KV pressure the queue holds the preempted requests,
// and the comparisons were a tenth of BenchmarkRunKVBound.
type waitQueue struct {
	items  []waitItem
	policy Policy
	fcfs   bool // policy is FCFS: order by Seq
}

type waitItem struct {
	key Queued
	s   *seq
}

func (q *waitQueue) setPolicy(p Policy) {
	q.policy = p
	_, q.fcfs = p.(FCFS)
}

func (q *waitQueue) len() int   { return len(q.items) }
func (q *waitQueue) peek() *seq { return q.items[0].s }

// before reports whether a is admitted before b.
func (q *waitQueue) before(a, b *Queued) bool {
	if q.fcfs {
		return a.Seq < b.Seq
	}
	return q.policy.Less(*a, *b)
}

// place puts it at index i.
func (q *waitQueue) place(i int, it waitItem) {
	q.items[i] = it
	it.s.heapIdx = i
}

func (q *waitQueue) push(s *seq) {
	q.items = append(q.items, waitItem{key: s.queued(), s: s})
	q.up(len(q.items) - 1)
}

func (q *waitQueue) pop() *seq { return q.remove(0) }

func (q *waitQueue) remove(i int) *seq {
	n := len(q.items) - 1
	s := q.items[i].s
	if i != n {
		q.place(i, q.items[n])
	}
	q.items[n] = waitItem{}
	q.items = q.items[:n]
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
	for j > 0 {
		i := (j - 1) / 2
		if !q.before(&it.key, &q.items[i].key) {
			break
		}
		q.place(j, q.items[i])
		j = i
	}
	q.place(j, it)
}

// down sifts the item at i0 toward the leaves and reports whether it moved.
func (q *waitQueue) down(i0 int) bool {
	i, n := i0, len(q.items)
	it := q.items[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.before(&q.items[r].key, &q.items[l].key) {
			j = r
		}
		if !q.before(&q.items[j].key, &it.key) {
			break
		}
		q.place(i, q.items[j])
		i = j
	}
	q.place(i, it)
	return i > i0
}
