package costmodel_test

// Issue 10: the estimate describes the replica a simulation runs, its
// scheduler limits included, and assembles its load figures: the largest
// step against the ITL bound, the serving capacity, the TTFT-qualified load
// and the utilisation of an offered load.

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// "the replica saturates at exactly 1 / (200 × 45/32 ms + 90 ms) =
// 2.69 req/s": decode work per answer shared by the batch, plus the
// prompt's prefill.
func TestServingCapacityIsTheChapterArithmetic(t *testing.T) {
	e := atlas(t)
	assert.InDelta(t, 1/(200*0.045/32+0.090), e.ServingCapacity.Value, 1e-9, "req/s")
	assert.Equal(t, 2.69, math.Round(100*e.ServingCapacity.Value)/100)
	assert.Equal(t, "1 / (200 × 45 ms / 32 + 90 ms prefill)", e.ServingCapacity.Basis)
	assert.Less(t, e.ServingCapacity.Value, e.DecodeRequests.Value, "prefill takes its share of decode-only capacity")
	for _, c := range []struct {
		batch, output int
		want          float64
	}{{16, 200, 1 / (200*0.045/16 + 0.090)}, {32, 400, 1 / (400*0.045/32 + 0.090)}} {
		r := costmodel.AtlasTP4()
		r.Point.Batch, r.Point.OutputTokens = c.batch, c.output
		e, err := r.Estimate()
		require.NoError(t, err)
		assert.InDelta(t, c.want, e.ServingCapacity.Value, 1e-9, "batch %d, %d output tokens", c.batch, c.output)
	}
}

// A prompt the scheduler cuts into chunks may pay a step's fixed cost per
// chunk: with a 256-token cap a 2,000-token prompt takes 8 chunks,
// 8 × 20 + 0.035 × 2000 = 230 ms of prefill when no other prompt shares
// its steps. Without a cap it is one chunk, and the two capacities agree.
func TestChunkedCapacityPaysEachChunkAStep(t *testing.T) {
	e := atlas(t)
	assert.Equal(t, e.ServingCapacity.Value, e.ChunkedCapacity.Value, "one chunk of 2000 ≤ 2048 − 31")
	e = chunked(t, 256)
	assert.InDelta(t, 1/(200*0.045/32+0.230), e.ChunkedCapacity.Value, 1e-9)
	assert.Contains(t, e.ChunkedCapacity.Basis, "230 ms: 8 chunks of ≤ 256 tokens, each a step")
	assert.InDelta(t, 1/(200*0.045/32+0.150), chunked(t, 512).ChunkedCapacity.Value, 1e-9)
}

// "with no chunk cap, a step can fill its 2,048-token budget with prefill
// beside the decodes, 45 + 20 + 0.035 × 2,047 ≈ 136.6 ms, 91 % of the
// 150 ms 'every ITL' bound": the one-chunk step and the worst case agree.
// A cap shortens the one-chunk step (the chapter's 73.96 ms at 256) but
// not the worst case, in which several prompts fill the budget together.
func TestLargestStepAgainstTheITLBound(t *testing.T) {
	e := atlas(t)
	for _, f := range []costmodel.Figure{e.MixedStep, e.LargestStep} {
		assert.InDelta(t, 136.645, f.Value, 1e-9, f.Name)
		assert.Contains(t, f.Basis, "one 2047-token chunk beside 1 decode (budget 2048, batch 32, no chunk cap)")
	}
	assert.InDelta(t, 91.1, e.LargestStepShare.Value, 0.05)
	require.Len(t, e.Warnings, 1)
	assert.Equal(t, "a 2047-token prefill chunk stretches the step to 136.6 ms, 91 % of the 150ms ITL bound: 10 % of cost error fails every request decoding beside a prefill; a chunk cap moves it", e.Warnings[0])
	for chunk, mixed := range map[int]float64{256: 73.96, 512: 82.92, 1024: 100.84} {
		e := chunked(t, chunk)
		assert.InDelta(t, mixed, e.MixedStep.Value, 1e-9, "cap %d", chunk)
		assert.InDelta(t, 100*mixed/150, e.MixedStepShare.Value, 1e-9, "cap %d", chunk)
		assert.InDelta(t, 136.645, e.LargestStep.Value, 1e-9, "cap %d: the budget still fills", chunk)
	}
	r := costmodel.AtlasTP4()
	r.Point.Budget = 512
	e, err := r.Estimate()
	require.NoError(t, err)
	assert.InDelta(t, 45+20+0.035*511, e.LargestStep.Value, 1e-9, "a smaller budget moves it")
	assert.Empty(t, e.Warnings)
}

// "applying ... TTFT admission trims that to a few qualifying requests per
// second — within a factor of two": the M/M/c figure lies below the
// serving capacity, names its approximation and its band, falls when the
// TTFT SLO tightens, and is 0 when a busy replica's prefill alone breaks it.
func TestTTFTQualifiedLoadIsAFewRequestsPerSecond(t *testing.T) {
	e := atlas(t)
	q := e.TTFTQualified.Value
	between(t, "TTFT-qualified req/s", q, 1, e.ServingCapacity.Value)
	assert.Contains(t, e.TTFTQualified.Basis, "M/M/c, c = 32 seats freed at 2.694/32 req/s each")
	assert.Contains(t, e.TTFTQualified.Basis, "P(wait > 328.4 ms) ≤ 0.05")
	assert.Contains(t, e.TTFTQualified.Basis, "within ×2: [0.986, 2.69]")
	prev := q
	for _, ttft := range []time.Duration{500, 450, 400} {
		r := costmodel.AtlasTP4()
		r.Point.SLO.TTFT = ttft * time.Millisecond
		e, err := r.Estimate()
		require.NoError(t, err)
		assert.Less(t, e.TTFTQualified.Value, prev, "TTFT %v ms", ttft)
		prev = e.TTFTQualified.Value
	}
	r := costmodel.AtlasTP4()
	r.Point.SLO.TTFT = 250 * time.Millisecond
	e, err := r.Estimate()
	require.NoError(t, err)
	assert.Zero(t, e.TTFTQualified.Value, "the step in progress and the prefill beside the decodes take 271.6 ms")
	assert.Contains(t, e.Warnings[len(e.Warnings)-1], "271.6 ms, over the TTFT SLO (250ms) before any queueing: no load qualifies")
}

// On a busy replica a prompt waits for the step in progress, then is
// prefilled beside the decodes: 136.6 + (45 + 20 + 0.035 × 2000) ms
// without a cap. With the chapter's 256-token chunk it takes 8 mixed
// steps, 73.96 + 7 × 73.96 + 72.28 = 664 ms, over the 600 ms TTFT SLO
// before any queueing, and the estimate says so.
func TestBusyTTFTFloor(t *testing.T) {
	e := atlas(t)
	assert.InDelta(t, 136.645+135, e.BusyTTFT.Value, 1e-9)
	assert.InDelta(t, 600-271.645, e.BusyQueueBudget.Value, 1e-9)
	assert.Equal(t, "136.6 ms step in progress + 1 chunk beside 31 decodes, 135 ms", e.BusyTTFT.Basis)
	e = chunked(t, costmodel.AtlasChunkTokens)
	assert.InDelta(t, 9*73.96-0.035*48, e.BusyTTFT.Value, 1e-9)
	assert.Zero(t, e.TTFTQualified.Value)
	assert.Equal(t, "none: a busy replica's TTFT floor, 664 ms, is over the 600ms SLO before any queueing", e.TTFTQualified.Basis)
	require.Len(t, e.Warnings, 2)
	assert.Contains(t, e.Warnings[0], "the largest step this configuration can form (2047 prefill tokens in 8 chunks beside 1 decode, 136.6 ms)")
	assert.Contains(t, e.Warnings[1], "prefilled in 8 chunks beside the decodes, 664 ms, over the TTFT SLO (600ms)")
}

// The utilisation of an offered load is reported only when one is given.
func TestUtilisationOfAnOfferedLoad(t *testing.T) {
	for _, f := range atlas(t).Figures() {
		assert.NotEqual(t, "utilisation", f.Name)
	}
	r := costmodel.AtlasTP4()
	r.Point.Offered = 1.5
	e, err := r.Estimate()
	require.NoError(t, err)
	assert.InDelta(t, 100*1.5/e.ServingCapacity.Value, e.Utilisation.Value, 1e-9)
	assert.Equal(t, e.Utilisation, e.Figures()[len(e.Figures())-1])
}
