package chart

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// Series is one configuration's curve on a chart that compares several:
// a router of a fleet, a chunk cap, a replica type.
type Series struct {
	Name  string // the legend's label
	Curve *analysis.Curve
}

// palette are the series' colours in order, Okabe–Ito; a sixth series
// takes the first colour again.
var palette = []color.RGBA{blue, vermilion, green, orange, purple}

// glyphs tell the series apart where colours do not print (with
// seriesDashes: seriesStyle).
// (A filled triangle: the hollow ones mark censored knees.)
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}

// width is series i's line width: each series is drawn thinner than the
// one before, so that a series lying on another still shows.
func width(i int) float64 { return math.Max(2.8-0.7*float64(i), 1) }

// Goodputs draws the goodput of several curves against offered load (both
// requests/s) on one axis: each series' mean goodput with its interval as
// a band and error bars, and its knee as a vertical line in its colour
// and dashes, with a marker in a row of its own along the foot of the
// chart and the knee's interval as a horizontal bar through it (so that
// equal knees stay apart), named in the legend with its interval; the
// transport line goodput = offered is common to all. Series differ in
// colour, glyph and dash pattern alike, so that two lying on each other
// both show. Loads whose windows measured no request are left out, as
// Goodput leaves them.
func Goodputs(title string, series ...Series) (*plot.Plot, error) {
	if err := checkSeries(series); err != nil {
		return nil, err
	}
	if title == "" {
		title = "Goodput vs offered load"
	}
	p := newPlot(title, "offered load (req/s)", "goodput (req/s)")
	top, last := 0.0, 0.0
	for _, s := range series {
		top = math.Max(top, goodputTop(s.Curve))
		last = math.Max(last, s.Curve.Points[len(s.Curve.Points)-1].Load)
	}
	if !(top > 0) {
		top = last
	}
	top = fitTop(top)
	p.X.Min, p.Y.Min, p.X.Max, p.Y.Max = 0, 0, 1.04*last, top
	tr, err := line(plotter.XYs{{X: 0, Y: 0}, {X: math.Min(last, top), Y: math.Min(last, top)}}, grey, 1, dashed)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	p.Add(tr)
	p.Legend.Add("transport: goodput = offered", tr)
	for i, s := range series {
		if err := addSeriesGoodput(p, s, i, top); err != nil {
			return nil, fmt.Errorf("chart: %s: %w", s.Name, err)
		}
	}
	placeLegend(p)
	return p, nil
}

// goodputTop is the highest goodput bound of c's measured points (the
// throughput, which Goodputs does not draw, left out).
func goodputTop(c *analysis.Curve) float64 {
	top := 0.0
	for _, pt := range measured(c) {
		for _, v := range []float64{pt.Goodput.Center, pt.Goodput.Hi} {
			if finite(v) {
				top = math.Max(top, v)
			}
		}
	}
	return top
}

// checkSeries refuses no series, or a series without a curve or points.
func checkSeries(series []Series) error {
	if len(series) == 0 {
		return errors.New("chart: no series to draw")
	}
	for _, s := range series {
		if s.Curve == nil || len(s.Curve.Points) == 0 {
			return fmt.Errorf("chart: series %q has no points", s.Name)
		}
	}
	return nil
}

// addSeriesGoodput draws series i: band, line with glyphs, error bars,
// knee.
func addSeriesGoodput(p *plot.Plot, s Series, i int, top float64) error {
	st := seriesStyle(i)
	col, glyph := st.color, st.glyph
	var xys, lo, hi, withCI plotter.XYs
	var errs plotter.YErrors
	for _, pt := range measured(s.Curve) {
		g := pt.Goodput
		xys = append(xys, plotter.XY{X: pt.Load, Y: g.Center})
		if finite(g.Lo, g.Hi) {
			lo, hi = append(lo, plotter.XY{X: pt.Load, Y: g.Lo}), append(hi, plotter.XY{X: pt.Load, Y: g.Hi})
			withCI = append(withCI, plotter.XY{X: pt.Load, Y: g.Center})
			errs = append(errs, struct{ Low, High float64 }{g.Center - g.Lo, g.Hi - g.Center})
		}
	}
	if len(xys) == 0 {
		p.Legend.Add(s.Name + ": no measured requests at any load")
		return nil
	}
	if len(lo) >= 2 {
		band, err := plotter.NewPolygon(append(lo, reverse(hi)...))
		if err != nil {
			return err
		}
		band.Color, band.LineStyle.Width = fade(col, 45), 0
		p.Add(band)
	}
	l, sc, err := linePoints(xys, col, width(i), st.dashes, glyph, 1+width(i))
	if err != nil {
		return err
	}
	p.Add(l, sc)
	label := s.Name + ": goodput (no intervals: one replication)"
	if len(withCI) > 0 {
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{withCI, errs})
		if err != nil {
			return err
		}
		bars.Color, bars.CapWidth = col, vg.Points(3)
		p.Add(bars)
		label = fmt.Sprintf("%s: goodput, %g %% interval", s.Name, 100*s.Curve.Confidence)
	}
	p.Legend.Add(label, l, sc)
	return addSeriesKnee(p, s, i, top)
}

// kneeRow is the height of series i's knee marker, as a fraction of the
// y axis: a row a series along the foot of the chart.
func kneeRow(i int) float64 { return 0.035 + 0.045*float64(i) }

// addSeriesKnee draws series i's knee as a vertical line in its colour
// and dashes, and as its glyph in a row of its own along the foot of the
// chart with the knee's interval as a horizontal bar, with its value and
// interval in the legend; a knee the sweep did not find is named as such,
// never drawn.
func addSeriesKnee(p *plot.Plot, s Series, i int, top float64) error {
	k := s.Curve.Knee
	if !k.Found || !finite(k.Load.Center) {
		p.Legend.Add(s.Name + ": no knee inside the sweep")
		return nil
	}
	st := seriesStyle(i)
	y := kneeRow(i) * top
	l, err := vline(k.Load.Center, y, top, st.color, kneeDashes(st))
	if err != nil {
		return err
	}
	l.Width = vg.Points(math.Min(width(i), 1.6))
	p.Add(l)
	mark := plotter.XYs{{X: k.Load.Center, Y: y}}
	sc, err := plotter.NewScatter(mark)
	if err != nil {
		return err
	}
	sc.Color, sc.Shape, sc.Radius = st.color, st.glyph, vg.Points(3.5)
	label := fmt.Sprintf("%s: knee %s", s.Name, rate(k.Load.Center))
	if finite(k.Load.Lo, k.Load.Hi) {
		label += fmt.Sprintf(" [%.3g, %.3g] (marker and bar at the foot)", k.Load.Lo, k.Load.Hi)
		bars, err := plotter.NewXErrorBars(struct {
			plotter.XYs
			plotter.XErrors
		}{mark, plotter.XErrors{{Low: k.Load.Center - k.Load.Lo, High: k.Load.Hi - k.Load.Center}}})
		if err != nil {
			return err
		}
		bars.Color, bars.CapWidth, bars.LineStyle.Width = st.color, vg.Points(5), vg.Points(1.5)
		p.Add(bars)
	}
	p.Add(sc)
	p.Legend.Add(label, l, sc)
	return nil
}

// kneeDashes are a knee line's dashes: the series', and dash-dot for the
// series whose line is solid, so that a knee never reads as data.
func kneeDashes(st style) []vg.Length {
	if st.dashes == nil {
		return dashDot
	}
	return st.dashes
}

// PrefixHitRate draws the fraction of prompt tokens served from a prefix
// cache against offered load (requests/s), one line per series: the mean
// over each load's replications of Summary.Cached / Summary.InputTokens,
// with its range across the replications as error bars. It shows what a
// prefix-aware router changes in a fleet: the same requests find more of
// their prompt cached. Loads without prompt tokens measured are left out.
func PrefixHitRate(title string, series ...Series) (*plot.Plot, error) {
	if err := checkSeries(series); err != nil {
		return nil, err
	}
	if title == "" {
		title = "Prefix hit rate vs offered load"
	}
	p := newPlot(title, "offered load (req/s)", "prefix hit rate (fraction of prompt tokens)")
	last := 0.0
	for i, s := range series {
		last = math.Max(last, s.Curve.Points[len(s.Curve.Points)-1].Load)
		if err := addHitRate(p, s, i); err != nil {
			return nil, fmt.Errorf("chart: %s: %w", s.Name, err)
		}
	}
	// A fraction's axis spans its bounds.
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1.04*last, 0, 1
	placeLegend(p)
	return p, nil
}

// addHitRate draws series i's prefix hit rate per load.
func addHitRate(p *plot.Plot, s Series, i int) error {
	st := seriesStyle(i)
	col, glyph := st.color, st.glyph
	var xys plotter.XYs
	var errs plotter.YErrors
	for _, pt := range s.Curve.Points {
		mean, lo, hi, ok := hitRate(pt.Runs)
		if !ok {
			continue
		}
		xys = append(xys, plotter.XY{X: pt.Load, Y: mean})
		errs = append(errs, struct{ Low, High float64 }{mean - lo, hi - mean})
	}
	if len(xys) == 0 {
		p.Legend.Add(s.Name + ": no prompt tokens measured")
		return nil
	}
	l, sc, err := linePoints(xys, col, width(i), st.dashes, glyph, 1+width(i))
	if err != nil {
		return err
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return err
	}
	bars.Color, bars.CapWidth = col, vg.Points(3)
	p.Add(l, sc, bars)
	p.Legend.Add(s.Name+": mean over replications, bars their range", l, sc)
	return nil
}

// hitRate is the mean, least and greatest prefix hit rate of the runs
// that measured prompt tokens.
func hitRate(runs []sim.Summary) (mean, lo, hi float64, ok bool) {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for i := range runs {
		if runs[i].InputTokens == 0 {
			continue
		}
		h := float64(runs[i].Cached) / float64(runs[i].InputTokens)
		mean += h
		lo, hi, n = math.Min(lo, h), math.Max(hi, h), n+1
	}
	if n == 0 {
		return 0, 0, 0, false
	}
	return mean / float64(n), lo, hi, true
}
