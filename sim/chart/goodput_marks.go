package chart

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim/analysis"
)

// addKneeBand shades the knee's interval, under everything else.
func addKneeBand(p *plot.Plot, c *analysis.Curve, top float64) error {
	k := c.Knee
	if !k.Found || !finite(k.Load.Center, k.Load.Lo, k.Load.Hi) {
		return nil
	}
	band, err := rect(k.Load.Lo, k.Load.Hi, 0, top, fade(orange, 70))
	if err != nil {
		return err
	}
	p.Add(band)
	return nil
}

// addKnee draws the knee's centre and names it with its interval.
func addKnee(p *plot.Plot, c *analysis.Curve, top float64) error {
	k := c.Knee
	if !k.Found || !finite(k.Load.Center) {
		return nil
	}
	label := fmt.Sprintf("knee %s", rate(k.Load.Center))
	if finite(k.Load.Lo, k.Load.Hi) {
		label += fmt.Sprintf(", %g %% interval [%.3g, %.3g] (shaded)", 100*c.Confidence, k.Load.Lo, k.Load.Hi)
	}
	l, err := vline(k.Load.Center, 0, top, orange, nil)
	if err != nil {
		return err
	}
	l.Width = vg.Points(2)
	p.Add(l)
	p.Legend.Add(label, l)
	return nil
}

// addPeak marks the highest mean goodput.
func addPeak(p *plot.Plot, c *analysis.Curve, _ float64) error {
	pk := c.Peak
	if !finite(pk.Goodput.Center) || len(measured(c)) == 0 {
		return nil // no load measured a request: there is no peak
	}
	s, err := plotter.NewScatter(plotter.XYs{{X: pk.Load, Y: pk.Goodput.Center}})
	if err != nil {
		return err
	}
	s.Shape, s.Color, s.Radius = draw.PyramidGlyph{}, vermilion, vg.Points(5)
	p.Add(s)
	p.Legend.Add(fmt.Sprintf("peak %s at %s offered", rate(pk.Goodput.Center), rate(pk.Load)), s)
	return nil
}

// addCollapse marks the first load past the peak with goodput below 90 %
// of it.
func addCollapse(p *plot.Plot, c *analysis.Curve, top float64) error {
	if !c.Collapse.Found {
		return nil
	}
	l, err := vline(c.Collapse.Load, 0, top, vermilion, dotted)
	if err != nil {
		return err
	}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("collapse from %s", rate(c.Collapse.Load)), l)
	return nil
}

// addOperating marks the operating load and its headroom to the knee.
func addOperating(p *plot.Plot, c *analysis.Curve, op, top float64) error {
	l, err := vline(op, 0, top, green, dashed)
	if err != nil {
		return err
	}
	l.Width = vg.Points(2)
	p.Add(l)
	label := fmt.Sprintf("operating point %s", rate(op))
	switch h := c.Headroom(op); {
	case !c.Knee.Found:
		label += " (no knee inside the sweep: headroom unknown)"
	case finite(h.Rel.Center):
		label += fmt.Sprintf(": headroom %+.0f %% to the knee", 100*h.Rel.Center)
	}
	p.Legend.Add(label, l)
	p.X.Max = math.Max(p.X.Max, op)
	return nil
}

// ink is the colour of annotations that are not data: the model band's
// bracket.
var ink = color.RGBA{60, 60, 60, 255}

// variantGlyphs and variantDashes tell the band's curves apart, in
// Band.Variants' order (slower, faster, alternatives, shapes): five, so
// that analysis.AtlasBand's five models (±scale and three shapes) each
// have their own glyph and dash pattern.
var (
	variantGlyphs = []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	variantDashes = [][]vg.Length{dashed, dotted, dashDot, longDash, {vg.Points(3), vg.Points(2)}}
)

// addModelCurves draws the goodput under each model of the band (none
// without one), lighter than the nominal curve and without intervals.
func addModelCurves(p *plot.Plot, c *analysis.Curve, _ float64) error {
	if c.Band == nil {
		return nil
	}
	for i, v := range c.Band.Variants {
		if v.Curve == nil {
			continue
		}
		var xys plotter.XYs
		for _, pt := range measured(v.Curve) {
			if finite(pt.Goodput.Center) {
				xys = append(xys, plotter.XY{X: pt.Load, Y: pt.Goodput.Center})
			}
		}
		// A faster model's sweep may run past the nominal loads: the
		// chart keeps the nominal range, its curve cut at the edge.
		xys = clipX(xys, p.X.Max)
		if len(xys) == 0 {
			p.Legend.Add(fmt.Sprintf("goodput under %s: no measured requests at any load", v.Name))
			continue
		}
		l, s, err := linePoints(xys, fade(blue, 150), 1.2, variantDashes[i%len(variantDashes)], variantGlyphs[i%len(variantGlyphs)], 2.2)
		if err != nil {
			return err
		}
		p.Add(l, s)
		p.Legend.Add(fmt.Sprintf("goodput under %s (model band), mean", v.Name), l, s)
	}
	return nil
}

// bracket is where the knee's model range is drawn along the x axis:
// from x0 to x1, open (an arrow to the edge) on a side where a model's
// knee lies beyond the loads swept.
type bracket struct {
	x0, x1         float64
	openLo, openHi bool
}

// kneeBracket is the bracket of range r on an x axis from xmin to xmax:
// an end past the loads swept runs to the axis's edge.
func kneeBracket(r analysis.Range, xmin, xmax float64) bracket {
	b := bracket{x0: r.Lo, x1: r.Hi, openLo: r.LoBelow, openHi: r.HiAbove}
	if b.openLo {
		b.x0 = xmin
	}
	if b.openHi {
		b.x1 = xmax
	}
	return b
}

// addKneeRange draws the knee's model range (Band.Knee) as a bracket
// along the foot of the chart, its ends labelled with the range's bounds
// ("< 0.5" at an open end, whose arrow runs to the axis's edge).
func addKneeRange(p *plot.Plot, c *analysis.Curve, top float64) error {
	if c.Band == nil {
		return nil
	}
	r := c.Band.Knee
	if !finite(r.Lo, r.Hi) {
		p.Legend.Add(fmt.Sprintf("model range of the knee under %v: no curve of the band placed a knee", c.Band.Declared))
		return nil
	}
	b := kneeBracket(r, p.X.Min, p.X.Max)
	y, h := 0.045*top, 0.02*top
	l, err := line(plotter.XYs{{X: b.x0, Y: y}, {X: b.x1, Y: y}}, ink, 1.6, nil)
	if err != nil {
		return err
	}
	p.Add(l)
	var notes plotter.XYLabels
	for _, end := range []struct {
		x, at float64
		open  bool
		label string
		left  bool
	}{
		{r.Lo, b.x0, b.openLo, fmt.Sprintf("%.3g", r.Lo), true},
		{r.Hi, b.x1, b.openHi, fmt.Sprintf("%.3g", r.Hi), false},
	} {
		if end.open {
			a, err := plotter.NewScatter(plotter.XYs{{X: end.at, Y: y}})
			if err != nil {
				return err
			}
			a.Shape, a.Color, a.Radius = arrow{left: end.left}, ink, vg.Points(4)
			p.Add(a)
			// Where the loads swept stop: the knee lies beyond it.
			t, err := vline(end.x, y-h, y+h, ink, dotted)
			if err != nil {
				return err
			}
			p.Add(t)
			if end.left {
				end.label = "< " + end.label
			} else {
				end.label = "> " + end.label
			}
		} else {
			t, err := vline(end.x, y-h, y+h, ink, nil)
			if err != nil {
				return err
			}
			p.Add(t)
		}
		notes.XYs = append(notes.XYs, plotter.XY{X: end.x, Y: y + 1.3*h})
		notes.Labels = append(notes.Labels, end.label)
	}
	labels, err := plotter.NewLabels(notes)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = vg.Points(8)
		labels.TextStyle[i].XAlign = draw.XCenter
		labels.TextStyle[i].Color = ink
	}
	p.Add(labels)
	// The models declared may be many (step times ±x % and three
	// shapes): how to read the bracket is a line of its own, so that the
	// legend stays on the page.
	p.Legend.Add(fmt.Sprintf("model range of the knee %v req/s under %v", r, c.Band.Declared), l)
	p.Legend.Add("    (the bracket; an arrow: the knee lies beyond the loads swept)")
	if c.Band.Fragile {
		p.Legend.Add("    the knee moves that far with the cost model: it rests on the accuracy of the model")
	}
	return nil
}

// arrow is a filled arrowhead pointing left or right, its tip at the
// point.
type arrow struct{ left bool }

func (a arrow) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius
	d := r * 2
	if !a.left {
		d = -d
	}
	var p vg.Path
	p.Move(pt)
	p.Line(vg.Point{X: pt.X + d, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + d, Y: pt.Y - r})
	p.Close()
	c.Fill(p)
}

// clipX keeps the points of a polyline (in increasing x) up to xmax, and
// the point where it crosses xmax.
func clipX(xys plotter.XYs, xmax float64) plotter.XYs {
	for i, xy := range xys {
		if xy.X <= xmax {
			continue
		}
		out := xys[:i:i]
		if i > 0 {
			a := xys[i-1]
			out = append(out, plotter.XY{X: xmax, Y: a.Y + (xy.Y-a.Y)*(xmax-a.X)/(xy.X-a.X)})
		}
		return out
	}
	return xys
}
