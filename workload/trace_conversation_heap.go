package workload

// releaseHeap orders released turns by arrival, ties by file position (a
// typed binary heap: container/heap would allocate on every push).
type releaseHeap struct{ a []pending }

func (h *releaseHeap) len() int { return len(h.a) }

func (h *releaseHeap) less(i, j int) bool {
	x, y := &h.a[i], &h.a[j]
	return x.req.Arrival < y.req.Arrival || x.req.Arrival == y.req.Arrival && x.seq < y.seq
}

func (h *releaseHeap) push(p pending) {
	h.a = append(h.a, p)
	for i := len(h.a) - 1; i > 0; {
		up := (i - 1) / 2
		if !h.less(i, up) {
			break
		}
		h.a[i], h.a[up] = h.a[up], h.a[i]
		i = up
	}
}

func (h *releaseHeap) pop() pending {
	top := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a[n] = pending{}
	h.a = h.a[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return top
		}
		h.a[i], h.a[m] = h.a[m], h.a[i]
		i = m
	}
}
