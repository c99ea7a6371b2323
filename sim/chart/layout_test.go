package chart

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// bandedCurve is a curve as examples/capacity draws it: a knee found at
// 2.01, and a model band whose slower model's knee lies below the lowest
// load swept (0.5) and whose faster one's is at 2.253.
func bandedCurve() *analysis.Curve {
	est := func(c, lo, hi float64) stats.Interval { return stats.Interval{Center: c, Lo: lo, Hi: hi, N: 4} }
	pt := func(load, g float64) analysis.Point {
		return analysis.Point{Load: load, Runs: []sim.Summary{{Offered: 100}}, Goodput: est(g, 0.97*g, 1.03*g), Throughput: est(load, load, load)}
	}
	curve := func(gs ...float64) *analysis.Curve {
		c := &analysis.Curve{Target: 0.95, Confidence: 0.95}
		for i, g := range gs {
			c.Points = append(c.Points, pt(0.5*float64(i+1), g))
		}
		return c
	}
	c := curve(0.5, 1, 1.5, 1.9, 1.2)
	c.Knee = analysis.Knee{Found: true, Load: est(2.01, 1.92, 2.13), LastMet: 2, FirstMiss: 2.5}
	c.Peak = analysis.Peak{Load: 2, Goodput: est(1.9, 1.85, 1.95)}
	slow := curve(0.45, 0.8, 1.1, 0.9, 0.3)
	slow.Knee = analysis.Knee{Censored: analysis.BelowLowest, FirstMiss: 0.5}
	fast := curve(0.5, 1, 1.5, 2, 2.2, 2.4) // runs past the nominal loads
	fast.Knee = analysis.Knee{Found: true, Load: est(2.253, 2.2, 2.3)}
	c.Band = &analysis.Band{
		Declared: analysis.ModelError{Scale: 0.1},
		Variants: []analysis.Variant{{Name: "step times ×1.1", Curve: slow}, {Name: "step times ×0.9", Curve: fast}},
		Knee:     analysis.Range{Lo: 0.5, Hi: 2.253, LoBelow: true},
		Fragile:  true,
	}
	return c
}

// Issue 32: the capacity chart carries the model band — each model's
// curve, and the knee's model range as a bracket that runs to the left
// edge where a model's knee lies below the loads swept — and its y axis
// ends near the data, the legend above them.
func TestGoodputDrawsTheModelBand(t *testing.T) {
	c := bandedCurve()
	p, err := Goodput(c, 1.5)
	require.NoError(t, err)
	svg := svgOf(t, p)
	for _, want := range []string{
		"model range of the knee [&lt; 0.5, 2.253] req/s under step times ±10 %",
		"goodput under step times ×1.1 (model band), mean",
		"goodput under step times ×0.9 (model band), mean",
		"goodput under the model as given: mean over replications, 95 % interval",
		"it rests on the accuracy of the model",
		">&lt; 0.5<", ">2.25<",
	} {
		assert.True(t, strings.Contains(svg, want), want)
	}
	assert.Equal(t, bracket{x0: 0, x1: 2.253, openLo: true}, kneeBracket(c.Band.Knee, p.X.Min, p.X.Max),
		"the bracket runs from the left edge (the knee lies below 0.5) to the highest knee of the band")
	assert.Equal(t, bracket{x0: 1.1, x1: 2.6, openHi: true}, kneeBracket(analysis.Range{Lo: 1.1, Hi: 2.5, HiAbove: true}, 0, 2.6))
	assert.Equal(t, bracket{x0: 1.1, x1: 2.5}, kneeBracket(analysis.Range{Lo: 1.1, Hi: 2.5}, 0, 2.6))
	// The faster model's curve runs to 3 req/s; the chart keeps the
	// nominal loads (2.5, and a 4 % margin).
	assert.InDelta(t, 2.6, p.X.Max, 1e-9)
	// The highest figure drawn is the throughput at 2.5 req/s (the faster
	// model's goodput, cut at the edge, reaches 2.26).
	assert.InDelta(t, 2.5*1.06, p.Y.Max, 1e-9, "the y axis ends 6 % above the data")
	assert.Equal(t, 0.0, p.Y.Min)
}

func TestClipX(t *testing.T) {
	xys := clipX(plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 3, Y: 0}}, 2.5)
	assert.Equal(t, plotter.XYs{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 2.5, Y: 1}}, xys)
	assert.Len(t, clipX(plotter.XYs{{X: 1, Y: 1}}, 2), 1)
	assert.Empty(t, clipX(plotter.XYs{{X: 3, Y: 1}}, 2))
}

// The goodput chart's y axis ends within 10 % of the highest figure it
// draws (it ran to 1.55 times it, to leave room for the legend, which
// now sits above the data); so do the other charts' where they have no
// natural bound.
func TestAxesFitTheData(t *testing.T) {
	c := atlasCurve(t)
	g, err := Goodput(c, 1.5)
	require.NoError(t, err)
	hi := dataTop(c)
	assert.LessOrEqual(t, g.Y.Max, 1.1*hi)
	assert.GreaterOrEqual(t, g.Y.Max, hi)
	assert.Greater(t, legendHeight(g), vg.Length(0))
	assert.InDelta(t, float64(titleGap+legendHeight(g)+legendGap), float64(g.Title.Padding), 1e-9, "the legend's strip")
}

// Every legend fits on the default page (18 cm wide): none runs past
// the right edge, as the dial chart's Δ note did.
func TestLegendsFitThePage(t *testing.T) {
	plots := charts(t)
	g, err := Goodput(bandedCurve(), 1.5)
	require.NoError(t, err)
	plots["banded"] = g
	g, err = Goodput(atlasBandCurve(), 1.5)
	require.NoError(t, err)
	plots["banded, five models"] = g
	for name, p := range plots {
		assertLegendFits(t, p, name)
	}
}

// assertLegendFits asserts that p's legend fits on the default page: the
// data area, where the legend starts, begins about 60 points in from the
// left edge (the y axis).
func assertLegendFits(t *testing.T, p *plot.Plot, name string) {
	t.Helper()
	assert.Less(t, legendWidth(p), 18*vg.Centimeter-vg.Points(60), "%s: the legend runs past the page", name)
}

// Issue 32: in a comparison, every series' knee has a marker in a row of
// its own at the foot of the chart, so that equal knees (RoundRobin and
// LeastLoaded at 8.55 and 8.56 req/s) stay apart.
func TestGoodputsKneeRows(t *testing.T) {
	rows := map[float64]bool{}
	for i := range 5 {
		y := kneeRow(i)
		assert.False(t, rows[y])
		rows[y] = true
		assert.Less(t, y, 0.25, "along the foot")
		if i > 0 {
			assert.InDelta(t, 0.045, y-kneeRow(i-1), 1e-12)
		}
	}
	assert.Equal(t, dashDot, kneeDashes(seriesStyle(0)), "a solid series' knee line is dash-dot")
	assert.Equal(t, dotted, kneeDashes(seriesStyle(2)))
}

// Series differ in colour, glyph and dash pattern alike, so that two
// lying on each other (RoundRobin and LeastLoaded) both show.
func TestSeriesStylesDiffer(t *testing.T) {
	for i := range 25 {
		for j := range i {
			a, b := seriesStyle(i), seriesStyle(j)
			same := a.color == b.color && a.glyph == b.glyph && dashKey(a.dashes) == dashKey(b.dashes)
			assert.False(t, same, "series %d and %d", i, j)
		}
	}
	for i := 1; i < 5; i++ {
		a, b := seriesStyle(i), seriesStyle(i-1)
		assert.NotEqual(t, a.color, b.color)
		assert.NotEqual(t, a.glyph, b.glyph)
		assert.NotEqual(t, dashKey(a.dashes), dashKey(b.dashes))
	}
}

func dashKey(d []vg.Length) string { return fmt.Sprint(d) }

// atlasBandCurve is bandedCurve under analysis.AtlasBand(0.1): step times
// ±10 % and Atlas's three shapes, five models beside the nominal one, as
// examples/capacity -shapes draws them.
func atlasBandCurve() *analysis.Curve {
	c := bandedCurve()
	c.Band.Declared = analysis.AtlasBand(0.1)
	for _, name := range []string{"atlas-linear", "atlas-roofline", "atlas-profiled"} {
		c.Band.Variants = append(c.Band.Variants, analysis.Variant{Name: name, Curve: c.Band.Variants[1].Curve})
	}
	return c
}

// Issue 34: each model of a five-model band (AtlasBand) is drawn in a
// style of its own (the fifth repeated the first's glyph and dashes),
// and each is named in the legend.
func TestGoodputTellsEveryModelOfTheBandApart(t *testing.T) {
	n := len(atlasBandCurve().Band.Variants)
	require.Equal(t, 5, n)
	for i := range n {
		for j := range i {
			assert.NotEqual(t, variantGlyphs[i%len(variantGlyphs)], variantGlyphs[j%len(variantGlyphs)], "variants %d and %d", i, j)
			assert.NotEqual(t, dashKey(variantDashes[i%len(variantDashes)]), dashKey(variantDashes[j%len(variantDashes)]), "variants %d and %d", i, j)
		}
	}
	p, err := Goodput(atlasBandCurve(), 1.5)
	require.NoError(t, err)
	svg := svgOf(t, p)
	for _, name := range []string{"step times ×1.1", "step times ×0.9", "atlas-linear", "atlas-roofline", "atlas-profiled"} {
		assert.Contains(t, svg, "goodput under "+name+" (model band), mean")
	}
	assert.Contains(t, svg, "model range of the knee [&lt; 0.5, 2.253] req/s under step times ±10 %, atlas-linear, atlas-roofline, atlas-profiled")
}
