package chart

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// Dial draws a dial sweep's result (analysis.DialSweep) against the dial's
// values, in two panels:
//
//   - the knee of each value (requests/s) with its interval as error
//     bars, labelled with its paired difference to the baseline's knee
//     (Δ, mean ± half its interval); the baseline's knee as a horizontal
//     line across, its interval shaded; a knee outside its value's sweep
//     as a hollow triangle at the edge of the axis it lies beyond
//     (pointing down at the foot: below the lowest load, which already
//     missed the target; up at the top: above the highest, which still
//     met it);
//   - TTFT p99 and ITL p99 at the probe load (ms, log axis), each with its
//     interval, and the SLO's bounds (left out without a probe).
//
// The values sit evenly spaced in their order, named by labels (nil: each
// value as %g), so that a value such as 0 for "no cap" and a geometric
// range read alike.
func Dial(r *analysis.DialResult, labels []string) (Panels, error) {
	n := len(r.Values)
	switch {
	case n == 0 || len(r.Curves) != n || len(r.KneeDiff) != n:
		return nil, errors.New("chart: the dial sweep has no values, or not one curve and knee difference per value")
	case labels != nil && len(labels) != n:
		return nil, fmt.Errorf("chart: %d labels for %d values", len(labels), n)
	}
	if labels == nil {
		labels = make([]string, n)
		for i, v := range r.Values {
			labels[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	xlabel := r.Dial.Name
	if r.Dial.Unit != "" {
		xlabel += " (" + r.Dial.Unit + ")"
	}
	knees, err := dialKnees(r, labels)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	if len(r.Probe) != n {
		knees.X.Label.Text = xlabel
		return Panels{knees}, nil
	}
	lat, err := dialLatency(r, labels)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	lat.X.Label.Text = xlabel
	return Panels{knees, lat}, nil
}

// categories labels the values' slots 0, 1, … n−1 on an x axis.
type categories []string

func (c categories) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for i, l := range c {
		if x := float64(i); x >= lo && x <= hi {
			out = append(out, plot.Tick{Value: x, Label: l})
		}
	}
	return out
}

// dialFrame is a panel over the dial's values.
func dialFrame(title, ylabel string, labels []string) *plot.Plot {
	p := newPlot(title, "", ylabel)
	p.X.Min, p.X.Max = -0.5, float64(len(labels))-0.5
	p.X.Tick.Marker = categories(labels)
	return p
}

// dialKnees is the knee panel.
func dialKnees(r *analysis.DialResult, labels []string) (*plot.Plot, error) {
	c0 := r.Curves[0]
	p := dialFrame(fmt.Sprintf("Knee against %s (attainment target %g, %g %% intervals)", r.Dial.Name, c0.Target, 100*c0.Confidence),
		"knee (req/s)", labels)
	top := kneeTop(r)
	// Above the marks, a row of the paired differences; the legend sits
	// above the panel.
	p.Y.Min, p.Y.Max = 0, 1.2*top
	if err := addBaselineKnee(p, r); err != nil {
		return nil, err
	}
	var found, below, above plotter.XYs
	var belowAt, aboveAt []float64 // the loads the censored marks stand for
	var errs plotter.YErrors
	var notes plotter.XYLabels
	for i, c := range r.Curves {
		k, x := c.Knee, float64(i)
		switch {
		case k.Found && finite(k.Load.Center):
			found = append(found, plotter.XY{X: x, Y: k.Load.Center})
			lo, hi := k.Load.Center, k.Load.Center
			if finite(k.Load.Lo, k.Load.Hi) {
				lo, hi = k.Load.Lo, k.Load.Hi
			}
			errs = append(errs, struct{ Low, High float64 }{k.Load.Center - lo, hi - k.Load.Center})
		case k.Censored == analysis.BelowLowest:
			below = append(below, plotter.XY{X: x, Y: p.Y.Min})
			belowAt = append(belowAt, k.FirstMiss)
		case k.Censored == analysis.AboveHighest:
			above = append(above, plotter.XY{X: x, Y: p.Y.Max})
			aboveAt = append(aboveAt, k.LastMet)
		}
		label := "baseline"
		if i != r.Baseline {
			bounds := 0
			if i < len(r.KneeBounds) {
				bounds = r.KneeBounds[i]
			}
			label = diffLabel(r.KneeDiff[i], bounds)
		}
		notes.XYs = append(notes.XYs, plotter.XY{X: x, Y: 1.08 * top})
		notes.Labels = append(notes.Labels, label)
	}
	if err := addKneePoints(p, found, errs); err != nil {
		return nil, err
	}
	for _, b := range []struct {
		xys   plotter.XYs
		at    []float64
		glyph draw.GlyphDrawer
		label string
		edge  string
	}{
		{below, belowAt, downTriangle{}, "knee below the lowest load swept", "open triangle at the foot of the axis"},
		{above, aboveAt, upTriangle{}, "knee above the highest load swept", "open triangle at the top of the axis"},
	} {
		if len(b.xys) == 0 {
			continue
		}
		b.label += ": " + b.edge
		if slices.Min(b.at) == slices.Max(b.at) {
			b.label = strings.Replace(b.label, "swept", "swept ("+rate(b.at[0])+")", 1)
		}
		sc, err := plotter.NewScatter(b.xys)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = vermilion, b.glyph, vg.Points(4)
		p.Add(sc)
		p.Legend.Add(b.label, sc)
	}
	l, err := plotter.NewLabels(notes)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(8)
		l.TextStyle[i].XAlign = draw.XCenter
	}
	p.Add(l)
	p.Legend.Add("Δ: knee − baseline's knee, paired by replication (mean ± half its interval)")
	p.Legend.Add("    Δ ≤ or ≥: a bound, a knee lay beyond the loads swept; Δ —: no replication paired")
	placeLegend(p)
	return p, nil
}

// kneeTop is the highest figure the knee panel draws.
func kneeTop(r *analysis.DialResult) float64 {
	top := 0.0
	for _, c := range r.Curves {
		k := c.Knee
		for _, v := range []float64{k.Load.Center, k.Load.Hi, k.FirstMiss, k.LastMet} {
			if finite(v) {
				top = math.Max(top, v)
			}
		}
	}
	if !(top > 0) {
		top = 1
	}
	return top
}

// addBaselineKnee draws the baseline's knee across the panel, its
// interval shaded.
func addBaselineKnee(p *plot.Plot, r *analysis.DialResult) error {
	if r.Baseline < 0 || r.Baseline >= len(r.Curves) {
		return nil
	}
	k := r.Curves[r.Baseline].Knee
	if !k.Found || !finite(k.Load.Center) {
		return nil
	}
	if finite(k.Load.Lo, k.Load.Hi) {
		band, err := rect(p.X.Min, p.X.Max, k.Load.Lo, k.Load.Hi, fade(grey, 45))
		if err != nil {
			return err
		}
		p.Add(band)
	}
	l, err := hline(k.Load.Center, p.X.Min, p.X.Max, grey, dashed)
	if err != nil {
		return err
	}
	p.Add(l)
	p.Legend.Add(fmt.Sprintf("baseline's knee %s, interval shaded", rate(k.Load.Center)), l)
	return nil
}

// addKneePoints draws the knees found, with their intervals.
func addKneePoints(p *plot.Plot, xys plotter.XYs, errs plotter.YErrors) error {
	if len(xys) == 0 {
		p.Legend.Add("no value's knee lies inside its sweep")
		return nil
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.Color, sc.Shape, sc.Radius = blue, draw.CircleGlyph{}, vg.Points(3.5)
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return err
	}
	bars.Color, bars.CapWidth, bars.LineStyle.Width = blue, vg.Points(6), vg.Points(1.5)
	p.Add(bars, sc)
	p.Legend.Add("knee, interval as error bars", sc)
	return nil
}

// diffLabel is a paired difference as "Δ −0.27 ± 0.03", or "Δ ≤ −1.51 ±
// 0.15" when some replications paired through a knee beyond the loads
// (bounds > 0): the difference is then a bound, the true one farther from
// zero.
func diffLabel(d stats.Interval, bounds int) string {
	rel := ""
	switch {
	case bounds > 0 && d.Center < 0:
		rel = "≤ "
	case bounds > 0 && d.Center > 0:
		rel = "≥ "
	}
	switch {
	case d.N == 0 || !finite(d.Center):
		return "Δ —"
	case !finite(d.Lo, d.Hi):
		return fmt.Sprintf("Δ %s%+.3g", rel, d.Center)
	}
	return fmt.Sprintf("Δ %s%+.2f ± %.2f", rel, d.Center, (d.Hi-d.Lo)/2)
}

// dialLatency is the panel of TTFT p99 and ITL p99 at the probe load.
func dialLatency(r *analysis.DialResult, labels []string) (*plot.Plot, error) {
	p := dialFrame(fmt.Sprintf("TTFT p99 and ITL p99 at %s offered", rate(r.Probe[0].Load)), "ms (log scale)", labels)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, m := range []struct {
		name   string
		col    color.RGBA
		glyph  draw.GlyphDrawer
		dashes []vg.Length
		of     func(*analysis.Point) stats.Interval
	}{
		{"TTFT p99", blue, draw.CircleGlyph{}, dotted, func(pt *analysis.Point) stats.Interval { return pt.TTFT.P99 }},
		{"ITL p99", orange, draw.SquareGlyph{}, dashed, func(pt *analysis.Point) stats.Interval { return pt.ITL.P99 }},
	} {
		var xys plotter.XYs
		var errs plotter.YErrors
		for i := range r.Probe {
			e := m.of(&r.Probe[i])
			if !finite(e.Center) || e.Center <= 0 {
				continue
			}
			l, h := e.Center, e.Center
			if finite(e.Lo, e.Hi) && e.Lo > 0 {
				l, h = e.Lo, e.Hi
			}
			lo, hi = math.Min(lo, l), math.Max(hi, h)
			// The two metrics sit side by side in each value's slot.
			xys = append(xys, plotter.XY{X: float64(i) + 0.08*float64(2*k-1), Y: e.Center})
			errs = append(errs, struct{ Low, High float64 }{e.Center - l, h - e.Center})
		}
		if err := addLatencyPoints(p, m.name, m.col, m.glyph, m.dashes, xys, errs); err != nil {
			return nil, err
		}
	}
	for _, b := range sloBounds(r.Curves[0].SLO) {
		l, err := hline(b.ms, p.X.Min, p.X.Max, fade(b.color, 150), dashDot)
		if err != nil {
			return nil, err
		}
		p.Add(l)
		p.Legend.Add(b.label(), l)
		lo, hi = math.Min(lo, b.ms), math.Max(hi, b.ms)
	}
	if !finite(lo, hi) {
		lo, hi = 1, 1000
		p.Legend.Add("no request completed at the probe load: no latencies to draw")
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	placeLegend(p)
	return p, nil
}

func addLatencyPoints(p *plot.Plot, name string, col color.RGBA, glyph draw.GlyphDrawer, dashes []vg.Length, xys plotter.XYs, errs plotter.YErrors) error {
	if len(xys) == 0 {
		p.Legend.Add(name + ": none measured at the probe load")
		return nil
	}
	l, sc, err := linePoints(xys, col, 1.2, dashes, glyph, 3)
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
	bars.Color, bars.CapWidth = col, vg.Points(5)
	p.Add(l, bars, sc)
	p.Legend.Add(name+", interval as error bars", l, sc)
	return nil
}

// downTriangle is a hollow triangle pointing down.
type downTriangle struct{}

func (downTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	r := sty.Radius + (sty.Radius-sty.Radius*vg.Length(math.Sin(math.Pi/6)))/2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y + r*vg.Length(math.Sin(math.Pi/6))})
	p.Line(vg.Point{X: pt.X + r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y + r*vg.Length(math.Sin(math.Pi/6))})
	p.Close()
	c.Stroke(p)
}

// upTriangle is a hollow triangle pointing up.
type upTriangle struct{}

func (upTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.2)})
	r := sty.Radius + (sty.Radius-sty.Radius*vg.Length(math.Sin(math.Pi/6)))/2
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y - r*vg.Length(math.Sin(math.Pi/6))})
	p.Line(vg.Point{X: pt.X + r*vg.Length(math.Cos(math.Pi/6)), Y: pt.Y - r*vg.Length(math.Sin(math.Pi/6))})
	p.Close()
	c.Stroke(p)
}
