package costmodel_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

func TestAtlasShapesAreTheDeclaredThree(t *testing.T) {
	s := costmodel.AtlasShapes()
	require.Len(t, s, 3)
	assert.Equal(t, costmodel.NamedModel{Name: "atlas-linear", Model: costmodel.AtlasLinear()}, s[0])
	assert.Equal(t, costmodel.NamedModel{Name: "atlas-roofline", Model: costmodel.AtlasRoofline()}, s[1])
	assert.Equal(t, costmodel.NamedModel{Name: "atlas-profiled", Model: costmodel.AtlasProfiledShape()}, s[2])
	s[0].Name = "changed"
	assert.Equal(t, "atlas-linear", costmodel.AtlasShapes()[0].Name, "each call returns a new slice")
}

// Every alternative holds the chapter's operating point: 45 ms for 32
// decodes at 2,000 context, to the nanosecond.
func TestAtlasShapesHoldTheOperatingPoint(t *testing.T) {
	for _, n := range costmodel.AtlasShapes() {
		assert.Equal(t, 45*time.Millisecond, n.Model.StepTime(decodes(32, 2000)), n.Name)
	}
}

// The two Linears hold Frozen's prefill line, 20 + 0.035·n ms, for a lone
// chunk at 256 and 2,048 tokens (AtlasLinear at every length);
// AtlasRoofline holds it at its 2,000-token anchor.
func TestAtlasShapesHoldThePrefillLine(t *testing.T) {
	frozen := costmodel.Frozen{}
	assert.Equal(t, 28960*time.Microsecond, frozen.PrefillTime(256))
	assert.Equal(t, 91680*time.Microsecond, frozen.PrefillTime(2048))
	for _, m := range []costmodel.Model{costmodel.AtlasLinear(), costmodel.AtlasProfiledShape()} {
		for _, n := range []int{256, 2048} {
			assert.Equal(t, frozen.PrefillTime(n), m.StepTime(prefill(n)), "%v, %d tokens", m, n)
		}
	}
	for _, n := range []int{1, 16, 100, 1000, 2000, 4096, 8192} {
		assert.Equal(t, frozen.PrefillTime(n), costmodel.AtlasLinear().StepTime(prefill(n)), "AtlasLinear, %d tokens", n)
	}
	assert.Equal(t, 90*time.Millisecond, costmodel.AtlasRoofline().StepTime(prefill(2000)))
}

func TestAtlasShapesPassTheConformanceCheck(t *testing.T) {
	for _, n := range costmodel.AtlasShapes() {
		t.Run(n.Name, func(t *testing.T) {
			assert.NoError(t, costmodeltest.Check(n.Model))
			assert.NoError(t, n.Model.(interface{ Validate() error }).Validate())
			b := mixed(31, 2000, 256)
			assert.Zero(t, testing.AllocsPerRun(100, func() { n.Model.StepTime(b) }), "allocations per StepTime")
		})
	}
}

// AtlasLinear's coefficients are the roofline's split of the 45 ms step
// and Frozen's prefill line.
func TestAtlasLinearIsTheRooflineSplit(t *testing.T) {
	l := costmodel.AtlasLinear()
	weights, kv := 35e9, 32*2000*81920.0 // bytes read by the decode step at the point
	assert.Equal(t, 20.0, l.PerStep, "Frozen's PrefillBase")
	assert.Equal(t, 0.035, l.PerPrefillToken, "Frozen's PrefillPerToken")
	assert.Zero(t, l.PerSeq)
	assert.Zero(t, l.PerPrefillAttention)
	assert.InDelta(t, 45*kv/(weights+kv)/64000, l.PerDecodeContext, 1e-18, "the KV's share of 45 ms, per context token")
	assert.InDelta(t, 9.160378e-05, l.PerDecodeContext, 5e-12, "as the doc prints it")
	assert.InDelta(t, (45-20-45*kv/(weights+kv))/32, l.PerDecodeToken, 1e-15, "the rest of the weights' share, per decode")
	assert.InDelta(t, 0.5980424, l.PerDecodeToken, 5e-8, "as the doc prints it")
	r := costmodel.AtlasRoofline()
	roofPerKV := 81920 / (3e12 * r.MemEfficiency) * 1e3
	assert.InEpsilon(t, roofPerKV, l.PerDecodeContext, 1e-4, "AtlasRoofline's memory roof per KV token")
}

// linearMs is l's form over a batch of decodes (b sequences at ctx) and
// one chunk of chunk tokens on no context, ms.
func linearMs(l costmodel.Linear, b, ctx, chunk int) float64 {
	t := l.PerStep + float64(b)*(l.PerDecodeToken+l.PerSeq) + float64(b*ctx)*l.PerDecodeContext
	if chunk > 0 {
		n := float64(chunk)
		t += l.PerSeq + n*l.PerPrefillToken + n*(n+1)/2*l.PerPrefillAttention
	}
	return t
}

// rooflineMs is r's price of b decodes at ctx and one chunk, ms.
func rooflineMs(r costmodel.Roofline, b, ctx, chunk int) float64 {
	tokens := float64(b + chunk)
	mem := (r.Model.WeightBytes + r.Model.KVBytesPerToken*(float64(b*ctx)+tokens)) / (r.Hardware.MemBandwidth * r.MemEfficiency) * 1e3
	compute := r.Model.FLOPsPerToken * tokens / (float64(r.Hardware.Accelerators) * r.Hardware.PeakFLOPS * r.ComputeEfficiency) * 1e3
	return max(mem, compute)
}

// Each alternative differs from Frozen in shape: a decode of one
// sequence is cheaper than 45 ms, 64 at 8,000 context dearer, by what the
// coefficients give; the figures the docs print are those.
func TestAtlasShapesDifferFromFrozenInShape(t *testing.T) {
	type want struct {
		b, ctx, chunk int
		doc           float64 // ms, as the doc comments print it
	}
	check := func(name string, m costmodel.Model, price func(b, ctx, chunk int) float64, ws []want) {
		for _, w := range ws {
			var batch costmodel.Batch
			switch {
			case w.b > 0 && w.chunk > 0:
				batch = mixed(w.b, w.ctx, w.chunk)
			case w.b > 0:
				batch = decodes(w.b, w.ctx)
			default:
				batch = prefill(w.chunk)
			}
			got := m.StepTime(batch)
			assert.Equal(t, msDuration(price(w.b, w.ctx, w.chunk)), got, "%s: %d decodes at %d, chunk %d", name, w.b, w.ctx, w.chunk)
			assert.InEpsilon(t, w.doc, milliseconds(got), 5e-4, "%s: %d decodes at %d, chunk %d: the doc's figure", name, w.b, w.ctx, w.chunk)
		}
		assert.Less(t, m.StepTime(decodes(1, 2000)), 45*time.Millisecond, "%s: a lone sequence is cheaper", name)
		assert.Greater(t, m.StepTime(decodes(64, 8000)), 45*time.Millisecond, "%s: 64 long sequences are dearer", name)
		assert.Greater(t, m.StepTime(decodes(32, 8000)), m.StepTime(decodes(32, 2000)), "%s: longer contexts are dearer", name)
		assert.Greater(t, m.StepTime(decodes(64, 2000)), m.StepTime(decodes(32, 2000)), "%s: a larger batch is dearer", name)
	}
	l := costmodel.AtlasLinear()
	check("AtlasLinear", l, func(b, ctx, chunk int) float64 { return linearMs(l, b, ctx, chunk) }, []want{
		{1, 2000, 0, 20.78}, {64, 8000, 0, 105.2}, {32, 8000, 0, 62.59}, {31, 2000, 256, 53.18},
	})
	p := costmodel.AtlasProfiledShape()
	check("AtlasProfiledShape", p, func(b, ctx, chunk int) float64 { return linearMs(p, b, ctx, chunk) }, []want{
		{1, 2000, 0, 23.81}, {64, 8000, 0, 182.4}, {32, 8000, 0, 102.8}, {31, 2000, 256, 50.15}, {0, 0, 2000, 89.50}, {0, 0, 16, 23.47},
	})
	r := costmodel.AtlasRoofline()
	check("AtlasRoofline", r, func(b, ctx, chunk int) float64 { return rooflineMs(r, b, ctx, chunk) }, []want{
		{1, 2000, 0, 39.32}, {64, 8000, 0, 86.04}, {32, 8000, 0, 62.59}, {31, 2000, 256, 44.84}, {0, 0, 256, 39.16}, {0, 0, 2048, 92.16},
	})
}

// The profiled shape's prefill is convex: below Frozen's line between
// the two lengths it holds, above it outside them.
func TestAtlasProfiledShapePrefillIsConvex(t *testing.T) {
	p, f := costmodel.AtlasProfiledShape(), costmodel.Frozen{}
	for _, n := range []int{16, 128, 255} {
		assert.Greater(t, p.StepTime(prefill(n)), f.PrefillTime(n), n)
	}
	for _, n := range []int{257, 1000, 2047} {
		assert.Less(t, p.StepTime(prefill(n)), f.PrefillTime(n), n)
	}
	assert.Greater(t, p.StepTime(prefill(4096)), f.PrefillTime(4096))
}

// None of the alternatives is ContextFree (each reads the decodes'
// contexts); each is DecodeSum and prices a batch as the batch with its
// contexts summed into one.
func TestAtlasShapesReadTheContextsThroughTheirSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 2))
	for _, n := range costmodel.AtlasShapes() {
		cf, ok := n.Model.(costmodel.ContextFree)
		assert.False(t, ok && cf.ContextFree(), "%s says it reads no context", n.Name)
		assert.NotEqual(t, n.Model.StepTime(decodes(32, 2000)), n.Model.StepTime(decodes(32, 2001)), "%s reads the contexts", n.Name)
		ds, ok := n.Model.(costmodel.DecodeSum)
		require.True(t, ok && ds.DecodeSum(), n.Name)
		for range 500 {
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
			require.Equal(t, n.Model.StepTime(b), n.Model.StepTime(summed), "%s: %d decodes summing to %d", n.Name, len(b.Decode), sum)
		}
	}
}

// The alternatives are data: they round-trip through JSON unchanged, as
// scenario stores a "linear" or "roofline" model.
func TestAtlasShapesRoundTripThroughJSON(t *testing.T) {
	for _, n := range costmodel.AtlasShapes() {
		data, err := json.Marshal(n.Model)
		require.NoError(t, err)
		switch m := n.Model.(type) {
		case costmodel.Linear:
			var back costmodel.Linear
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, m, back, n.Name)
		case costmodel.Roofline:
			var back costmodel.Roofline
			require.NoError(t, json.Unmarshal(data, &back))
			assert.Equal(t, m, back, n.Name)
		default:
			t.Errorf("%s is a %T, not a Linear or a Roofline", n.Name, n.Model)
		}
	}
}

// Why no Roofline holds the prefill line at 256 tokens as well as the
// decode point without per-sequence overheads: a lone 256-token chunk
// reads the whole weight shard, slower even at the full bandwidth than
// the line's 8.96 ms for its tokens, and the least per-sequence overhead
// that closes the gap (at MemEfficiency where StepOverhead reaches 0) is
// 0.38 ms, 0.46 ms at MemEfficiency 1.
func TestNoRooflineHoldsTheLineAt256WithoutSeqOverhead(t *testing.T) {
	bare := costmodel.Roofline{Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model, MemEfficiency: 1}
	chunk := milliseconds(bare.StepTime(prefill(256)))
	assert.InDelta(t, 11.67, chunk, 0.005, "the weights and the chunk's KV at 3 TB/s")
	assert.Greater(t, chunk, 0.035*256, "more than the line gives the chunk's tokens")
	point := milliseconds(bare.StepTime(decodes(32, 2000)))
	// O_step + 32·O_seq + point/e = 45 and O_step + O_seq + chunk/e = 28.96.
	seq := func(e float64) float64 { return (45 - 28.96 - (point-chunk)/e) / 31 }
	step := func(e float64) float64 { return 28.96 - seq(e) - chunk/e }
	assert.InDelta(t, 0.461, seq(1), 0.001)
	e0 := (chunk - (point-chunk)/31) / (28.96 - 16.04/31) // step(e0) = 0
	assert.InDelta(t, 0.4085, e0, 0.0005, "the efficiency at which StepOverhead reaches 0")
	assert.InDelta(t, 0, step(e0), 1e-9)
	assert.InDelta(t, 0.380, seq(e0), 0.001)
}

// docs/atlas.md quotes ExampleAtlasShapes's table: each of its lines must
// be one the example prints.
func TestAtlasDocQuotesTheShapesTable(t *testing.T) {
	var out strings.Builder
	printShapes(&out)
	doc, err := os.ReadFile("../docs/atlas.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(doc), "## Models of another shape")
	require.True(t, ok, "docs/atlas.md has no section on the shapes")
	_, block, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	assert.Equal(t, out.String(), block)
}
