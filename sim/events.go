package sim

import "time"

// Event classes, in the order events at the same instant are handled: a step
// that ends at t emits its tokens before a request arriving at t joins the
// queue, and both before a deadline at t is enforced (steps of several
// replicas ending at t end in replica order). The next step is planned only
// after every event at t has been handled. Step ends, first at any instant,
// are kept apart from the other events (stepEnds).
type class uint8

const (
	classArrival class = iota
	classTimeout
	classWindow // the window opens or closes: every replica's steps are collected
)

type event struct {
	at    time.Duration
	class class
	seq   uint64 // insertion order, the final tie-break
	ref   int32  // the record the event concerns (arrivals, timeouts)
	gen   uint32 // the slot generation a timeout belongs to
}

func (a event) before(b event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.class != b.class {
		return a.class < b.class
	}
	return a.seq < b.seq
}

// eventHeap is a binary min-heap of events keyed on (instant, class,
// sequence). It is typed rather than container/heap so that a push does not
// box the event in an interface (an allocation per event in the hot loop).
type eventHeap struct {
	items []event
	seq   uint64
}

func (h *eventHeap) len() int     { return len(h.items) }
func (h *eventHeap) peek() *event { return &h.items[0] } // a pointer: the event was copied to read its instant
func (h *eventHeap) push(e event) {
	e.seq = h.seq
	h.seq++
	h.items = append(h.items, e)
	for j := len(h.items) - 1; j > 0; {
		i := (j - 1) / 2
		if !h.items[j].before(h.items[i]) {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		j = i
	}
}

// pop removes and returns the earliest event. (Small enough to inline
// when the heap holds one event, as an open-loop source's next arrival
// often is alone; popSift is the rest. The split is worth 0.70 % of
// RunAtlas's instructions and 0.67 % of RunBatch256's, measured
// 2026-12-04; it stays as one of five splits worth 3.9 % together:
// docs/scale.md, "What the inlining contortions are worth".)
func (h *eventHeap) pop() (top event) {
	if len(h.items) != 1 {
		return h.popSift()
	}
	top, h.items = h.items[0], h.items[:0]
	return top
}

// popSift is pop from a heap of two events or more.
func (h *eventHeap) popSift() event {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.items[r].before(h.items[l]) {
			j = r
		}
		if !h.items[j].before(h.items[i]) {
			break
		}
		h.items[i], h.items[j] = h.items[j], h.items[i]
		i = j
	}
	return top
}
