package main

import (
	"fmt"
	"io"
	"math"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim/analysis"
)

// writeFindings writes what the curve found (knee, peak, collapse,
// headroom, each with its seed interval and its model range), the
// estimate held against it, what ran, and the curve's warnings.
func writeFindings(w io.Writer, e costmodel.Estimate, c *analysis.Curve, o simOptions) {
	k, b := c.Knee, c.Band
	if allRefused(c) {
		fmt.Fprintf(w, "knee       none: the replica refused every request at every load (see refused above)\n")
	} else if k.Found {
		fmt.Fprintf(w, "knee       %.3f req/s %s over seeds: the highest load with attainment >= %.2f\n", k.Load.Center, interval(k.Load, "%.3f"), c.Target)
	} else {
		fmt.Fprintf(w, "knee       not bracketed: %s\n", k.Reason())
	}
	if b != nil {
		fmt.Fprintf(w, "           model range %s req/s: the knee under each model of the band, same seeds\n", kneeRange(b))
		if len(b.Declared.Shapes) > 0 { // -shapes: say which model the knee rests on
			for _, v := range b.Variants {
				fmt.Fprintf(w, "           under %s: knee %s\n", v.Name, bandKnee(v.Curve.Knee))
			}
			fmt.Fprintf(w, "           the knee %s\n", c.ModelVerdict())
		}
	}
	if measured(c) {
		fmt.Fprintf(w, "peak       %.3f req/s of goodput %s at %s req/s offered\n", c.Peak.Goodput.Center, interval(c.Peak.Goodput, "%.2f"), load(c.Peak.Load))
		if b != nil {
			fmt.Fprintf(w, "           model range [%.3f, %.3f] req/s of goodput\n", b.Peak.Lo, b.Peak.Hi)
		}
	} else {
		fmt.Fprintf(w, "peak       none: %s at any load\n", noMeasured)
	}
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse   from %s req/s offered (goodput below 90 %% of the peak)\n", load(c.Collapse.Load))
	}
	writeHeadroom(w, c, o.operating)
	writeAgainstEstimate(w, e, c)
	fmt.Fprintf(w, "ran        %s\n", ran(c, o))
	for _, msg := range c.Warnings {
		fmt.Fprintf(w, "warning    %s\n", msg)
	}
}

// measured reports whether some load of the curve measured a request.
func measured(c *analysis.Curve) bool {
	for i := range c.Points {
		if !c.Points[i].NoMeasured() {
			return true
		}
	}
	return false
}

// kneeRange prints the band's knee range, or says that no curve of the
// band placed a knee.
func kneeRange(b *analysis.Band) string {
	if math.IsInf(b.Knee.Lo, 0) {
		return "unknown (no curve of the band placed its knee)"
	}
	return b.Knee.String()
}

// writeHeadroom writes the headroom from the operating load op to the
// knee, with its seed interval and model range.
func writeHeadroom(w io.Writer, c *analysis.Curve, op float64) {
	switch {
	case op > 0 && c.Knee.Found:
		h := c.Headroom(op)
		fmt.Fprintf(w, "headroom   %.3f req/s %s (%+.0f %%) from the operating load %.3f req/s to the knee\n",
			h.Abs.Center, interval(h.Abs, "%.3f"), 100*h.Rel.Center, op)
		if c.Band != nil && !math.IsInf(c.Band.Knee.Lo, 0) {
			fmt.Fprintf(w, "           model range %s\n", percentRange(h.Model))
		}
	case op > 0:
		fmt.Fprintf(w, "headroom   unknown from the operating load %.3f req/s: no knee inside the sweep\n", op)
	}
}

// percentRange prints a range of fractions as percentages: "[< -67 %, +52 %]".
func percentRange(r analysis.Range) string {
	lo, hi := fmt.Sprintf("%+.0f %%", 100*r.Lo), fmt.Sprintf("%+.0f %%", 100*r.Hi)
	if r.LoBelow {
		lo = "< " + lo
	}
	if r.HiAbove {
		hi = "> " + hi
	}
	return "[" + lo + ", " + hi + "]"
}

// writeAgainstEstimate holds the estimate's load and step figures against
// the simulated knee and the longest inter-token gap at the lowest load.
func writeAgainstEstimate(w io.Writer, e costmodel.Estimate, c *analysis.Curve) {
	mu, q := e.ServingCapacity.Value, e.TTFTQualified.Value
	if k := c.Knee; k.Found {
		fmt.Fprintf(w, "estimate   serving capacity %.4g req/s: the knee is %.0f %% of it (decode alone would sustain %.3g req/s)\n",
			mu, 100*k.Load.Center/mu, e.DecodeRequests.Value)
		inside := "inside"
		if k.Load.Center < q/2 || k.Load.Center > 2*q {
			inside = "OUTSIDE"
		}
		fmt.Fprintf(w, "estimate   TTFT-qualified load %.4g req/s (M/M/c): the knee is %s its factor-of-two band [%.3g, %.3g]\n",
			q, inside, q/2, min(2*q, mu))
	} else {
		fmt.Fprintf(w, "estimate   serving capacity %.4g req/s, TTFT-qualified load %.4g req/s: without a knee there is nothing to compare them with\n", mu, q)
	}
	pt := lowestWithITL(c)
	if pt == nil {
		return
	}
	itl := maxITL(pt)
	verdict := "within it"
	if itl > e.LargestStep.Value {
		verdict = "LONGER: a gap the configuration's steps cannot form (a preemption?)"
	}
	fmt.Fprintf(w, "estimate   largest formable step %.4g ms, %.0f %% of the ITL bound; the longest simulated ITL at %s req/s is %.4g ms, %s\n",
		e.LargestStep.Value, e.LargestStepShare.Value, load(pt.Load), itl, verdict)
}

// lowestWithITL is the lowest load at which some request emitted two
// tokens (nil if none did).
func lowestWithITL(c *analysis.Curve) *analysis.Point {
	for i := range c.Points {
		if !math.IsNaN(maxITL(&c.Points[i])) {
			return &c.Points[i]
		}
	}
	return nil
}

// maxITL is the longest inter-token gap, ms, over pt's replications (NaN
// when none had one).
func maxITL(pt *analysis.Point) float64 {
	m := math.NaN()
	for i := range pt.Runs {
		if s := &pt.Runs[i]; s.ITL.N > 0 && !(s.ITL.Max <= m) {
			m = s.ITL.Max
		}
	}
	return m
}

// ran says how many runs the sweep and its band took.
func ran(c *analysis.Curve, o simOptions) string {
	curves, runs := 1, len(c.Points)*o.reps
	if c.Band != nil {
		for _, v := range c.Band.Variants {
			curves++
			runs += len(v.Curve.Points) * o.reps
		}
	}
	return fmt.Sprintf("%d %s × %d %s: %d runs of up to %v simulated each (to the horizon and its drain)",
		curves, pluralWord(curves, "curve"), o.reps, pluralWord(o.reps, "replication"), runs, o.horizon+o.horizon-o.warmup)
}

// pluralWord is noun, with an s unless n is 1.
func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// allRefused reports whether every load of the curve refused every
// request.
func allRefused(c *analysis.Curve) bool {
	for i := range c.Points {
		if c.Points[i].Saturation != analysis.Refused {
			return false
		}
	}
	return len(c.Points) > 0
}

// bandKnee is a variant's knee: its centre, or the side of its loads it
// lies beyond.
func bandKnee(k analysis.Knee) string {
	switch {
	case k.Found:
		return fmt.Sprintf("%.3f req/s", k.Load.Center)
	case k.Censored == analysis.BelowLowest:
		return fmt.Sprintf("< %.3g req/s", k.FirstMiss)
	case k.Censored == analysis.AboveHighest:
		return fmt.Sprintf("> %.3g req/s", k.LastMet)
	}
	return "none"
}
