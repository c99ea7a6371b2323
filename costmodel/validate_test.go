package costmodel_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// validator is anything with a Validate method.
type validator interface{ Validate() error }

// Nonsense figures are refused with an error that names the field.
func TestValidateNamesTheField(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	atlas := costmodel.AtlasTP4()
	zeroBandwidth := atlas
	zeroBandwidth.Hardware.MemBandwidth = 0
	badPoint := atlas
	badPoint.Point.Batch, badPoint.Point.SLO.ITL = -3, 0
	hugeBatch := atlas
	hugeBatch.Point.Batch = 1 << 40
	badCost := atlas
	badCost.Cost = costmodel.Linear{PerStep: nan}
	schedule := atlas
	schedule.Point.Budget, schedule.Point.ChunkCap, schedule.Point.Target, schedule.Point.Offered = 16, 64, 1, -1
	negativeCap := atlas
	negativeCap.Point.ChunkCap = -1
	manyChunks := atlas
	manyChunks.Point.ChunkCap, manyChunks.Point.PromptTokens = 1, 100000
	for _, tc := range []struct {
		name string
		v    validator
		want []string
	}{
		{"Linear NaN", costmodel.Linear{PerStep: 1, PerPrefillToken: nan},
			[]string{"costmodel: Linear.PerPrefillToken must be finite, got NaN"}},
		{"Linear negative and Inf", costmodel.Linear{PerStep: -1, PerSeq: inf},
			[]string{"Linear.PerStep must be >= 0, got -1", "Linear.PerSeq must be finite, got +Inf"}},
		{"Linear all zero", costmodel.Linear{}, []string{"at least one coefficient > 0"}},
		{"Frozen negative", costmodel.Frozen{DecodeStep: -time.Millisecond}, []string{"Frozen.DecodeStep"}},
		{"Hardware zero", costmodel.Hardware{}, []string{
			"Hardware.Accelerators must be >= 1, got 0", "Hardware.MemBandwidth must be > 0, got 0",
			"Hardware.PeakFLOPS", "Hardware.KVCapacity"}},
		{"ModelSpec NaN", costmodel.ModelSpec{WeightBytes: nan, KVBytesPerToken: -1, FLOPsPerToken: inf},
			[]string{"ModelSpec.WeightBytes must be finite", "ModelSpec.KVBytesPerToken must be > 0", "ModelSpec.FLOPsPerToken must be finite"}},
		{"Roofline efficiency", costmodel.Roofline{Hardware: atlas.Hardware, Model: atlas.Model, MemEfficiency: 1.5, ComputeEfficiency: -0.1, StepOverhead: -1},
			[]string{"Roofline.MemEfficiency must be in (0, 1]", "Roofline.ComputeEfficiency must be >= 0", "Roofline.StepOverhead"}},
		{"Roofline zero bandwidth", costmodel.Roofline{Hardware: zeroBandwidth.Hardware, Model: atlas.Model},
			[]string{"Roofline.Hardware.MemBandwidth must be > 0, got 0"}},
		{"Table empty", costmodel.Table{}, []string{"Table.Decode needs at least one sample", "Table.Prefill needs"}},
		{"Table out of order", costmodel.Table{
			Decode:  []costmodel.TablePoint{{X: 1, Ms: 30}, {X: 1, Ms: 31}, {X: -2, Ms: nan}},
			Prefill: []costmodel.TablePoint{{X: 10, Ms: 30}, {X: 20, Ms: 20}},
		}, []string{"Table.Decode[1].X must be > Table.Decode[0].X", "Table.Decode[2].X must be >= 0", "Table.Decode[2].Ms must be finite", "Table.Prefill[1].Ms must be >= Table.Prefill[0].Ms"}},
		{"Replica zero bandwidth", zeroBandwidth, []string{"Replica.Hardware.MemBandwidth must be > 0, got 0"}},
		{"Replica bad point", badPoint, []string{"Replica.Point.Batch must be >= 1, got -3", "Replica.Point.SLO.ITL must be > 0"}},
		{"Replica huge batch", hugeBatch, []string{"Replica.Point.Batch must be <= 16384"}},
		{"Replica scheduler limits", schedule, []string{
			"Replica.Point.Budget (16) must be >= Batch (32): a step could not decode every running sequence",
			"Replica.Point.ChunkCap (64) must not exceed Budget (16)",
			"Replica.Point.Target must be in (0, 1)",
			"Replica.Point.Offered must be >= 0, got -1"}},
		{"Replica chunk cap negative", negativeCap, []string{"Replica.Point.ChunkCap must be >= 0, got -1"}},
		{"Replica prompt of too many chunks", manyChunks, []string{"Replica.Point.PromptTokens (100000) takes 100000 chunks of 1 tokens, more than the 65536 the estimate prices"}},
		{"Replica bad cost", badCost, []string{"Linear.PerStep must be finite"}},
		{"Batch negative", costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: 0, Context: -1}}, Decode: []int{-5}},
			[]string{"Batch.Prefill[0].NewTokens", "Batch.Prefill[0].Context", "Batch.Decode[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errorMentions(t, tc.v.Validate(), tc.want...)
		})
	}
}

func TestValidPresetsValidate(t *testing.T) {
	for _, v := range []validator{
		costmodel.AtlasTP4(), costmodel.AtlasRoofline(), costmodel.Frozen{}, measured,
		costmodel.NewLinear3(10, 0.035, 0.5), costmodel.Fit{},
	} {
		assert.NoError(t, v.Validate(), "%T", v)
	}
}

func TestEstimateRefusesAnInvalidReplica(t *testing.T) {
	r := costmodel.AtlasTP4()
	r.Hardware.MemBandwidth = math.NaN()
	_, err := r.Estimate()
	errorMentions(t, err, "Replica.Hardware.MemBandwidth must be finite, got NaN")

	r = costmodel.AtlasTP4()
	r.Cost = costmodel.Func(func(costmodel.Batch) time.Duration { return 0 })
	_, err = r.Estimate()
	errorMentions(t, err, "Replica.Cost priced a non-empty step at 0")

	var unbuilt *costmodel.TableModel
	r.Cost = unbuilt
	_, err = r.Estimate()
	errorMentions(t, err, "Replica.Cost priced a non-empty step at 0")
}

// Whatever the figures and the batch, no model panics and no step time is
// negative; a valid model on a valid non-empty batch is positive.
func FuzzModelsNeverPanic(f *testing.F) {
	f.Add(1.0, 0.035, 3e12, 0.3, 32, 2000, 256, 0)
	f.Add(math.NaN(), math.Inf(1), 0.0, -1.0, -3, -1, 0, -7)
	f.Add(-1.0, 1e300, 1e-300, 2.0, 1000, 1<<40, 1<<40, 1<<30)
	f.Fuzz(func(t *testing.T, a, b, bw, eff float64, seqs, ctx, chunk, chunkCtx int) {
		batch := fuzzBatch(seqs, ctx, chunk, chunkCtx)
		models := fuzzModels(a, b, bw, eff)
		for _, m := range models {
			d := m.StepTime(batch)
			require.GreaterOrEqual(t, d, time.Duration(0), "%T on %v", m, batch)
			v, ok := m.(validator) // a built TableModel is valid by construction
			if (!ok || v.Validate() == nil) && batch.Validate() == nil && !batch.Empty() {
				require.Positive(t, d, "valid %T on valid %v", m, batch)
			}
		}
		r := costmodel.AtlasTP4()
		r.Hardware.MemBandwidth, r.Point.Batch, r.Point.Context = bw, seqs, ctx
		r.Estimate() // must not panic, whatever it returns
	})
}

// fuzzBatch builds a batch of at most 64 decodes from fuzzed numbers.
func fuzzBatch(seqs, ctx, chunk, chunkCtx int) costmodel.Batch {
	b := decodes(min(max(seqs, 0), 64), ctx)
	if chunk != 0 {
		b.Prefill = []costmodel.Chunk{{NewTokens: chunk, Context: chunkCtx}}
	}
	return b
}

// fuzzModels builds every model from fuzzed figures, valid or not.
func fuzzModels(a, b, bw, eff float64) []costmodel.Model {
	tab, err := costmodel.Table{
		Decode:  []costmodel.TablePoint{{X: 1, Ms: 30}, {X: 32, Ms: 45}},
		Prefill: []costmodel.TablePoint{{X: 1, Ms: 20}, {X: 2000, Ms: 90}},
	}.Build()
	if err != nil {
		panic(err)
	}
	hw := costmodel.AtlasTP4().Hardware
	hw.MemBandwidth = bw
	return []costmodel.Model{
		costmodel.Linear{PerStep: a, PerSeq: b, PerDecodeContext: a, PerPrefillToken: b, PerPrefillAttention: a},
		costmodel.Roofline{Hardware: hw, Model: costmodel.AtlasTP4().Model, MemEfficiency: eff, ComputeEfficiency: eff},
		costmodel.Frozen{DecodeStep: time.Duration(a), PrefillPerToken: time.Duration(b)},
		tab,
	}
}
