package engine

// waitQueue is a binary heap of waiting requests ordered by a Policy. It is
// typed (not container/heap) so that pushes do not box, and it keeps each
// seq's index so that an abort can remove it from the middle.
type waitQueue struct {
	items  []*seq
	policy Policy
}

func (q *waitQueue) len() int   { return len(q.items) }
func (q *waitQueue) peek() *seq { return q.items[0] }
func (q *waitQueue) less(i, j int) bool {
	return q.policy.Less(q.items[i].queued(), q.items[j].queued())
}

func (q *waitQueue) swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	q.items[i].heapIdx = i
	q.items[j].heapIdx = j
}

func (q *waitQueue) push(s *seq) {
	s.heapIdx = len(q.items)
	q.items = append(q.items, s)
	q.up(s.heapIdx)
}

func (q *waitQueue) pop() *seq { return q.remove(0) }

func (q *waitQueue) remove(i int) *seq {
	n := len(q.items) - 1
	s := q.items[i]
	if i != n {
		q.swap(i, n)
	}
	q.items[n] = nil
	q.items = q.items[:n]
	if i != n {
		if !q.down(i) {
			q.up(i)
		}
	}
	s.heapIdx = -1
	return s
}

func (q *waitQueue) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !q.less(j, i) {
			break
		}
		q.swap(i, j)
		j = i
	}
}

func (q *waitQueue) down(i0 int) bool {
	i, n := i0, len(q.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && q.less(r, l) {
			j = r
		}
		if !q.less(j, i) {
			break
		}
		q.swap(i, j)
		i = j
	}
	return i > i0
}
