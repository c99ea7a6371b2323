package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// writeDeclaration writes the fleet, the workload, the hypothesis with its
// threshold, the rule that picks the operating loads and what will run,
// before any run.
func writeDeclaration(w io.Writer, o options) {
	e := engine.Config{}.WithDefaults()
	slo := sim.SLO{}.WithDefaults()
	pa := sim.PrefixAffinity{}.WithDefaults()
	fmt.Fprintf(w, "Fleet:      %d Atlas TP4 replicas (engine.Config{}: batch %d, %d KV blocks of %d tokens each; costmodel.Frozen{}), fresh load signals\n",
		o.replicas, e.MaxSeqs, e.KVBlocks, e.BlockSize)
	fmt.Fprintf(w, "SLO:        good iff ok, TTFT <= %v and every ITL <= %v; goodput = good requests/s (sim.MetricGoodput)\n", slo.TTFT, slo.ITL)
	fmt.Fprintf(w, "Workload:   open-loop Poisson; a request is its shared prefix, if any, then %d fresh prompt tokens; %d output tokens\n", o.input, o.output)
	for _, l := range levels {
		fmt.Fprintf(w, "  %-11s %s: %v\n", l.name+":", l.preset, l.prefix)
	}
	fmt.Fprintf(w, "Routers:    %s, %s, %s (SGLang's cache-aware policy: CacheThreshold %g, BalanceAbs %d, BalanceRel %g)\n\n",
		roundRobin.name, leastLoaded.name, prefixAffinity.name, pa.CacheThreshold, pa.BalanceAbs, pa.BalanceRel)
	fmt.Fprintf(w, "Hypothesis, declared before the runs: at each reuse level, PrefixAffinity (B) raises TTFT-qualified goodput by at least %.3g %% over RoundRobin (A), and over LeastLoaded (A), at the operating loads.\n",
		100*o.threshold)
	fmt.Fprintf(w, "Test:       paired seeded blocks (A and B on common random numbers); improved iff the 95 %% interval of the improvement lies above %+.3g %%, not improved iff at or below it, else inconclusive.\n", 100*o.threshold)
	fmt.Fprintf(w, "Operating:  %s x RoundRobin's knee at each reuse level, read from its sweep before any A/B run.\n", joinFloats(o.factors, ", "))
	fmt.Fprintf(w, "Ran:        per router and reuse level, a sweep from %s req/s (x1.5 to collapse, 3 bisections at the knee), %d replications per load; %d A/B blocks per operating load;\n",
		num(o.start), o.reps, o.blocks)
	fmt.Fprintf(w, "            window %v to %v of simulated time (measured requests may finish up to %v later); base seed %d.\n\n",
		o.horizon/10, o.horizon, o.horizon-o.horizon/10, o.seed)
}

// writeLevel writes a reuse level's knees, prefix hit rates, operating
// loads and per-load comparisons.
func writeLevel(w io.Writer, out *outcome, o options) {
	fmt.Fprintf(w, "== %s (%s) ==\n", out.name, out.preset)
	at := hitRateLoad(out)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  router\tknee (req/s) [95%% CI]\tpeak goodput (req/s)\tat %s req/s: prefix hit rate\trequest imbalance\n", num(at))
	for i, r := range routers {
		c := out.curves[i]
		hits, imb := "-", "-"
		if p := pointAt(c, at); p != nil {
			hits, imb = fixed(hitRate(p)), fixed(imbalance(p))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s at %s\t%s\t%s\n", r.name, knee(c), num(c.Peak.Goodput.Center), num(c.Peak.Load), hits, imb)
	}
	tw.Flush()
	for i, r := range routers {
		for _, warn := range out.curves[i].Warnings {
			fmt.Fprintf(w, "  note: %s: %s\n", r.name, warn)
		}
	}
	if out.loads == nil {
		fmt.Fprintf(w, "  no operating loads: RoundRobin's knee was not found (%s)\n\n", out.curves[0].Knee.Reason())
		return
	}
	fmt.Fprintf(w, "  operating loads: %s req/s = %s x RoundRobin's knee %s req/s\n",
		joinFloats(out.loads, ", "), joinFloats(o.factors, ", "), num(out.curves[0].Knee.Load.Center))
	for k, base := range baselines {
		fmt.Fprintf(w, "  PrefixAffinity (B) against %s (A), goodput in req/s:\n", base.name)
		for _, l := range out.result[k].Loads {
			fmt.Fprintf(w, "    at %s: A %s, B %s, improvement %s -> %v\n", num(l.Load), l.A, l.B, improvement(l.Improvement), l.Verdict)
		}
	}
	fmt.Fprintln(w)
}

// hitRateLoad is where the prefix hit rates are compared: the load all
// three sweeps ran nearest the middle operating load (or RoundRobin's
// last load when there are none).
func hitRateLoad(out *outcome) float64 {
	target := out.curves[0].Points[len(out.curves[0].Points)-1].Load
	if len(out.loads) > 0 {
		sorted := slices.Sorted(slices.Values(out.loads))
		target = sorted[len(sorted)/2]
	}
	return commonLoad(out.curves, target)
}

// verdictLine is a reuse level's answer (report.VerdictLine): against
// each baseline, the verdict and the interval of the improvement at the
// operating loads at or below the baseline's knee (the headline), the
// same past it, and the boundary (the verdict at each load).
func verdictLine(out *outcome) string {
	bases := make([]string, len(baselines))
	for k, base := range baselines {
		bases[k] = base.name
	}
	var results []*analysis.ExperimentResult
	if out.loads != nil {
		results = out.result
	}
	return report.VerdictLine(out.name, bases, results,
		fmt.Sprintf("RoundRobin's knee was not found in its sweep, so there are no operating loads (%s)", out.curves[0].Knee.Reason()))
}

// knee prints a curve's knee with its interval, or why it has none.
func knee(c *analysis.Curve) string {
	k := c.Knee
	switch {
	case !k.Found:
		return "not found: " + k.Reason()
	case math.IsNaN(k.Load.Lo) || math.IsNaN(k.Load.Hi):
		return num(k.Load.Center) + " [no interval]"
	}
	return fmt.Sprintf("%s [%s, %s]", num(k.Load.Center), num(k.Load.Lo), num(k.Load.Hi))
}

// improvement prints a relative improvement in per cent with its
// interval.
func improvement(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none measured"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// fixed prints a fraction or ratio with three decimals, "-" for NaN.
func fixed(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

// num prints a figure with three significant digits.
func num(x float64) string { return fmt.Sprintf("%.3g", x) }

func joinFloats(xs []float64, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = num(x)
	}
	return strings.Join(s, sep)
}
