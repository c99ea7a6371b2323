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
	fmt.Fprintf(w, "Hypothesis, declared before the runs: at each reuse level, PrefixAffinity (B) raises the knee (the highest load at which 95 %% of requests are good) by at least %.3g %% over RoundRobin (A), and over LeastLoaded (A).\n",
		100*o.threshold)
	fmt.Fprintf(w, "Test:       paired seeded blocks (A and B on common random numbers), each block's knee read over the A/B loads; improved iff the 95 %% interval of the relative rise lies above %+.3g %%, not improved iff at or below it, else inconclusive.\n", 100*o.threshold)
	fmt.Fprintf(w, "            Below A's knee goodput is the offered load under every router, so the knee, not goodput there, is what a router can raise; latency at the loads A serves is the second readout.\n")
	fmt.Fprintf(w, "A/B loads:  %s x RoundRobin's knee at each reuse level, read from its sweep before any A/B run.\n", joinFloats(o.factors, ", "))
	fmt.Fprintf(w, "Ran:        per router and reuse level, a sweep from %s req/s (x1.5 to collapse, 3 bisections at the knee), %d replications per load; %d A/B blocks, each at every A/B load;\n",
		num(o.start), o.reps, o.blocks)
	if o.cpBlocks > 0 {
		fmt.Fprintf(w, "Control:    PrefixAffinity against LeastLoaded, both behind each control plane, at the A/B loads, nominal model, %d blocks: %s.\n", o.cpBlocks, joinNames(variants()))
	}
	fmt.Fprintf(w, "Gateway:    PrefixAffinity's sweep, and again behind a gateway shedding while every replica has more than %d waiting, each run at 1.5x and 2x its knee too.\n", shedDepth)
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
	writeSizes(w, out, o)
	if out.loads == nil {
		fmt.Fprintf(w, "  no A/B loads: RoundRobin's knee was not found (%s)\n\n", out.curves[0].Knee.Reason())
		return
	}
	fmt.Fprintf(w, "  A/B loads: %s req/s = %s x RoundRobin's knee %s req/s\n",
		joinFloats(out.loads, ", "), joinFloats(o.factors, ", "), num(out.curves[0].Knee.Load.Center))
	writeBandKnees(w, out.curves[0], o)
	for k, base := range baselines {
		r := out.result[k]
		fmt.Fprintf(w, "  PrefixAffinity (B) against %s (A): %s\n", base.name, report.ComparisonLine(r, base.name))
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "    note: %s\n", warn)
		}
		for _, line := range report.BandVerdicts(r) {
			fmt.Fprintf(w, "    %s\n", line)
		}
		writeLatency(w, r)
	}
	writeControlPlane(w, out, o)
	writeRetained(w, out)
	fmt.Fprintln(w)
}

// writeBandKnees says where each model of the band put RoundRobin's
// knee, which places that model's A/B loads (the same factors times it),
// which models have none (a knee below the sweep's lowest load: no
// verdict under them) and which run at the nominal loads for want of a
// knee.
func writeBandKnees(w io.Writer, rr *analysis.Curve, o options) {
	if rr.Band == nil {
		return
	}
	parts := make([]string, len(rr.Band.Variants))
	for i, v := range rr.Band.Variants {
		switch k := v.Curve.Knee; {
		case k.Found:
			parts[i] = fmt.Sprintf("%s %s", v.Name, num(k.Load.Center))
		case k.Censored == analysis.BelowLowest:
			parts[i] = fmt.Sprintf("%s below %s, its lowest load, so none and no verdict under it", v.Name, num(k.FirstMiss))
		default:
			parts[i] = fmt.Sprintf("%s none (%s), so the nominal loads", v.Name, k.Reason())
		}
	}
	fmt.Fprintf(w, "  each model's A/B loads are the same multiples of RoundRobin's knee under it (its sweep on %d seeds): %s\n",
		loadBand(o).Reps, strings.Join(parts, "; "))
}

// bandLine says, per baseline, whether the level's verdict holds under
// every model of the band or rests on the model.
func bandLine(out *outcome) string {
	if out.loads == nil {
		return ""
	}
	parts := make([]string, len(baselines))
	for k, base := range baselines {
		parts[k] = fmt.Sprintf("against %s, %s", base.name, out.result[k].BandVerdict())
	}
	return fmt.Sprintf("model band %s: %s", out.name, strings.Join(parts, "; "))
}

// target is the attainment a knee meets (analysis.Experiment's default).
const target = 0.95

// writeLatency prints the second readout: at each A/B load where A's
// attainment meets the target, TTFT p50 and p99 and ITL p99 under A and
// the paired difference B - A; and the attainment at the others.
func writeLatency(w io.Writer, r *analysis.ExperimentResult) {
	var past []string
	for _, l := range r.Loads {
		if !(l.A.Center >= target) {
			past = append(past, fmt.Sprintf("%s (A %s, B %s)", num(l.Load), fixed(l.A.Center), fixed(l.B.Center)))
			continue
		}
		parts := []string{fmt.Sprintf("attainment A %s, B %s", fixed(l.A.Center), fixed(l.B.Center))}
		for _, d := range l.Latency {
			parts = append(parts, fmt.Sprintf("%s A %.0f, B-A %s", d.Metric, d.A.Center, report.PairedDiff(d.Diff)))
		}
		fmt.Fprintf(w, "    at %s: %s\n", num(l.Load), strings.Join(parts, "; "))
	}
	if len(past) > 0 {
		fmt.Fprintf(w, "    past A's knee, attainment at %s req/s\n", strings.Join(past, ", "))
	}
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
// each baseline, the verdict on the knee, the knees and their paired
// difference with its interval.
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
		fmt.Sprintf("RoundRobin's knee was not found in its sweep, so there are no A/B loads (%s)", out.curves[0].Knee.Reason()))
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
