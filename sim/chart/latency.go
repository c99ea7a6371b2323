package chart

import (
	"errors"
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// series is one line of a chart: its points, colour, dashes and name.
type series struct {
	name   string
	xys    plotter.XYs
	color  color.Color
	glyph  draw.GlyphDrawer // nil: a circle
	dashes []vg.Length
	steps  bool // an empirical CDF: post-steps, no point markers
}

// Latency draws TTFT and ITL percentiles (p50, p90, p99, in ms, on a log
// axis) against offered load (requests/s), each centre of its interval,
// with the SLO's TTFT and ITL bounds as horizontal lines.
func Latency(c *analysis.Curve) (*plot.Plot, error) {
	if len(c.Points) == 0 {
		return nil, errors.New("chart: the curve has no points")
	}
	// A short y label: gonum places a log axis's label box at the
	// arithmetic middle of the range, near the top, and lowers the data
	// area by what it overhangs.
	p := newPlot("Latency percentiles vs offered load", "offered load (req/s)", "ms (log scale)")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	var all []series
	for _, m := range []struct {
		name  string
		c     color.Color
		glyph draw.GlyphDrawer
		of    func(*analysis.Point) analysis.Percentiles
	}{
		{"TTFT", blue, draw.CircleGlyph{}, func(pt *analysis.Point) analysis.Percentiles { return pt.TTFT }},
		{"ITL", orange, draw.SquareGlyph{}, func(pt *analysis.Point) analysis.Percentiles { return pt.ITL }},
	} {
		ss := percentileSeries(c, m.name, m.c, m.of)
		for i := range ss {
			ss[i].glyph = m.glyph
		}
		all = append(all, ss...)
	}
	if err := addSeries(p, all); err != nil {
		return nil, err
	}
	if err := addSLOLines(p, c); err != nil {
		return nil, err
	}
	if !drawn(all) {
		// No load measured a request: the frame spans the loads and the
		// legend says why it holds no line.
		p.X.Min, p.X.Max = 0, c.Points[len(c.Points)-1].Load
		p.Legend.Add("no measured requests at any load: no latencies to draw")
		if !finite(p.Y.Min, p.Y.Max) || !(p.Y.Min > 0 && p.Y.Max >= p.Y.Min) {
			p.Y.Min, p.Y.Max = 1, 1000 // no SLO line either: a log axis needs a positive range
		}
	}
	p.Y.Min, p.Y.Max = p.Y.Min/1.3, p.Y.Max*1.3
	p.X.Max += 0.04 * (p.X.Max - p.X.Min)
	placeLegend(p)
	return p, nil
}

// drawn reports whether any series has a point.
func drawn(all []series) bool {
	for _, s := range all {
		if len(s.xys) > 0 {
			return true
		}
	}
	return false
}

// percentileSeries are one metric's p50, p90 and p99 lines, skipping
// points without a positive figure (a log axis cannot show them, and a
// load that measured no request has none).
func percentileSeries(c *analysis.Curve, name string, col color.Color, of func(*analysis.Point) analysis.Percentiles) []series {
	out := []series{{name: name + " p50", color: col, dashes: dotted},
		{name: name + " p90", color: col, dashes: dashed}, {name: name + " p99", color: col}}
	for i := range c.Points {
		pt := &c.Points[i]
		q := of(pt)
		for k, e := range []stats.Interval{q.P50, q.P90, q.P99} {
			if finite(e.Center) && e.Center > 0 {
				out[k].xys = append(out[k].xys, plotter.XY{X: pt.Load, Y: e.Center})
			}
		}
	}
	return out
}

// addSeries draws each series with points, in the legend in order.
func addSeries(p *plot.Plot, all []series) error {
	for _, s := range all {
		if len(s.xys) == 0 {
			continue
		}
		glyph := s.glyph
		if glyph == nil {
			glyph = draw.CircleGlyph{}
		}
		l, sc, err := linePoints(s.xys, s.color, 1.5, s.dashes, glyph, 2)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		if s.steps {
			l.StepStyle, l.Width = plotter.PostStep, vg.Points(2)
			p.Add(l)
			p.Legend.Add(s.name, l)
			continue
		}
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	return nil
}

// addSLOLines draws the SLO's TTFT and ITL bounds across the loads.
func addSLOLines(p *plot.Plot, c *analysis.Curve) error {
	x0, x1 := c.Points[0].Load, c.Points[len(c.Points)-1].Load
	if x0 == x1 {
		x0 = 0 // one load: a line from the origin, not a dot
	}
	for _, b := range sloBounds(c.SLO) {
		l, err := hline(b.ms, x0, x1, fade(b.color, 150), dashDot)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		p.Add(l)
		p.Legend.Add(b.label(), l)
	}
	return nil
}

// bound is one SLO bound a chart draws.
type bound struct {
	name  string
	ms    float64
	color color.RGBA
}

func (b bound) label() string { return fmt.Sprintf("SLO: %s ≤ %g ms", b.name, b.ms) }

// sloBounds are the SLO's TTFT and ITL bounds that are set, in ms, in the
// colours of their metrics.
func sloBounds(s sim.SLO) []bound {
	var out []bound
	for _, b := range []struct {
		name string
		d    time.Duration
		c    color.RGBA
	}{{"TTFT", s.TTFT, blue}, {"ITL", s.ITL, orange}} {
		if b.d > 0 && b.d != sim.Unbounded {
			out = append(out, bound{b.name, float64(b.d) / 1e6, b.c})
		}
	}
	return out
}
