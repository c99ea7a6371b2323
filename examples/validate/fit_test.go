package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// randomShapes draws n batches the way costmodel's fit tests do: up to 63
// decodes of up to 8,000 tokens of context and up to two chunks of up to
// 2,048 tokens on up to 4,096.
func randomShapes(n int) []costmodel.Batch {
	rng := rand.New(rand.NewPCG(1, 1))
	var out []costmodel.Batch
	for len(out) < n {
		var b costmodel.Batch
		for range rng.IntN(64) {
			b.Decode = append(b.Decode, rng.IntN(8000))
		}
		for range rng.IntN(3) {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(4096)})
		}
		if !b.Empty() {
			out = append(out, b)
		}
	}
	return out
}

// The experiment, with the profile model standing in for a GPU
// that measures whatever shape it is given: costmodel.Fit fitted on
// random shapes warns that they miss the shapes this replica visits, and
// fitted on shapes drawn from the visited ones (Shapes.Draw) it prices the
// replay within a few percent.
func TestFitOnTheShapesTheReplicaVisits(t *testing.T) {
	m, o, truth, price := shippedTruth(t)
	visited := &truth.visited
	// onVisited is the fitted model's error over the visited steps.
	onVisited := func(l costmodel.Linear) (mape float64) {
		for i := range visited.Len() {
			b := visited.Batch(i)
			want := float64(truth.model.StepTime(b))
			mape += math.Abs(float64(l.StepTime(b))-want) / want
		}
		return 100 * mape / float64(visited.Len())
	}
	meanE2E := func(model costmodel.Model) float64 { return replayE2E(t, m, o, model) }
	truthE2E := meanE2E(truth.model)
	fit := func(name string, f costmodel.Fit, samples []costmodel.Sample) (costmodel.FitResult, float64) {
		res, err := f.Run(samples)
		require.NoError(t, err)
		bias := 100 * (meanE2E(res.Linear)/truthE2E - 1)
		one := costmodel.Batch{Decode: []int{500}}
		t.Logf("%-34s visited-step MAPE %5.1f %%, batch-1 decode %5.2f ms (profile %5.2f), E2E %+5.1f %%, %d warnings",
			name, onVisited(res.Linear), ms(res.Linear.StepTime(one)), ms(truth.model.StepTime(one)), bias, len(res.Warnings))
		return res, bias
	}

	random := price(randomShapes(2000))
	abs, absBias := fit("2,000 random shapes, absolute", costmodel.Fit{Terms: costmodel.AllTerms, Visited: visited}, random)
	require.NotEmpty(t, abs.Warnings)
	assert.Contains(t, abs.Warnings[len(abs.Warnings)-1], "the samples do not cover the shapes it will price")
	assert.Less(t, abs.Coverage.Near, 0.5)
	rel, relBias := fit("2,000 random shapes, relative", costmodel.Fit{Terms: costmodel.AllTerms, Relative: true, Visited: visited}, random)
	assert.Less(t, math.Abs(relBias), math.Abs(absBias), "relative error keeps the small steps")
	assert.Greater(t, rel.Linear.PerStep, abs.Linear.PerStep)

	drawn := price(visited.Draw(rand.New(rand.NewPCG(2, 2)), 200))
	good, goodBias := fit("200 visited shapes, relative", costmodel.Fit{Terms: costmodel.AllTerms, Relative: true, Visited: visited}, drawn)
	assert.Empty(t, good.Warnings)
	assert.Less(t, onVisited(good.Linear), 5.0)
	assert.Less(t, math.Abs(goodBias), 3.0)
}

// Issue 36: Fit said that it may be wrong, not how wrong. Its error on
// the shapes the replay visits (FitResult.ErrorOn) and the band that
// error earns (analysis.FitBand), against the profile model standing in
// for the GPU:
//   - fitted on 200 shapes drawn from the visited ones, the estimate is
//     about ±10 % (each step's 95 % prediction interval of the misfit),
//     FitBand declares it, and the replay's mean E2E under the profile
//     lies within the band's E2E range (the fit's own is within 3 %);
//   - fitted on 2,000 random shapes, three in four visited steps lie
//     outside the samples (up to 128 decodes where they hold 63, and
//     contexts per decode the random shapes never pair with such
//     batches), and FitBand refuses. Rightly: the estimate of the six-term
//     fit happens to hold the profile's E2E, but the three-term fit, with
//     no decode-context term, prices the visited steps about 86 % too
//     slow (E2E about +138 %) where its samples say ±20 %: an error that
//     no estimate from samples that never vary it can see.
func TestFitErrorOnTheShapesTheReplicaVisits(t *testing.T) {
	m, o, truth, price := shippedTruth(t)
	visited := &truth.visited
	meanE2E := func(model costmodel.Model) float64 { return replayE2E(t, m, o, model) }
	truthE2E := meanE2E(truth.model)
	// bandE2E is the fitted model's mean E2E at both ends of ±scale,
	// relative to the profile's.
	bandE2E := func(l costmodel.Linear, scale float64) (lo, hi float64) {
		return meanE2E(costmodel.Scaled{Model: l, Factor: 1 - scale})/truthE2E - 1,
			meanE2E(costmodel.Scaled{Model: l, Factor: 1 + scale})/truthE2E - 1
	}
	fit := func(name string, f costmodel.Fit, samples []costmodel.Sample) (costmodel.FitResult, costmodel.FitError, float64) {
		f.Visited, f.Relative = visited, true
		res, err := f.Run(samples)
		require.NoError(t, err)
		e := res.ErrorOn(visited)
		lo, hi := bandE2E(res.Linear, e.Scale)
		bias := meanE2E(res.Linear)/truthE2E - 1
		t.Logf("%-28s E2E %+6.1f %%, error ±%.1f %% (%.1f %% of steps outside), E2E under the band [%+.1f, %+.1f] %%",
			name, 100*bias, 100*e.Scale, 100*e.Outside, 100*lo, 100*hi)
		contains := lo <= 0 && 0 <= hi
		assert.Equal(t, name != "2,000 random shapes, 3 terms", contains, "%s: the band's E2E range [%+.3f, %+.3f] and the profile's", name, lo, hi)
		return res, e, bias
	}

	drawn := price(visited.Draw(rand.New(rand.NewPCG(2, 2)), 200))
	_, good, bias := fit("200 visited shapes, 6 terms", costmodel.Fit{Terms: costmodel.AllTerms}, drawn)
	assert.Less(t, math.Abs(bias), 0.03)
	assert.InDelta(t, 0.10, good.Scale, 0.03)
	band, err := analysis.FitBand(good)
	require.NoError(t, err)
	assert.Equal(t, analysis.ModelError{Scale: good.Scale}, band)

	random := price(randomShapes(2000))
	for _, tc := range []struct {
		name  string
		terms costmodel.Terms
	}{{"2,000 random shapes, 6 terms", costmodel.AllTerms}, {"2,000 random shapes, 3 terms", costmodel.ThreeTerms}} {
		res, e, _ := fit(tc.name, costmodel.Fit{Terms: tc.terms}, random)
		require.NotEmpty(t, res.Warnings, "the coverage warning")
		assert.True(t, e.Extrapolates())
		assert.Greater(t, e.Outside, 0.7)
		_, err := analysis.FitBand(e)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "lie outside the fit's samples")
	}
}

// shippedTruth replays the shipped run; price times batches with its
// profile model, standing in for a GPU that measures any shape.
func shippedTruth(t *testing.T) (measured, options, *replayed, func([]costmodel.Batch) []costmodel.Sample) {
	t.Helper()
	m, err := readMeasured(shipped)
	require.NoError(t, err)
	o := options{kvBlocks: shippedKVBlocks, kvFrom: kvDeclared}
	truth, err := replay(o, m)
	require.NoError(t, err)
	price := func(bs []costmodel.Batch) []costmodel.Sample {
		out := make([]costmodel.Sample, len(bs))
		for i, b := range bs {
			out[i] = costmodel.Sample{Batch: b, Time: truth.model.StepTime(b)}
		}
		return out
	}
	return m, o, truth, price
}

// replayE2E is the shipped run's mean simulated E2E, every step priced by
// model.
func replayE2E(t *testing.T, m measured, o options, model costmodel.Model) float64 {
	t.Helper()
	r := &replayed{records: make([]sim.Record, len(m.requests))}
	tr, err := openTrace(m)
	require.NoError(t, err)
	defer tr.Close()
	_, err = sim.Run(config(o, m.meta.Engine, model), tr, sim.ObserverFunc(r.Observe))
	require.NoError(t, err)
	return compare(m.requests, r.records).e2e.simulated.mean
}
