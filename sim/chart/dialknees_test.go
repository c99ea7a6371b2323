package chart

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
	"gonum.org/v1/plot/plotter"
)

// draftSweep sweeps the draft length K (0 and 4, free drafting) at
// acceptance α on the chapter's workload.
func draftSweep(t *testing.T, alpha float64) *analysis.DialResult {
	t.Helper()
	k := analysis.DialFunc("Speculation.Tokens", "draft tokens a step", func(c *sim.Config, v float64) {
		c.Speculation = sim.Speculation{}
		if v > 0 {
			c.Speculation = sim.Speculation{Tokens: int(v), Acceptance: alpha}
		}
	})
	r, err := analysis.DialSweep{
		Sweep: analysis.Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: 20 * time.Second, Horizon: 200 * time.Second}},
			Workload: analysis.Poisson(workload.Fixed(2000, 200)),
			Grid:     analysis.Grid{Loads: []float64{1, 1.5, 2, 2.5, 3, 3.5, 4.5}}, Reps: 2,
		},
		Dial: k, Values: []float64{0, 4},
	}.Run()
	require.NoError(t, err)
	return r
}

// The knees of two dial sweeps, one line each, render as PNG and SVG on
// the default page, the dial's values as the axis's ticks.
func TestDialKneesRenders(t *testing.T) {
	lo, hi := draftSweep(t, 0.5), draftSweep(t, 0.9)
	require.True(t, hi.Curves[1].Knee.Found, "K = 4 at α = 0.9: %v", hi.Curves[1].Knee.Reason())
	p, err := DialKnees("", DialSeries{Name: "α = 0.5", Result: lo}, DialSeries{Name: "α = 0.9", Result: hi})
	require.NoError(t, err)
	assert.Equal(t, "Speculation.Tokens (draft tokens a step)", p.X.Label.Text)
	assert.Contains(t, p.Title.Text, "Knee against Speculation.Tokens (attainment target 0.95, 95 % intervals)")
	ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
	require.Len(t, ticks, 2)
	assert.Equal(t, "0", ticks[0].Label)
	assert.Equal(t, "4", ticks[1].Label)
	assert.Greater(t, p.Y.Max, hi.Curves[1].Knee.Load.Hi, "the intervals fit under the legend")
	checkImages(t, "dialknees", p, 650)

	var svg bytes.Buffer
	require.NoError(t, Write(&svg, SVG, p))
	assert.Contains(t, svg.String(), "α = 0.9: knee, 95 % interval as error bars")
	assert.NotContains(t, svg.String(), "knee below the lowest load swept", "no knee is censored")
}

// A knee below its sweep is marked at the lowest load, with its kind
// named once in the legend; a series whose every knee is censored says
// so.
func TestDialKneesMarksCensoredKnees(t *testing.T) {
	r := draftSweep(t, 0.5)
	c := *r.Curves[1]
	c.Knee = analysis.Knee{Load: stats.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, Censored: analysis.BelowLowest, FirstMiss: 1}
	r.Curves[1] = &c
	marks := kneeMarks(r, 0)
	require.Len(t, marks, 2)
	assert.Equal(t, kneeMark{x: 4, y: 1, lo: 1, hi: 1, below: true}, marks[1])

	base := *r.Curves[0]
	base.Knee = analysis.Knee{Load: stats.Interval{Center: math.NaN()}, Censored: analysis.AboveHighest, LastMet: 4.5}
	all := &analysis.DialResult{Dial: r.Dial, Values: r.Values, Curves: []*analysis.Curve{&base, &c}}
	p, err := DialKnees("spec", DialSeries{Name: "α = 0.5", Result: r}, DialSeries{Name: "censored", Result: all})
	require.NoError(t, err)
	var svg bytes.Buffer
	require.NoError(t, Write(&svg, SVG, p))
	for _, want := range []string{"knee below the lowest load swept", "knee above the highest load swept", "censored: no knee inside its sweeps"} {
		assert.Contains(t, svg.String(), want)
	}
	assert.Equal(t, 1, bytes.Count(svg.Bytes(), []byte("knee below the lowest load swept")), "named once, not once a series")
	assert.Contains(t, svg.String(), "knee below the lowest load swept (1 req/s): open triangle at the foot of the axis, not joined")
	assert.Contains(t, svg.String(), "knee above the highest load swept (4.5 req/s): open triangle at the top of the axis, not joined")
	assert.Equal(t, 0.0, p.Y.Min)
	assert.InDelta(t, 1.06*r.Curves[0].Knee.Load.Hi, p.Y.Max, 1e-9, "the axis fits the knees found, not the bounds of censored ones")
}

// Issue 32: a censored knee is not joined to the series' line (a dotted
// line to the lowest load read as a measured knee there): the line runs
// through consecutive knees found only.
func TestFoundRunsStopAtCensoredKnees(t *testing.T) {
	found := func(x, y float64) kneeMark { return kneeMark{x: x, y: y, lo: y, hi: y} }
	marks := []kneeMark{found(0, 2), found(2, 2.5), found(4, 2.4), {x: 8, y: 0.5, below: true}}
	assert.Equal(t, []plotter.XYs{{{X: 0, Y: 2}, {X: 2, Y: 2.5}, {X: 4, Y: 2.4}}}, foundRuns(marks))
	marks = []kneeMark{found(0, 2), {x: 1, y: 4.5, above: true}, found(2, 2.5), found(4, 2.4), {x: 8, y: 0.5, below: true}, found(16, 1)}
	assert.Equal(t, []plotter.XYs{{{X: 2, Y: 2.5}, {X: 4, Y: 2.4}}}, foundRuns(marks), "a lone knee between censored ones has no line")
	assert.Empty(t, foundRuns([]kneeMark{{x: 8, y: 0.5, below: true}}))
}

func TestDialKneesRefusesWhatItCannotDraw(t *testing.T) {
	r := draftSweep(t, 0.7)
	_, err := DialKnees("")
	assert.ErrorContains(t, err, "no series")
	_, err = DialKnees("", DialSeries{Name: "nil"})
	assert.ErrorContains(t, err, `series "nil" has no values`)
	other := *r
	other.Dial = analysis.DialChunkCap
	_, err = DialKnees("", DialSeries{Name: "a", Result: r}, DialSeries{Name: "b", Result: &other})
	assert.ErrorContains(t, err, `series "b" turns Engine.ChunkCap, the first series Speculation.Tokens`)
}
