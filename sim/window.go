package sim

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/servesim/servesim/sim/stats"
)

// window is what the runner integrates and counts over the measurement
// window (this file): requests in the system over time, the window's ok
// completions and tokens, and what a detected warm-up needs.
type window struct {
	inSystem           int           // requests held by the replicas
	area               wide          // ∫ inSystem dt over the window, in request·ns, exact (twins.areaEachEvent's)
	areaAt             time.Duration // integrated up to here
	startSeen, endSeen bool          // HeldAtStart / HeldAtEnd recorded
	open               bool          // no Horizon and no warm-up to detect: the window never closes
	// allIn is the instant from which every instant counts in the
	// window: Warmup with no Horizon, else none (Unbounded). tokensIn
	// compares with it alone, not with Horizon and Warmup (RunAtlas
	// 6,102 then 6,090 instructions a request; emit, tally and
	// streakMove's own in Regime/Fleet8LeastLoaded 440 then 426).
	allIn time.Duration
	// openStarted is startSeen && open, advance's usual case (advanceOpen),
	// which the loop tests at every event: one field read, not two
	// (RunAtlas 6,149 then 6,138 instructions a request; the loop's own
	// in Regime/Fleet8LeastLoaded 379 then 364).
	openStarted   bool
	opens, closes time.Duration // the declared window: [Warmup, Horizon or Unbounded)
	segs          []segment     // held over time, when detecting the warm-up
	marks         []mark        // counters before each instant, likewise
	done, tokens  int           // ok completions and tokens inside the window
	lastEnd       time.Duration // last terminal event
	// areaIn is area by request (systemArea): at each entry into the
	// system (sysIn) at the clock areaAt, less clip(areaAt), at each
	// leave (sysOut) plus it, modulo 2¹²⁸. Up to areaAt the integral is
	// areaIn + inSystem·clip(areaAt): each request's part of the window,
	// clip(leave) − clip(entry), the requests still held counted to
	// areaAt. A request enters and leaves once, where the events
	// advance the clock two or three times a request, each adding
	// inSystem·dt (a multiply and a 128-bit add) when integrated event
	// by event: RunAtlas 4,884 then 4,876 instructions a request
	// (servesim's own 4,798 then 4,789), Regime/Fleet8LeastLoaded
	// 10,696 then 10,668 (10,489 then 10,471; the budget test).
	areaIn wide
}

// clip is instant t within the declared window [opens, closes].
func (w *window) clip(t time.Duration) uint64 { return uint64(min(max(t, w.opens), w.closes)) }

// sysIn counts a request into the system at the clock (areaAt).
func (w *window) sysIn() {
	w.inSystem++
	var borrow uint64
	w.areaIn.lo, borrow = bits.Sub64(w.areaIn.lo, w.clip(w.areaAt), 0)
	w.areaIn.hi -= borrow
}

// sysOut counts a request out of the system at the clock (areaAt).
func (w *window) sysOut() {
	w.inSystem--
	var carry uint64
	w.areaIn.lo, carry = bits.Add64(w.areaIn.lo, w.clip(w.areaAt), 0)
	w.areaIn.hi += carry
}

// systemArea is ∫ inSystem dt over the window up to the clock (areaAt),
// in request·ns: areaIn's, or the integral event by event (area) under
// twins.areaEachEvent.
func (r *runner) systemArea() wide {
	if r.tw.areaEachEvent {
		return r.area
	}
	a := r.areaIn
	a.add(uint64(r.inSystem), r.clip(r.areaAt))
	return a
}

func newWindow(cfg Config) window {
	w := window{areaAt: cfg.Warmup, open: cfg.Horizon == 0 && !cfg.DetectWarmup, opens: cfg.Warmup, closes: Unbounded}
	w.allIn = cfg.Warmup
	if cfg.Horizon > 0 {
		w.closes, w.allIn = cfg.Horizon, Unbounded
	}
	return w
}

// reach moves the clock to instant t. With a detected warm-up, the
// counters advance records before each instant's events must hold every
// token emitted before t, so every replica's steps that ended before t are
// collected first.
// (The loop, which reaches every event's instant, takes its usual case,
// an open window that has started, without the call: advanceOpen.)
func (r *runner) reach(t time.Duration) error {
	if r.cfg.DetectWarmup && t > r.areaAt {
		if err := r.settleAll(t - 1); err != nil {
			return err
		}
	}
	r.advance(t)
	return nil
}

// advance moves the clock to t, integrating requests in the system over
// the measurement window for Little's law.
func (r *runner) advance(t time.Duration) {
	if r.openStarted {
		r.advanceOpen(t)
		return
	}
	r.advanceEdges(t)
}

// advanceOpen is advance in an open window that has started, the usual
// case: what advanceEdges does with the window's edges behind it. The
// integral is by request (areaIn): it moves the clock alone.
// (twins.areaEachEvent never starts an open window: advanceEdges
// integrates event by event.)
func (r *runner) advanceOpen(t time.Duration) {
	r.areaAt = max(r.areaAt, t)
	r.now = t
}

// advanceEdges is advance before the window has started or with an edge
// ahead (a horizon, a warm-up to detect).
func (r *runner) advanceEdges(t time.Duration) {
	if r.areaAt <= r.cfg.Warmup && r.cfg.Warmup <= t && !r.startSeen {
		r.startSeen, r.openStarted = true, r.open && !r.tw.areaEachEvent
		r.col.s.HeldAtStart = r.inSystem
		r.col.s.ClientHeldAtStart = len(r.clientQ) - r.clientHead
	}
	if r.cfg.Horizon > 0 && r.areaAt <= r.cfg.Horizon && r.cfg.Horizon <= t && !r.endSeen {
		r.endSeen = true
		r.col.s.HeldAtEnd = r.inSystem
		r.col.s.ClientHeldAtEnd = len(r.clientQ) - r.clientHead
	}
	if r.cfg.DetectWarmup && t > r.areaAt {
		r.segs = append(r.segs, segment{At: r.areaAt, Held: r.inSystem})
		r.marks = append(r.marks, mark{at: t, done: r.done, tokens: r.tokens})
	}
	if r.tw.areaEachEvent { // else by request (areaIn)
		lo, hi := max(r.areaAt, r.cfg.Warmup), min(t, r.closes)
		if hi > lo {
			r.area.add(uint64(r.inSystem), uint64(hi-lo))
		}
	}
	r.areaAt = max(r.areaAt, t)
	r.now = t
}

// endsInWindow reports whether a step that ended at t is one the declared
// window measures: ended after Warmup, at Horizon at the latest. The
// window's edges are events that split every run, so a move's steps are
// all inside or all outside.
func (r *runner) endsInWindow(t time.Duration) bool {
	return t > r.cfg.Warmup && t <= r.closes
}

// overlap is the part of [a, b] inside the declared window.
func (r *runner) overlap(a, b time.Duration) time.Duration {
	a, b = max(a, r.cfg.Warmup), min(b, r.closes)
	return max(0, b-a)
}

func (r *runner) summary() Summary {
	r.flushGaps()
	end := r.cfg.Horizon
	switch {
	case r.overloaded && (end == 0 || r.col.s.Stopped < end):
		// Nothing arrived after the stop: the window ends there.
		end = max(r.col.s.Stopped, r.cfg.Warmup)
		r.col.s.HeldAtEnd = r.inSystem
	case end == 0:
		end = r.lastEnd
		r.advance(max(r.lastEnd, r.now))
		r.col.s.HeldAtEnd = r.inSystem
	case !r.endSeen: // stopped before the horizon: every request ended
		r.advance(r.cfg.Horizon)
	}
	r.col.s.Overloaded = r.overloaded
	w := r.cfg.Window
	rep := WarmupReport{Declared: w.Warmup, DeclaredRequests: w.WarmupRequests, Method: "declared", Start: w.Warmup}
	area, done, tokens := r.systemArea(), r.done, r.tokens
	if w.DetectWarmup {
		var kept []Record
		kept, rep = truncate(r.col.eligible, w)
		r.col.detect = false
		for i := range kept {
			r.countAll(&kept[i], r.classes.of(kept[i].Class))
		}
		area, r.col.s.HeldAtStart = integrate(r.segs, rep.Start, end)
		m := r.markAt(rep.Start)
		done, tokens = done-m.done, tokens-m.tokens
	}
	r.col.s.Completed, r.col.s.WindowTokens = done, tokens
	r.col.s.Warmup = rep
	// An open window whose warm-up outlasts every request is empty, never
	// negative.
	window := max(0, end-rep.Start)
	if r.fleet { // the fleet's gaps are its replicas' (runner.gapsOf)
		parts := make([]*weighted, len(r.reps))
		for i := range r.reps {
			parts[i] = &r.reps[i].col.itl
		}
		r.col.itl = mergedGaps(r.col.itl.limit, parts)
		r.mergeShares()
	}
	s := r.col.finish(window, area.seconds(), r.cfg.Percentiles)
	s.Replicas, s.Imbalance = r.replicaSummaries(&s, window, max(0, end-w.Warmup))
	if r.pd != nil {
		s.Disagg = r.pd.summary(s.Offered, s.Replicas, w.Warmup, max(0, end-w.Warmup), r.cfg.Percentiles)
	}
	if r.tiers != nil {
		s.Tiers = r.tiers.summary(w.Warmup, max(0, end-w.Warmup), r.cfg.Percentiles)
	}
	if r.scale != nil {
		s.Scale = r.scale.summary(r, w.Warmup, max(w.Warmup, end))
	}
	s.GatewayQueue = r.gatewayQueue(max(0, end-w.Warmup))
	s.Steps = r.mix.finish(r.cfg.Percentiles)
	if r.perClass {
		s.Classes = r.classes.summaries(window, r.cfg.Percentiles)
	}
	return s
}

// mergeShares makes the fleet's TTFT, TPOT and E2E samples the merges of
// its replicas' shares, sorted first (sample.mergeSorted), when the
// fleet keeps them exactly and has at most mergeParts replicas. (Its
// queue delays, client waits and worst gaps, kept by the shares too,
// cost Fleet8LeastLoaded 38 instructions a request more than their
// sorts: the shares' adds, and merges dearer than the sorts of samples
// of few distinct values.)
func (r *runner) mergeShares() {
	if sortShares || len(r.reps) > mergeParts {
		return
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	var parts [mergeParts]*sample
	for _, pick := range [...]func(c *collector) *sample{
		func(c *collector) *sample { return &c.ttft },
		func(c *collector) *sample { return &c.tpot },
		func(c *collector) *sample { return &c.e2e },
	} {
		fleet := pick(&r.col)
		if fleet.sk != nil {
			continue
		}
		for i := range r.reps {
			parts[i] = pick(&r.reps[i].col)
		}
		if !mergeOnly && fleet.splitSorted(parts[:len(r.reps)], sc) {
			continue
		}
		for _, p := range parts[:len(r.reps)] {
			p.presort(sc)
		}
		fleet.mergeSorted(parts[:len(r.reps)], sc)
	}
}

// sortShares makes a fleet's summary sort its TTFT, TPOT and E2E samples
// rather than merge its replicas' (mergeShares' slow twin; a test's
// switch).
var sortShares = false

// mergeOnly makes mergeShares sort each share and merge them
// (mergeSorted), never sort them together (splitSorted, whose twin it
// is; a test's switch).
var mergeOnly = false

// replicaSummaries sums each replica's share of the run: its measured
// requests over the window, and its busy time and KV occupancy over the
// declared window (measured in the steps that ended inside it).
func (r *runner) replicaSummaries(fleet *Summary, window, declared time.Duration) ([]ReplicaSummary, Imbalance) {
	out := make([]ReplicaSummary, len(r.reps))
	offered, busy, held := make([]float64, len(r.reps)), make([]float64, len(r.reps)), make([]float64, len(r.reps))
	for i := range r.reps {
		rep := &r.reps[i]
		var area wide // ∫ held dt over the declared window
		if r.oneHeld {
			area = r.systemArea()
		} else {
			area = r.heldAreaTo(rep, r.cfg.Warmup+declared)
		}
		s := fleet // a single replica's share is the whole
		if r.fleet {
			own := rep.col.finish(window, 0, r.cfg.Percentiles)
			s = &own
		}
		rs := ReplicaSummary{
			Replica: i, Offered: s.Offered, Good: s.Good, Goodput: s.Goodput, Attainment: s.Attainment,
			TTFT: s.TTFT, TPOT: s.TPOT, ITL: s.ITL, E2E: s.E2E,
			Cached: s.Cached, InputTokens: s.InputTokens, Preempt: s.Preempt,
			Busy: math.NaN(), KVOccupancy: math.NaN(), MeanHeld: math.NaN(),
		}
		sec := declared.Seconds()
		if r.scale != nil { // the part of the window it served or drained
			sec = r.scale.present(rep, r.cfg.Warmup, r.cfg.Warmup+declared).Seconds()
		}
		if sec > 0 {
			rs.Busy = rep.busy.Seconds() / sec
			rs.KVOccupancy = rep.blockTime.seconds() / sec / float64(rep.eng.Config().KVBlocks)
			rs.MeanHeld = area.seconds() / sec
		}
		out[i] = rs
		offered[i], busy[i], held[i] = float64(rs.Offered), rs.Busy, rs.MeanHeld
	}
	return out, Imbalance{Requests: maxOverMean(offered), Busy: maxOverMean(busy), Held: maxOverMean(held)}
}

// maxOverMean is max(x) / mean(x), NaN when the mean is 0 or undefined.
func maxOverMean(x []float64) float64 {
	sum, top := 0.0, math.Inf(-1)
	for _, v := range x {
		sum += v
		top = max(top, v)
	}
	if !(sum > 0) {
		return math.NaN()
	}
	return top / (sum / float64(len(x)))
}

// inWindow counts the instants t, t+step, …, t+(n-1)·step that fall in the
// declared window [Warmup, Horizon) (Horizon 0: no end), in O(1).
func (r *runner) inWindow(t, step time.Duration, n int) int {
	lo, hi := 0, n // indices i in [lo, hi) are inside
	if step == 0 {
		n = 1
		hi = 1
	}
	if w := r.cfg.Warmup; t < w {
		if step == 0 {
			return 0
		}
		lo = int(ceilDiv(w-t, step))
	}
	if h := r.cfg.Horizon; h > 0 {
		if t >= h {
			return 0
		}
		if step > 0 {
			hi = min(hi, int(ceilDiv(h-t, step)))
		}
	}
	return max(0, min(hi, n)-lo)
}

func ceilDiv(a, b time.Duration) time.Duration { return (a + b - 1) / b }

// tokensIn is inWindow(t, step, n) for step > 0 or n = 1, with the
// answer of an open window after its warm-up (every instant counts)
// inline: worth 1.0 % of RunAtlas's instructions and of RunBatch256's,
// measured 2026-12-04; it stays as one of five splits worth 3.9 %
// together (docs/scale.md, "What the inlining contortions are worth").
func (r *runner) tokensIn(t, step time.Duration, n int) int {
	if t >= r.allIn {
		return n
	}
	return r.inWindow(t, step, n)
}

// WarmupReport says which requests were left out as warm-up: always part of
// a Summary, so a reader knows what was measured.
type WarmupReport struct {
	Declared         time.Duration // Window.Warmup
	DeclaredRequests int           // Window.WarmupRequests
	Detected         bool          // MSER-5 was applied (Window.DetectWarmup)
	Method           string        // "declared" or "MSER-5"
	Truncated        int           // eligible requests MSER-5 left out
	Start            time.Duration // the instant the measured window began
}

// truncate applies MSER-5 to the buffered eligible records and returns the
// kept ones and the report.
func truncate(recs []Record, w Window) ([]Record, WarmupReport) {
	rep := WarmupReport{Declared: w.Warmup, DeclaredRequests: w.WarmupRequests, Detected: true, Method: "MSER-5", Start: w.Warmup}
	slices.SortStableFunc(recs, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Arrival, b.Arrival), cmp.Compare(a.ID, b.ID))
	})
	y := make([]float64, len(recs))
	for i := range recs {
		y[i] = (recs[i].Finish - recs[i].Arrival).Seconds()
	}
	d := stats.MSER5(y)
	rep.Truncated = d
	if d > 0 && d < len(recs) {
		rep.Start = recs[d].Arrival
	}
	return recs[d:], rep
}

// segment is a stretch of time from At on during which Held requests were
// in the replica; kept only when the warm-up is detected, to integrate
// Little's L over a window whose start is known only at the end.
type segment struct {
	At   time.Duration
	Held int
}

// integrate returns ∫ held dt over [lo, hi] and the number held at lo.
func integrate(segs []segment, lo, hi time.Duration) (area wide, atLo int) {
	for i, s := range segs {
		end := hi
		if i+1 < len(segs) {
			end = min(end, segs[i+1].At)
		}
		if s.At <= lo {
			atLo = s.Held
		}
		a, b := max(s.At, lo), end
		if b > a {
			area.add(uint64(s.Held), uint64(b-a))
		}
	}
	return area, atLo
}

// mark holds the window's counters as they stood before the events of an
// instant: a detected window starts at an arrival instant, so the counts
// from it on are the totals less the mark there.
type mark struct {
	at           time.Duration
	done, tokens int
}

// markAt returns the counters before the events of instant t: the first
// mark at or after t (nothing happens between t and it), or the totals when
// t comes after every mark.
func (r *runner) markAt(t time.Duration) mark {
	if t <= r.cfg.Warmup {
		// The counters count inside the declared window only: nothing
		// before its start (which need not be an event's instant).
		return mark{at: t}
	}
	i, _ := slices.BinarySearchFunc(r.marks, t, func(m mark, t time.Duration) int { return cmp.Compare(m.at, t) })
	if i < len(r.marks) {
		return r.marks[i]
	}
	return mark{at: t, done: r.done, tokens: r.tokens}
}
