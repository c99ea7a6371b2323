package sim

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
)

// Method names how a percentile is computed from a sample.
type Method uint8

const (
	// Linear interpolates between the two nearest order statistics at
	// rank (n-1)·p: numpy's default ("linear", Hyndman & Fan type 7), which
	// vLLM's bench serve uses. gonum's stat.Quantile offers only the
	// types 1 and 4, so this one is written here.
	Linear Method = iota
	// Empirical is the inverse of the empirical CDF (numpy's
	// "inverted_cdf", type 1), computed by gonum's stat.Quantile.
	Empirical
)

func (m Method) String() string {
	if m == Empirical {
		return "empirical (inverted_cdf, gonum stat.Empirical)"
	}
	return "linear (numpy default, type 7)"
}

// quantile returns the p-quantile (p in [0, 1]) of sorted, NaN for an empty
// sample.
func (m Method) quantile(p float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if m == Empirical {
		return stat.Quantile(p, stat.Empirical, sorted, nil)
	}
	h := float64(n-1) * p
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return sorted[n-1]
	}
	if frac := h - lo; frac == 0 || sorted[i] == sorted[i+1] {
		return sorted[i] // also keeps +Inf (beyond every bound) out of 0 × Inf
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}

// weighted is a sample held as distinct values with counts, as ITLs are:
// thousands of tokens share a handful of step durations, so the summary keeps
// every gap exactly in memory proportional to the distinct values.
//
// Past limit distinct values (a context-priced model makes every step's
// duration its own), the gaps move to a Sketch; limit 0 is no limit.
//
// A sketched sample keeps its moments as exact integer sums (Σn·d and
// Σn·d² in nanoseconds, 128 and 192 bits), not as a running float: a run
// fast-forwarded adds a gap once for many tokens where a run step by step
// adds it once a step, and the mean and the deviation must come out the
// same to the bit either way.
type weighted struct {
	counts map[time.Duration]int
	limit  int
	sk     *Sketch
	sum    [2]uint64 // Σ n·d, ns, when sketched (lo, hi)
	sq     [3]uint64 // Σ n·d², ns²

	// The gaps of the two values added last, not yet counted, the latest
	// first: gaps come in runs of one value (a move's steps, the moves of
	// a batch, the requests of a step) that alternate with another (a run
	// of decode steps, then a mixed step), and a map update each cost a
	// twentieth of BenchmarkRunAtlas. The counts are integers, so when
	// they reach the map changes nothing. Readers call settle first.
	pend  [2]time.Duration
	pendN [2]int
	npend int
}

// add counts n gaps of d. More gaps of the latest value are the usual
// case.
func (w *weighted) add(d time.Duration, n int) {
	switch {
	case w.npend > 0 && d == w.pend[0]:
		w.pendN[0] += n
	case w.npend > 1 && d == w.pend[1]:
		w.pend[0], w.pend[1] = d, w.pend[0]
		w.pendN[0], w.pendN[1] = w.pendN[1]+n, w.pendN[0]
	default:
		if w.npend == 2 {
			w.count(w.pend[1], w.pendN[1])
		}
		w.pend[1], w.pendN[1] = w.pend[0], w.pendN[0]
		w.pend[0], w.pendN[0] = d, n
		w.npend = min(w.npend+1, 2)
	}
}

// settle counts the pending gaps: every reader calls it first.
func (w *weighted) settle() {
	for i := range w.npend {
		w.count(w.pend[i], w.pendN[i])
		w.pendN[i] = 0
	}
	w.npend = 0
}

func (w *weighted) count(d time.Duration, n int) {
	if w.sk != nil {
		w.sketch(d, n)
		return
	}
	if w.counts == nil {
		w.counts = make(map[time.Duration]int)
	}
	w.counts[d] += n
	if w.limit > 0 && len(w.counts) > w.limit {
		w.sk = newSketch()
		for d, n := range w.counts { // integer sums: any order
			w.sketch(d, n)
		}
		w.counts = nil
	}
}

// sketch adds n gaps of d to the sketch's buckets and the exact sums.
func (w *weighted) sketch(d time.Duration, n int) {
	if n <= 0 {
		return
	}
	w.sk.count(ms(d), uint64(n))
	u, k := uint64(max(d, 0)), uint64(n)
	hi, lo := bits.Mul64(k, u)
	var c uint64
	w.sum[0], c = bits.Add64(w.sum[0], lo, 0)
	w.sum[1] += hi + c
	// n·d² = n·(d² as 128 bits), up to 192 bits.
	dh, dl := bits.Mul64(u, u)
	h1, l1 := bits.Mul64(k, dl)
	h2, l2 := bits.Mul64(k, dh)
	mid, c1 := bits.Add64(h1, l2, 0)
	top := h2 + c1
	w.sq[0], c = bits.Add64(w.sq[0], l1, 0)
	w.sq[1], c = bits.Add64(w.sq[1], mid, c)
	w.sq[2] += top + c
}

// moments are the exact mean and population deviation, ms, of a sketched
// sample.
func (w *weighted) moments() (mean, std float64) {
	words := func(ws ...uint64) *big.Int {
		z := new(big.Int)
		for i := len(ws) - 1; i >= 0; i-- {
			z.Lsh(z, 64).Or(z, new(big.Int).SetUint64(ws[i]))
		}
		return z
	}
	n := new(big.Int).SetUint64(w.sk.n)
	sum, sq := words(w.sum[:]...), words(w.sq[:]...)
	// n²·variance = n·Σd² − (Σd)², exact; then one rounding each.
	v := new(big.Int).Mul(n, sq)
	v.Sub(v, new(big.Int).Mul(sum, sum))
	nn := new(big.Int).Mul(n, n)
	m, _ := new(big.Rat).SetFrac(sum, n).Float64()
	vr, _ := new(big.Rat).SetFrac(v, nn).Float64()
	return m / 1e6, math.Sqrt(max(vr, 0)) / 1e6
}

// runs returns the distinct values in milliseconds, increasing, with the
// cumulative counts.
func (w *weighted) runs() (vals []float64, cum []int) {
	keys := make([]time.Duration, 0, len(w.counts))
	for d := range w.counts {
		keys = append(keys, d)
	}
	sortDurations(keys, nil) // distinct: the order is slices.Sort's
	vals = make([]float64, len(keys))
	cum = make([]int, len(keys))
	total := 0
	for i, d := range keys {
		total += w.counts[d]
		vals[i] = ms(d)
		cum[i] = total
	}
	return vals, cum
}

// at returns the k-th smallest element (0-based) of the expanded sample.
func at(vals []float64, cum []int, k int) float64 {
	i, _ := slices.BinarySearch(cum, k+1)
	return vals[i]
}

// quantileWeighted is m.quantile over the expanded sample, exactly.
func (m Method) quantileWeighted(p float64, vals []float64, cum []int) float64 {
	if len(vals) == 0 {
		return math.NaN()
	}
	return m.quantileAt(p, cum[len(cum)-1], func(k int) float64 { return at(vals, cum, k) })
}

// quantileAt is m.quantile over a sample of n values whose k-th smallest
// (0-based) is at(k).
func (m Method) quantileAt(p float64, n int, at func(k int) float64) float64 {
	if n == 0 {
		return math.NaN()
	}
	if m == Empirical {
		// Type 1: the smallest x with F(x) >= p.
		k := int(math.Ceil(p*float64(n))) - 1
		return at(min(max(k, 0), n-1))
	}
	h := float64(n-1) * p
	lo := math.Floor(h)
	i := int(lo)
	if i >= n-1 {
		return at(n - 1)
	}
	a, b := at(i), at(i+1)
	if h == lo || a == b {
		return a // also keeps +Inf out of 0 × Inf
	}
	return a + (h-lo)*(b-a)
}
