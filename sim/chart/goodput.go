package chart

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim/analysis"
)

// Goodput draws a curve's goodput against offered load (both requests/s):
// the mean goodput with its interval as a shaded band and error bars, the
// ok-request throughput, the transport line goodput = offered, the knee
// with its interval (a shaded vertical band), the peak, the start of
// collapse, and the operating load op with its headroom to the knee (op
// = 0 draws none). When the sweep declared its cost model's error
// (c.Band), the goodput under each model of the band is drawn lighter
// beside the nominal one, and the knee's model range as a bracket along
// the foot of the chart, open towards the edge (an arrow) on a side where
// a model's knee lies beyond the loads swept. Marks the curve did not
// find are left out, and so is the goodput of a load whose windows
// measured no request (analysis.Point.NoMeasured): the legend names those
// loads instead of drawing a goodput of 0. The y axis ends a little above
// the highest figure drawn; the legend sits above the data.
func Goodput(c *analysis.Curve, op float64) (*plot.Plot, error) {
	if len(c.Points) == 0 {
		return nil, errors.New("chart: the curve has no points")
	}
	p := newPlot(fmt.Sprintf("Goodput vs offered load (SLO attainment target %g)", c.Target),
		"offered load (req/s)", "goodput and throughput (req/s)")
	top := topOf(c)
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, top
	p.X.Max = 1.04 * c.Points[len(c.Points)-1].Load
	if op > 0 {
		p.X.Max = math.Max(p.X.Max, 1.02*op)
	}
	steps := []func(*plot.Plot, *analysis.Curve, float64) error{
		addKneeBand, addTransport, addBand, addThroughput, addGoodput, addModelCurves, addUnmeasured, addKnee, addKneeRange, addPeak, addCollapse,
	}
	for _, step := range steps {
		if err := step(p, c, top); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
	}
	if op > 0 {
		if err := addOperating(p, c, op, top); err != nil {
			return nil, fmt.Errorf("chart: %w", err)
		}
	}
	placeLegend(p)
	return p, nil
}

// topOf is the y range's top: a small margin above the highest goodput
// bound and throughput drawn (the band's curves' goodput included), or
// above the highest load when nothing rose above 0 (no load measured a
// request).
func topOf(c *analysis.Curve) float64 {
	top := dataTop(c)
	if c.Band != nil {
		for _, v := range c.Band.Variants {
			if v.Curve != nil {
				for _, pt := range measured(v.Curve) {
					if finite(pt.Goodput.Center) {
						top = math.Max(top, pt.Goodput.Center)
					}
				}
			}
		}
	}
	if !(top > 0) {
		top = c.Points[len(c.Points)-1].Load
	}
	return fitTop(top)
}

// dataTop is the highest goodput bound and throughput of c's points.
func dataTop(c *analysis.Curve) float64 {
	top := 0.0
	for _, pt := range c.Points {
		if finite(pt.Throughput.Center) {
			top = math.Max(top, pt.Throughput.Center)
		}
		if pt.NoMeasured() && !overloaded(&pt) {
			continue
		}
		if finite(pt.Goodput.Center) {
			top = math.Max(top, pt.Goodput.Center)
		}
		if finite(pt.Goodput.Hi) {
			top = math.Max(top, pt.Goodput.Hi)
		}
	}
	return top
}

// measured are the points with a goodput to draw: those where some
// replication measured a request, and those whose runs stopped on their
// backlog bound before measuring any (sim.Summary.Overloaded: past the
// knee, their goodput of 0 is what the replica achieved).
func measured(c *analysis.Curve) []*analysis.Point {
	var out []*analysis.Point
	for i := range c.Points {
		if p := &c.Points[i]; !p.NoMeasured() || overloaded(p) {
			out = append(out, p)
		}
	}
	return out
}

// overloaded reports whether a run of p stopped on its backlog bound.
func overloaded(p *analysis.Point) bool {
	for i := range p.Runs {
		if p.Runs[i].Overloaded {
			return true
		}
	}
	return false
}

// addTransport draws y = x up to the top of the plot.
func addTransport(p *plot.Plot, c *analysis.Curve, top float64) error {
	end := math.Min(c.Points[len(c.Points)-1].Load, top)
	l, err := line(plotter.XYs{{X: 0, Y: 0}, {X: end, Y: end}}, grey, 1, dashed)
	if err != nil {
		return err
	}
	p.Add(l)
	p.Legend.Add("transport: goodput = offered", l)
	return nil
}

// addBand shades the goodput interval between the points.
func addBand(p *plot.Plot, c *analysis.Curve, _ float64) error {
	var lo, hi plotter.XYs
	for _, pt := range measured(c) {
		if finite(pt.Goodput.Lo, pt.Goodput.Hi) {
			lo = append(lo, plotter.XY{X: pt.Load, Y: pt.Goodput.Lo})
			hi = append(hi, plotter.XY{X: pt.Load, Y: pt.Goodput.Hi})
		}
	}
	if len(lo) < 2 {
		return nil // one replication: no interval to shade
	}
	ring := append(lo, reverse(hi)...)
	band, err := plotter.NewPolygon(ring)
	if err != nil {
		return err
	}
	band.Color, band.LineStyle.Width = fade(blue, 60), 0
	p.Add(band)
	return nil
}

func reverse(xys plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xys))
	for i, xy := range xys {
		out[len(xys)-1-i] = xy
	}
	return out
}

// addThroughput draws the ok requests per second, thin, for the gap
// between what was served and what was good.
func addThroughput(p *plot.Plot, c *analysis.Curve, _ float64) error {
	var xys plotter.XYs
	for _, pt := range c.Points {
		if finite(pt.Throughput.Center) {
			xys = append(xys, plotter.XY{X: pt.Load, Y: pt.Throughput.Center})
		}
	}
	l, s, err := linePoints(xys, purple, 1.2, nil, draw.CrossGlyph{}, 2.5)
	if err != nil {
		return err
	}
	p.Add(l, s)
	p.Legend.Add("throughput: ok requests/s, good or not", l, s)
	return nil
}

// addGoodput draws the mean goodput with points, and error bars where
// the point has an interval.
func addGoodput(p *plot.Plot, c *analysis.Curve, _ float64) error {
	var xys, withCI plotter.XYs
	var errs plotter.YErrors
	for _, pt := range measured(c) {
		g := pt.Goodput
		xys = append(xys, plotter.XY{X: pt.Load, Y: g.Center})
		if finite(g.Lo, g.Hi) {
			withCI = append(withCI, plotter.XY{X: pt.Load, Y: g.Center})
			errs = append(errs, struct{ Low, High float64 }{g.Center - g.Lo, g.Hi - g.Center})
		}
	}
	if len(xys) == 0 {
		return nil // addUnmeasured says why
	}
	l, s, err := linePoints(xys, blue, 2, nil, draw.CircleGlyph{}, 2.5)
	if err != nil {
		return err
	}
	p.Add(l, s)
	label := "goodput: mean over replications (no intervals: one replication)"
	if len(withCI) > 0 {
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{withCI, errs})
		if err != nil {
			return err
		}
		bars.Color, bars.CapWidth = blue, vg.Points(4)
		p.Add(bars)
		label = fmt.Sprintf("goodput: mean over replications, %g %% interval", 100*c.Confidence)
	}
	if c.Band != nil {
		label = strings.Replace(label, "goodput:", "goodput under the model as given:", 1)
	}
	p.Legend.Add(label, l, s)
	return nil
}

// addUnmeasured names, in the legend, the loads whose windows measured no
// request: they have no goodput, and none is drawn.
func addUnmeasured(p *plot.Plot, c *analysis.Curve, _ float64) error {
	var loads []string
	for _, pt := range c.Points {
		if pt.NoMeasured() && !overloaded(&pt) {
			loads = append(loads, fmt.Sprintf("%.3g", pt.Load))
		}
	}
	switch {
	case len(loads) == 0:
	case len(loads) == len(c.Points):
		p.Legend.Add("no measured requests at any load: no goodput to draw")
	default:
		p.Legend.Add(fmt.Sprintf("no measured requests at %s req/s: no goodput drawn there", strings.Join(loads, ", ")))
	}
	return nil
}
