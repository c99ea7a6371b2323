package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// sketchCases are 10⁶-value samples of the shapes latency takes: a
// lognormal body, a Pareto tail (α = 1.2: infinite variance) and a bimodal
// mix of fast and slow requests six orders of magnitude apart, with exact
// zeros.
func sketchCases() map[string][]float64 {
	const n = 1_000_000
	src := rand.NewPCG(7, 11)
	logn := distuv.LogNormal{Mu: math.Log(300), Sigma: 1.1, Src: src}
	par := distuv.Pareto{Xm: 45, Alpha: 1.2, Src: src}
	fast := distuv.Normal{Mu: 50, Sigma: 5, Src: src}
	slow := distuv.LogNormal{Mu: math.Log(2e4), Sigma: 0.5, Src: src}
	r := rand.New(src)
	out := map[string][]float64{"lognormal": make([]float64, n), "pareto": make([]float64, n), "bimodal": make([]float64, n)}
	for i := range n {
		out["lognormal"][i] = logn.Rand()
		out["pareto"][i] = par.Rand()
		switch u := r.Float64(); {
		case u < 0.02:
			out["bimodal"][i] = 0
		case u < 0.7:
			out["bimodal"][i] = math.Abs(fast.Rand()) * 1e-3
		default:
			out["bimodal"][i] = slow.Rand()
		}
	}
	return out
}

// Every percentile a summary reports, by either method, lies within the
// stated relative error of the exact one on 10⁶ values.
func TestSketchWithinItsRelativeError(t *testing.T) {
	if testing.Short() {
		t.Skip("10⁶-value samples")
	}
	ps := []float64{0, 0.001, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1}
	for name, x := range sketchCases() {
		sk := newSketch()
		for _, v := range x {
			sk.Add(v)
		}
		sorted := slices.Sorted(slices.Values(x))
		worst := 0.0
		for _, m := range []Method{LinearInterpolation, InvertedCDF} {
			for _, p := range ps {
				exact, got := m.Quantile(p, sorted), sk.Quantile(m, p)
				if exact == 0 {
					assert.Zero(t, got, "%s %v p%v", name, m, p)
					continue
				}
				rel := math.Abs(got-exact) / exact
				worst = max(worst, rel)
				assert.LessOrEqual(t, rel, SketchAccuracy*(1+1e-9), "%s %v p%v: exact %v sketch %v", name, m, p, exact, got)
			}
		}
		d, e := sk.Dist(LinearInterpolation), DistOf(sorted, LinearInterpolation)
		assert.Equal(t, e.N, d.N)
		assert.Equal(t, e.Max, d.Max, "the maximum is exact")
		assert.InEpsilon(t, e.Mean, d.Mean, 1e-9, "the mean is exact up to rounding")
		assert.InEpsilon(t, e.Std, d.Std, 1e-6)
		assert.Equal(t, SketchAccuracy, d.RelErr)
		assert.Zero(t, e.RelErr)
		assert.Less(t, len(sk.bins), 6000, "%s: buckets stay few", name)
		t.Logf("%s: worst relative error %.4f %% (bound %.1f %%), %d buckets", name, 100*worst, 100*SketchAccuracy, len(sk.bins))
	}
}

// Merging the sketches of two halves is the sketch of the whole: the same
// buckets, so the same percentiles; the moments agree up to rounding.
func TestSketchMergeIsTheWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	whole, a, b := newSketch(), newSketch(), newSketch()
	for i := range 50_000 {
		v := math.Exp(r.NormFloat64()*2 + 5)
		if i%1000 == 0 {
			v = math.Inf(1)
		}
		whole.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	require.NoError(t, a.Merge(b))
	for _, p := range []float64{0.1, 0.5, 0.9, 0.99, 0.999} {
		assert.Equal(t, whole.Quantile(LinearInterpolation, p), a.Quantile(LinearInterpolation, p), "p%v", p)
	}
	assert.Equal(t, whole.N(), a.N())
	assert.Equal(t, math.Inf(1), a.Dist(LinearInterpolation).Max)
	assert.Equal(t, math.Inf(1), a.Dist(LinearInterpolation).Mean, "as gonum's mean over a sample holding +Inf")
	assert.InEpsilon(t, whole.mean, a.mean, 1e-12)
	assert.InEpsilon(t, whole.m2, a.m2, 1e-9)

	other, err := NewSketch(0.01)
	require.NoError(t, err)
	assert.ErrorContains(t, a.Merge(other), "accuracy")
	_, err = NewSketch(0)
	assert.ErrorContains(t, err, "(0, 1)")
}
