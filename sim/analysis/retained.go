package analysis

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim/stats"
)

// PastKnee are the multiples of a curve's knee at which it reports the
// goodput retained past the knee (Curve.Retained): 1.5× and 2×.
var PastKnee = [...]float64{1.5, 2}

// Retained is goodput retained past the knee: the goodput measured at a
// multiple of the knee's load, as a share of the curve's peak goodput.
// Without admission control every curve falls towards 0 there (nothing
// sheds load, so queues grow until every request misses); a gateway
// (sim.Gateway) exists to keep it up.
//
// It is measured, never interpolated: Share is a number only when the
// sweep ran a point at exactly Load (Grid.PastKnee makes it run them once
// the knee is known, or list the loads in Grid.Loads). Otherwise Measured
// is false, Share and Goodput are NaN, and String says the load was not
// run: the goodput past the knee is what the sweep stops measuring, so a
// value read off a neighbouring point or a line through two would be a
// guess.
type Retained struct {
	Multiple float64 // of the knee's load (PastKnee)
	// Load is Multiple × the knee's load (rounded to whole clients on the
	// Concurrency axis); NaN when the curve has no knee inside the sweep.
	Load     float64
	Measured bool           // the sweep ran a point at Load
	Goodput  stats.Interval // at Load; NaN centre unless Measured
	// Share is Goodput's centre over the peak's (Curve.Peak); NaN unless
	// Measured.
	Share float64
	Unit  string // of Load: the curve's axis unit
}

// String says the figure in words: the share and the goodput behind it,
// or that the load was not run.
func (r Retained) String() string {
	switch {
	case math.IsNaN(r.Load):
		return fmt.Sprintf("goodput at %g× the knee: no knee inside the sweep, so nothing past it", r.Multiple)
	case !r.Measured:
		return fmt.Sprintf("goodput at %g× the knee (%.4g %s): not run (set Grid.PastKnee, or add the load to Grid.Loads)", r.Multiple, r.Load, r.Unit)
	}
	return fmt.Sprintf("goodput at %g× the knee (%.4g %s): %.3g of the peak (%.4g good req/s)", r.Multiple, r.Load, r.Unit, r.Share, r.Goodput.Center)
}

// pastKneeLoad is the load at multiple m of the knee, on the curve's
// axis; NaN without a knee.
func (c *Curve) pastKneeLoad(m float64) float64 {
	if !c.Knee.Found {
		return math.NaN()
	}
	return c.Axis.gridLoad(m * c.Knee.Load.Center)
}

// retained computes Retained from the points: the point at each
// multiple's load, if the sweep ran it.
func (c *Curve) retained() []Retained {
	out := make([]Retained, len(PastKnee))
	for i, m := range PastKnee {
		nan := math.NaN()
		r := Retained{Multiple: m, Load: c.pastKneeLoad(m), Share: nan, Unit: c.Axis.Unit(),
			Goodput: stats.Interval{Center: nan, Lo: nan, Hi: nan, Confidence: c.Confidence}}
		for _, p := range c.Points {
			if !math.IsNaN(r.Load) && math.Abs(p.Load-r.Load) <= 1e-9*r.Load {
				r.Measured, r.Goodput = true, p.Goodput
				if peak := c.Peak.Goodput.Center; peak > 0 {
					r.Share = p.Goodput.Center / peak
				}
				break
			}
		}
		out[i] = r
	}
	return out
}

// pastKneeLoads are the loads past the knee the curve has not run.
func (c *Curve) pastKneeLoads() []float64 {
	var loads []float64
	for _, r := range c.retained() {
		if !math.IsNaN(r.Load) && !r.Measured {
			loads = append(loads, r.Load)
		}
	}
	return loads
}
