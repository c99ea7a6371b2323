package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim"
)

// addKneeBand shades the knee's interval, under everything else.
func addKneeBand(p *plot.Plot, c *sim.Curve, top float64) error {
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
func addKnee(p *plot.Plot, c *sim.Curve, top float64) error {
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
func addPeak(p *plot.Plot, c *sim.Curve, _ float64) error {
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
func addCollapse(p *plot.Plot, c *sim.Curve, top float64) error {
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
func addOperating(p *plot.Plot, c *sim.Curve, op, top float64) error {
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
