package costmodel_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// TestDecodeSumHolds holds every model that says DecodeSum to it: a batch
// without drafts costs what the batch with as many decodes, their
// contexts' sum as the first and zeros after, costs (how the engine's
// decode cohort prices a step).
func TestDecodeSumHolds(t *testing.T) {
	table, err := costmodel.Table{Decode: []costmodel.TablePoint{{X: 1, Ms: 40}, {X: 32, Ms: 45}}, Prefill: []costmodel.TablePoint{{X: 0, Ms: 20}, {X: 1000, Ms: 55}}}.Build()
	require.NoError(t, err)
	atlas := costmodel.AtlasTP4()
	models := map[string]costmodel.Model{
		"Frozen":        costmodel.Frozen{},
		"Linear":        costmodel.Linear{PerStep: 40, PerSeq: 0.01, PerDecodeToken: 0.1, PerDecodeContext: 0.00005, PerPrefillToken: 0.035, PerPrefillAttention: 1e-7},
		"LinearTicked":  costmodel.Linear{PerStep: 4000, PerDecodeContext: 0.031, PerPrefillToken: 3.5, Unit: time.Microsecond, Tick: time.Microsecond},
		"Roofline":      costmodel.Roofline{Hardware: atlas.Hardware, Model: atlas.Model, StepOverhead: time.Millisecond, SeqOverhead: 10 * time.Microsecond},
		"AtlasRoofline": costmodel.AtlasRoofline(),
		"Table":         table,
		"ScaledLinear":  costmodel.Scaled{Model: costmodel.Linear{PerStep: 40, PerDecodeContext: 0.0001}, Factor: 1.1},
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for name, m := range models {
		ds, ok := m.(costmodel.DecodeSum)
		require.True(t, ok && ds.DecodeSum(), name)
		for range 2000 {
			var b costmodel.Batch
			sum := 0
			for range rng.IntN(300) {
				c := rng.IntN(40_000)
				b.Decode = append(b.Decode, c)
				sum += c
			}
			for range rng.IntN(3) {
				b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(8000)})
			}
			summed := b
			summed.Decode = make([]int, len(b.Decode))
			if len(summed.Decode) > 0 {
				summed.Decode[0] = sum
			}
			require.Equal(t, m.StepTime(b), m.StepTime(summed), "%s: %d decodes summing to %d, %d chunks", name, len(b.Decode), sum, len(b.Prefill))
		}
	}
	for name, m := range map[string]costmodel.Model{"Func": costmodel.Func(costmodel.Frozen{}.StepTime), "ScaledFunc": costmodel.Scaled{Model: costmodel.Func(costmodel.Frozen{}.StepTime), Factor: 1}} {
		ds, ok := m.(costmodel.DecodeSum)
		require.False(t, ok && ds.DecodeSum(), "%s says nothing of its contexts", name)
	}
}

// TestContextFreeHolds holds every model that says ContextFree to it: a
// batch without drafts costs what any batch with as many decodes, of any
// contexts, and the same prefill chunks costs (how the engine prices a run
// of decode steps by its first). Models that read the contexts do not say
// it.
func TestContextFreeHolds(t *testing.T) {
	table, err := costmodel.Table{Decode: []costmodel.TablePoint{{X: 1, Ms: 40}, {X: 32, Ms: 45}}, Prefill: []costmodel.TablePoint{{X: 0, Ms: 20}, {X: 1000, Ms: 55}}}.Build()
	require.NoError(t, err)
	models := map[string]costmodel.Model{
		"Frozen":       costmodel.Frozen{},
		"FrozenSet":    costmodel.Frozen{DecodeStep: 30 * time.Millisecond, PrefillBase: 5 * time.Millisecond, PrefillPerToken: time.Microsecond},
		"Table":        table,
		"ScaledFrozen": costmodel.Scaled{Factor: 1.3},
		"ScaledTable":  costmodel.Scaled{Model: table, Factor: 0.9},
	}
	pricesTwinsAlike(t, models, rand.New(rand.NewPCG(11, 12)), false, func(m costmodel.Model) bool {
		cf, ok := m.(costmodel.ContextFree)
		return ok && cf.ContextFree()
	})
	atlas := costmodel.AtlasTP4()
	for name, m := range map[string]costmodel.Model{
		"Linear":        costmodel.Linear{PerStep: 40, PerDecodeContext: 0.0001},
		"Roofline":      costmodel.AtlasRoofline(),
		"RooflineAtlas": costmodel.Roofline{Hardware: atlas.Hardware, Model: atlas.Model},
		"Func":          costmodel.Func(costmodel.Frozen{}.StepTime),
		"ScaledLinear":  costmodel.Scaled{Model: costmodel.Linear{PerStep: 40, PerDecodeContext: 0.0001}, Factor: 1.1},
		"ScaledFunc":    costmodel.Scaled{Model: costmodel.Func(costmodel.Frozen{}.StepTime), Factor: 1},
	} {
		cf, ok := m.(costmodel.ContextFree)
		require.False(t, ok && cf.ContextFree(), "%s says it reads no context", name)
	}
}

// A model that says it reads no prefill chunk's context
// (PrefillContextFree) prices two batches that differ only in their
// chunks' contexts alike; Frozen, set or scaled, says so, and models
// that read the KV a chunk attends to, or say nothing, do not.
func TestPrefillContextFreeHolds(t *testing.T) {
	models := map[string]costmodel.Model{
		"Frozen":       costmodel.Frozen{},
		"FrozenSet":    costmodel.Frozen{DecodeStep: 30 * time.Millisecond, PrefillBase: 5 * time.Millisecond, PrefillPerToken: time.Microsecond},
		"ScaledFrozen": costmodel.Scaled{Factor: 1.3},
	}
	pricesTwinsAlike(t, models, rand.New(rand.NewPCG(13, 14)), true, func(m costmodel.Model) bool {
		pf, ok := m.(costmodel.PrefillContextFree)
		return ok && pf.PrefillContextFree()
	})
	table, err := costmodel.Table{Decode: []costmodel.TablePoint{{X: 1, Ms: 40}, {X: 32, Ms: 45}}, Prefill: []costmodel.TablePoint{{X: 0, Ms: 20}, {X: 1000, Ms: 55}}}.Build()
	require.NoError(t, err)
	for name, m := range map[string]costmodel.Model{
		"Linear":      costmodel.Linear{PerStep: 40, PerDecodeContext: 0.0001},
		"Roofline":    costmodel.AtlasRoofline(),
		"Func":        costmodel.Func(costmodel.Frozen{}.StepTime),
		"Table":       table,
		"ScaledTable": costmodel.Scaled{Model: table, Factor: 0.9},
	} {
		pf, ok := m.(costmodel.PrefillContextFree)
		require.False(t, ok && pf.PrefillContextFree(), "%s says it reads no chunk context", name)
	}
}

// pricesTwinsAlike holds each model, which must say so (says), to
// pricing 2,000 pairs of twinBatches alike.
func pricesTwinsAlike(t *testing.T, models map[string]costmodel.Model, rng *rand.Rand, chunk bool, says func(costmodel.Model) bool) {
	t.Helper()
	for name, m := range models {
		require.True(t, says(m), name)
		for range 2000 {
			b, other := twinBatches(rng, chunk)
			require.Equal(t, m.StepTime(b), m.StepTime(other), "%s: %d decodes, %d chunks", name, len(b.Decode), len(b.Prefill))
		}
	}
}

// twinBatches draws a batch, and another that differs from it only in
// its decodes' contexts, or with chunk set only in its chunks' (of which
// it then draws at least one).
func twinBatches(rng *rand.Rand, chunk bool) (b, other costmodel.Batch) {
	for range rng.IntN(300) {
		c := rng.IntN(40_000)
		b.Decode = append(b.Decode, c)
		if !chunk {
			c = rng.IntN(40_000)
		}
		other.Decode = append(other.Decode, c)
	}
	n := rng.IntN(3)
	if chunk {
		n++
	}
	for range n {
		ch := costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(8000)}
		b.Prefill = append(b.Prefill, ch)
		if chunk {
			ch.Context = rng.IntN(8000)
		}
		other.Prefill = append(other.Prefill, ch)
	}
	return b, other
}
