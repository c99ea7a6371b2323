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

	"github.com/servesim/servesim/sim"
)

// DialSeries is one dial sweep on a chart that compares several: the same
// dial turned under another setting of something else (the draft length K
// at each acceptance α, say).
type DialSeries struct {
	Name   string // the legend's label
	Result *sim.DialResult
}

// DialKnees draws the knees of several dial sweeps (requests/s) against
// the dial's value, on a linear axis ticked at the values swept: one line
// a series through its knees, each with its interval as error bars. A
// knee outside its value's sweep is a hollow triangle in the series'
// colour at the bound it lies beyond (pointing down: below the lowest
// load, which already missed the target; up: above the highest, which
// still met it), joined to the series' line by a dotted segment: the
// knee is somewhere past the mark, not at it. The series are shifted a
// little apart along the axis so that equal knees (a shared baseline)
// stay visible. Every series must turn the same dial.
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
	top, censored := 0.0, [2]bool{}
	for i, s := range series {
		shift := 0.018 * span * (float64(i) - float64(len(series)-1)/2)
		t, below, above, err := addDialSeries(p, s, i, shift)
		if err != nil {
			return nil, fmt.Errorf("chart: %s: %w", s.Name, err)
		}
		top = math.Max(top, t)
		censored[0], censored[1] = censored[0] || below, censored[1] || above
	}
	if err := addCensoredLegend(p, censored); err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	if !(top > 0) {
		top = 1
	}
	// Above the marks, the legend: a line a series and one a kind of
	// censored mark.
	entries := len(series)
	for _, c := range censored {
		if c {
			entries++
		}
	}
	p.Y.Min, p.Y.Max = 0, top*(1.12+0.075*float64(entries))
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
func kneeMarks(r *sim.DialResult, shift float64) []kneeMark {
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
		case k.Censored == sim.BelowLowest:
			out = append(out, kneeMark{x: x, y: k.FirstMiss, lo: k.FirstMiss, hi: k.FirstMiss, below: true})
		case k.Censored == sim.AboveHighest:
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

// addDialSeries draws series i: its line (solid between knees found,
// dotted to a censored mark), its knees with error bars, its censored
// marks; it returns the highest figure drawn and which censored marks it
// drew.
func addDialSeries(p *plot.Plot, s DialSeries, i int, shift float64) (top float64, below, above bool, err error) {
	col, glyph := palette[i%len(palette)], glyphs[i%len(glyphs)]
	marks := kneeMarks(s.Result, shift)
	if len(marks) == 0 {
		p.Legend.Add(s.Name + ": no knee at any value")
		return 0, false, false, nil
	}
	for j := 1; j < len(marks); j++ {
		a, b := marks[j-1], marks[j]
		dashes := []vg.Length(nil)
		if a.below || a.above || b.below || b.above {
			dashes = dotted
		}
		l, err := line(plotter.XYs{{X: a.x, Y: a.y}, {X: b.x, Y: b.y}}, col, width(i), dashes)
		if err != nil {
			return 0, false, false, err
		}
		p.Add(l)
	}
	var found, down, up plotter.XYs
	var errs plotter.YErrors
	for _, m := range marks {
		top = math.Max(top, m.hi)
		switch {
		case m.below:
			down = append(down, plotter.XY{X: m.x, Y: m.y})
		case m.above:
			up = append(up, plotter.XY{X: m.x, Y: m.y})
		default:
			found = append(found, plotter.XY{X: m.x, Y: m.y})
			errs = append(errs, struct{ Low, High float64 }{m.y - m.lo, m.hi - m.y})
		}
	}
	legend, err := addFoundKnees(p, found, errs, glyph, i)
	if err != nil {
		return 0, false, false, err
	}
	for _, c := range []struct {
		xys   plotter.XYs
		glyph draw.GlyphDrawer
	}{{down, downTriangle{}}, {up, draw.TriangleGlyph{}}} {
		if len(c.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(c.xys)
		if err != nil {
			return 0, false, false, err
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
	return top, len(down) > 0, len(up) > 0, nil
}

// addFoundKnees draws the knees found with their intervals, and returns
// the legend's thumbnails for them (nil when there are none).
func addFoundKnees(p *plot.Plot, xys plotter.XYs, errs plotter.YErrors, glyph draw.GlyphDrawer, i int) ([]plot.Thumbnailer, error) {
	if len(xys) == 0 {
		return nil, nil
	}
	c := palette[i%len(palette)]
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.Color, sc.Shape, sc.Radius = c, glyph, vg.Points(1+width(i))
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return nil, err
	}
	bars.Color, bars.CapWidth, bars.LineStyle.Width = c, vg.Points(6), vg.Points(1.2)
	p.Add(bars, sc)
	l, err := line(plotter.XYs{}, c, width(i), nil) // the legend's thumbnail only
	if err != nil {
		return nil, err
	}
	return []plot.Thumbnailer{l, sc}, nil
}

// addCensoredLegend explains the censored marks drawn, in grey.
func addCensoredLegend(p *plot.Plot, censored [2]bool) error {
	for k, c := range []struct {
		glyph draw.GlyphDrawer
		label string
	}{
		{downTriangle{}, "knee below the lowest load swept (marked at that load, dotted to it)"},
		{draw.TriangleGlyph{}, "knee above the highest load swept (marked at that load, dotted to it)"},
	} {
		if !censored[k] {
			continue
		}
		sc, err := plotter.NewScatter(plotter.XYs{{}}) // the legend's thumbnail only, never drawn
		if err != nil {
			return err
		}
		sc.Color, sc.Shape, sc.Radius = grey, c.glyph, vg.Points(4)
		p.Legend.Add(c.label, sc)
	}
	return nil
}
