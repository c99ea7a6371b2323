package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/servesim/servesim/sim/stats"
)

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
