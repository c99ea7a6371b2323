package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// handDial is a chunk-cap dial sweep written by hand (the baseline no
// cap, 1024 a lower knee, 128 none inside the loads), so that the golden
// files pin the card's rendering, not the analysis.
func handDial() (analysis.DialSweep, *analysis.DialResult) {
	base := handCurve()
	lower := handCurve()
	lower.Knee = analysis.Knee{Load: simEst(1.3, 1.1, 1.5), Found: true, LastMet: 1, FirstMiss: 2}
	lower.Warnings = nil
	none := handCurve()
	none.Knee = analysis.Knee{Load: simEst(math.NaN(), math.NaN(), math.NaN()), Censored: analysis.BelowLowest, FirstMiss: 0.5, Target: 0.95}
	none.Warnings = nil
	probe := func(c *analysis.Curve) analysis.Point { return c.Points[0] }
	d := analysis.DialSweep{
		Sweep: analysis.Sweep{Config: sim.Config{Window: sim.Window{Warmup: 60e9, Horizon: 600e9}}, BaseSeed: 7},
		Dial:  analysis.DialChunkCap, Values: []float64{0, 1024, 128}, Probe: 0.5,
	}
	r := &analysis.DialResult{Dial: d.Dial, Values: d.Values, Curves: []*analysis.Curve{base, lower, none},
		KneeDiff: []stats.Interval{simEst(0, 0, 0), simEst(-0.3, -0.42, -0.18), {Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Confidence: 0.95}},
		Probe:    []analysis.Point{probe(base), probe(lower), probe(none)}}
	return d, r
}

func handDialCard() Card {
	c := NewDialCard(handDial())
	c.Title = "Atlas TP4: the knee against the chunk cap"
	c.Claim = "A 1024-token chunk cap raises the knee by at least 5 % over vLLM's defaults."
	c.System = System{Engine: []Setting{{"ChunkCap", "0"}, {"MaxBatchedTokens", "2048"}}, Model: "costmodel.Frozen"}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	c.Command = "go run ./examples/chunksweep"
	return c
}

// The card of a dial sweep lists the dial, its values, the baseline and
// the probe load, and per value the knee and the paired difference, each
// with its interval.
func TestDialCardGolden(t *testing.T) {
	c := handDialCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	checkGolden(t, "card_dial.md", md.Bytes())
	require.NoError(t, c.WriteJSON(&js))
	checkGolden(t, "card_dial.json", js.Bytes())

	var back Card
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.NotNil(t, back.Dial)
	assert.Equal(t, "Engine.ChunkCap", back.Dial.Dial)
	assert.Equal(t, []float64{0, 1024, 128}, back.Dial.Values)
	assert.Equal(t, Num(0.5), back.Dial.Probe)
	assert.Equal(t, c.Dial.Rows[1].KneeDiff, back.Dial.Rows[1].KneeDiff)
	assert.True(t, math.IsNaN(float64(back.Dial.Rows[2].KneeDiff.Center)), "no paired difference reads back as NaN")
	assert.Empty(t, back.Results.Points, "the dial sweep is the result")
}

// A card from a real dial sweep: the baseline's difference is exactly 0,
// the system is the baseline's, every value ran on the same seeds.
func TestNewDialCardFromASweep(t *testing.T) {
	d := analysis.DialSweep{
		Sweep: analysis.Sweep{
			Config: sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
			Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
				return workload.NewPoisson(seed, rate, int(rate*600)+10, workload.Fixed(2000, 200))
			}),
			Grid: analysis.Grid{Loads: []float64{1.4, 1.8, 2.2, 2.6}}, Reps: 3, BaseSeed: 5,
		},
		Dial: analysis.DialTokenBudget, Values: []float64{1024, 2048}, Baseline: 1, Probe: 1,
	}
	r, err := d.Run()
	require.NoError(t, err)
	c := NewDialCard(d, r)
	assert.Contains(t, c.System.Engine, Setting{"MaxBatchedTokens", "2048"}, "the baseline's system")
	assert.Equal(t, []uint64{analysis.Seed(5, 0), analysis.Seed(5, 1), analysis.Seed(5, 2)}, c.Seeds.Derived)
	require.Len(t, c.Dial.Rows, 2)
	b := c.Dial.Rows[1].KneeDiff
	assert.Equal(t, []Num{0, 0, 0}, []Num{b.Center, b.Lo, b.Hi}, "the baseline against itself")
	assert.Equal(t, 2048.0, c.Dial.Baseline)
	assert.Equal(t, []float64{1.4, 1.8, 2.2, 2.6}, c.Dial.Rows[0].Loads)
	require.NotNil(t, c.Dial.Rows[0].Probe)
	assert.Equal(t, 1.0, c.Dial.Rows[0].Probe.Load)

	var md bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "## Result: dial sweep over `Engine.MaxBatchedTokens` (tokens)")
	assert.Contains(t, md.String(), "| 2048 (baseline) |")
	assert.Contains(t, md.String(), "## System at the baseline (Engine.MaxBatchedTokens = 2048)")
	assert.NotContains(t, md.String(), "### Curve")
}
