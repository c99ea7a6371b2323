package analysis

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// ClassPoint is one request class's share of a point: its rates and
// attainment by its own SLO, over the replications, with intervals.
type ClassPoint struct {
	Name       string
	SLO        sim.SLO
	Offered    stats.Interval // measured arrivals of the class per second
	Goodput    stats.Interval
	Attainment stats.Interval // NaN when no replication measured one of its requests
	TTFT       Percentiles
}

// ClassKnee is one class's knee: the highest load at which the class's
// own attainment meets the curve's target.
type ClassKnee struct {
	Name string
	SLO  sim.SLO
	Knee Knee
}

// classPoints summarises each class over a point's replications (none
// without classes).
func (p *Point) classPoints(conf float64, seed uint64) {
	if len(p.Runs) == 0 || p.Runs[0].Classes == nil {
		return
	}
	names := p.Runs[0].Classes
	for j, c := range names {
		per := func(f func(s *sim.ClassSummary, w float64) float64) stats.Interval {
			x := make([]float64, 0, len(p.Runs))
			for i := range p.Runs {
				r := &p.Runs[i]
				if v := f(&r.Classes[j], r.Window.Seconds()); !math.IsNaN(v) {
					x = append(x, v)
				}
			}
			return stats.MeanInterval(x, conf)
		}
		cp := ClassPoint{Name: c.Name, SLO: c.SLO,
			Offered:    stats.Clamp(per(func(s *sim.ClassSummary, w float64) float64 { return float64(s.Offered) / w }), 0, math.Inf(1)),
			Goodput:    stats.Clamp(per(func(s *sim.ClassSummary, _ float64) float64 { return s.Goodput }), 0, math.Inf(1)),
			Attainment: stats.Clamp(per(func(s *sim.ClassSummary, _ float64) float64 { return s.Attainment }), 0, 1),
		}
		samples := make([][]float64, len(p.Runs))
		ds := make([]stats.Dist, len(p.Runs))
		for i := range p.Runs {
			samples[i], ds[i] = p.Runs[i].Classes[j].Samples.TTFT, p.Runs[i].Classes[j].TTFT
		}
		if sketchedIn(ds) {
			cp.TTFT = acrossRuns(ds, conf)
		} else {
			q := stats.QuantileIntervals(samples, []float64{0.5, 0.9, 0.99}, conf, stats.BootstrapStream(seed, fmt.Sprintf("sim/bootstrap/class/%s/%v", c.Name, p.Load)))
			cp.TTFT = Percentiles{P50: q[0], P90: q[1], P99: q[2]}
		}
		p.Classes = append(p.Classes, cp)
	}
}

// classKnees finds each class's knee on the curve's points, and warns
// which class sets the curve's own knee when one class binds before the
// others.
func (c *Curve) classKnees() {
	c.ClassKnees = nil
	if len(c.Points) == 0 || c.Points[0].Classes == nil {
		return
	}
	for j, cp := range c.Points[0].Classes {
		sub := Curve{Target: c.Target, Confidence: c.Confidence, Axis: c.Axis}
		for _, p := range c.Points {
			sub.Points = append(sub.Points, Point{Load: p.Load, Runs: p.Runs, Attainment: p.Classes[j].Attainment})
		}
		c.ClassKnees = append(c.ClassKnees, ClassKnee{Name: cp.Name, SLO: cp.SLO, Knee: sub.knee()})
	}
	binding, at, below := "", math.Inf(1), false
	for _, k := range c.ClassKnees {
		if v, b, _, ok := kneeValue(k.Knee); ok && v < at {
			binding, at, below = k.Name, v, b
		}
	}
	switch {
	case binding == "":
	case below:
		c.warn(Warning{Kind: WarnClassBindsBelow, Class: binding, Target: c.Target, Load: at, Unit: c.Axis.Unit()})
	default:
		c.warn(Warning{Kind: WarnClassBinds, Class: binding, Target: c.Target, Load: at, Unit: c.Axis.Unit()})
	}
}
