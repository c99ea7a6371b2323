package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/servesim/servesim/workload"
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
		for _, m := range []Method{Linear, Empirical} {
			for _, p := range ps {
				exact, got := m.quantile(p, sorted), sk.Quantile(m, p)
				if exact == 0 {
					assert.Zero(t, got, "%s %v p%v", name, m, p)
					continue
				}
				rel := math.Abs(got-exact) / exact
				worst = max(worst, rel)
				assert.LessOrEqual(t, rel, SketchAccuracy*(1+1e-9), "%s %v p%v: exact %v sketch %v", name, m, p, exact, got)
			}
		}
		d, e := sk.Dist(Linear), dist(sorted, Linear)
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
		assert.Equal(t, whole.Quantile(Linear, p), a.Quantile(Linear, p), "p%v", p)
	}
	assert.Equal(t, whole.N(), a.N())
	assert.Equal(t, math.Inf(1), a.Dist(Linear).Max)
	assert.Equal(t, math.Inf(1), a.Dist(Linear).Mean, "as gonum's mean over a sample holding +Inf")
	assert.InEpsilon(t, whole.mean, a.mean, 1e-12)
	assert.InEpsilon(t, whole.m2, a.m2, 1e-9)

	other, err := NewSketch(0.01)
	require.NoError(t, err)
	assert.ErrorContains(t, a.Merge(other), "accuracy")
	_, err = NewSketch(0)
	assert.ErrorContains(t, err, "(0, 1)")
}

// A run that measures more requests than Config.ExactSamples reports the
// same counts, goodput and attainment as an exact run (the sketch touches
// only the latency distributions), each distribution's N, mean and max
// exactly, its percentiles within SketchAccuracy, says so (RelErr) and
// keeps no samples; and it is deterministic.
func TestRunPastExactSamplesSketches(t *testing.T) {
	run := func(exact int) Summary {
		cfg := Config{Window: Window{Warmup: 30 * time.Second}, ExactSamples: exact, Timeout: 20 * time.Second}
		s, err := Run(cfg, poisson(t, 5, 2.4, 3000, workload.Fixed(2000, 200)), nil)
		require.NoError(t, err)
		return s
	}
	exact, sk := run(0), run(500)
	assert.Equal(t, exact.Offered, sk.Offered)
	assert.Equal(t, exact.Good, sk.Good)
	assert.Equal(t, exact.Status, sk.Status)
	assert.Equal(t, exact.Goodput, sk.Goodput)
	assert.False(t, exact.Sketched())
	assert.True(t, sk.Sketched())
	assert.Greater(t, exact.TTFT.N, 500)
	for name, pair := range map[string][2]Dist{"TTFT": {exact.TTFT, sk.TTFT}, "TPOT": {exact.TPOT, sk.TPOT}, "E2E": {exact.E2E, sk.E2E},
		"Queue": {exact.QueueDelay, sk.QueueDelay}, "TTFTOffered": {exact.TTFTOffered, sk.TTFTOffered}} {
		e, s := pair[0], pair[1]
		assert.Equal(t, e.N, s.N, name)
		assert.Equal(t, e.Max, s.Max, name)
		assert.InEpsilon(t, e.Mean, s.Mean, 1e-9, name)
		assert.Equal(t, SketchAccuracy, s.RelErr, name)
		for _, q := range [][2]float64{{e.Median, s.Median}, {e.P90, s.P90}, {e.P99, s.P99}} {
			if q[0] == 0 {
				assert.Zero(t, q[1], name)
				continue
			}
			assert.InEpsilon(t, q[0], q[1], SketchAccuracy*(1+1e-9), name)
		}
	}
	assert.Nil(t, sk.Samples.TTFT)
	assert.NotNil(t, exact.Samples.TTFT)
	// The ITL's distinct values stay exact (a few dozen step durations).
	assert.Equal(t, exact.ITL, sk.ITL)
	assert.Equal(t, fmt.Sprintf("%+v", sk), fmt.Sprintf("%+v", run(500)), "same seed, same bytes")

	// Distinct inter-token gaps past the limit sketch too, in an order
	// that does not depend on map iteration.
	tiny := run(3)
	assert.Equal(t, SketchAccuracy, tiny.ITL.RelErr)
	assert.Nil(t, tiny.Samples.ITL)
	assert.Equal(t, exact.ITL.N, tiny.ITL.N)
	assert.InEpsilon(t, exact.ITL.P99, tiny.ITL.P99, SketchAccuracy*(1+1e-9))
	assert.Equal(t, fmt.Sprintf("%+v", tiny), fmt.Sprintf("%+v", run(3)))
}

// A curve whose replications sketched falls back to intervals across the
// replications' own percentiles, and says so.
func TestSweepPastExactSamplesSaysSo(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1.5}}
	s.Reps = 3
	exact, err := s.Run()
	require.NoError(t, err)
	s.Config.ExactSamples = 100
	sk, err := s.Run()
	require.NoError(t, err)
	e, p := exact.Points[0], sk.Points[0]
	assert.Equal(t, e.Goodput, p.Goodput)
	assert.Equal(t, e.Attainment, p.Attainment)
	assert.InEpsilon(t, e.TTFT.P99.Center, p.TTFT.P99.Center, 0.1, "pooled against mean of replications")
	assert.Equal(t, 3, p.TTFT.P99.N, "an interval across the three replications")
	assert.False(t, math.IsNaN(p.TTFT.P99.Lo))
	joined := fmt.Sprint(p.Warnings)
	assert.Contains(t, joined, "from a sketch")
	assert.Contains(t, joined, "0.5 %")
	assert.NotContains(t, fmt.Sprint(e.Warnings), "sketch")
}

func TestExactSamplesValidates(t *testing.T) {
	assert.ErrorContains(t, Config{ExactSamples: -1}.Validate(), "ExactSamples")
}

// A sketched ITL sample comes out the same to the bit however its gaps
// were grouped (a fast-forwarded run adds a gap once for many tokens, a
// stepwise one once a step), with the exact mean and deviation.
func TestSketchedGapsAreGroupingFree(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var gaps []time.Duration
	for range 3000 {
		gaps = append(gaps, time.Duration(r.IntN(200_000_000))+time.Duration(r.IntN(3))*time.Hour)
	}
	one, many := weighted{limit: 10}, weighted{limit: 10}
	exact := weighted{}
	for i, d := range gaps {
		k := 1 + i%7
		many.add(d, k)
		exact.add(d, k)
		for range k {
			one.add(d, 1)
		}
	}
	a, b, e := weightedDist(&one, Linear), weightedDist(&many, Linear), weightedDist(&exact, Linear)
	assert.Equal(t, fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b))
	assert.Equal(t, SketchAccuracy, a.RelErr)
	assert.Equal(t, e.N, a.N)
	assert.Equal(t, e.Max, a.Max)
	assert.InEpsilon(t, e.Mean, a.Mean, 1e-12)
	assert.InEpsilon(t, e.Std, a.Std, 1e-9)
	assert.InEpsilon(t, e.P99, a.P99, SketchAccuracy*(1+1e-9))
}

// A weighted sample's counts are those of a plain map of value → count,
// whatever runs and alternations its gaps come in (it holds the last two
// values back from the map), and a sketched one is the sketch of every
// gap counted one by one.
func TestWeightedCountsAreTheMap(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := range 200 {
		values := 1 + r.IntN(5)
		limit := 0
		if trial%3 == 0 {
			limit = 1 + r.IntN(4) // sketched when more values than that come
		}
		w, one := weighted{limit: limit}, weighted{limit: limit}
		want := map[time.Duration]int{}
		for range r.IntN(300) {
			d := time.Duration(1+r.IntN(values)) * time.Millisecond
			n := r.IntN(4) // 0 too: a move of no measured member
			w.add(d, n)
			one.count(d, n)
			want[d] += n
		}
		got := map[time.Duration]int{}
		for _, vc := range valueCounts(&w) {
			got[time.Duration(vc.Value*1e6)] = vc.Count
		}
		if one.sk != nil {
			require.NotNil(t, w.sk, "trial %d", trial)
			assert.Equal(t, fmt.Sprintf("%#v", weightedDist(&one, Linear)), fmt.Sprintf("%#v", weightedDist(&w, Linear)), "trial %d", trial)
			continue
		}
		assert.Equal(t, want, got, "trial %d", trial)
	}
}
