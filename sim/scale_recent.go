package sim

import (
	"math"
	"slices"
	"time"
)

// Recent is what ended in a recent window (ScaleView.Recent): every
// request that ended, measured or not (a controller does not know the
// measurement window), judged by its own SLO (its class's, or the run's)
// as the summary judges it.
type Recent struct {
	// Ended is the requests that ended in the window, whatever their
	// status; Good those that met their SLO.
	Ended, Good int
	// Attainment is Good/Ended; NaN when none ended.
	Attainment float64
	// FirstTokens is the requests that ended in the window having
	// emitted a first token (every ok one; a rejected, timed-out or
	// aborted one may have none).
	FirstTokens int
	// TTFTp99 is the nearest-rank 99th percentile of the TTFTs of those
	// FirstTokens requests: the ⌈0.99·FirstTokens⌉-th smallest, a TTFT
	// that one of them had (not interpolated). 0 when FirstTokens is 0,
	// even when some ended: a request that never had a first token has no
	// TTFT, and Attainment is what counts it.
	TTFTp99 time.Duration
}

// MaxHistory bounds what a policy may declare it reads back
// (History() time.Duration, see Autoscaler).
const MaxHistory = 24 * time.Hour

// recentEnds is the runner's memory of the requests that ended in the
// last History() a policy declared (Autoscaler): a ring of (end instant,
// TTFT, good), oldest first. It is pruned to (now − keep, now] at each
// tick, before the policy reads it, and when it is full before it grows,
// so that its capacity stays below twice the most requests that end in
// any keep-long stretch (and at least minRecent): a run's length does not
// move it. In steady state a note writes into the ring and allocates
// nothing. The runner keeps none (runner.recent nil) unless the policy
// declares a History above 0.
type recentEnds struct {
	keep time.Duration
	buf  []recentEnd // len a power of two
	head int         // the oldest
	n    int
	// ttfts is Recent's scratch: the TTFTs it sorts.
	ttfts []time.Duration
}

// recentEnd is one ended request: when it ended, its TTFT (Never
// without a first token), and whether it met its SLO.
type recentEnd struct {
	at, ttft time.Duration
	good     bool
}

// minRecent is a ring's first capacity.
const minRecent = 64

// newRecentEnds is the ring a policy asks for through History(), nil
// when it does not (or declares 0).
func newRecentEnds(p Autoscaler) *recentEnds {
	h, ok := p.(interface{ History() time.Duration })
	if !ok || h.History() <= 0 {
		return nil
	}
	return &recentEnds{keep: h.History(), buf: make([]recentEnd, minRecent)}
}

// note keeps a request that ended at rec.Finish; ends come in time order.
func (e *recentEnds) note(rec *Record, slo SLO) {
	if e.n == len(e.buf) {
		e.prune(rec.Finish)
		if e.n == len(e.buf) {
			e.grow()
		}
	}
	e.buf[(e.head+e.n)&(len(e.buf)-1)] = recentEnd{at: rec.Finish, ttft: rec.TTFT(), good: slo.met(rec)}
	e.n++
}

// prune drops what ended at or before now − keep.
func (e *recentEnds) prune(now time.Duration) {
	mask := len(e.buf) - 1
	for e.n > 0 && e.buf[e.head].at <= now-e.keep {
		e.head = (e.head + 1) & mask
		e.n--
	}
}

// grow doubles the ring, keeping its order.
func (e *recentEnds) grow() {
	buf := make([]recentEnd, 2*len(e.buf))
	k := copy(buf, e.buf[e.head:])
	copy(buf[k:], e.buf[:e.head])
	e.buf, e.head = buf, 0
}

// recent is what ended in (now − min(lookback, keep), now].
func (e *recentEnds) recent(now, lookback time.Duration) Recent {
	out := Recent{Attainment: math.NaN()}
	if e == nil || lookback <= 0 {
		return out
	}
	from := now - min(lookback, e.keep)
	mask := len(e.buf) - 1
	e.ttfts = e.ttfts[:0]
	for k := e.n - 1; k >= 0; k-- { // newest first
		x := &e.buf[(e.head+k)&mask]
		if x.at > now {
			continue
		}
		if x.at <= from {
			break
		}
		out.Ended++
		if x.good {
			out.Good++
		}
		if x.ttft != Never {
			e.ttfts = append(e.ttfts, x.ttft)
		}
	}
	if out.Ended > 0 {
		out.Attainment = float64(out.Good) / float64(out.Ended)
	}
	if n := len(e.ttfts); n > 0 {
		slices.Sort(e.ttfts)
		out.FirstTokens = n
		out.TTFTp99 = e.ttfts[(99*n+99)/100-1] // the ⌈0.99·n⌉-th smallest
	}
	return out
}
