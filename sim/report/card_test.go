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

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

func simEst(c, lo, hi float64) stats.Interval {
	return stats.Interval{Center: c, Lo: lo, Hi: hi, Confidence: 0.95, N: 4}
}

// handCurve is a curve written by hand, so that the card's golden files
// pin the card's rendering, not the analysis that makes curves.
func handCurve() *analysis.Curve {
	pt := func(load, good, att, ttft, itl float64, sat analysis.Saturation, warn ...string) analysis.Point {
		runs := make([]sim.Summary, 4)
		for i := range runs {
			runs[i].Offered = 100 // measured something: the point has an attainment
		}
		all := ttft // over every offered request: more where requests failed
		if sat == analysis.Overloaded {
			all = 4 * ttft
		}
		return analysis.Point{Load: load, Runs: runs, Offered: simEst(load, load*0.98, load*1.02), Throughput: simEst(load, load*0.98, load*1.02),
			Goodput: simEst(good, good*0.97, good*1.03), Attainment: simEst(att, att-0.01, math.Min(att+0.01, 1)),
			TTFT:        analysis.Percentiles{P50: simEst(120, 110, 130), P99: simEst(ttft, ttft*0.9, ttft*1.1)},
			TTFTOffered: analysis.Percentiles{P50: simEst(120, 110, 130), P99: simEst(all, all*0.9, all*1.1)},
			ITL:         analysis.Percentiles{P50: simEst(45, 45, 45), P99: simEst(itl, itl*0.95, itl*1.05)},
			WorstITL:    analysis.Percentiles{P99: simEst(itl, itl*0.95, itl*1.05)}, // the largest step: most requests meet it
			MissNotOK:   simEst(0, math.NaN(), math.NaN()), MissTTFT: simEst(load-good, 0, 2*(load-good)),
			Saturation: sat, Warnings: warn}
	}
	return &analysis.Curve{
		Points: []analysis.Point{
			pt(0.5, 0.5, 1, 210, 74, analysis.Stable),
			pt(1, 0.99, 0.99, 380, 74, analysis.Stable),
			pt(2, 1.86, 0.93, 720, 136, analysis.Backlogged),
			pt(3, 1.2, 0.4, 9000, 140, analysis.Overloaded, "TTFT p99 from 80 requests: fewer than 10 beyond it"),
		},
		Target: 0.95, Confidence: 0.95, SLO: sim.SLO{TTFT: sim.DefaultTTFT, ITL: sim.DefaultITL, TPOT: sim.Unbounded, E2E: sim.Unbounded},
		Knee:     analysis.Knee{Load: simEst(1.6, 1.45, 1.75), Found: true, LastMet: 1, FirstMiss: 2},
		Peak:     analysis.Peak{Load: 2, Goodput: simEst(1.86, 1.8, 1.92)},
		Collapse: analysis.Collapse{Load: 3, Found: true},
		Warnings: []string{"load 2 meets the target but is backlogged: its window is no steady state"},
	}
}

func handCard() Card {
	sw := analysis.Sweep{Config: sim.Config{Engine: engine.Config{ChunkCap: 512}, Window: sim.Window{Warmup: 60e9, Horizon: 600e9}}, BaseSeed: 7}
	c := NewCard(sw, handCurve(), 1.2)
	c.Title = "Atlas TP4, chunk cap 512"
	c.Claim = "With a 512-token chunk cap, the Atlas TP4 replica keeps ≥ 95 % SLO attainment up to 1.5 req/s of 2,000-token prompts."
	c.Workload = CardWorkload{
		Description: "open-loop Poisson; lengths fixed(2000, 200)",
		Arrival:     "Poisson, rate swept 0.5–3 req/s", Lengths: "input 2,000 tokens, output 200 tokens (fixed)",
		Correlation: "none (fixed lengths)", Prefix: "none", Loop: "open-loop: arrivals are external",
		Concurrency: "unbounded", CacheState: "empty prefix cache at the start; 60 s warm-up dropped",
		Fingerprint: "sha256:0123abcd",
	}
	// Set by hand: other packages' config fields must not move this golden.
	c.System = System{
		Engine: []Setting{{"MaxSeqs", "0"}, {"ChunkCap", "512"}, {"Policy", "<nil>"}},
		Model:  "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}},
		Run: []Setting{{"Timeout", "0s"}, {"ErrorRate", "0"}},
	}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	c.Command = "go test ./sim/report -run TestCardMarkdownGolden"
	c.Events = EventsOf("runs/atlas-chunk512/events.jsonl", "jsonl", sim.Config{})
	c.Verdict = &CardVerdict{
		Claim: "chunk cap 512 improves goodput over 2048 by ≥ 5 %", Metric: "goodput (req/s)", Threshold: 0.05, Blocks: 10,
		Improvement: estimateOf(simEst(0.08, 0.06, 0.1)), Verdict: "improved", Boundary: "B beats the threshold at 1.5, 2 req/s",
		Loads: []LoadVerdict{
			{Load: 1.5, A: estimateOf(simEst(1.4, 1.38, 1.42)), B: estimateOf(simEst(1.49, 1.47, 1.5)), Improvement: estimateOf(simEst(0.064, 0.055, 0.073)), Verdict: "improved"},
			{Load: 2, A: estimateOf(simEst(1.7, 1.65, 1.75)), B: estimateOf(simEst(1.86, 1.8, 1.92)), Improvement: estimateOf(simEst(0.094, 0.07, 0.12)), Verdict: "improved"},
		},
	}
	c.Notes = []string{"Second day: rerun with the same seeds; any difference beyond the intervals is a change in the simulator (see revision)."}
	return c
}

func TestCardMarkdownGolden(t *testing.T) {
	c := handCard()
	var buf bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&buf))
	checkGolden(t, "card.md", buf.Bytes())
}

func TestCardJSONGolden(t *testing.T) {
	c := handCard()
	var buf bytes.Buffer
	require.NoError(t, c.WriteJSON(&buf))
	checkGolden(t, "card.json", buf.Bytes())

	var back Card
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, c.Claim, back.Claim)
	assert.Equal(t, c.Results.Knee.Load.Center, back.Results.Knee.Load.Center)
	assert.True(t, math.IsNaN(float64(back.Results.Points[0].MissNotOK.Lo)), "null reads back as NaN")
	assert.True(t, math.IsNaN(float64(back.SLO.TPOT)), "an unbounded SLO is null")
	assert.Equal(t, c.Verdict.Loads, back.Verdict.Loads)
}

// A card from a real sweep says what it was computed from.
func TestNewCardFromASweep(t *testing.T) {
	sw := smallSweep()
	c := NewCard(sw, smallCurve(t), 1.5)
	assert.Equal(t, analysis.AnalysisRevision(), c.AnalysisRevision)
	assert.Equal(t, Module, c.Build.Module)
	assert.NotEmpty(t, c.Build.Revision, "a revision or Unknown, never empty")
	require.Len(t, c.Seeds.Derived, 2)
	assert.Equal(t, analysis.Seed(7, 1), c.Seeds.Derived[1])
	assert.Len(t, c.Results.Points, 3)
	assert.Equal(t, 1.5, c.Results.Headroom.Operating)
	// The card shows what ran: defaults filled in.
	assert.Contains(t, c.System.Engine, Setting{"MaxSeqs", "32"})
	assert.Contains(t, c.System.Engine, Setting{"KVBlocks", "28672"})
	assert.Contains(t, c.System.Engine, Setting{"Policy", "engine.FCFS"})
	assert.Equal(t, "costmodel.Frozen (nil: the default)", c.System.Model)
	assert.Equal(t, Num(600), c.SLO.TTFT)
	assert.Equal(t, 10.0, c.Window.Warmup)

	var buf bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&buf))
	md := buf.String()
	for _, want := range []string{"**Claim.** *not stated*", "| knee: highest load with attainment ≥ 0.95 |", "## Raw events\n\nNot recorded"} {
		assert.Contains(t, md, want)
	}
	assert.Equal(t, 3, strings.Count(md, "| stable |")+strings.Count(md, "| backlogged |")+strings.Count(md, "| overloaded |"))
}

func TestVerdictOfAnExperiment(t *testing.T) {
	sw := smallSweep()
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "A/A: B is A", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sw.Config, B: sw.Config, Workload: sw.Workload, Loads: []float64{1, 2}, Blocks: 3,
	}
	r, err := x.Run()
	require.NoError(t, err)
	v := CardVerdictOf(r)
	assert.Equal(t, "A/A: B is A", v.Claim)
	assert.Equal(t, "not improved", v.Verdict)
	require.Len(t, v.Loads, 2)
	assert.Equal(t, Num(0), v.Loads[0].Improvement.Center)
}

// Without a knee inside the sweep the card gives no headroom figure.
func TestCardHeadroomWithoutAKnee(t *testing.T) {
	c := handCurve()
	c.Knee = analysis.Knee{Load: simEst(3, math.NaN(), math.NaN()), Censored: analysis.AboveHighest, LastMet: 3, Target: 0.95}
	c.Warnings = []string{c.Knee.Reason()}
	card := NewCard(analysis.Sweep{}, c, 1.2)
	var buf bytes.Buffer
	require.NoError(t, card.WriteMarkdown(&buf))
	md := buf.String()
	assert.Contains(t, md, "| headroom at the operating point 1.2 req/s | unknown: no knee inside the sweep | — |")
	assert.Contains(t, md, "| knee: highest load with attainment ≥ 0.95 | not found in the sweep (see below) |")
	assert.Contains(t, md, "- every measured load meets the 0.95 attainment target: the knee is above 3\n")
}

// An experiment's card carries the claim, both systems and the verdict, and
// no curve; its fingerprint covers the stream every load scales.
func TestNewExperimentCard(t *testing.T) {
	w := analysis.Poisson(workload.Fixed(100, 10))
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "A/A", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sim.Config{Window: sim.Window{Horizon: 2 * time.Minute}},
		B:          sim.Config{Window: sim.Window{Horizon: 2 * time.Minute}},
		Workload:   w, Loads: []float64{1}, Blocks: 2,
	}
	res, err := x.Run()
	require.NoError(t, err)
	c := NewExperimentCard(x, res)
	require.NotNil(t, c.Baseline)
	assert.Equal(t, "not improved", c.Verdict.Verdict)
	assert.Len(t, c.Seeds.Derived, 2)
	var md bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "System A (the baseline)")
	assert.NotContains(t, md.String(), "knee:")
	fp, err := CardFingerprint(w, 1, 50)
	require.NoError(t, err)
	again, _ := CardFingerprint(w, 1, 50)
	assert.Equal(t, fp, again)
	assert.Contains(t, fp, "first 50 requests of seed 1")
}

// A verdict says which loads its headline covers, and carries the loads
// past the baseline's knee apart.
func TestVerdictOfAnExperimentPastTheKnee(t *testing.T) {
	sw := smallSweep()
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "A/A", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sw.Config, B: sw.Config, Workload: sw.Workload, Loads: []float64{1, 4}, Blocks: 2,
	}
	r, err := x.Run()
	require.NoError(t, err)
	v := CardVerdictOf(r)
	assert.Equal(t, r.Regime, v.Regime)
	assert.Contains(t, v.Regime, "at or below the baseline's knee")
	require.NotNil(t, v.Past, "4 req/s is past the Atlas knee")
	assert.Equal(t, r.PastVerdict.String(), v.Past.Verdict)
	assert.Equal(t, Num(0), v.Past.Improvement.Center, "A/A")

	c := NewExperimentCard(x, r)
	var md bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "Improvement of B over A, averaged over "+r.Regime+": +0.0 %")
	assert.Contains(t, md.String(), "Past the baseline's knee, where A collapses and any relative gain is large: "+v.Past.Verdict+", +0.0 %")
}
