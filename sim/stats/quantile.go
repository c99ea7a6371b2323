package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// Method names how a percentile is computed from a sample.
type Method uint8

const (
	// LinearInterpolation interpolates between the two nearest order
	// statistics at rank (n-1)·p: numpy's default ("linear", Hyndman &
	// Fan type 7), which vLLM's bench serve uses. gonum's stat.Quantile
	// offers only the types 1 and 4, so this one is written here.
	LinearInterpolation Method = iota
	// InvertedCDF is the inverse of the empirical CDF (numpy's
	// "inverted_cdf", type 1), computed by gonum's stat.Quantile.
	InvertedCDF
)

func (m Method) String() string {
	if m == InvertedCDF {
		return "empirical (inverted_cdf, gonum stat.Empirical)"
	}
	return "linear (numpy default, type 7)"
}

// Quantile returns the p-Quantile (p in [0, 1]) of sorted, NaN for an empty
// sample.
func (m Method) Quantile(p float64, sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if m == InvertedCDF {
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

// at returns the k-th smallest element (0-based) of the expanded sample.
func at(vals []float64, cum []int, k int) float64 {
	i, _ := slices.BinarySearch(cum, k+1)
	return vals[i]
}

// QuantileCounts is m.quantile over the expanded sample, exactly.
func (m Method) QuantileCounts(p float64, vals []float64, cum []int) float64 {
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
	if m == InvertedCDF {
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
