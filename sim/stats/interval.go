package stats

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/servesim/servesim/internal/fsum"
	"github.com/servesim/servesim/internal/pcgint"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a figure with its confidence interval, in the style of
// benchstat's summaries: Center, and [Lo, Hi] at the stated Confidence from
// N replications (Lo and Hi are NaN when N < 2: one run has no interval).
type Interval struct {
	Center, Lo, Hi float64
	Confidence     float64
	N              int
}

// String prints the centre with its interval.
func (e Interval) String() string {
	if math.IsNaN(e.Lo) {
		return fmt.Sprintf("%.4g (n=%d, no interval)", e.Center, e.N)
	}
	return fmt.Sprintf("%.4g [%.4g, %.4g]", e.Center, e.Lo, e.Hi)
}

// Contains reports whether x lies in the interval.
func (e Interval) Contains(x float64) bool { return e.Lo <= x && x <= e.Hi }

// Clamp limits an interval to the figure's domain (a rate is never
// negative, an attainment never above 1): the t-interval of a few
// replications can otherwise spill over.
func Clamp(e Interval, lo, hi float64) Interval {
	if !math.IsNaN(e.Lo) {
		e.Lo, e.Hi = max(e.Lo, lo), min(e.Hi, hi)
	}
	return e
}

// MeanInterval is the mean of x with a Student-t interval across replications.
func MeanInterval(x []float64, conf float64) Interval {
	e := Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Confidence: conf, N: len(x)}
	if len(x) == 0 {
		return e
	}
	mean, std := fsum.MeanStdDev(x)
	e.Center = mean
	if len(x) < 2 {
		return e
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(x) - 1)}.Quantile(0.5 + conf/2)
	half := t * std / math.Sqrt(float64(len(x)))
	e.Lo, e.Hi = mean-half, mean+half
	return e
}

// bootstrapRounds is the number of bootstrap resamples per interval.
const bootstrapRounds = 200

// QuantileIntervals estimates the ps-quantiles of the pooled samples (each
// sorted), each with a percentile-bootstrap interval: every resample draws
// each replication's requests with replacement (stratified by replication)
// from src, as rand.New(src).IntN would, and serves all the quantiles at
// once. A resample is held as a count per pooled rank, so it needs no sort.
func QuantileIntervals(samples [][]float64, ps []float64, conf float64, src *rand.PCG) []Interval {
	pooled, rank := poolRanks(samples)
	out := make([]Interval, len(ps))
	for i, p := range ps {
		out[i] = Interval{Center: LinearInterpolation.Quantile(p, pooled), Lo: math.NaN(), Hi: math.NaN(), Confidence: conf, N: len(pooled)}
	}
	if len(pooled) < 2 {
		return out
	}
	stats := make([][]float64, len(ps))
	for i := range stats {
		stats[i] = make([]float64, bootstrapRounds)
	}
	counts := make([]int, len(pooled))
	walk := newCountWalk(ps, len(pooled))
	for b := range bootstrapRounds {
		clear(counts)
		for r, s := range samples {
			for range s {
				counts[rank[r][pcgint.IntN(src, len(s))]]++
			}
		}
		walk.quantiles(pooled, counts)
		for i := range ps {
			stats[i][b] = walk.q[i]
		}
	}
	for i := range ps {
		slices.Sort(stats[i])
		out[i].Lo = LinearInterpolation.Quantile((1-conf)/2, stats[i])
		out[i].Hi = LinearInterpolation.Quantile(1-(1-conf)/2, stats[i])
	}
	return out
}

// quantileOfCounts is the linear (type 7) p-quantile of the sample holding
// counts[i] copies of sorted[i]; the counts add up to len(sorted). It is
// the definition countWalk is held to.
func quantileOfCounts(p float64, sorted []float64, counts []int) float64 {
	n := len(sorted)
	h := float64(n-1) * p
	lo := int(h) // h >= 0, so this is the floor
	var a, b float64
	cum := 0
	for i, c := range counts {
		if cum <= lo && lo < cum+c {
			a = sorted[i]
		}
		if cum <= lo+1 && lo+1 < cum+c {
			b = sorted[i]
			break
		}
		cum += c
	}
	if lo+1 >= n {
		return a
	}
	return a + (h-float64(lo))*(b-a)
}

// BootstrapStream is the source of workload.NewStream(seed, name): the
// same PCG, seeded by the same hash of the name, so that its draws are that
// stream's (TestBootstrapStreamIsNewStream). The bootstrap draws from the
// source itself (intN), not through a rand.Rand.
func BootstrapStream(seed uint64, name string) *rand.PCG {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.NewPCG(seed, h.Sum64())
}

// countWalk is quantileOfCounts for several p at once, in one walk of the
// counts up to the largest rank any of them reads: a bootstrap's rounds
// walked them once a quantile (p = 0.5, 0.9 and 0.99: 2.4 times the
// pooled sample a round), and that was a fifth of a sweep. Each quantile
// is the same float operations on the same two values as quantileOfCounts
// (TestCountWalkIsQuantileOfCounts).
type countWalk struct {
	h     []float64 // (n − 1)·p for each p
	lo    []int     // ⌊h⌋: the quantile reads the values of ranks lo and lo + 1
	ranks []int     // the ranks read, ascending, without repeats
	at    []int     // for each p, the index in ranks of its rank lo (lo + 1 is next, when below n)
	vals  []float64 // the value of each rank of ranks, this round
	q     []float64 // the quantiles, this round
	n     int
}

func newCountWalk(ps []float64, n int) *countWalk {
	w := &countWalk{h: make([]float64, len(ps)), lo: make([]int, len(ps)), at: make([]int, len(ps)), q: make([]float64, len(ps)), n: n}
	for i, p := range ps {
		w.h[i] = float64(n-1) * p
		w.lo[i] = int(w.h[i]) // h >= 0, so this is the floor
		w.ranks = append(w.ranks, w.lo[i])
		if w.lo[i]+1 < n {
			w.ranks = append(w.ranks, w.lo[i]+1)
		}
	}
	slices.Sort(w.ranks)
	w.ranks = slices.Compact(w.ranks)
	for i, lo := range w.lo {
		w.at[i], _ = slices.BinarySearch(w.ranks, lo)
	}
	w.vals = make([]float64, len(w.ranks))
	return w
}

// quantiles sets q to the quantiles of the sample holding counts[i]
// copies of sorted[i] (the counts add up to n).
func (w *countWalk) quantiles(sorted []float64, counts []int) {
	j, cum := 0, 0
	for i, c := range counts {
		next := cum + c
		for j < len(w.ranks) && w.ranks[j] < next {
			w.vals[j] = sorted[i]
			j++
		}
		if j == len(w.ranks) {
			break
		}
		cum = next
	}
	for i, lo := range w.lo {
		a := w.vals[w.at[i]]
		if lo+1 >= w.n {
			w.q[i] = a
			continue
		}
		b := w.vals[w.at[i]+1]
		w.q[i] = a + (w.h[i]-float64(lo))*(b-a)
	}
}

// poolRanks pools the samples into one sorted slice and returns, for each
// replication's i-th element, its rank in the pool: equal values in
// replication order, then in each replication's order (a stable sort of
// the replications one after another, by cmp.Compare). Each replication
// is sorted, so up to mergeReps of them are merged, the smallest head
// first and the first replication's on a tie; the stable sort of tagged
// copies (poolRanksSort, its twin in TestPoolRanksIsTheStableSort) was
// half of a sweep's allocations.
func poolRanks(samples [][]float64) ([]float64, [][]int) {
	if len(samples) > mergeReps {
		return poolRanksSort(samples)
	}
	n := 0
	rank := make([][]int, len(samples))
	for r, s := range samples {
		n += len(s)
		rank[r] = make([]int, len(s))
	}
	pooled := make([]float64, n)
	var head [mergeReps]int
	for k := range pooled {
		best := -1
		for r, s := range samples {
			if i := head[r]; i < len(s) && (best < 0 || cmp.Compare(s[i], samples[best][head[best]]) < 0) {
				best = r
			}
		}
		pooled[k] = samples[best][head[best]]
		rank[best][head[best]] = k
		head[best]++
	}
	return pooled, rank
}

// mergeReps is the most replications poolRanks merges; beyond, a sort
// costs less than a scan of every head for each value.
const mergeReps = 16

// poolRanksSort is poolRanks by a stable sort of every value tagged with
// its place.
func poolRanksSort(samples [][]float64) ([]float64, [][]int) {
	type tagged struct {
		v      float64
		rep, i int
	}
	var all []tagged
	for r, s := range samples {
		for i, v := range s {
			all = append(all, tagged{v, r, i})
		}
	}
	slices.SortStableFunc(all, func(a, b tagged) int { return cmp.Compare(a.v, b.v) })
	pooled := make([]float64, len(all))
	rank := make([][]int, len(samples))
	for r, s := range samples {
		rank[r] = make([]int, len(s))
	}
	for k, t := range all {
		pooled[k] = t.v
		rank[t.rep][t.i] = k
	}
	return pooled, rank
}
