package costmodel_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// shapesOf records each sample's batch as one visited step.
func shapesOf(samples []costmodel.Sample) *costmodel.Shapes {
	var s costmodel.Shapes
	for _, x := range samples {
		s.Add(x.Batch, 1)
	}
	return &s
}

// On samples of the linear form with multiplicative noise of relative
// standard deviation 2 %, a relative fit's error on the sample shapes is
// the 95 % prediction interval of that noise: t·σ·√(1 + h) with t =
// 1.96 (1,994 degrees of freedom), σ estimated within a few percent of
// 0.02 (its standard error is σ/√(2·df), 1.6 % of it) and h about p/n
// = 0.3 %: 3.92 %, between 3.7 and 4.1 %.
func TestFitErrorIsTheNoiseLevel(t *testing.T) {
	truth := costmodel.Linear{PerStep: 8, PerDecodeToken: 0.3, PerDecodeContext: 2e-4, PerPrefillToken: 0.03, PerPrefillAttention: 4e-6, PerSeq: 0.5}
	samples := synthetic(truth, 2000, 0.02)
	res, err := costmodel.Fit{Terms: costmodel.AllTerms, Relative: true}.Run(samples)
	require.NoError(t, err)
	e := res.ErrorOn(shapesOf(samples))
	between(t, "Scale", e.Scale, 0.037, 0.041)
	assert.Equal(t, 0.95, e.Confidence)
	assert.Equal(t, 2000, e.Steps)
	assert.Zero(t, e.Outside, "every sample lies in its own hull")
	assert.False(t, e.Extrapolates())
	assert.Empty(t, e.Extrapolations)
	assert.Empty(t, e.Unmeasured)
	// The relative interval is the same at every shape, up to its leverage.
	between(t, "Widest", e.Widest, e.Scale, 1.05*e.Scale)
}

// Additive noise of 1 ms under an absolute fit: every step's interval is
// about ±1.96 ms, so the time-weighted relative error is 1.96 ms over the
// mean predicted step (Σ nᵢtᵢ·(1.96/tᵢ) / Σ nᵢtᵢ).
func TestFitErrorOfAnAbsoluteFitIsItsIntervalOverTheMeanStep(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	ms := func(b costmodel.Batch) float64 { return float64(truth.StepTime(b)) / 1e6 }
	samples := noisy(7, 2000, 0, 1, ms)
	res, err := costmodel.Fit{}.Run(samples)
	require.NoError(t, err)
	visited := shapesOf(samples)
	mean := 0.0
	for i := range visited.Len() {
		mean += float64(res.Linear.StepTime(visited.Batch(i))) / 1e6
	}
	mean /= float64(visited.Len())
	e := res.ErrorOn(visited)
	between(t, "Scale × mean step (ms)", e.Scale*mean, 1.85, 2.07)
	assert.Zero(t, e.Outside)
}

// A decode step that bends upwards with the batch, 10 + 0.3·d + 0.004·d²
// ms, fitted by a straight line (relative error) on batches of 1 to 64
// decodes: on those batches the prediction interval of the misfit is
// ±11 %; at 127 decodes, one sampled span beyond, the line is 35 % short.
// The held-out extrapolation refits batches 1 to 32 and takes the 95 %
// quantile of its errors on 33 to 64, one of its spans beyond: by the
// rule that is the error at 127, ±20 %, wider than inside and within a
// factor of 2 of the truth (a quadratic's error grows with the square of
// the distance, so half the range beyond half the range shows less of
// it).
func TestFitErrorWidensBeyondTheSamples(t *testing.T) {
	ms := func(d int) float64 { return 10 + 0.3*float64(d) + 0.004*float64(d*d) }
	price := func(d int) costmodel.Sample {
		return costmodel.Sample{Batch: decodes(d, 0), Time: time.Duration(ms(d) * 1e6)}
	}
	var samples []costmodel.Sample
	for d := 1; d <= 64; d++ {
		samples = append(samples, price(d))
	}
	fit := costmodel.Fit{Terms: costmodel.TermStep | costmodel.TermDecodeToken, Relative: true}
	res, err := fit.Run(samples)
	require.NoError(t, err)

	inside := res.ErrorOn(shapesOf(samples))
	assert.False(t, inside.Extrapolates())

	var far costmodel.Shapes
	far.Add(decodes(127, 0), 1)
	out := res.ErrorOn(&far)
	assert.True(t, out.Extrapolates())
	assert.Equal(t, 1.0, out.Outside)
	require.Len(t, out.Extrapolations, 2, "sequences and decodes")
	x := out.Extrapolations[1]
	assert.Equal(t, "decodes", x.Feature)
	assert.Equal(t, 127.0, x.Farthest)
	assert.InDelta(t, 1, x.Spans, 1e-12)
	assert.Equal(t, 1, x.Steps)
	assert.Contains(t, out.String(), "fit error on 1 visited steps: ±20.1 % at 95 % (widest step ±20.1 %), 100.0 % of steps outside the samples' hull")
	assert.Contains(t, out.String(), "\n  decodes          sampled 1–64, 1 steps above, up to 127 (1 spans): held-out error ±20.1 %")

	half, err := fit.Run(samples[:32])
	require.NoError(t, err)
	var errs []float64
	for _, s := range samples[32:] {
		errs = append(errs, math.Abs(float64(half.Linear.StepTime(s.Batch)-s.Time))/float64(s.Time))
	}
	slices.Sort(errs)
	assert.InEpsilon(t, errs[30], out.Scale, 1e-6, "the 31st of 32 errors is the 95 % quantile")
	assert.InEpsilon(t, errs[30], x.Error, 1e-6)

	want := math.Abs(float64(res.Linear.StepTime(decodes(127, 0))-price(127).Time)) / float64(price(127).Time)
	between(t, "true error / estimate", want/out.Scale, 1, 2)
	assert.Greater(t, out.Scale, 1.5*inside.Scale)
	t.Logf("inside ±%.2f %%, at 127 decodes ±%.2f %% (true %.2f %%)", 100*inside.Scale, 100*out.Scale, 100*want)
}

// Samples that never vary a feature the run visits cannot measure an
// extrapolation along it: the error is +Inf and says why.
func TestFitErrorUnmeasuredBeyondAFeatureNeverVaried(t *testing.T) {
	var samples []costmodel.Sample
	for d := 1; d <= 16; d++ {
		samples = append(samples, costmodel.Sample{Batch: decodes(d, 0), Time: time.Duration(10e6 + d*300e3)})
	}
	res, err := costmodel.Fit{Terms: costmodel.TermStep | costmodel.TermDecodeToken}.Run(samples)
	require.NoError(t, err)
	var visited costmodel.Shapes
	visited.Add(decodes(8, 2000), 1)
	e := res.ErrorOn(&visited)
	assert.True(t, math.IsInf(e.Scale, 1))
	assert.Contains(t, e.Unmeasured, "decode context 1.6e+04")
	assert.Contains(t, e.String(), "unmeasured:")
}

// A fit that prices a visited step at nothing (no term of it is free)
// has no relative error there: that step is outside and unmeasured.
func TestFitErrorOfAStepPricedAtNothing(t *testing.T) {
	var samples []costmodel.Sample
	for d := 1; d <= 16; d++ {
		b := decodes(d, 1000)
		samples = append(samples, costmodel.Sample{Batch: b, Time: time.Duration(1000 * d * 2e3)})
	}
	res, err := costmodel.Fit{Terms: costmodel.TermDecodeContext}.Run(samples)
	require.NoError(t, err)
	var visited costmodel.Shapes
	visited.Add(decodes(4, 1000), 3)
	visited.Add(decodes(1, 0), 1)
	e := res.ErrorOn(&visited)
	assert.Equal(t, 0.25, e.Outside)
	assert.True(t, math.IsInf(e.Widest, 1))
	assert.False(t, math.IsInf(e.Scale, 0), "the steps priced above 0 keep their error")
	assert.Contains(t, e.Unmeasured, "prices a visited step (1 decodes, 0 prefill chunks) at 0 ms")
}

// The zero FitError estimates nothing; so does a FitResult not made by
// Fit.Run, or no visited shapes.
func TestFitErrorZero(t *testing.T) {
	assert.Equal(t, costmodel.FitError{}, costmodel.FitResult{}.ErrorOn(&costmodel.Shapes{}))
	res, err := costmodel.Fit{}.Run(synthetic(costmodel.NewLinear3(10, 0.035, 0.5), 100, 0.01))
	require.NoError(t, err)
	assert.Equal(t, costmodel.FitError{}, res.ErrorOn(nil))
	assert.Equal(t, "fit error: no visited steps", costmodel.FitError{}.String())
}
