package costmodel_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// synthetic draws n steps of random shape priced by truth, with seeded
// multiplicative noise of the given relative standard deviation.
func synthetic(truth costmodel.Linear, n int, noise float64) []costmodel.Sample {
	rng := rand.New(rand.NewPCG(1, 1))
	samples := make([]costmodel.Sample, 0, n)
	for len(samples) < n {
		var b costmodel.Batch
		for range rng.IntN(64) {
			b.Decode = append(b.Decode, rng.IntN(8000))
		}
		for range rng.IntN(3) {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(4096)})
		}
		if b.Empty() {
			continue
		}
		d := float64(truth.StepTime(b)) * (1 + noise*rng.NormFloat64())
		samples = append(samples, costmodel.Sample{Batch: b, Time: time.Duration(d)})
	}
	return samples
}

// coefficientsWithin fails t unless every coefficient of got is within rel
// of want's.
func coefficientsWithin(t *testing.T, got, want costmodel.Linear, rel float64) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"PerStep", got.PerStep, want.PerStep},
		{"PerSeq", got.PerSeq, want.PerSeq},
		{"PerDecodeToken", got.PerDecodeToken, want.PerDecodeToken},
		{"PerDecodeContext", got.PerDecodeContext, want.PerDecodeContext},
		{"PerPrefillToken", got.PerPrefillToken, want.PerPrefillToken},
		{"PerPrefillAttention", got.PerPrefillAttention, want.PerPrefillAttention},
	} {
		assert.InDelta(t, c.want, c.got, rel*c.want, c.name)
	}
}

func TestFitRecoversTheThreeCoefficientsWithin1Percent(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	res, err := costmodel.Fit{}.Run(synthetic(truth, 2000, 0.01))
	require.NoError(t, err)
	coefficientsWithin(t, res.Linear, truth, 0.01)
	between(t, "MAPE %", res.MAPE, 0.5, 1.5) // the 1 % noise, no more
	between(t, "R²", res.R2, 0.99, 1)
	assert.Equal(t, 2000, res.N)
	assert.Zero(t, res.Dropped)
}

func TestFitRecoversAllSixCoefficientsWithin1Percent(t *testing.T) {
	truth := costmodel.Linear{
		PerStep: 8, PerSeq: 0.5, PerDecodeToken: 0.3, PerDecodeContext: 2e-4,
		PerPrefillToken: 0.03, PerPrefillAttention: 4e-6,
	}
	res, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(truth, 5000, 0.002))
	require.NoError(t, err)
	coefficientsWithin(t, res.Linear, truth, 0.01)
}

// A term whose true coefficient is 0 may fit slightly negative by least
// squares; the non-negative fit holds it at 0, so the fitted model stays
// valid and monotone.
func TestFitDropsNegativeTerms(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	res, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(truth, 500, 0.05))
	require.NoError(t, err)
	assert.NoError(t, res.Linear.Validate(), "dropped %b", res.Dropped)
}

func TestFitRefusesWhatItCannotFit(t *testing.T) {
	onlyDecodes := []costmodel.Sample{
		{Batch: decodes(1, 0), Time: 30 * time.Millisecond},
		{Batch: decodes(2, 0), Time: 31 * time.Millisecond},
		{Batch: decodes(4, 0), Time: 33 * time.Millisecond},
	}
	for _, tc := range []struct {
		name    string
		fit     costmodel.Fit
		samples []costmodel.Sample
		want    string
	}{
		{"no samples", costmodel.Fit{}, nil, "at least 3 samples"},
		{"term never seen", costmodel.Fit{}, onlyDecodes, "PerPrefillToken is zero in every sample"},
		{"terms inseparable", costmodel.Fit{Terms: costmodel.TermStep | costmodel.TermSeq | costmodel.TermDecodeToken}, onlyDecodes, "cannot tell the terms apart"},
		{"unknown terms", costmodel.Fit{Terms: 1 << 7}, onlyDecodes, "Fit.Terms"},
		{"confidence", costmodel.Fit{Confidence: 1}, onlyDecodes, "Fit.Confidence must be in (0, 1)"},
		{"bad sample", costmodel.Fit{}, []costmodel.Sample{{Batch: decodes(1, -1), Time: -1}, {}}, "samples[0].Time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.fit.Run(tc.samples)
			errorMentions(t, err, tc.want)
		})
	}
}

// noisy draws n steps of random shape priced by truth (ms) with seeded
// noise: multiplicative of relative standard deviation rel, plus additive
// of standard deviation abs ms.
func noisy(seed uint64, n int, rel, abs float64, truth func(costmodel.Batch) float64) []costmodel.Sample {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]costmodel.Sample, 0, n)
	for len(out) < n {
		var b costmodel.Batch
		for range rng.IntN(64) {
			b.Decode = append(b.Decode, rng.IntN(8000))
		}
		if rng.IntN(2) == 0 {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048)})
		}
		if b.Empty() {
			continue
		}
		ms := truth(b)*(1+rel*rng.NormFloat64()) + abs*rng.NormFloat64()
		out = append(out, costmodel.Sample{Batch: b, Time: time.Duration(ms * 1e6)})
	}
	return out
}

// A step whose prefill cost grows faster than linearly: a straight line
// fitted by absolute error bends to the large prefill steps and misprices
// the small ones; fitted by relative error it keeps the per-step cost the
// small steps need.
func TestFitRelativeKeepsTheSmallSteps(t *testing.T) {
	truth := func(b costmodel.Batch) float64 {
		p := float64(b.PrefillTokens())
		return 10 + 0.2*float64(len(b.Decode)) + 0.03*p + 1e-5*p*p
	}
	samples := noisy(1, 1000, 0, 0, truth)
	abs, err := costmodel.Fit{}.Run(samples)
	require.NoError(t, err)
	rel, err := costmodel.Fit{Relative: true}.Run(samples)
	require.NoError(t, err)
	assert.Less(t, rel.MAPE, abs.MAPE)
	assert.Less(t, math.Abs(rel.Linear.PerStep-10), math.Abs(abs.Linear.PerStep-10))
	one := decodes(1, 0)
	assert.InDelta(t, 10.2, float64(rel.Linear.StepTime(one))/1e6, 0.5, "a batch-1 decode, relative")
}

// The 95 % intervals cover each true coefficient in about 95 % of seeded
// repetitions (Student t over the free terms) when the fit's error
// matches the noise: absolute for additive noise, relative for
// multiplicative noise, whose absolute size grows with the step.
func TestFitIntervalsCoverTheTruth(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	ms := func(b costmodel.Batch) float64 { return float64(truth.StepTime(b)) / 1e6 }
	for _, tc := range []struct {
		name     string
		fit      costmodel.Fit
		rel, abs float64
	}{
		{"additive noise, absolute fit", costmodel.Fit{}, 0, 1},
		{"multiplicative noise, relative fit", costmodel.Fit{Relative: true}, 0.02, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const reps = 200
			covered := [3]int{}
			for seed := range uint64(reps) {
				res, err := tc.fit.Run(noisy(seed, 100, tc.rel, tc.abs, ms))
				require.NoError(t, err)
				require.Len(t, res.Coefficients, 3)
				for k, want := range []float64{truth.PerStep, truth.PerDecodeToken, truth.PerPrefillToken} {
					if c := res.Coefficients[k]; c.Lo <= want && want <= c.Hi {
						covered[k]++
					}
				}
			}
			for k, name := range []string{"PerStep", "PerDecodeToken", "PerPrefillToken"} {
				between(t, name+" coverage", float64(covered[k])/reps, 0.91, 0.99)
			}
		})
	}
}

func TestFitResultNamesEachCoefficient(t *testing.T) {
	res, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(costmodel.NewLinear3(10, 0.035, 0.5), 500, 0.05))
	require.NoError(t, err)
	var names []string
	for _, c := range res.Coefficients {
		names = append(names, c.Name)
		if c.AtBound {
			assert.Zero(t, c.Value)
			assert.NotZero(t, res.Dropped)
			continue
		}
		assert.LessOrEqual(t, c.Lo, c.Value)
		assert.GreaterOrEqual(t, c.Hi, c.Value)
		assert.GreaterOrEqual(t, c.Lo, 0.0, "an interval stops at the bound")
	}
	assert.Equal(t, []string{"PerStep", "PerSeq", "PerDecodeToken", "PerDecodeContext", "PerPrefillToken", "PerPrefillAttention"}, names)
	assert.Contains(t, res.String(), "fit of 500 samples: MAPE ")
	assert.Contains(t, res.String(), "  PerSeq = 0 (held at the bound)\n")
}

// Samples of small batches say nothing of the 128-decode steps a busy
// replica runs: the fit says so, and samples drawn from the visited
// shapes cover them.
func TestFitWarnsWhenTheSamplesMissTheVisitedShapes(t *testing.T) {
	var visited costmodel.Shapes
	for n := 96; n <= 128; n++ {
		visited.Add(decodes(n, 1000), 10)
		visited.Add(mixed(n-1, 1000, 512), 1)
	}
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	price := func(bs []costmodel.Batch) []costmodel.Sample {
		out := make([]costmodel.Sample, len(bs))
		for i, b := range bs {
			out[i] = costmodel.Sample{Batch: b, Time: truth.StepTime(b)}
		}
		return out
	}
	small := price([]costmodel.Batch{decodes(1, 100), decodes(4, 100), decodes(8, 100), prefill(256), mixed(2, 100, 128)})
	res, err := costmodel.Fit{Visited: &visited}.Run(small)
	require.NoError(t, err)
	require.NotNil(t, res.Coverage)
	assert.Zero(t, res.Coverage.Near)
	assert.Equal(t, 33*11, res.Coverage.Steps)
	require.Len(t, res.Warnings, 1)
	errorMentions(t, errors.New(res.Warnings[0]), "do not cover", "decodes visited 95–128, sampled 0–8", "Shapes.Draw")

	drawn := price(visited.Draw(rand.New(rand.NewPCG(1, 1)), 20))
	res, err = costmodel.Fit{Visited: &visited}.Run(drawn)
	require.NoError(t, err)
	assert.Empty(t, res.Warnings)
	assert.GreaterOrEqual(t, res.Coverage.Near, 0.9)
	assert.Contains(t, res.Coverage.String(), "decodes          visited 95 / 112 / 128")
}

// Draw is repeatable, weights shapes by their steps, returns copies in
// the order they were added, and everything when asked for as many.
func TestShapesDraw(t *testing.T) {
	var s costmodel.Shapes
	s.Add(decodes(1, 0), 1)
	s.Add(decodes(2, 0), 1000)
	s.Add(costmodel.Batch{}, 5) // empty: not a step
	s.Add(decodes(3, 0), 1)
	assert.Equal(t, 3, s.Len())
	assert.Equal(t, 1002, s.Steps())

	heavy := 0
	for seed := range uint64(100) {
		got := s.Draw(rand.New(rand.NewPCG(seed, 1)), 1)
		require.Len(t, got, 1)
		if len(got[0].Decode) == 2 {
			heavy++
		}
	}
	assert.Greater(t, heavy, 95, "the shape standing for 1000 steps is drawn almost always")
	a, b := s.Draw(rand.New(rand.NewPCG(9, 9)), 2), s.Draw(rand.New(rand.NewPCG(9, 9)), 2)
	assert.Equal(t, a, b)
	all := s.Draw(rand.New(rand.NewPCG(1, 1)), 10)
	require.Len(t, all, 3)
	all[0].Decode[0] = 99
	assert.Equal(t, 0, s.Batch(0).Decode[0], "Draw returns copies")
	assert.Equal(t, []int{1, 2, 3}, []int{len(all[0].Decode), len(all[1].Decode), len(all[2].Decode)})
}
