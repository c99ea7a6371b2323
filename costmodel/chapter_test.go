package costmodel_test

// One test per sentence of the reference chapter's "The engine-step level,
// walked" and "Estimating capacity before measuring", in order, each
// asserting the sentence's number for the Atlas TP4 replica.

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// "A mixed step that admits a 256-token prefill chunk pays roughly
// 20 + 0.035 × 256 ≈ 29 ms of prefill work ... 45 ms of decode work plus
// that chunk."
func TestChapterMixedStepIs7396ms(t *testing.T) {
	assert.Equal(t, 73960*time.Microsecond, costmodel.Frozen{}.StepTime(mixed(31, 2000, 256)))
	e := chunked(t, costmodel.AtlasChunkTokens)
	assert.Equal(t, 73.96, e.MixedStep.Value, "Estimate.MixedStep, ms, with a 256-token chunk cap")
	assert.Contains(t, e.MixedStep.Basis, "one 256-token chunk beside 31 decodes")
}

// "prefill_ms(2000)" is 90 ms in the frozen model.
func TestChapterLonePrefillIs90ms(t *testing.T) {
	assert.Equal(t, 90*time.Millisecond, costmodel.Frozen{}.StepTime(prefill(2000)))
	assert.InDelta(t, 90, atlas(t).PrefillTime.Value, 1e-9, "Estimate.PrefillTime")
}

// "weights alone imply 35 / 3 ≈ 12 ms of streaming"
func TestChapterWeightStreamingIs12ms(t *testing.T) {
	w := atlas(t).WeightStream.Value
	assert.InDelta(t, 35.0/3, w, 1e-9, "weight streaming ms")
	assert.Equal(t, 12.0, math.Round(w), "weight streaming, rounded")
}

// "adding 32 sequences at 2,000 context tokens (32 × 2000 × 80 KiB ≈ 5 GiB,
// about 1.7 ms more)"
func TestChapterKVStreamingIs1point7ms(t *testing.T) {
	bytes := 32 * 2000 * float64(costmodel.AtlasKVBytesPerToken)
	assert.InDelta(t, 5, bytes/(1<<30), 0.15, "KV bytes, GiB")
	assert.InDelta(t, 1.7, atlas(t).KVStream.Value, 0.06, "KV streaming ms")
}

// "sets a roofline floor near 14 ms"
func TestChapterRooflineFloorNear14ms(t *testing.T) {
	e := atlas(t)
	assert.InDelta(t, e.WeightStream.Value+e.KVStream.Value, e.RooflineFloor.Value, 1e-9, "floor = weights + KV")
	between(t, "roofline floor ms", e.RooflineFloor.Value, 13, 14.5)
}

// "Atlas's declared step is 45 ms — about a third of the roofline"
func TestChapterDeclaredStepIs45msAboutAThirdOfRoofline(t *testing.T) {
	e := atlas(t)
	assert.Equal(t, 45.0, e.DecodeStep.Value, "decode step ms")
	assert.InDelta(t, 100.0/3, e.RooflineShare.Value, 4, "roofline share %")
}

// "throughput is 32 tokens / 0.045 s ≈ 700 output tokens per second per
// replica at batch 32"
func TestChapterDecodeThroughputIs700TokensPerSecond(t *testing.T) {
	got := atlas(t).DecodeThroughput.Value
	assert.InDelta(t, 32/0.045, got, 1e-9, "decode tokens/s")
	assert.InDelta(t, 700, got, 15, "decode tokens/s ≈ 700")
}

// "35 GiB / 0.61 GiB per 8,000-token sequence ≈ 57"
func TestChapterKVConcurrencyIs57Sequences(t *testing.T) {
	e := atlas(t)
	assert.InDelta(t, 0.61, e.KVPerSequence.Value, 0.005, "KV per sequence GiB")
	assert.Equal(t, 57.0, e.KVSequences.Value, "KV sequences")
}

// "so batch 32 sits at 56 percent occupancy"
func TestChapterBatch32Is56PercentOccupancy(t *testing.T) {
	assert.Equal(t, 56.0, math.Round(atlas(t).KVOccupancy.Value), "KV occupancy %, rounded")
}

// "2 × 70 GFLOP × 32 ≈ 4.5 TFLOP per 45 ms across four accelerators of
// ~1 PFLOPS-class peak: roughly two to three percent MFU"
func TestChapterDecodeMFUIsTwoToThreePercent(t *testing.T) {
	assert.InDelta(t, 4.5, costmodel.AtlasFLOPsPerToken*32/1e12, 0.05, "decode TFLOP per step")
	between(t, "decode MFU %", atlas(t).DecodeMFU.Value, 2, 3)
}

// "prefill_ms(2000) implies moving about 280 TFLOP in 90 ms on the same
// island — near three-quarters of peak"
func TestChapterPrefillMFUIsThreeQuartersOfPeak(t *testing.T) {
	assert.Equal(t, 280.0, costmodel.AtlasFLOPsPerToken*2000/1e12, "prefill TFLOP")
	assert.InDelta(t, 75, atlas(t).PrefillMFU.Value, 3, "prefill MFU %")
}

// "At ~200 output tokens per response, decode alone sustains about
// 700 / 200 ≈ 3.5 requests per second per replica"
func TestChapterDecodeOnlyCapacityIs3point5RequestsPerSecond(t *testing.T) {
	assert.InDelta(t, 3.5, atlas(t).DecodeRequests.Value, 0.1, "decode-only req/s")
}

// "concurrency bounded by KV bytes, throughput by step time, TTFT by
// prefill-plus-queue, and each bound naming the knob that would move it"
func TestChapterEveryBoundNamesItsKnob(t *testing.T) {
	e := atlas(t)
	for _, f := range e.Figures() {
		assert.NotEmpty(t, f.Name, "%+v", f)
		assert.NotEmpty(t, f.Unit, "%+v", f)
		assert.NotEmpty(t, f.Basis, "%+v", f)
		assert.NotEmpty(t, f.Knob, "%+v", f)
	}
	for what, f := range map[string]costmodel.Figure{
		"KV bytes":  e.KVSequences,
		"step time": e.DecodeThroughput,
		"queueing":  e.TTFTQueueBudget,
	} {
		assert.Contains(t, f.Knob, what)
	}
	assert.InDelta(t, 600-90, e.TTFTQueueBudget.Value, 1e-9, "TTFT queue budget ms")
}

// At the chapter's operating point with a 1,024-token budget and a
// 512-token chunk cap nothing is over a bound or close to one; push it and
// the estimate says which bound breaks.
func TestEstimateWarnsWhereTheOperatingPointBreaksABound(t *testing.T) {
	r := costmodel.AtlasTP4()
	r.Point.Budget, r.Point.ChunkCap = 1024, 512
	e, err := r.Estimate()
	require.NoError(t, err)
	assert.Empty(t, e.Warnings)
	e = chunked(t, 512)
	require.Len(t, e.Warnings, 1)
	assert.Equal(t, "the largest step this configuration can form (2047 prefill tokens in 4 chunks beside 1 decode, 136.6 ms) is 91 % of the 150ms ITL bound: 10 % of cost error fails every request that meets one, which forms when 4 prompts prefill at once; a smaller token budget moves it", e.Warnings[0])
	r = costmodel.AtlasTP4()
	r.Point.Batch, r.Point.Budget, r.Point.ChunkCap, r.Point.PromptTokens = 64, 4096, 4096, 16000
	r.Point.SLO.TTFT = 500 * time.Millisecond
	e, err = r.Estimate()
	require.NoError(t, err)
	require.Len(t, e.Warnings, 3)
	assert.Contains(t, e.Warnings[0], "batch 64 exceeds the 57 sequences")
	assert.Contains(t, e.Warnings[1], "a 4095-token prefill chunk stretches the step to 208.3 ms, over the ITL SLO (150ms)")
	assert.Contains(t, e.Warnings[2], "a 16000-token prefill alone (580 ms) exceeds the TTFT SLO (500ms)")
}

// A cost model faster than the hardware's peak is flagged, not believed.
func TestEstimateWarnsWhenTheCostModelBeatsPeak(t *testing.T) {
	r := costmodel.AtlasTP4()
	r.Cost = costmodel.Frozen{PrefillBase: time.Millisecond, PrefillPerToken: 10 * time.Microsecond}
	e, err := r.Estimate()
	require.NoError(t, err)
	require.Len(t, e.Warnings, 1)
	assert.Contains(t, e.Warnings[0], "prefill MFU is 333.3 %")
}

// The KV pool the engine defaults to: 35 GiB / 80 KiB = 458,752 tokens =
// 28,672 blocks of 16.
func TestAtlasKVCapacity(t *testing.T) {
	assert.Equal(t, 458752, costmodel.AtlasKVTokens)
	assert.Equal(t, 28672, costmodel.AtlasKVBlocks)
	assert.Equal(t, 16, costmodel.AtlasKVBlockSize)
	assert.Equal(t, 458752.0, atlas(t).KVTokens.Value, "Estimate.KVTokens")
}

// chunked is the chapter's estimate with a chunk cap of n tokens.
func chunked(t *testing.T, n int) costmodel.Estimate {
	t.Helper()
	r := costmodel.AtlasTP4()
	r.Point.ChunkCap = n
	e, err := r.Estimate()
	require.NoError(t, err)
	return e
}

// atlas is the chapter's estimate of the Atlas TP4 replica.
func atlas(t *testing.T) costmodel.Estimate {
	t.Helper()
	e, err := costmodel.AtlasTP4().Estimate()
	require.NoError(t, err)
	return e
}
