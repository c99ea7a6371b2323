package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// writeReport sweeps every dial, prints each value's knee and its paired
// difference to vLLM's defaults, tests the declared hypothesis, and
// writes the charts, cards and files the flags ask for.
func writeReport(w io.Writer, o options) error {
	if len(o.chunks) > 0 && !slices.Contains(o.chunks, o.claim) {
		o.chunks = append(slices.Clone(o.chunks), o.claim) // the claim's own row
		slices.Sort(o.chunks)
	}
	studies, err := runStudies(o)
	if err != nil {
		return err
	}
	writeHeader(w, o)
	for _, s := range studies {
		writeStudy(w, s, o)
	}
	x, res, err := testClaim(studies, o)
	if err != nil {
		return err
	}
	writeVerdict(w, x, res, studies)
	writeChain(w, studies, o)
	if o.bench != "" {
		if err := writeBench(o.bench, studies); err != nil {
			return err
		}
	}
	if o.out == "" {
		return nil
	}
	fmt.Fprintln(w)
	if err := writeOutputs(w, studies, res, o); err != nil {
		return err
	}
	if o.timeline {
		return writeTimeline(w, o)
	}
	return nil
}

func writeHeader(w io.Writer, o options) {
	fmt.Fprintf(w, "Atlas TP4 on the Atlas document workload (%s)\n", workload.AtlasDocuments())
	fmt.Fprintf(w, "Baseline: vLLM's defaults (token budget 2048, chunked prefill on, no chunk cap). Knee: highest load with attainment >= 0.95,\n")
	fmt.Fprintf(w, "swept from %s req/s; %d replications per load, the same seeds for every value; window %v. Δ knee: knee − baseline's knee,\n", rate(o.start), o.reps, o.horizon)
	fmt.Fprintf(w, "paired replication by replication (≤ or ≥: a knee lay beyond the loads swept, and the difference is a bound). TTFT p99, ITL p99\n")
	fmt.Fprintf(w, "over every gap, each request's worst ITL (p99 over requests, and the share of requests whose worst gap passes the ITL\n")
	fmt.Fprintf(w, "bound: those an SLO on every ITL fails) and attainment at the probe load, %s req/s.\n", rate(o.probe))
}

// writeStudy prints one dial's table.
func writeStudy(w io.Writer, s study, o options) {
	fmt.Fprintf(w, "\n%s\n", s.title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	r := s.result
	fmt.Fprintf(tw, "%s\tmixed step\tknee\tknee 95%% CI\tΔ knee\tΔ 95%% CI\tTTFT p99\tITL p99\tworst ITL p99\tworst > %v\tattainment\tprobe\t\n",
		s.column, r.Curves[r.Baseline].SLO.ITL)
	fmt.Fprintf(tw, "%s\tms\treq/s\treq/s\treq/s\treq/s\tms\tms\tms\t%% of requests\tat probe\tstate\t\n", s.unit)
	for i, v := range r.Values {
		name := s.label(v)
		if i == r.Baseline {
			name += " (base)"
		}
		c := r.Curves[i]
		step := float64(mixedStep(configAt(s.dial.dial, v, o.horizon))) / 1e6
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t\n", name, step, knee(c), kneeCI(c.Knee),
			diff(r.KneeDiff[i], r.KneeBounds[i]), diffCI(r.KneeDiff[i], repsOf(c)), probeCells(&r.Probe[i]))
	}
	tw.Flush()
	for i, v := range r.Values {
		if why := infeasibleText(r.Curves[i]); why != "" {
			fmt.Fprintf(w, "  %s: %s\n", s.label(v), why)
		}
	}
	writeBand(w, s)
}

// writeBand prints each value's knee under every model of the sweep's
// band and whether it holds under all of them (nothing without a band).
func writeBand(w io.Writer, s study) {
	r := s.result
	b := r.Curves[r.Baseline].Band
	if b == nil {
		return
	}
	d := b.Declared
	reps := fmt.Sprintf("each model on the first %d of the seeds", d.Reps)
	if d.Reps == 0 || d.Reps >= repsOf(r.Curves[r.Baseline]) {
		reps = "each model on the same seeds"
	}
	fmt.Fprintf(w, "Model band, declared before the runs: %v (%s). Knee under each model, req/s;\n", d, reps)
	fmt.Fprintf(w, "it holds when it moves by at most %.0f %% of its nominal value across the band, else it rests on the model that moves it most:\n", 100*fragileOf(d))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tnominal\t", s.column)
	for _, v := range b.Variants {
		fmt.Fprintf(tw, "%s\t", v.Name)
	}
	fmt.Fprintf(tw, "knee under the band\t\n")
	for i, v := range r.Values {
		c := r.Curves[i]
		name := s.label(v)
		if i == r.Baseline {
			name += " (base)"
		}
		fmt.Fprintf(tw, "%s\t%s\t", name, knee(c))
		for _, vr := range c.Band.Variants {
			fmt.Fprintf(tw, "%s\t", knee(vr.Curve))
		}
		fmt.Fprintf(tw, "%s\t\n", bandVerdict(c))
	}
	tw.Flush()
}

func variantCurves(b *analysis.Band) []*analysis.Curve {
	var out []*analysis.Curve
	for _, v := range b.Variants {
		out = append(out, v.Curve)
	}
	return out
}

func fragileOf(d analysis.ModelError) float64 {
	if d.Fragile == 0 {
		return analysis.DefaultFragile
	}
	return d.Fragile
}

// bandVerdict is a knee's verdict under its band in a table cell:
// "infeasible under every model", "holds", "rests on <the model that
// moves it most>", or "-" where no model placed a knee.
func bandVerdict(c *analysis.Curve) string {
	b := c.Band
	all := true
	for _, v := range append([]*analysis.Curve{c}, variantCurves(b)...) {
		_, _, ok := infeasible(v)
		all = all && ok
	}
	switch {
	case all:
		return "infeasible under every model"
	case b.Mover.Model == "":
		return "-"
	case b.Fragile:
		return "rests on " + b.Mover.Model
	}
	return "holds"
}

func repsOf(c *analysis.Curve) int {
	if len(c.Points) == 0 {
		return 0
	}
	return len(c.Points[0].Runs)
}

// probeCells are TTFT p99, ITL p99 over every gap, the p99 of each
// request's worst gap, the share of requests whose worst gap passes the
// ITL bound (itlMissShare), attainment and the saturation at the probe
// load; "-" where no request was measured, or none completed.
func probeCells(p *analysis.Point) string {
	if p.NoMeasured() {
		return fmt.Sprintf("-\t-\t-\t-\t%s\t%v", noMeasured, p.Saturation)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%.3f\t%v", millis(p.TTFT.P99.Center, "%.0f"), millis(p.ITL.P99.Center, "%.1f"),
		millis(p.WorstITL.P99.Center, "%.1f"), millis(100*itlMissShare(p), "%.1f"), p.Attainment.Center, p.Saturation)
}

// itlMissShare is the share of the point's measured requests, over its
// replications, that completed ok with a worst gap past their ITL bound
// (NaN where none was measured):
// sim.Summary.Causes.ITL, the non-exclusive count, so a request that also
// missed TTFT counts (an SLO on every ITL fails it either way).
func itlMissShare(p *analysis.Point) float64 {
	miss, offered := 0, 0
	for i := range p.Runs {
		miss += p.Runs[i].Causes.ITL
		offered += p.Runs[i].Offered
	}
	if offered == 0 {
		return math.NaN()
	}
	return float64(miss) / float64(offered)
}

// diff prints a paired knee difference, "-" where no replication found
// both knees.
//
// When some replications paired through a knee beyond the loads swept
// (analysis.DialResult.KneeBounds), the difference is a bound: the true one is
// at least as far from zero, "≤" below it or "≥" above.
func diff(e stats.Interval, bounds int) string {
	if e.N == 0 || math.IsNaN(e.Center) {
		return "-"
	}
	switch {
	case bounds > 0 && e.Center < 0:
		return fmt.Sprintf("≤ %+.3f", e.Center)
	case bounds > 0 && e.Center > 0:
		return fmt.Sprintf("≥ %+.3f", e.Center)
	}
	return fmt.Sprintf("%+.3f", e.Center)
}

// diffCI prints its interval, and how many of the reps replications it
// pairs when not all found both knees.
func diffCI(e stats.Interval, reps int) string {
	switch {
	case e.N == 0:
		return "no knee to pair"
	case math.IsNaN(e.Lo) || math.IsNaN(e.Hi):
		return fmt.Sprintf("- (n=%d)", e.N)
	case e.N < reps:
		return fmt.Sprintf("%s (n=%d)", ci(e), e.N)
	}
	return ci(e)
}

func kneeCI(k analysis.Knee) string {
	if !k.Found {
		return "-"
	}
	return ci(k.Load)
}

// millis prints a latency, or "-" where no request completed to give one
// (an overloaded probe load).
func millis(x float64, format string) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// noMeasured stands where the windows measured no request.
const noMeasured = "no measured requests"

// knee prints the knee, or the side of the measured loads it lies beyond:
// below the first that missed the target, above the last that met it;
// "infeasible" when it is so at any load (infeasible); "none" when no
// load measured a request.
func knee(c *analysis.Curve) string {
	if _, _, ok := infeasible(c); ok {
		return "infeasible"
	}
	switch k := c.Knee; {
	case k.Found:
		return fmt.Sprintf("%.3f", k.Load.Center)
	case k.FirstMiss > 0:
		return fmt.Sprintf("< %.3g", k.FirstMiss)
	case k.LastMet > 0:
		return fmt.Sprintf("> %.3g", k.LastMet)
	}
	return "none"
}

// rate prints a load in req/s: two decimals, or three significant digits
// below 0.01 (which "%.2f" would print as 0.00).
func rate(x float64) string {
	if x < 0.01 {
		return fmt.Sprintf("%.3g", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func ci(e stats.Interval) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", e.Lo, e.Hi)
}

// infeasible reports whether the curve's requests miss the SLO at any
// load (the package doc's rule): its knee lies below the lowest load
// swept and that load is stable, so its misses owe nothing to a queue.
// It returns that load's point and the share of its requests the
// dominant miss cause takes, with the cause's bound in words.
func infeasible(c *analysis.Curve) (p *analysis.Point, share float64, ok bool) {
	if c == nil || c.Knee.Censored != analysis.BelowLowest {
		return nil, 0, false
	}
	for i := range c.Points {
		if q := &c.Points[i]; !q.NoMeasured() {
			p = q
			break
		}
	}
	if p == nil || p.Saturation != analysis.Stable || !(p.Offered.Center > 0) {
		return nil, 0, false
	}
	_, rate := missCause(c, p)
	return p, rate / p.Offered.Center, true
}

// missCause is the bound most of the point's misses miss first
// (sim.Summary.Misses' exclusive attribution: not served, TTFT, ITL,
// then TPOT or E2E) and their rate per second.
func missCause(c *analysis.Curve, p *analysis.Point) (string, float64) {
	causes := []struct {
		name string
		rate float64
	}{
		{"the " + c.SLO.TTFT.String() + " TTFT bound", p.MissTTFT.Center},
		{"the " + c.SLO.ITL.String() + " ITL bound", p.MissITL.Center},
		{"service (rejected, timed out or unfinished)", p.MissNotOK.Center},
		{"the TPOT or E2E bound", p.MissOther.Center},
	}
	best := causes[0]
	for _, x := range causes[1:] {
		if x.rate > best.rate {
			best = x
		}
	}
	return best.name, best.rate
}

// infeasibleText says why a curve is infeasible at any load, "" when it
// is not.
func infeasibleText(c *analysis.Curve) string {
	p, share, ok := infeasible(c)
	if !ok {
		return ""
	}
	cause, _ := missCause(c, p)
	return fmt.Sprintf("infeasible at any load: %.0f %% of requests miss %s alone (attainment %.3f at %s req/s, stable)",
		100*share, cause, p.Attainment.Center, rate(p.Load))
}
