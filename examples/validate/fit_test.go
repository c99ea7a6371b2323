package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
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
	m, err := readMeasured(shipped)
	require.NoError(t, err)
	o := options{kvBlocks: defaultKVBlocks, layers: llamaLayers}
	truth, err := replay(o, m)
	require.NoError(t, err)
	visited := &truth.visited
	price := func(bs []costmodel.Batch) []costmodel.Sample {
		out := make([]costmodel.Sample, len(bs))
		for i, b := range bs {
			out[i] = costmodel.Sample{Batch: b, Time: truth.model.StepTime(b)}
		}
		return out
	}
	// onVisited is the fitted model's error over the visited steps.
	onVisited := func(l costmodel.Linear) (mape float64) {
		for i := range visited.Len() {
			b := visited.Batch(i)
			want := float64(truth.model.StepTime(b))
			mape += math.Abs(float64(l.StepTime(b))-want) / want
		}
		return 100 * mape / float64(visited.Len())
	}
	meanE2E := func(model costmodel.Model) float64 {
		r := &replayed{records: make([]sim.Record, len(m.requests))}
		tr, err := openTrace(m)
		require.NoError(t, err)
		defer tr.Close()
		_, err = sim.Run(config(o, m.meta.Engine, model), tr, sim.ObserverFunc(r.Observe))
		require.NoError(t, err)
		return compare(m.requests, r.records).e2e.simulated.mean
	}
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
