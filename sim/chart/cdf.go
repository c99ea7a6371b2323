package chart

import (
	"errors"
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/servesim/servesim/sim"
)

// maxSteps caps the points of a drawn CDF; larger samples are thinned to
// evenly spaced ranks (the curve is drawn to the pixel either way).
const maxSteps = 2000

// CDF draws the empirical distribution functions of one run's TTFT and
// ITL (ms, log axis) from Summary.Samples, with the SLO's bounds as
// vertical lines. ITL samples are value counts; each gap counts once.
func CDF(s *sim.Summary) (*plot.Plot, error) {
	ttft := sampleCDF(s.Samples.TTFT)
	itl := countCDF(s.Samples.ITL)
	if len(ttft) == 0 && len(itl) == 0 {
		return nil, errors.New("chart: the summary keeps no TTFT or ITL samples (none measured, or more than sim.Config.ExactSamples, which are sketched)")
	}
	p := newPlot(fmt.Sprintf("TTFT and ITL distributions (%d requests ok, %d gaps)", s.TTFT.N, s.ITL.N),
		"latency (ms, log scale)", "fraction at or below")
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, logTicks{}
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"},
		{Value: 0.5, Label: "0.5"}, {Value: 0.75, Label: "0.75"}, {Value: 0.9}, {Value: 0.99}, {Value: 1, Label: "1"}}
	err := addSeries(p, []series{{name: "TTFT", xys: positiveX(ttft), color: blue, steps: true},
		{name: "ITL (every gap)", xys: positiveX(itl), color: orange, dashes: dashed, steps: true}})
	if err != nil {
		return nil, err
	}
	if err := addSLOBounds(p, s.SLO); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = p.X.Min/1.25, p.X.Max*1.25 // keep the outermost marks off the frame
	placeLegend(p)
	return p, nil
}

// sampleCDF is the step function of a sorted sample: the i-th value at
// (i+1)/n.
func sampleCDF(sorted []float64) plotter.XYs {
	n := len(sorted)
	stride := max(1, n/maxSteps)
	if n == 0 {
		return nil
	}
	xys := plotter.XYs{{X: sorted[0], Y: 0}}
	for i := 0; i < n; i += stride {
		xys = append(xys, plotter.XY{X: sorted[i], Y: float64(i+1) / float64(n)})
	}
	if (n-1)%stride != 0 {
		xys = append(xys, plotter.XY{X: sorted[n-1], Y: 1})
	}
	return xys
}

// countCDF is the step function of values with counts (sorted by value).
func countCDF(vc []sim.ValueCount) plotter.XYs {
	total := 0
	for _, v := range vc {
		total += v.Count
	}
	if total == 0 {
		return nil
	}
	stride := max(1, len(vc)/maxSteps)
	xys := plotter.XYs{{X: vc[0].Value, Y: 0}}
	cum := 0
	for i, v := range vc {
		cum += v.Count
		if i%stride == 0 || i == len(vc)-1 {
			xys = append(xys, plotter.XY{X: v.Value, Y: float64(cum) / float64(total)})
		}
	}
	return xys
}

// addSLOBounds draws the TTFT and ITL bounds as vertical lines.
func addSLOBounds(p *plot.Plot, slo sim.SLO) error {
	for _, b := range sloBounds(slo) {
		l, err := vline(b.ms, 0, 1, b.color, dashDot)
		if err != nil {
			return fmt.Errorf("chart: %w", err)
		}
		p.Add(l)
		p.Legend.Add(b.label(), l)
	}
	return nil
}

// positiveX drops points a log x axis cannot show.
func positiveX(xys plotter.XYs) plotter.XYs {
	out := xys[:0:0]
	for _, xy := range xys {
		if xy.X > 0 {
			out = append(out, xy)
		}
	}
	return out
}
