package main

// Issue 10's checks: the estimate and the simulation describe one replica,
// and the report says how far its knee can be trusted.

import (
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// study runs what the report runs for args (without printing it): the
// replica, its estimate and the curve of its sweep.
func study(t *testing.T, args ...string) (costmodel.Replica, costmodel.Estimate, *analysis.Curve) {
	t.Helper()
	r, o, err := parse(io.Discard, append(args, "-out", ""))
	require.NoError(t, err)
	e, err := r.Estimate()
	require.NoError(t, err)
	s, err := sweepFor(r, e, o)
	require.NoError(t, err)
	c, err := s.Run()
	require.NoError(t, err)
	return r, e, c
}

// "-chunk 256 and -chunk 1024 print different simulated curves and
// different largest-step figures": the chunk cap reaches the engine that
// ran, and the one-chunk mixed step moves with it (73.96 against
// 100.84 ms); the worst case does not, the budget still filling with
// several prompts' chunks.
func TestChunkCapMovesTheSimulationAndTheEstimate(t *testing.T) {
	args := []string{"-loads", "1,2,2.5", "-reps", "2", "-horizon", "4m", "-model-error", "0"}
	var reports [2]string
	for i, chunk := range []string{"256", "1024"} {
		var out strings.Builder
		require.NoError(t, run(&out, append(args, "-chunk", chunk, "-out", "")))
		reports[i] = out.String()
	}
	table := func(s string) string { return s[strings.Index(s, "Simulated goodput curve"):] }
	assert.NotEqual(t, table(reports[0]), table(reports[1]), "the simulated curves differ")
	assert.Regexp(t, `\n  one-chunk mixed step +73\.96 ms `, reports[0])
	assert.Regexp(t, `\n  one-chunk mixed step +100\.8 ms `, reports[1])
	assert.Contains(t, reports[0], "batch cap 32, 2048-token budget, 256-token chunk cap (chunked prefill")
	assert.Contains(t, reports[1], "batch cap 32, 2048-token budget, 1024-token chunk cap (chunked prefill")
	_, e256, c256 := study(t, append(args, "-chunk", "256")...)
	_, e1024, c1024 := study(t, append(args, "-chunk", "1024")...)
	assert.NotEqual(t, c256.Points[1].ITL.P50.Center, c1024.Points[1].ITL.P50.Center, "ITL p50 at 2 req/s")
	assert.Equal(t, 73.96, e256.MixedStep.Value)
	assert.InDelta(t, 100.84, e1024.MixedStep.Value, 1e-9)
	// The shorter step has its price: a 2,000-token prompt takes 8 chunks,
	// 664 ms on a busy replica with the step in progress, over the 600 ms
	// TTFT bound before any queueing. The estimate qualifies no load, and
	// the simulation misses the attainment target from the lowest load.
	assert.Zero(t, e256.TTFTQualified.Value)
	assert.Contains(t, reports[0], "over the TTFT SLO (600ms) before any queueing: no load qualifies")
	assert.Less(t, c256.Points[0].Attainment.Center, c256.Target, "attainment at 1 req/s")
	assert.False(t, c256.Knee.Found)
}

// The worst-case largest step is never below the longest inter-token gap
// simulated at the lowest load (no preemption there), whatever the dials.
func TestLargestStepBoundsTheSimulatedITL(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-chunk", "256"}, {"-chunk", "512"}, {"-budget", "1024"}, {"-batch", "16", "-output", "400"}, {"-prompt", "500"},
	} {
		_, e, c := study(t, append(args, "-loads", "0.5,1", "-reps", "2", "-horizon", "4m", "-model-error", "0")...)
		itl := maxITL(&c.Points[0])
		require.False(t, math.IsNaN(itl), "%v: some ITL at %v req/s", args, c.Points[0].Load)
		assert.GreaterOrEqual(t, e.LargestStep.Value, itl, "%v", args)
		t.Logf("%v: largest step %.4g ms, one-chunk %.4g ms, simulated max ITL %.4g ms", args, e.LargestStep.Value, e.MixedStep.Value, itl)
	}
}

// costmodel is a leaf and forms the largest steps itself; the engine's
// LargestStep, which the sweep's fragility warning uses, must agree.
func TestLargestStepAgreesWithTheEngine(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-chunk", "256"}, {"-chunk", "2048"}, {"-budget", "512"}, {"-batch", "1"}, {"-batch", "48", "-budget", "4096", "-chunk", "700"},
	} {
		r, _, err := parse(io.Discard, args)
		require.NoError(t, err)
		e, err := r.Estimate()
		require.NoError(t, err)
		ctx := r.Point.SeqTokens - 1
		worst, _ := engine.LargestStep(engineOf(r.Point), r.Cost, ctx, 0)
		mixed, _ := engine.LargestStep(engineOf(r.Point), r.Cost, ctx, 1)
		assert.InDelta(t, float64(worst)/1e6, e.LargestStep.Value, 1e-9, "%v: worst case", args)
		assert.InDelta(t, float64(mixed)/1e6, e.MixedStep.Value, 1e-9, "%v: one chunk", args)
	}
}

// The serving capacity is where the replica saturates when each prompt is
// prefilled in one step; a chunk cap or a small budget cuts prompts into
// chunks that may each pay a step, and the replica saturates between the
// two capacities. Far past them the backlog grows and the replica delivers
// its saturation throughput.
func TestSaturationLiesBetweenTheTwoCapacities(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-chunk", "256"}, {"-chunk", "512"}, {"-budget", "512"}, {"-batch", "16", "-output", "400"},
	} {
		r, _, err := parse(io.Discard, args)
		require.NoError(t, err)
		e, err := r.Estimate()
		require.NoError(t, err)
		p := r.Point
		cfg := sim.Config{Engine: engineOf(p), Model: r.Cost, Window: sim.Window{Warmup: 2 * time.Minute, Horizon: 15 * time.Minute}}
		src, err := workload.NewPoisson(1, 2*e.ServingCapacity.Value, 100000, workload.Fixed(p.PromptTokens, p.OutputTokens))
		require.NoError(t, err)
		sum, err := sim.Run(cfg, src, nil)
		require.NoError(t, err)
		require.Greater(t, sum.HeldAtEnd, sum.HeldAtStart+100, "%v: the backlog grows", args)
		got := sum.RequestThroughput
		assert.GreaterOrEqual(t, got, 0.99*e.ChunkedCapacity.Value, "%v", args)
		assert.LessOrEqual(t, got, 1.01*e.ServingCapacity.Value, "%v", args)
		t.Logf("%v: saturation %.3f req/s in [%.3f, %.3f]", args, got, e.ChunkedCapacity.Value, e.ServingCapacity.Value)
	}
	_, e, _ := study(t, "-estimate-only")
	assert.InDelta(t, 2.694, e.ServingCapacity.Value, 0.0005, "the Atlas default: 1 / (200 × 45/32 ms + 90 ms)")
}

// "Atlas defaults with ±10 %: the model range's low end is below
// 0.5 req/s and the fragility warning names the ITL bound; with
// ChunkCap 512 the range lies within [1.4, 2.1] req/s and there is no
// warning." Both with the report's default sweep; and the TTFT-qualified
// load is within a factor of two of the knee.
func TestModelRangeOfTheDefaultAndOfAChunkCap(t *testing.T) {
	_, e, c := study(t)
	require.NotNil(t, c.Band)
	lo := c.Band.Knee
	assert.True(t, lo.Lo < 0.5 || (lo.LoBelow && lo.Lo <= 0.5), "knee range %v: its low end is below 0.5 req/s", lo)
	assert.True(t, c.Band.Fragile)
	require.NotEmpty(t, c.Warnings)
	assert.Contains(t, strings.Join(c.Warnings, "\n"), "of the 150ms ITL bound")
	fragile := slices.IndexFunc(c.TypedWarnings, func(w analysis.Warning) bool { return w.Kind == analysis.WarnModelFragile })
	require.GreaterOrEqual(t, fragile, 0, "typed warnings %v", c.TypedWarnings)
	assert.Equal(t, 150*time.Millisecond, c.TypedWarnings[fragile].ITLBound)
	assert.Equal(t, c.Band.Knee, c.TypedWarnings[fragile].KneeRange)
	within(t, c, e)
	t.Logf("default: knee %.3f %v, model range %v", c.Knee.Load.Center, c.Knee.Load, c.Band.Knee)

	_, e, c = study(t, "-chunk", "512")
	require.NotNil(t, c.Band)
	assert.GreaterOrEqual(t, c.Band.Knee.Lo, 1.4, "knee range %v", c.Band.Knee)
	assert.LessOrEqual(t, c.Band.Knee.Hi, 2.1, "knee range %v", c.Band.Knee)
	assert.False(t, c.Band.Knee.LoBelow || c.Band.Knee.HiAbove, "%v", c.Band.Knee)
	assert.False(t, c.Band.Fragile)
	assert.Empty(t, c.Warnings)
	within(t, c, e)
	t.Logf("-chunk 512: knee %.3f %v, model range %v", c.Knee.Load.Center, c.Knee.Load, c.Band.Knee)
}

// within asserts the chapter's band: the knee lies within a factor of two
// of the TTFT-qualified load.
func within(t *testing.T, c *analysis.Curve, e costmodel.Estimate) {
	t.Helper()
	require.True(t, c.Knee.Found)
	q := e.TTFTQualified.Value
	assert.GreaterOrEqual(t, c.Knee.Load.Center, q/2)
	assert.LessOrEqual(t, c.Knee.Load.Center, 2*q)
}
