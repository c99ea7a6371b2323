package costmodel_test

// One test per sentence of the reference chapter's "The engine-step level,
// walked" and "Estimating capacity before measuring", in order, each
// asserting the sentence's number for the Atlas TP4 replica.

import (
	"math"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// "A mixed step that admits a 256-token prefill chunk pays roughly
// 20 + 0.035 × 256 ≈ 29 ms of prefill work ... 45 ms of decode work plus
// that chunk."
func TestChapterMixedStepIs7396ms(t *testing.T) {
	got := costmodel.Frozen{}.StepTime(mixed(31, 2000, 256))
	if want := 73960 * time.Microsecond; got != want {
		t.Errorf("mixed step = %v, want %v", got, want)
	}
	if got := atlas(t).MixedStep.Value; got != 73.96 {
		t.Errorf("Estimate.MixedStep = %v ms, want 73.96", got)
	}
}

// "prefill_ms(2000)" is 90 ms in the frozen model.
func TestChapterLonePrefillIs90ms(t *testing.T) {
	if got := (costmodel.Frozen{}).StepTime(prefill(2000)); got != 90*time.Millisecond {
		t.Errorf("lone 2,000-token prefill = %v, want 90ms", got)
	}
	near(t, "Estimate.PrefillTime", atlas(t).PrefillTime.Value, 90, 1e-9)
}

// "weights alone imply 35 / 3 ≈ 12 ms of streaming"
func TestChapterWeightStreamingIs12ms(t *testing.T) {
	w := atlas(t).WeightStream.Value
	near(t, "weight streaming ms", w, 35.0/3, 1e-9)
	near(t, "weight streaming, rounded", math.Round(w), 12, 0)
}

// "adding 32 sequences at 2,000 context tokens (32 × 2000 × 80 KiB ≈ 5 GiB,
// about 1.7 ms more)"
func TestChapterKVStreamingIs1point7ms(t *testing.T) {
	bytes := 32 * 2000 * float64(costmodel.AtlasKVBytesPerToken)
	near(t, "KV bytes, GiB", bytes/(1<<30), 5, 0.15)
	near(t, "KV streaming ms", atlas(t).KVStream.Value, 1.7, 0.06)
}

// "sets a roofline floor near 14 ms"
func TestChapterRooflineFloorNear14ms(t *testing.T) {
	e := atlas(t)
	near(t, "floor = weights + KV", e.RooflineFloor.Value, e.WeightStream.Value+e.KVStream.Value, 1e-9)
	between(t, "roofline floor ms", e.RooflineFloor.Value, 13, 14.5)
}

// "Atlas's declared step is 45 ms — about a third of the roofline"
func TestChapterDeclaredStepIs45msAboutAThirdOfRoofline(t *testing.T) {
	e := atlas(t)
	near(t, "decode step ms", e.DecodeStep.Value, 45, 0)
	near(t, "roofline share %", e.RooflineShare.Value, 100.0/3, 4)
}

// "throughput is 32 tokens / 0.045 s ≈ 700 output tokens per second per
// replica at batch 32"
func TestChapterDecodeThroughputIs700TokensPerSecond(t *testing.T) {
	got := atlas(t).DecodeThroughput.Value
	near(t, "decode tokens/s", got, 32/0.045, 1e-9)
	near(t, "decode tokens/s ≈ 700", got, 700, 15)
}

// "35 GiB / 0.61 GiB per 8,000-token sequence ≈ 57"
func TestChapterKVConcurrencyIs57Sequences(t *testing.T) {
	e := atlas(t)
	near(t, "KV per sequence GiB", e.KVPerSequence.Value, 0.61, 0.005)
	near(t, "KV sequences", e.KVSequences.Value, 57, 0)
}

// "so batch 32 sits at 56 percent occupancy"
func TestChapterBatch32Is56PercentOccupancy(t *testing.T) {
	near(t, "KV occupancy %, rounded", math.Round(atlas(t).KVOccupancy.Value), 56, 0)
}

// "2 × 70 GFLOP × 32 ≈ 4.5 TFLOP per 45 ms across four accelerators of
// ~1 PFLOPS-class peak: roughly two to three percent MFU"
func TestChapterDecodeMFUIsTwoToThreePercent(t *testing.T) {
	near(t, "decode TFLOP per step", costmodel.AtlasFLOPsPerToken*32/1e12, 4.5, 0.05)
	between(t, "decode MFU %", atlas(t).DecodeMFU.Value, 2, 3)
}

// "prefill_ms(2000) implies moving about 280 TFLOP in 90 ms on the same
// island — near three-quarters of peak"
func TestChapterPrefillMFUIsThreeQuartersOfPeak(t *testing.T) {
	near(t, "prefill TFLOP", costmodel.AtlasFLOPsPerToken*2000/1e12, 280, 0)
	near(t, "prefill MFU %", atlas(t).PrefillMFU.Value, 75, 3)
}

// "At ~200 output tokens per response, decode alone sustains about
// 700 / 200 ≈ 3.5 requests per second per replica"
func TestChapterDecodeOnlyCapacityIs3point5RequestsPerSecond(t *testing.T) {
	near(t, "decode-only req/s", atlas(t).DecodeRequests.Value, 3.5, 0.1)
}

// "concurrency bounded by KV bytes, throughput by step time, TTFT by
// prefill-plus-queue, and each bound naming the knob that would move it"
func TestChapterEveryBoundNamesItsKnob(t *testing.T) {
	e := atlas(t)
	for _, f := range e.Figures() {
		if f.Name == "" || f.Unit == "" || f.Knob == "" || f.Basis == "" {
			t.Errorf("figure %+v lacks a name, unit, basis or knob", f)
		}
	}
	for what, f := range map[string]costmodel.Figure{
		"KV bytes":  e.KVSequences,
		"step time": e.DecodeThroughput,
		"queueing":  e.TTFTQueueBudget,
	} {
		mentions(t, f.Knob, what)
	}
	near(t, "TTFT queue budget ms", e.TTFTQueueBudget.Value, 600-90, 1e-9)
}

// The KV pool the engine defaults to: 35 GiB / 80 KiB = 458,752 tokens =
// 28,672 blocks of 16.
func TestAtlasKVCapacity(t *testing.T) {
	if costmodel.AtlasKVTokens != 458752 || costmodel.AtlasKVBlocks != 28672 || costmodel.AtlasKVBlockSize != 16 {
		t.Errorf("KV capacity = %d tokens = %d blocks of %d, want 458752 = 28672 × 16",
			costmodel.AtlasKVTokens, costmodel.AtlasKVBlocks, costmodel.AtlasKVBlockSize)
	}
	near(t, "Estimate.KVTokens", atlas(t).KVTokens.Value, 458752, 0)
}

// atlas is the chapter's estimate of the Atlas TP4 replica.
func atlas(t *testing.T) costmodel.Estimate {
	t.Helper()
	e, err := costmodel.AtlasTP4().Estimate()
	if err != nil {
		t.Fatal(err)
	}
	return e
}
