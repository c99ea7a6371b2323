package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// handKneeResult is a knee experiment's result written by hand, routing's
// shape at high reuse: PrefixAffinity's knee over RoundRobin's, 8.55 ->
// 9.25 req/s paired +0.700 [0.400, 1.000], the latency readout at two
// loads, a warning, and a band (step times ±10 % and Atlas's three
// shapes, on 4 of the 12 blocks) whose linear shape flips the verdict.
func handKneeResult() (analysis.Experiment, *analysis.ExperimentResult) {
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "PrefixAffinity raises the knee by at least 5 % over RoundRobin", Metric: analysis.MetricKnee, Threshold: 0.05},
		A:          sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		B:          sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		Loads:      []float64{7.7, 9.4}, Blocks: 12, BaseSeed: 7,
		ModelError: analysis.AtlasBand(0.1),
	}
	x.ModelError.Reps = 4
	est := func(c, lo, hi float64, n int) stats.Interval {
		return stats.Interval{Center: c, Lo: lo, Hi: hi, Confidence: 0.95, N: n}
	}
	lat := func(ttft50, ttft99a, ttft99b, itlA, itlB float64) []analysis.MetricDiff {
		return []analysis.MetricDiff{
			{Metric: analysis.MetricTTFTP50.Name, A: est(ttft50, ttft50-4, ttft50+4, 12), B: est(ttft50-20, ttft50-24, ttft50-16, 12), Diff: est(-20, -23.5, -16.5, 12), LowerIsBetter: true},
			{Metric: analysis.MetricTTFTP99.Name, A: est(ttft99a, ttft99a-30, ttft99a+30, 12), B: est(ttft99b, ttft99b-40, ttft99b+40, 12), Diff: est(ttft99b-ttft99a, ttft99b-ttft99a-25, ttft99b-ttft99a+25, 12), LowerIsBetter: true},
			{Metric: analysis.MetricITLP99.Name, A: est(itlA, itlA-1, itlA+1, 12), B: est(itlB, itlB-1, itlB+1, 12), Diff: est(itlB-itlA, itlB-itlA-0.5, itlB-itlA+0.5, 12), LowerIsBetter: true},
		}
	}
	bounded := analysis.Warning{Kind: analysis.WarnKneeCensored, Knee: analysis.Knee{Load: est(9.4, math.NaN(), math.NaN(), 1), Censored: analysis.AboveHighest, LastMet: 9.4, Target: 0.95}}
	r := &analysis.ExperimentResult{
		Hypothesis: x.Hypothesis, Blocks: 12,
		Regime:       "the knee of each block's curve over the 2 loads (1 blocks paired through a knee beyond the loads, understating the difference; 0 left out, both knees beyond the same end)",
		BaselineKnee: math.NaN(),
		Improvement:  est(0.082, 0.047, 0.117, 12), Verdict: analysis.Improved,
		PastImprovement: est(math.NaN(), math.NaN(), math.NaN(), 0), PastVerdict: analysis.NoMeasured,
		Loads: []analysis.LoadResult{
			{Load: 7.7, A: est(0.998, 0.996, 1, 12), B: est(1, 1, 1, 12), Improvement: est(0.002, 0, 0.004, 12), Verdict: analysis.NotImproved, Latency: lat(230, 493, 625, 136, 136)},
			{Load: 9.4, A: est(0.759, 0.7, 0.818, 12), B: est(0.962, 0.95, 0.974, 12), Improvement: est(0.27, 0.2, 0.34, 12), Verdict: analysis.Improved, Latency: lat(260, 2900, 640, 136, 136)},
		},
		KneeBounds: 1,
		KneeA:      est(8.55, 8.3, 8.8, 12), KneeB: est(9.25, 9.0, 9.5, 12), KneeDiff: est(0.7, 0.4, 1.0, 12),
		Warnings:      []string{"block 3: " + bounded.String()},
		TypedWarnings: []analysis.Warning{bounded},
		ModelError:    x.ModelError,
	}
	r.Band = []analysis.VariantVerdict{
		{Name: "step times ×1.1", Blocks: 4, Improvement: est(0.09, 0.06, 0.12, 4), Verdict: analysis.Improved, KneeDiff: est(0.7, 0.45, 0.95, 4)},
		{Name: "step times ×0.9", Blocks: 4, Improvement: est(0.075, 0.055, 0.095, 4), Verdict: analysis.Improved, KneeDiff: est(0.72, 0.5, 0.94, 4)},
		{Name: "atlas-linear", Blocks: 4, Improvement: est(0.002, -0.01, 0.014, 4), Verdict: analysis.NotImproved, KneeDiff: est(0.02, -0.1, 0.14, 4)},
		{Name: "atlas-roofline", Blocks: 4, Improvement: est(0.004, -0.02, 0.028, 4), Verdict: analysis.NotImproved, KneeDiff: est(0.04, -0.2, 0.28, 4)},
		{Name: "atlas-profiled", Blocks: 4, Improvement: est(math.NaN(), math.NaN(), math.NaN(), 0), Verdict: analysis.NoMeasured, KneeDiff: est(math.NaN(), math.NaN(), math.NaN(), 0), KneeUnpaired: 4},
	}
	r.BandFlip = &r.Band[2]
	return x, r
}

// handKneeCard is the experiment's card, its system and build set by
// hand so that other packages' config fields do not move its golden.
func handKneeCard() (Card, *analysis.ExperimentResult) {
	x, r := handKneeResult()
	c := NewExperimentCard(x, r)
	c.Title = "PrefixAffinity against RoundRobin on the knee, under a declared model band"
	c.Workload = CardWorkload{Description: "synthetic, high prefix reuse", Fingerprint: "sha256:0123abcd"}
	c.System = System{Engine: []Setting{{"MaxSeqs", "32"}}, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}}, Run: []Setting{{"Router", "PrefixAffinity"}}}
	c.Baseline = &System{Engine: []Setting{{"MaxSeqs", "32"}}, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}}, Run: []Setting{{"Router", "RoundRobin"}}}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	c.Scenario, c.Rerun = nil, "set by hand in the test"
	return c, r
}

// A banded knee experiment's card shows, in Markdown and JSON, the knees
// and their paired difference, the latency readout at each load (B − A
// as PairedDiff prints it), the warnings, and the verdict under each
// model of the band: each variant's name and verdict, and the band's
// verdict in BandVerdict's words.
func TestCardOfABandedKneeExperimentGolden(t *testing.T) {
	c, r := handKneeCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	require.NoError(t, c.WriteJSON(&js))
	checkGolden(t, "card_knee.md", md.Bytes())
	checkGolden(t, "card_knee.json", js.Bytes())
	s := md.String()
	for _, v := range r.Band {
		assert.Regexp(t, `\n\| `+v.Name+` \| 4 \| [^\n]* \| `+v.Verdict.String()+` \|\n`, s, "the variant's row")
	}
	assert.Contains(t, s, "| nominal | 12 | +8.2 % [+4.7 %, +11.7 %] | +0.700 [0.400, 1.000] | improved |")
	assert.Contains(t, s, "The verdict "+r.BandVerdict()+".\n")
	assert.Equal(t, "rests on the model: under atlas-linear +0.2 % [-1.0, +1.4] not improved; under atlas-roofline +0.4 % [-2.0, +2.8] not improved; under atlas-profiled no block's knees were compared (in 4 of 4 blocks both lie beyond the same end of the loads), so no verdict", r.BandVerdict())
	assert.Contains(t, s, "Model error declared before the runs: step times ±10 %, atlas-linear, atlas-roofline, atlas-profiled.")
	assert.Contains(t, s, "| B − A, paired | +0.700 [0.400, 1.000] |")
	assert.Contains(t, s, "| 9.4 | TTFT p99 (ms) | 2900 [2870, 2930] | 640 [600, 680] | -2260.0 [-2285.0, -2235.0] |")
	assert.Contains(t, s, "| 7.7 | ITL p99 (ms) | 136 [135, 137] | 136 [135, 137] | +0.0 [-0.5, +0.5] |")
	assert.Contains(t, s, "- "+r.Warnings[0]+"\n")
	assert.Contains(t, s, "1 of the blocks compared through a knee beyond the loads")
	assert.Contains(t, s, "| load (req/s) | attainment A | attainment B | improvement | verdict |")
	assert.Equal(t, []string{"# PrefixAffinity against RoundRobin on the knee, under a declared model band", "## A/B verdict: improved",
		"### Knee", "### Latency at the loads", "### Model band", "### Warnings",
		"## Workload", "## SLO and window", "## System B (the candidate)", "## System A (the baseline)", "## Reproduce", "## Raw events"}, headings(s))
	assert.NotContains(t, s, "NaN")
	assert.NotContains(t, s, "none declared")
}

// The card's JSON keeps the band, the latency readout, the warnings and
// the knees: read back and written again it is the same bytes, and every
// figure is the result's.
func TestCardOfABandedKneeExperimentRoundTrips(t *testing.T) {
	c, r := handKneeCard()
	js := jsonOf(t, &c)
	var back Card
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, string(js), string(jsonOf(t, &back)))

	v := back.Verdict
	require.NotNil(t, v.Band)
	assert.Equal(t, CardModelError{Scale: 0.1, Shapes: []string{"atlas-linear", "atlas-roofline", "atlas-profiled"}, Fragile: analysis.DefaultFragile,
		Text: "step times ±10 %, atlas-linear, atlas-roofline, atlas-profiled"}, v.Band.Declared)
	assert.False(t, v.Band.Holds)
	assert.Equal(t, "atlas-linear", v.Band.Flip)
	assert.Equal(t, r.BandVerdict(), v.Band.Text)
	require.Len(t, v.Band.Variants, len(r.Band))
	for i, w := range r.Band {
		got := v.Band.Variants[i]
		assert.Equal(t, w.Name, got.Name)
		assert.Equal(t, w.Verdict.String(), got.Verdict)
		assert.Equal(t, w.Blocks, got.Blocks)
		assert.Equal(t, w.KneeUnpaired, got.KneeUnpaired)
		if w.KneeDiff.N > 0 {
			assert.Equal(t, estimateOf(w.KneeDiff), got.KneeDiff, w.Name)
			assert.Equal(t, estimateOf(w.Improvement), got.Improvement, w.Name)
		} else {
			assert.True(t, math.IsNaN(float64(got.KneeDiff.Center)), "nothing compared: null, read back as NaN")
		}
	}
	require.NotNil(t, v.Knee)
	assert.Equal(t, CardKneeDiff{A: estimateOf(r.KneeA), B: estimateOf(r.KneeB), Diff: estimateOf(r.KneeDiff), Bounds: 1}, *v.Knee)
	assert.Equal(t, r.Warnings, v.Warnings)
	assert.Equal(t, []string{"knee censored"}, v.WarningKinds)
	require.Len(t, v.Loads, 2)
	for i, l := range r.Loads {
		require.Len(t, v.Loads[i].Latency, 3)
		for m, d := range l.Latency {
			got := v.Loads[i].Latency[m]
			assert.Equal(t, d.Metric, got.Metric)
			assert.Equal(t, estimateOf(d.A), got.A)
			assert.Equal(t, estimateOf(d.B), got.B)
			assert.Equal(t, estimateOf(d.Diff), got.Diff)
		}
	}
}

// A sweep's card whose experiment declared a band, routing's card: the
// curve ran under the nominal model only, and the card says which band
// the verdict was tested under instead of "none declared".
func TestCurveCardOfABandedExperimentNamesTheBand(t *testing.T) {
	_, r := handKneeResult()
	c := handCard()
	c.Verdict = CardVerdictOf(r)
	md := markdown(t, &c)
	assert.Contains(t, md, "Model error declared before the experiment: "+r.ModelError.String()+". This curve ran under the nominal model only")
	assert.NotContains(t, md, "none declared")
	assert.Contains(t, md, "#### Model band", "a subsection of the verdict, itself a subsection of the result")
	assert.Contains(t, md, "The verdict "+r.BandVerdict()+".\n")
}

// atlasKnee is a knee experiment on the Atlas replica, A the frozen 45 ms
// step and B the configuration given.
func atlasKnee(b sim.Config) analysis.Experiment {
	w := sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}
	b.Window = w
	return analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "B raises the knee by at least 5 %", Metric: analysis.MetricKnee, Threshold: 0.05},
		A:          sim.Config{Window: w}, B: b,
		Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*700)+10, workload.Fixed(2000, 200))
		}),
		Loads: []float64{1.6, 2, 2.4, 2.8}, Blocks: 4,
	}
}

// A real banded knee experiment: B's 35 ms decode step raises the knee,
// and under a shape that gives A and B the same flat 45 ms step the
// paired knee difference is exactly 0 (the same runs), so the verdict
// rests on the model. The card carries each variant as the result has
// it and prints the band's verdict in its words.
func TestNewExperimentCardOfARealBand(t *testing.T) {
	x := atlasKnee(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = analysis.ModelError{Scale: 0.1, Shapes: []costmodel.NamedModel{{Name: "flat-45ms", Model: costmodel.Frozen{}}}}
	r, err := x.Run()
	require.NoError(t, err)
	require.Equal(t, analysis.Improved, r.Verdict)
	c := NewExperimentCard(x, r)
	v := c.Verdict
	require.NotNil(t, v.Band)
	assert.Equal(t, "step times ±10 %, flat-45ms", v.Band.Declared.Text)
	require.Len(t, v.Band.Variants, 3)
	flat := v.Band.Variants[2]
	assert.Equal(t, "flat-45ms", flat.Name)
	assert.Equal(t, CardInterval{Center: 0, Lo: 0, Hi: 0, Confidence: 0.95, N: 4}, flat.KneeDiff, "A and B ran the same model: the same runs")
	assert.Equal(t, "not improved", flat.Verdict)
	assert.Equal(t, r.BandFlip.Name, v.Band.Flip)
	require.NotNil(t, v.Knee)
	assert.Equal(t, Num(r.KneeDiff.Center), v.Knee.Diff.Center)
	assert.Greater(t, float64(v.Knee.B.Center), float64(v.Knee.A.Center), "a faster step, a higher knee")
	md := markdown(t, &c)
	for _, w := range r.Band {
		assert.Contains(t, md, "| "+w.Name+" | 4 |")
		assert.Regexp(t, `\| `+w.Name+` \| 4 \| [^\n]* \| `+w.Verdict.String()+` \|\n`, md)
	}
	assert.Contains(t, md, "The verdict "+r.BandVerdict()+".\n")
	assert.Contains(t, md, "| flat-45ms | 4 | +0.0 % [+0.0 %, +0.0 %] | +0.000 [0.000, 0.000] | not improved |")
}

// An A/A knee experiment without a band: its latency readout is exactly
// zero at every load (A and B see the same requests on the same seed),
// and its card has no band section, in Markdown or JSON.
func TestExperimentCardWithoutABandHasNoBandSection(t *testing.T) {
	x := atlasKnee(sim.Config{})
	x.Blocks = 2
	r, err := x.Run()
	require.NoError(t, err)
	c := NewExperimentCard(x, r)
	assert.Nil(t, c.Verdict.Band)
	md := markdown(t, &c)
	assert.NotContains(t, md, "Model band")
	assert.NotContains(t, md, "model error")
	assert.NotContains(t, string(jsonOf(t, &c)), `"model_band"`)
	assert.Contains(t, md, "### Knee")
	assert.Contains(t, md, "| B − A, paired | +0.000 [0.000, 0.000] |")
	assert.Equal(t, len(x.Loads)*3, strings.Count(md, "| +0.0 [+0.0, +0.0] |"), "every latency metric at every load: B − A = 0")
}
