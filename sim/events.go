package sim

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Event classes, in the order events at the same instant are handled: a step
// that ends at t emits its tokens before a request arriving at t joins the
// queue, and both before a deadline at t is enforced (steps of several
// replicas ending at t end in replica order). The next step is planned only
// after every event at t has been handled. Step ends, first at any instant,
// are kept apart from the other events (stepEnds).
type class uint8

const (
	classReady class = iota // an autoscaled fleet's replica is warm (ref: the replica): it takes an arrival at its instant
	classArrival
	classTimeout
	classWindow   // the window opens or closes: every replica's steps are collected
	classExpire   // a request waiting at the gateway reaches its time-to-live
	classLand     // a disaggregated fleet's link lands KV transfers (ref: the link)
	classTierLand // a KV tier's link lands loads (ref: the replica's host link, -1 the shared store's)
	classScale    // the autoscaler's tick: it reads everything else at its instant
	classDrain    // a draining replica's deadline (ref: the replica)
	classReserve  // a decode replica's run reaches the step that reserves a request handed to it inside the run (ref: the replica)
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
	// While it holds fewer than sortedMax events (unless the heap is
	// kept alone: heapOnly), items is not a heap but a list sorted by
	// (instant, class, sequence), the earliest first (sorted mode): a
	// pop takes the first (items moves on in base, the array it lies
	// in), a push finds its place by bisection and the later events move
	// up by one (one copy). A sorted list is a heap, so a push at
	// sortedMax turns it into one (heaped) as it is; a heap that shrinks
	// to unheapAt (sortedMin; −1 when kept alone) is sorted again. A
	// conversation's next turns, pushed at a finish plus a think time
	// anywhere among the 16 or so in flight (Regime/Conversations),
	// sifted through the heap's four levels at each pop: popSift, push
	// and insert cost that regime 251, 60 and 35 instructions a request,
	// then 47, 20 and 5, with pushSorted's 148 and memmove's 65 more:
	// 13,940 then 13,884 (the budget test; each later event moved in a
	// loop of its own, not copied, and the place found by that loop,
	// 14,067). The heap is kept alone for sim's Stepwise (the twin) and
	// an open-loop source's run, whose heap holds its next arrival and
	// the fleet's events, pushed where a heap's push stops at once and
	// a list's moves several (with the list, Regime/Disagg 11,984 then
	// 12,059, Regime/Autoscale 7,115 then 7,181; RunAtlas 5,617 then
	// 5,603). Its pops test unheapAt, one field: a flag and the constant
	// cost Regime/Disagg 16 instructions a request, the field 8.
	// TestEventHeapPopsInOrder holds both modes, and the turns between
	// them, to the order.
	heaped   bool
	unheapAt int
	base     []event
	// The ordered run (pushOrdered): events pushed in (instant, class,
	// sequence) order kept in a list beside the heap, its head alone in
	// items (its ref headRef), the rest waiting from ahead[next] on, each
	// fed into the heap as the one before it is popped. tail is the run's
	// last; ordered says there is a run.
	ahead   []event
	next    int
	tail    event
	ordered bool
	headRef int32
}

// len is the number of events in the heap, the ordered run's head
// standing for the run.
func (h *eventHeap) len() int     { return len(h.items) }
func (h *eventHeap) peek() *event { return &h.items[0] } // a pointer: the event was copied to read its instant

// push adds e, stamped with the next sequence number.
//
// The new event rises through a hole, each parent it precedes moving
// down into it, and is written once where it stops: the heap ends as a
// swap at each level leaves it. It is the latest pushed, so a parent of
// its instant and class precedes it (by sequence) and stops it: it is
// compared on instant and class alone. (Swapping it up cost a
// disaggregated fleet about 20 instructions a level more, cachegrind.)
func (h *eventHeap) push(e event) {
	e.seq = h.seq
	h.seq++
	if !h.heaped {
		if len(h.items) < sortedMax {
			h.pushSorted(e)
			return
		}
		h.heaped = true // sorted, it is a heap
	}
	h.items = append(h.items, e)
	j := len(h.items) - 1
	for j > 0 {
		i := (j - 1) / 2
		p := &h.items[i]
		if e.at > p.at || e.at == p.at && e.class >= p.class {
			break
		}
		h.items[j] = *p
		j = i
	}
	h.items[j] = e
}

// pushAlone is push of e to an empty heap with room for it, e alone
// being both a heap and a sorted list; it reports false, and pushes
// nothing, otherwise. Small enough to inline (push is not): an open-loop
// source's next arrival is mostly pushed to an empty heap, the last
// arrival popped (schedule): RunAtlas 5,090 then 5,070 instructions a
// request (servesim's own, cachegrind's marginal count), push's 48 a
// request then none.
func (h *eventHeap) pushAlone(e event) bool {
	if len(h.items) != 0 || cap(h.items) == 0 {
		return false
	}
	e.seq = h.seq
	h.seq++
	h.items = append(h.items, e)
	return true
}

// pushOrdered is push for an event that is likely at or after the last
// pushed this way: then it joins the ordered run, outside the heap, which
// holds only the run's head, so that the heap sifts through the events
// pushed out of order alone. A closed-loop source's first turns, all
// pulled at the start (a conversation's 500 in Regime/Conversations),
// queued in the heap made each pop sift through them: popSift and push
// cost that regime 501 and 121 instructions a request, then 251 and 125
// (push, pushOrdered and feed's insert; cachegrind's marginal count).
// An event out of order is pushed as push pushes it (its sequence the
// latest). The events are popped in the order push alone pops them:
// the run is in that order, and its head, in the heap, is its earliest
// (TestEventHeapPopsInOrder pushes both ways).
func (h *eventHeap) pushOrdered(e event) {
	switch {
	case !h.ordered: // it heads a new run
		h.ordered, h.tail, h.headRef = true, e, e.ref
		h.push(e)
	case e.at > h.tail.at || e.at == h.tail.at && e.class >= h.tail.class: // after the tail: its sequence is later
		e.seq = h.seq
		h.seq++
		h.ahead, h.tail = append(h.ahead, e), e
	default:
		h.push(e)
	}
}

// insert adds e, stamped already, to the heap: push's rise compared by
// before, for e's sequence may be earlier than others' (feed's).
func (h *eventHeap) insert(e event) {
	if !h.heaped {
		if len(h.items) < sortedMax {
			h.pushSorted(e)
			return
		}
		h.heaped = true
	}
	h.items = append(h.items, e)
	j := len(h.items) - 1
	for j > 0 {
		i := (j - 1) / 2
		if !e.before(h.items[i]) {
			break
		}
		h.items[j] = h.items[i]
		j = i
	}
	h.items[j] = e
}

// popped is called with the ref of each arrival popped, before the heap
// is read again (the runner's arrive): the ordered run's head popped, its
// next is put in the heap, or the run ends. An arrival's ref is its own
// while its event is in the heap (its slot). (A call in pop kept pop
// from inlining, which cost RunAtlas 63 instructions a request; the
// arrival's event marked, and the mark passed to arrive and tested, 6;
// this, 2: 6,237 then 6,239, cachegrind's marginal count.)
func (h *eventHeap) popped(ref int32) {
	if h.ordered && ref == h.headRef {
		h.feed()
	}
}

// feed puts the ordered run's next event in the heap, its head popped,
// or ends the run.
func (h *eventHeap) feed() {
	if h.next == len(h.ahead) {
		h.ahead, h.next, h.ordered = h.ahead[:0], 0, false
		return
	}
	e := h.ahead[h.next]
	h.next++
	h.headRef = e.ref
	h.insert(e)
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
//
// The hole the root leaves sinks to a leaf, the earlier child moving up
// into it at each level (one comparison a level), and the last event
// rises from there to its place, which is seldom far up: it is the
// latest pushed, or near it. Sifting it down from the root instead took
// two comparisons a level (with conversations' 500 first turns queued at
// once, about 580 instructions a pop). The events keep a total order
// (the sequence breaks every tie), so the order they are popped in does
// not depend on how the heap lays them out; TestEventHeapPopsInOrder
// holds pops to that order.
func (h *eventHeap) popSift() event {
	if !h.heaped { // sorted mode's first
		top := h.items[0]
		h.items = h.items[1:]
		return top
	}
	top := h.items[0]
	n := len(h.items) - 1
	x := h.items[n]
	h.items = h.items[:n]
	items := h.items
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && items[r].before(items[l]) {
			l = r
		}
		items[i] = items[l]
		i = l
	}
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = x
	if n <= h.unheapAt {
		h.unheap()
	}
	return top
}

// heapOnly keeps the heap alone (on), or lets it be a sorted list while
// it holds few events (eventHeap's sorted mode). It is set before the
// first push.
func (h *eventHeap) heapOnly(on bool) {
	h.heaped, h.unheapAt = on, sortedMin
	if on {
		h.unheapAt = -1
	}
}

// sortedMax is the most events the heap keeps as a sorted list (eventHeap's
// sorted mode), sortedMin the fewest a heap sorts itself back into one at.
const (
	sortedMax = 64
	sortedMin = 16
)

// pushSorted puts e, stamped, in its place in the sorted list, found by
// bisection after the last is compared (a timeout, pushed in order,
// goes last): the events after it move up by one, or, where fewer and
// base has room before the list, those before it down by one.
func (h *eventHeap) pushSorted(e event) {
	if len(h.items) == cap(h.items) {
		h.room()
	}
	n := len(h.items)
	lo, hi := n, n // its place: after lo events, before hi
	if n > 0 {
		if p := &h.items[n-1]; e.at < p.at || e.at == p.at && (e.class < p.class || e.class == p.class && e.seq < p.seq) { // e.before(*p), without its copy; else after the last (a timeout)
			lo, hi = 0, n-1
		}
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p := &h.items[m]; e.at < p.at || e.at == p.at && (e.class < p.class || e.class == p.class && e.seq < p.seq) { // e.before(*p), without its copy of *p
			hi = m
		} else {
			lo = m + 1
		}
	}
	if at := cap(h.base) - cap(h.items); at > 0 && lo < n-lo {
		// Nearer the front, with room before the list in base (the
		// pops took it): the events before e move down by one, fewer
		// than those after it would move up. A conversation's next
		// turn lands anywhere among the turns waiting: 10,495 then
		// 10,475 instructions a request in Regime/Conversations (the
		// budget test; pushSorted and its memmove 148 and 66, then
		// 161 and 37, callgrind's marginal count).
		items := h.base[at-1 : at+n]
		copy(items, items[1:lo+1])
		items[lo] = e
		h.items = items
		return
	}
	items := h.items[:n+1]
	if lo < n {
		copy(items[lo+1:], items[lo:n])
	}
	items[lo] = e
	h.items = items
}

// room makes room for one more event after the sorted list: the list
// moved to the front of base when that leaves it half empty (the pops
// since it last moved took half of base), else a base twice as large.
func (h *eventHeap) room() {
	n := len(h.items)
	if n < cap(h.base)/2 {
		h.items = h.base[:copy(h.base[:n], h.items)]
		return
	}
	b := make([]event, n, max(8, 2*cap(h.base)))
	copy(b, h.items)
	h.base, h.items = b, b
}

// unheap sorts the heap into a list again (sorted mode), in place.
func (h *eventHeap) unheap() {
	items := h.items
	for i := 1; i < len(items); i++ {
		x := items[i]
		j := i
		for j > 0 && x.before(items[j-1]) {
			items[j] = items[j-1]
			j--
		}
		items[j] = x
	}
	h.heaped = false
	h.base = items[:0:cap(items)] // its front: the array before items is left
}

// stepEnds holds the end of each busy replica's move in flight, ordered by
// instant and then replica index: the step-end events. They are kept apart
// from the event heap, whose events a step end precedes at the same
// instant (see class), so that a move cut short moves its end in place
// instead of leaving a stale event to be popped and dropped, and a single
// replica's end is one slot, not an entry among the arrivals. A replica
// cut in every other move (an arrival ends the run in flight) paid a push,
// a pop and a stale pop for it.
//
// A fleet of at most smallEnds replicas keeps each replica's end in a
// slice by replica and the earliest apart, found again by a scan when it
// leaves or moves later: a disaggregated fleet of
// 6 spent about 260 instructions a move sifting a heap (place writes two
// slices a level), a scan of 6 about 60. A larger fleet keeps a
// tournament tree over the replicas (win): a change walks from the
// replica's leaf to the root, one comparison a level and no positions to
// keep. The binary min-heap it replaced sifted a moved-later end down
// from the root, two comparisons and two writes a level: 15,525 then
// 15,157 instructions a request in
// BenchmarkRunFleet64/workload=prefix/router=PrefixAffinity (its heap's
// down alone was 748), and peek, now one field, 6,239 then 6,225 in
// BenchmarkRunAtlas (the loop's next inlines again).
// TestStepEndsIsAnOrderedSet holds both to a plain map.
type stepEnds struct {
	n     int     // the busy replicas
	pos   []int32 // by replica: 0 when busy, -1 when idle (unless small: busy)
	small bool
	// one: a single replica, whose end is the earliest whenever it has
	// one: set and remove write first and n alone, without small's cases
	// or its slices, which add writes when a second replica comes
	// (RunAtlas 4,943 then 4,933 instructions a request, the budget test's
	// count, with the slices written; 4,905 then 4,892 without them, the
	// same count after three more commits). Its twin is small's
	// path (twins.smallOneEnd), held to it by TestOneEndIsSmall.
	one bool

	// small: bit k set when replica k is busy, and at[k] its end
	// (idleEnd when idle), for the len(pos) replicas; pos is not kept.
	// A mask and an array in place, not pos's slice and a slice of
	// ends, spare set and remove a slice's load and bounds check each:
	// Regime/Fleet8LeastLoaded 10,701 then 10,696 instructions a
	// request, servesim's own 10,507 then 10,489 (the budget test; set
	// 142 then 120, scan 98 then 106, its slice of at's first len(pos)).
	// The masks (rep&31, rep&(smallEnds-1)) are no-ops, rep being below
	// smallEnds: they spare the bounds checks.
	busy uint32
	at   [smallEnds]time.Duration

	first stepEnd // the earliest, when n > 0 (unless small, the tournament's root)
	// small, when ok2: the earliest end of the other replicas (a busy
	// one's, before idleEnd), which the scan found with first and the
	// changes since kept. The first's leaving promotes it instead of a
	// scan: each pop of a step end scanned for the next earliest (5,577
	// scans of about 60 instructions in BenchmarkRegime/Disagg's fleet of
	// 6); with the second kept, 2,368 do.
	second stepEnd
	ok2    bool
	// small, when ok3 (and ok2): the earliest end of the replicas but
	// first's and second's (a busy one's, before idleEnd), which the
	// scan found with them. An earliest that moves past the second
	// makes the second first and the earlier of its own end and third
	// the second, where ok2 was lost and a scan followed: with a fleet
	// of 8 behind LeastLoaded, a scan once in two step ends, each about
	// 105 instructions (3,428 for 3,200 requests in
	// Regime/Fleet8LeastLoaded). Its twin is the scan at every loss of
	// the second (twins.noThirdEnd, noThird here: ok3 is never set),
	// held to it by TestThirdEndIsTheScan.
	third   stepEnd
	ok3     bool
	noThird bool

	// unless small: the tournament over the replicas, in the layout of a
	// bottom-up segment tree of 2n entries for n replicas. win[n+k] is
	// leaf k: replica k's end, or {idleEnd, k|idleRep} when it is idle;
	// win[i] for 0 < i < n is the earliest leaf under node i
	// (stepEnd.before), whose children are 2i and 2i+1. An idle leaf is
	// marked so that a busy replica whose end is idleEnd itself comes
	// before it: the root is the earliest end whenever a replica is busy.
	// A node holds the end, not only the replica, so that a match reads
	// its sibling whole (leaves as indexes into a slice of ends cost 134
	// instructions a request more in BenchmarkRunFleet64's
	// prefix/PrefixAffinity).
	win []stepEnd
	// unless small, while every end packs (before packLimit): the
	// tournament as win's, each node one key, its end's instant above
	// repBits bits and its replica below (idleKey for an idle leaf),
	// which order as the ends do; win is nil then. A match is one
	// compare and a node one word: BenchmarkRunFleet64/workload=prefix/
	// router=PrefixAffinity 12,135 then 12,014 instructions a request,
	// atlas/LeastLoaded 10,649 then 10,540 (SERVESIM_BUDGET_FUNCS). An
	// end at packLimit or later (past about six and a half days) turns
	// the tournament into win's for the rest of the run
	// (TestPackedStepEndsIsAnOrderedSet holds both, and the turn, to a
	// map). Its 2n entries lie in an array of keyCap, n (keyN) at most
	// keyCap/2 (a wider fleet's tournament is win's), so that fixKey's
	// matches, indexed by a byte, read and write it without bounds
	// checks: RunFleet64/workload=prefix/router=PrefixAffinity 9,911
	// then 9,870 instructions a request (the budget test; set and remove
	// 41 fewer, cachegrind's marginal count).
	key  *[keyCap]int64
	keyN int
}

// keyCap is the entries of the packed tournament's array (stepEnds.key):
// a fleet of up to keyCap/2 replicas packs its ends.
const keyCap = 256

// repBits is the bits of a packed key (stepEnds.key) that hold its
// replica: MaxReplicas < 1<<repBits.
const repBits = 14

// packLimit is the first instant a packed key cannot hold.
const packLimit = time.Duration(1) << (63 - repBits)

// idleKey is an idle replica's leaf in the packed tournament: after
// every busy one's (its replica, all ones, is none).
const idleKey = int64(math.MaxInt64)

// rootKey is the packed tournament's key[0], the root's sibling and
// parent, before every key: fixKey's walk ends there, at the root's
// match (min(x, rootKey) is rootKey, which key[0] keeps), without a test
// of the root in the loop; it then reads the root's key whether it
// changed or not. RunFleet64/workload=prefix/router=PrefixAffinity
// 9,305 then 9,301 instructions a request (the budget test; set 267
// then 265); fixKey's parent held in a variable (up) then spares a
// register's copy and a zero-extension a match: 9,288 (set 257).
const rootKey = int64(math.MinInt64)

// smallEnds is the largest fleet whose step ends are scanned rather than
// kept in a tournament tree (a scan of 16 costs about what a heap's sift
// did).
const smallEnds = 16

// idleEnd is an idle replica's end in stepEnds.at: after any move's.
const idleEnd = time.Duration(math.MaxInt64)

// idleRep marks an idle replica's leaf in the tournament (stepEnds.win).
const idleRep = int32(1) << 30

type stepEnd struct {
	at  time.Duration
	rep int32
}

func (a stepEnd) before(b stepEnd) bool {
	return a.at < b.at || a.at == b.at && a.rep < b.rep
}

// checkEnds verifies that a replica has a step end exactly when its
// engine has a move in flight, ending then (the tests' engine checks).
func (r *runner) checkEnds() error {
	for i := range r.reps {
		rep := &r.reps[i]
		at, has := r.ends.end(i)
		if busy := rep.eng.Busy(); busy != has || busy && at != rep.stepDone {
			return fmt.Errorf("sim: replica %d: busy %v, but its step end is %d (held %v)", i, busy, at, has)
		}
	}
	return nil
}

func newStepEnds(replicas int) stepEnds {
	h := stepEnds{pos: make([]int32, replicas), small: true}
	for i := range h.pos {
		h.pos[i] = -1
	}
	if replicas > smallEnds {
		h.small = false // the tournament is built at the first step end
		return h
	}
	for i := range h.at {
		h.at[i] = idleEnd
	}
	h.one = replicas == 1
	return h
}

// add makes room for one more replica, idle. A fleet larger than
// smallEnds builds its tournament again (an autoscaler's new replica).
func (h *stepEnds) add() {
	if h.one { // its end into the small fleet's mask and ends
		if h.n > 0 {
			h.busy, h.at[0] = 1, h.first.at
		}
		h.one = false
	}
	h.pos = append(h.pos, -1)
	switch {
	case h.small && len(h.pos) <= smallEnds: // its end is idleEnd already
	case h.small || h.win != nil || h.key != nil:
		h.build(h.win != nil)
	}
}

// build makes the tournament over the replicas' ends: packed (key)
// unless wide or an end does not pack, else win's.
//
// A large fleet builds it when its first step end is set, not when it is
// made: its setup allocates 4 bytes a replica for the step ends, as the
// heap's did (TestFleetSetupAllocatesEachReplicaOnce).
func (h *stepEnds) build(wide bool) {
	n := len(h.pos)
	if h.small { // pos from the mask (the new replica, past it, is idle)
		for k := range h.pos {
			if h.busy>>(k&31)&1 != 0 && k < smallEnds {
				h.pos[k] = 0
			}
		}
	}
	packs := !wide && 2*n <= keyCap
	for k, p := range h.pos {
		if at, _ := h.end(k); p >= 0 && at >= packLimit {
			packs = false
		}
	}
	if packs {
		key := new([keyCap]int64)
		key[0] = rootKey
		for k, p := range h.pos {
			key[n+k] = idleKey
			if p >= 0 {
				at, _ := h.end(k)
				key[n+k] = int64(at)<<repBits | int64(k)
			}
		}
		for i := n - 1; i > 0; i-- {
			key[i] = min(key[2*i], key[2*i+1])
		}
		h.small, h.busy, h.win, h.key, h.keyN = false, 0, nil, key, n
		h.first = unpack(key[1])
		return
	}
	win := make([]stepEnd, 2*n)
	for k, p := range h.pos {
		x := stepEnd{at: idleEnd, rep: int32(k) | idleRep}
		if p >= 0 {
			x.at, _ = h.end(k)
			x.rep = int32(k)
		}
		win[n+k] = x
	}
	for i := n - 1; i > 0; i-- {
		l, r := win[2*i], win[2*i+1]
		if r.before(l) {
			l = r
		}
		win[i] = l
	}
	h.small, h.busy, h.win, h.key, h.first = false, 0, win, nil, win[1]
}

// unpack is the end of packed key x (stepEnds.key).
func unpack(x int64) stepEnd {
	return stepEnd{at: time.Duration(x >> repBits), rep: int32(x & (1<<repBits - 1))}
}

// fixKey is fix in the packed tournament: replica rep's leaf made x.
// One loop serves the earliest's change too: its old key, the one on
// its way up, is no other leaf's, so a node keeps it only when its end
// did not change (fix's two loops, the earliest's without the compare,
// counted the same here: 12,014 instructions a request in
// RunFleet64/workload=prefix/router=PrefixAffinity).
func (h *stepEnds) fixKey(rep int, x int64) {
	key := h.key
	i := uint8(h.keyN + rep)
	key[i] = x
	for { // till a node keeps its key: at the latest key[0], rootKey
		up := i >> 1
		if x = min(x, key[i^1]); key[up] == x {
			break // nothing above changes
		}
		key[up] = x
		i = up
	}
	h.first = unpack(key[1])
}

// fix makes replica rep's leaf x and replays the matches on its way to
// the root; the winner rising from below is at hand, so a match reads
// only the sibling. A node that keeps its winner stops it: nothing above
// changes (15,224 then 15,157 instructions a request in
// BenchmarkRunFleet64/workload=prefix/router=PrefixAffinity). Unless
// rep is the earliest (first): every node on its way to the root held
// its old end and changes, so no match can stop it and none is tried
// (13,311 then 13,249 instructions a request in the same benchmark,
// where 60 % of the changes are the earliest's: its continued run's end,
// always past the runner-up's there, or its leaving). Keeping the
// earliest out of the tree, so that an end still before the runner-up's
// costs nothing, cost 138 more: there a moved end always passed the
// runner-up, and two walks followed.
//
// An idle replica is never the earliest: the root then is a busy
// replica's end or an idle leaf, marked (idleRep).
func (h *stepEnds) fix(rep int, x stepEnd) {
	win := h.win
	i := len(win)/2 + rep
	win[i] = x
	if int32(rep) == h.first.rep {
		for ; i > 1; i >>= 1 {
			if s := win[i^1]; s.before(x) {
				x = s
			}
			win[i>>1] = x
		}
		h.first = x
		return
	}
	for ; i > 1; i >>= 1 {
		if s := win[i^1]; s.before(x) {
			x = s
		}
		if win[i>>1] == x {
			return
		}
		win[i>>1] = x
	}
	h.first = x
}

// end is replica rep's move end, and whether it has one.
func (h *stepEnds) end(rep int) (time.Duration, bool) {
	switch {
	case h.one:
		return h.first.at, h.n > 0
	case h.small:
		if h.busy>>(rep&31)&1 == 0 {
			return 0, false
		}
		return h.at[rep&(smallEnds-1)], true
	case h.pos[rep] < 0:
		return 0, false
	}
	if h.key != nil {
		return time.Duration(h.key[h.keyN+rep] >> repBits), true
	}
	return h.win[len(h.win)/2+rep].at, true
}

func (h *stepEnds) len() int { return h.n }

// peek is the earliest move end; there must be one.
func (h *stepEnds) peek() stepEnd {
	return h.first
}

// set makes at the end of replica rep's move, whether it had one or not.
func (h *stepEnds) set(rep int, at time.Duration) {
	if h.one { // replica 0 alone: its end is the earliest
		h.n, h.first = 1, stepEnd{at: at}
		return
	}
	if h.small { // a fleet of at most smallEnds
		// rep < smallEnds: the masks spare bounds checks.
		if bit := uint32(1) << (rep & 31); h.busy&bit == 0 {
			h.busy |= bit
			h.n++
		}
		h.at[rep&(smallEnds-1)] = at
		x := stepEnd{at: at, rep: int32(rep)}
		switch {
		case h.n == 1:
			h.first, h.ok2, h.ok3 = x, false, false
		case x.before(h.first):
			if x.rep != h.first.rep { // the earliest of the others is the first it passed
				switch {
				case x.rep == h.second.rep && h.ok2: // third stays the third
				case h.ok2: // the second, passed too (or x's own old end's place), is the third
					h.third, h.ok3 = h.second, !h.noThird
				}
				h.second, h.ok2 = h.first, true
			}
			h.first = x
		case x.rep == h.first.rep: // the earliest moved later
			switch {
			case !h.ok2:
				h.scan()
			case x.before(h.second):
				h.first = x
			case !h.ok3:
				h.first, h.ok2 = h.second, false
			case x.before(h.third): // x the second, before the third
				h.first, h.second = h.second, x
			default:
				h.first, h.second, h.ok3 = h.second, h.third, false
			}
		case !h.ok2:
		case x.before(h.second):
			if x.rep != h.second.rep { // the second, passed, is the third
				h.third, h.ok3 = h.second, !h.noThird
			}
			h.second = x
		case x.rep == h.second.rep: // the second moved later
			switch {
			case !h.ok3:
				h.ok2 = false
			case x.before(h.third):
				h.second = x
			default:
				h.second, h.ok3 = h.third, false
			}
		case !h.ok3:
		case x.before(h.third):
			h.third = x
		case x.rep == h.third.rep: // the third moved later
			h.ok3 = false
		}
		return
	}
	if h.key != nil && at < packLimit { // the packed tournament's, but its last
		if h.pos[rep] < 0 {
			h.pos[rep] = 0
			h.n++
		}
		h.fixKey(rep, int64(at)<<repBits|int64(rep))
		return
	}
	h.setTree(rep, at)
}

// setTree is set in a fleet past smallEnds but for a packed end (set's
// own case): the first end (build), the first that does not pack, and
// every end of win's tournament. Out of set, whose packed case then
// keeps its arguments in registers, not spilled for build's calls:
// RunFleet64/workload=prefix/router=PrefixAffinity 9,288 then 9,274
// instructions a request (the budget test; set 257 then 243).
func (h *stepEnds) setTree(rep int, at time.Duration) {
	switch {
	case h.key == nil && h.win == nil: // the fleet's first step end
		h.build(at >= packLimit)
	case h.key != nil && at >= packLimit: // the first end that does not pack
		h.build(true)
	}
	if h.pos[rep] < 0 {
		h.pos[rep] = 0
		h.n++
	}
	if h.key != nil {
		h.fixKey(rep, int64(at)<<repBits|int64(rep))
		return
	}
	h.fix(rep, stepEnd{at: at, rep: int32(rep)})
}

// scan finds the earliest end of a small fleet, which has one, and the
// second earliest (ok2 when it is before idleEnd).
func (h *stepEnds) scan() {
	best, bi := idleEnd, -1
	next, ni := idleEnd, -1
	third, ti := idleEnd, -1
	for i, at := range h.at[:len(h.pos)] {
		if at >= third { // ties keep the lower replica
			continue
		}
		if at < next {
			third, ti = next, ni
			if at < best {
				next, ni = best, bi
				best, bi = at, i
				continue
			}
			next, ni = at, i
			continue
		}
		third, ti = at, i
	}
	h.second, h.ok2 = stepEnd{at: next, rep: int32(ni)}, ni >= 0
	h.third, h.ok3 = stepEnd{at: third, rep: int32(ti)}, ti >= 0 && !h.noThird
	if bi < 0 { // every busy replica's end is idleEnd itself
		bi = bits.TrailingZeros32(h.busy)
	}
	h.first = stepEnd{at: best, rep: int32(bi)}
}

// aloneTill reports whether replica rep holds the earliest end (first)
// and every other replica's end is after t (known), read off what the
// set keeps without a scan: none is busy but rep, or a small fleet's
// second earliest is kept (ok2). Else known is false and the caller
// removes rep's end to find out (stepEnd's twin).
func (h *stepEnds) aloneTill(rep int, t time.Duration) (alone, known bool) {
	if h.n == 1 { // rep's is the one end, when it is first
		return true, int(h.first.rep) == rep
	}
	if h.small && h.ok2 && int(h.first.rep) == rep {
		return h.second.at > t, true
	}
	return false, false
}

// remove forgets replica rep's move end, if it has one.
func (h *stepEnds) remove(rep int) {
	if h.one { // replica 0 alone: none is left (first is then unread)
		h.n = 0
		return
	}
	if h.small {
		bit := uint32(1) << (rep & 31)
		if h.busy&bit == 0 {
			return
		}
		h.busy &^= bit
		h.n--
		h.at[rep&(smallEnds-1)] = idleEnd
		switch {
		case int32(rep) != h.first.rep:
			switch {
			case !h.ok2:
			case int32(rep) == h.second.rep:
				h.second, h.ok2, h.ok3 = h.third, h.ok3, false
			case h.ok3 && int32(rep) == h.third.rep:
				h.ok3 = false
			}
		case h.n == 0:
		case h.ok2:
			h.first, h.second, h.ok2, h.ok3 = h.second, h.third, h.ok3, false
		default:
			h.scan()
		}
		return
	}
	if h.pos[rep] < 0 {
		return
	}
	h.pos[rep] = -1
	h.n--
	if h.key != nil {
		h.fixKey(rep, idleKey)
		return
	}
	h.fix(rep, stepEnd{at: idleEnd, rep: int32(rep) | idleRep})
}

// pop removes and returns the earliest move end.
func (h *stepEnds) pop() (top stepEnd) {
	top = h.peek()
	h.remove(int(top.rep))
	return top
}
