package chart

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim/analysis"
)

// DialSeries is one dial sweep on a chart that compares several: the same
// dial turned under another setting of something else (the draft length K
// at each acceptance α, say).
type DialSeries struct {
	Name   string // the legend's label
	Result *analysis.DialResult
}

// DialKnees draws the knees of several dial sweeps (requests/s) against
// the dial's value, on a linear axis ticked at the values swept: one line
// a series through its knees, each with its interval as error bars. A
// knee outside its value's sweep is not a figure to join: it is a hollow
// triangle in the series' colour at the edge of the axis it lies beyond
// (pointing down at the foot: below the lowest load swept, which already
// missed the target; up at the top: above the highest, which still met
// it), and the series' line stops before it. The series are shifted a
// little apart along the axis so that equal knees (a shared baseline)
// stay visible, and differ in colour, glyph and dash pattern alike.
// Every series must turn the same dial.
func DialKnees(title string, series ...DialSeries) (*plot.Plot, error) {
	if err := checkDialSeries(series); err != nil {
		return nil, err
	}
	d := series[0].Result.Dial
	xlabel := d.Name
	if d.Unit != "" {
		xlabel += " (" + d.Unit + ")"
	}
	c0 := series[0].Result.Curves[0]
	if title == "" {
		title = fmt.Sprintf("Knee against %s (attainment target %g, %g %% intervals)", d.Name, c0.Target, 100*c0.Confidence)
	}
	p := newPlot(title, xlabel, "knee (req/s)")
	p.Legend.Padding = vg.Points(2.5) // the series' glyphs and triangles are tall
	values := dialValues(series)
	lo, hi := values[0], values[len(values)-1]
	span := math.Max(hi-lo, 1)
	p.X.Min, p.X.Max = lo-0.08*span, hi+0.08*span
	p.X.Tick.Marker = valueTicks(values)
	top := 0.0
	for _, s := range series {
		for _, m := range kneeMarks(s.Result, 0) {
			if !m.below && !m.above {
				top = math.Max(top, m.hi)
			}
		}
	}
	if !(top > 0) {
		top = 1
	}
	p.Y.Min, p.Y.Max = 0, fitTop(top)
	var censored [2][]float64 // the loads the below and above marks stand for
	for i, s := range series {
		shift := 0.018 * span * (float64(i) - float64(len(series)-1)/2)
		below, above, err := addDialSeries(p, s, i, shift)
		if err != nil {
			return nil, fmt.Errorf("chart: %s: %w", s.Name, err)
		}
		censored[0], censored[1] = append(censored[0], below...), append(censored[1], above...)
	}
	if err := addCensoredLegend(p, censored); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	placeLegend(p)
	return p, nil
}

// checkDialSeries refuses no series, a series without a result or values,
// and series that turn different dials.
func checkDialSeries(series []DialSeries) error {
	if len(series) == 0 {
		return errors.New("chart: no series to draw")
	}
	for _, s := range series {
		r := s.Result
		switch {
		case r == nil || len(r.Values) == 0 || len(r.Curves) != len(r.Values):
			return fmt.Errorf("chart: series %q has no values, or not one curve a value", s.Name)
		case r.Dial.Name != series[0].Result.Dial.Name:
			return fmt.Errorf("chart: series %q turns %s, the first series %s", s.Name, r.Dial.Name, series[0].Result.Dial.Name)
		}
	}
	return nil
}

// dialValues are every series' values, sorted, each once.
func dialValues(series []DialSeries) []float64 {
	var out []float64
	for _, s := range series {
		out = append(out, s.Result.Values...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// valueTicks labels an axis at the values swept, and nowhere else.
type valueTicks []float64

func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, x := range v {
		if x >= lo && x <= hi {
			out = append(out, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
	}
	return out
}

// kneeMark is one value's knee as drawn: at its centre (found), or at the
// bound it lies beyond (censored below or above).
type kneeMark struct {
	x, y, lo, hi float64
	below, above bool
}

// kneeMarks are a sweep's knees in the order of its values, shifted along
// x; values whose curve says nothing (no load measured) are left out.
func kneeMarks(r *analysis.DialResult, shift float64) []kneeMark {
	var out []kneeMark
	for i, c := range r.Curves {
		k, x := c.Knee, r.Values[i]+shift
		switch {
		case k.Found && finite(k.Load.Center):
			m := kneeMark{x: x, y: k.Load.Center, lo: k.Load.Center, hi: k.Load.Center}
			if finite(k.Load.Lo, k.Load.Hi) {
				m.lo, m.hi = k.Load.Lo, k.Load.Hi
			}
			out = append(out, m)
		case k.Censored == analysis.BelowLowest:
			out = append(out, kneeMark{x: x, y: k.FirstMiss, lo: k.FirstMiss, hi: k.FirstMiss, below: true})
		case k.Censored == analysis.AboveHighest:
			out = append(out, kneeMark{x: x, y: k.LastMet, lo: k.LastMet, hi: k.LastMet, above: true})
		}
	}
	slices.SortFunc(out, func(a, b kneeMark) int { return cmpFloat(a.x, b.x) })
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// addDialSeries draws series i: its line (between consecutive knees
// found; it stops at a censored one), its knees with error bars, its
// censored marks at the axis's edges; it returns the loads its censored
// marks stand for (the lowest load swept of each knee below it, the
// highest of each above).
func addDialSeries(p *plot.Plot, s DialSeries, i int, shift float64) (below, above []float64, err error) {
	st := seriesStyle(i)
	col := st.color
	marks := kneeMarks(s.Result, shift)
	if len(marks) == 0 {
		p.Legend.Add(s.Name + ": no knee at any value")
		return nil, nil, nil
	}
	for _, run := range foundRuns(marks) {
		l, err := line(run, col, width(i), st.dashes)
		if err != nil {
			return nil, nil, err
		}
		p.Add(l)
	}
	var found, down, up plotter.XYs
	var errs plotter.YErrors
	for _, m := range marks {
		switch {
		case m.below:
			down = append(down, plotter.XY{X: m.x, Y: p.Y.Min})
			below = append(below, m.y)
		case m.above:
			up = append(up, plotter.XY{X: m.x, Y: p.Y.Max})
			above = append(above, m.y)
		default:
			found = append(found, plotter.XY{X: m.x, Y: m.y})
			errs = append(errs, struct{ Low, High float64 }{m.y - m.lo, m.hi - m.y})
		}
	}
	legend, err := addFoundKnees(p, found, errs, st, i)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range []struct {
		xys   plotter.XYs
		glyph draw.GlyphDrawer
	}{{down, downTriangle{}}, {up, upTriangle{}}} {
		if len(c.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(c.xys)
		if err != nil {
			return nil, nil, err
		}
		sc.Color, sc.Shape, sc.Radius = col, c.glyph, vg.Points(5)
		p.Add(sc)
		if legend == nil {
			legend = []plot.Thumbnailer{sc}
		}
	}
	name := s.Name + ": knee, 95 % interval as error bars"
	if c := s.Result.Curves[0]; c.Confidence != 0.95 {
		name = fmt.Sprintf("%s: knee, %g %% interval as error bars", s.Name, 100*c.Confidence)
	}
	if len(found) == 0 {
		name = s.Name + ": no knee inside its sweeps"
	}
	p.Legend.Add(name, legend...)
	return below, above, nil
}

// foundRuns are the polylines a series' line draws: through each run of
// consecutive knees found (of two or more), never to a censored knee,
// which is not a figure to join.
func foundRuns(marks []kneeMark) []plotter.XYs {
	var out []plotter.XYs
	var run plotter.XYs
	for _, m := range append(marks, kneeMark{below: true}) { // a sentinel ends the last run
		if !m.below && !m.above {
			run = append(run, plotter.XY{X: m.x, Y: m.y})
			continue
		}
		if len(run) >= 2 {
			out = append(out, run)
		}
		run = nil
	}
	return out
}

// addFoundKnees draws the knees found with their intervals, and returns
// the legend's thumbnails for them (nil when there are none).
func addFoundKnees(p *plot.Plot, xys plotter.XYs, errs plotter.YErrors, st style, i int) ([]plot.Thumbnailer, error) {
	if len(xys) == 0 {
		return nil, nil
	}
	c := st.color
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.Color, sc.Shape, sc.Radius = c, st.glyph, vg.Points(1+width(i))
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return nil, err
	}
	bars.Color, bars.CapWidth, bars.LineStyle.Width = c, vg.Points(6), vg.Points(1.2)
	p.Add(bars, sc)
	l, err := line(plotter.XYs{}, c, width(i), st.dashes) // the legend's thumbnail only
	if err != nil {
		return nil, err
	}
	return []plot.Thumbnailer{l, sc}, nil
}

// addCensoredLegend explains the censored marks drawn, in grey, naming
// the load they stand for when every mark of a kind stands for the same.
func addCensoredLegend(p *plot.Plot, censored [2][]float64) error {
	for k, c := range []struct {
		glyph draw.GlyphDrawer
		label string
		edge  string
	}{
		{downTriangle{}, "knee below the lowest load swept", "open triangle at the foot of the axis, not joined"},
		{upTriangle{}, "knee above the highest load swept", "open triangle at the top of the axis, not joined"},
	} {
		loads := censored[k]
		if len(loads) == 0 {
			continue
		}
		label := c.label
		if slices.Min(loads) == slices.Max(loads) {
			label += " (" + rate(loads[0]) + ")"
		}
		sc, err := plotter.NewScatter(plotter.XYs{{}}) // the legend's thumbnail only, never drawn
		if err != nil {
			return err
		}
		sc.Color, sc.Shape, sc.Radius = grey, c.glyph, vg.Points(4)
		p.Legend.Add(label+": "+c.edge, sc)
	}
	return nil
}
