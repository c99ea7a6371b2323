package workload

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

func sampleLengths(l Length, n int) []float64 {
	r := NewStream(1, "test")
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(l.Sample(r))
	}
	return xs
}

// vLLM's range ratio: integers on [floor(c(1-r)), ceil(c(1+r))], ends included.
func TestUniformIsVLLMRangeRatio(t *testing.T) {
	u := Uniform{Center: 1000, RangeRatio: 0.25}
	xs := sampleLengths(u, 20000)
	assert.Equal(t, 750.0, slices.Min(xs))
	assert.Equal(t, 1250.0, slices.Max(xs))
	assert.InEpsilon(t, 1000, stat.Mean(xs, nil), 0.01)
	assert.Equal(t, 750, u.Quantile(1e-9))
	assert.Equal(t, 1250, u.Quantile(1-1e-9))
	assert.Equal(t, []float64{7, 7}, sampleLengths(Uniform{Center: 7}, 2), "ratio 0 is constant")
	assert.Equal(t, 1, Uniform{Center: 1, RangeRatio: 0.99}.Quantile(0.01), "low end raised to 1")
}

func TestLengthsMeansAndBounds(t *testing.T) {
	cases := []struct {
		l      Length
		mean   float64
		lo, hi float64
	}{
		{Constant{200}, 200, 200, 200},
		{Normal{Mu: 500, Sigma: 100, Min: 300, Max: 700}, 500, 300, 700},
		{LogNormalMean(1000, 0.5), 1000, 1, math.Inf(1)},
		{Zipf{S: 1.5, V: 1, Max: 1000}, Zipf{S: 1.5, V: 1, Max: 1000}.Mean(), 1, 1000},
		{NewEmpirical([]int{5, 1, 3}), 3, 1, 5},
	}
	for _, c := range cases {
		require.NoError(t, c.l.Validate(), c.l.String())
		xs := sampleLengths(c.l, 50000)
		assert.InEpsilon(t, c.mean, stat.Mean(xs, nil), 0.03, c.l.String())
		assert.GreaterOrEqual(t, slices.Min(xs), c.lo, c.l.String())
		assert.LessOrEqual(t, slices.Max(xs), c.hi, c.l.String())
	}
}

// Quantile inverts Sample: the sample median matches Quantile(0.5).
func TestQuantileMatchesSamples(t *testing.T) {
	for _, l := range []Length{
		Normal{Mu: 500, Sigma: 100}, LogNormal{Mu: 6, Sigma: 1}, Zipf{S: 1.2, V: 2, Max: 500},
		Uniform{Center: 100, RangeRatio: 0.5}, NewEmpirical([]int{1, 2, 3, 4, 100}),
	} {
		xs := sampleLengths(l, 40001)
		slices.Sort(xs)
		for _, p := range []float64{0.1, 0.5, 0.9} {
			got := float64(l.Quantile(p))
			emp := stat.Quantile(p, stat.Empirical, xs, nil)
			assert.InDelta(t, emp, got, max(1, 0.05*emp), "%v at %v", l, p)
		}
	}
}

func TestLengthValidate(t *testing.T) {
	for _, c := range []struct {
		l    Length
		want string
	}{
		{Constant{0}, "Constant.Tokens"},
		{Uniform{Center: 0, RangeRatio: 1}, "Uniform.Center"},
		{Normal{Sigma: 0, Min: 5, Max: 2}, "Normal.Max"},
		{LogNormal{Sigma: -1}, "LogNormal.Sigma"},
		{Zipf{S: 1, V: 0}, "Zipf.V"},
		{Empirical{Samples: []int{3, 1}}, "sorted"},
		{Empirical{}, "empty"},
	} {
		assert.ErrorContains(t, c.l.Validate(), c.want, c.l.String())
	}
	assert.ErrorContains(t, Uniform{Center: 0, RangeRatio: 1}.Validate(), "Uniform.RangeRatio")
	assert.ErrorContains(t, Zipf{S: 1, V: 0}.Validate(), "Zipf.S")
	assert.ErrorContains(t, Zipf{S: 1, V: 0}.Validate(), "Zipf.Max")
}

// spearman is the Pearson correlation of average ranks.
func spearman(x, y []float64) float64 {
	return stat.Correlation(ranks(x), ranks(y), nil)
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpFloat(x[a], x[b]) })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j-1)/2 + 1
		}
		i = j
	}
	return r
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The copula keeps both marginals and realises its target rank correlation.
func TestCopulaSpearmanMatchesTarget(t *testing.T) {
	in := LogNormal{Mu: 7, Sigma: 1, Max: 32000}
	out := LogNormalMean(200, 0.8)
	for _, target := range []float64{-0.5, 0, 0.3, 0.8} {
		c := Copula{Input: in, Output: out, Spearman: target}
		require.NoError(t, c.Validate())
		a, b := NewStream(9, "input"), NewStream(9, "output")
		xs, ys := make([]float64, 20000), make([]float64, 20000)
		for i := range xs {
			x, y := c.Sample(a, b)
			xs[i], ys[i] = float64(x), float64(y)
		}
		assert.InDelta(t, target, spearman(xs, ys), 0.02, "target %v", target)
		assert.InEpsilon(t, out.Mean(), stat.Mean(ys, nil), 0.03, "output marginal kept")
	}
	assert.ErrorContains(t, Copula{Input: in, Spearman: 2}.Validate(), "Copula.Output is nil")
	assert.ErrorContains(t, Copula{Input: in, Output: out, Spearman: 2}.Validate(), "Copula.Spearman")
}

// Joint resampling keeps the pairs' own correlation.
func TestResampleKeepsPairs(t *testing.T) {
	pairs := []Pair{{100, 10}, {1000, 100}, {10000, 1000}}
	j := Resample{Pairs: pairs}
	a, b := NewStream(1, "input"), NewStream(1, "output")
	for range 100 {
		x, y := j.Sample(a, b)
		assert.Equal(t, x/10, y)
	}
}

// The Atlas document model keeps its declared means (before clipping moves
// them a little) and its rank correlation.
func TestAtlasDocuments(t *testing.T) {
	j := AtlasDocuments()
	require.NoError(t, j.Validate())
	in, out := NewStream(1, "input"), NewStream(1, "output")
	const n = 20000
	xs, ys := make([]float64, n), make([]float64, n)
	var si, so float64
	for i := range n {
		a, b := j.Sample(in, out)
		require.True(t, a >= 128 && a <= 7000 && b >= 16 && b <= 1000)
		xs[i], ys[i] = float64(a), float64(b)
		si += xs[i] / n
		so += ys[i] / n
	}
	assert.InEpsilon(t, 2000, si, 0.05)
	assert.InEpsilon(t, 250, so, 0.05)
	assert.InDelta(t, 0.4, spearman(xs, ys), 0.03)
}
