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

// writeDeclaration writes the fleets, the workloads, the hypothesis and
// what will run, before any run.
func writeDeclaration(w io.Writer, o options) {
	e := engine.Config{}.WithDefaults()
	slo := sim.SLO{}.WithDefaults()
	fmt.Fprintf(w, "Fleets:     %d Atlas TP4 replicas (engine.Config{}: batch %d, %d KV blocks of %d tokens; costmodel.Frozen{}), co-located or split into a prefill and a decode pool; LeastLoaded in each pool, fresh signals\n",
		o.replicas, e.MaxSeqs, e.KVBlocks, e.BlockSize)
	fmt.Fprintf(w, "Transfer:   a prompt's KV, 80 KiB a token per accelerator, over its prefill replica's link (%s GB/s, 20 µs, shared fairly by its transfers, as NIXL's concurrent RDMA reads);\n", joinFloats(o.bandwidths))
	fmt.Fprintf(w, "            the decode replica reserves blocks for it first (the full-sequence gate); TTFT ends at the prefill replica, the wait and the transfer are in the first ITL\n")
	fmt.Fprintf(w, "Deciders:   always remote at every bandwidth; llm-d's prefix threshold (remote iff >= %d uncached prompt tokens at the chosen decode replica) at %g GB/s\n",
		o.deciderTokens, o.bandwidths[len(o.bandwidths)/2])
	fmt.Fprintf(w, "SLO:        good iff ok, TTFT <= %v and every ITL <= %v\n", slo.TTFT, slo.ITL)
	fmt.Fprintf(w, "Workloads:  open-loop Poisson, no shared prefixes\n")
	for _, l := range loads {
		fmt.Fprintf(w, "  %-15s %s\n", l.name+":", l.about)
	}
	fmt.Fprintf(w, "\nHypothesis, declared before the runs: for each workload, each split of the %d replicas raises the knee (the highest load at which 95 %% of requests are good) by more than %.3g %% over the %d co-located; the fleets are the same size, so this is the knee per replica.\n",
		o.replicas, 100*o.threshold, o.replicas)
	fmt.Fprintf(w, "Test:       paired seeded blocks (common random numbers), each block's knee over the A/B loads (%s x the co-located knee); improved iff the 95 %% interval of the rise lies above %+.3g %%.\n",
		joinFloats(o.factors), 100*o.threshold)
	fmt.Fprintf(w, "Band:       %s, on the first %d blocks of each test, each model at its own A/B loads.\n", band(o), o.bandBlocks)
	fmt.Fprintf(w, "Ran:        co-located sweep (x1.5 to collapse, 3 bisections at the knee), %d replications a load; %d blocks a test; window %v to %v; base seed %d.\n\n",
		o.reps, o.blocks, o.horizon/10, o.horizon, o.seed)
}

// writeLoad writes a workload's knees, tests and probes.
func writeLoad(w io.Writer, out *outcome, o options) {
	fmt.Fprintf(w, "== %s (%s) ==\n", out.name, out.about)
	writeEstimate(w, out.load, o)
	c := out.colocated
	if !c.Knee.Found {
		fmt.Fprintf(w, "  no A/B loads: the co-located knee was not found (%s)\n\n", c.Knee.Reason())
		return
	}
	loads := make([]string, len(out.loads))
	for i, l := range out.loads {
		loads[i] = num(l)
	}
	fmt.Fprintf(w, "  co-located %d: knee %s req/s [%s, %s], %s req/s per replica; A/B loads %s req/s\n",
		o.replicas, num(c.Knee.Load.Center), num(c.Knee.Load.Lo), num(c.Knee.Load.Hi), num(c.Knee.Load.Center/float64(o.replicas)), strings.Join(loads, ", "))
	fmt.Fprintf(w, "  co-located's largest step (a prefill chunk beside a full batch of decodes) is %v, against the %v ITL bound: what a split's decode pool, free of prefill, takes off every gap\n",
		config(row{}, o).LargestStep(), sim.SLO{}.WithDefaults().ITL)
	writeBandKnees(w, "the co-located knee", c)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  split\tknee/replica\tpaired Δknee (req/s) [95%% CI]\trise [95%% CI]\tverdict\tunder the band\tat %s req/s: remote\tprefill busy\tdecode busy\tlink util\tfirst ITL p99 (ms)\n", num(c.Knee.Load.Center))
	for i, r := range out.rows {
		x, p := out.results[i], out.probes[i]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name(o), kneeB(x, o),
			report.PairedDiff(x.KneeDiff), pct(x.Improvement.Center, x.Improvement.Lo, x.Improvement.Hi), x.Verdict, bandWord(x),
			fixed(p.Disagg.RemoteShare), fixed(p.Disagg.PrefillBusy), fixed(p.Disagg.DecodeBusy), fixed(p.Disagg.LinkUtilisation), num(p.Disagg.FirstITL.P99))
	}
	tw.Flush()
	for i, r := range out.rows {
		for _, warn := range out.results[i].Warnings {
			fmt.Fprintf(w, "  note: %s: %s\n", r.name(o), warn)
		}
	}
	if b := out.bestCurve; b != nil {
		fmt.Fprintf(w, "  the largest rise, %s, swept as co-located was: knee %s req/s, %s per replica\n", out.rows[out.best].name(o), num(b.Knee.Load.Center), num(b.Knee.Load.Center/float64(o.replicas)))
		writeBandKnees(w, "its knee", b)
	}
	fmt.Fprintln(w)
}

// writeBandKnees says where each model of the band put the co-located
// knee (its sweep on 2 seeds), which places that model's A/B loads; a
// model under which it lies below the sweep's lowest load has none, and
// no verdict.
func writeBandKnees(w io.Writer, what string, c *analysis.Curve) {
	if c.Band == nil {
		return
	}
	parts := make([]string, len(c.Band.Variants))
	for i, v := range c.Band.Variants {
		switch k := v.Curve.Knee; {
		case k.Found:
			parts[i] = fmt.Sprintf("%s %s", v.Name, num(k.Load.Center))
		case k.Censored == analysis.BelowLowest:
			parts[i] = fmt.Sprintf("%s below %s req/s, its lowest load", v.Name, num(k.FirstMiss))
		default:
			parts[i] = fmt.Sprintf("%s none (%s), so the nominal loads", v.Name, k.Reason())
		}
	}
	fmt.Fprintf(w, "  %s under each model of the band (its sweep on 2 seeds): %s\n", what, strings.Join(parts, "; "))
}

// kneeB is B's knee per replica, marked when some blocks' knees lie
// beyond the A/B loads (a bound, which understates the difference).
func kneeB(x *analysis.ExperimentResult, o options) string {
	k := num(x.KneeB.Center / float64(o.replicas))
	if x.KneeBounds > 0 {
		k += fmt.Sprintf(" (%d of %d blocks a bound)", x.KneeBounds, x.KneeDiff.N)
	}
	return k
}

// bandWord says whether a test's verdict holds under every model of its
// band, or the model it flips under.
func bandWord(x *analysis.ExperimentResult) string {
	switch {
	case len(x.Band) == 0:
		return "-"
	case x.BandHolds:
		return "holds"
	case x.BandFlip != nil:
		return fmt.Sprintf("rests on the model (%s under %s)", x.BandFlip.Verdict, x.BandFlip.Name)
	}
	return "rests on the model"
}

// verdictLine says, in conditional language, where splitting pays for
// the workload.
func verdictLine(out *outcome, o options) string {
	if out.results == nil {
		return fmt.Sprintf("verdict %s: none: the co-located knee was not found", out.name)
	}
	var pays, payNominal, not, open []string
	best, bestRise := "", math.Inf(-1)
	for i, r := range out.rows {
		x := out.results[i]
		switch {
		case x.Verdict == analysis.Improved && x.BandHolds:
			pays = append(pays, r.name(o))
		case x.Verdict == analysis.Improved:
			payNominal = append(payNominal, r.name(o))
		case x.Verdict == analysis.NotImproved && x.BandHolds:
			not = append(not, r.name(o))
		default:
			open = append(open, r.name(o))
		}
		if c := x.Improvement.Center; c > bestRise {
			best, bestRise = r.name(o), c
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "verdict %s: ", out.name)
	switch {
	case len(pays) > 0:
		fmt.Fprintf(&b, "if the step times lie within the band, splitting pays: %s raise%s the knee per replica over %d co-located under every model of the band",
			strings.Join(pays, ", "), plural(len(pays)), o.replicas)
	case len(payNominal) > 0:
		fmt.Fprintf(&b, "splitting pays under the nominal model only (%s), not under every model of the band: the answer rests on the cost model", strings.Join(payNominal, ", "))
	case len(open) == 0:
		fmt.Fprintf(&b, "if the step times lie within the band, splitting does not pay: no split tried raises the knee per replica over %d co-located, under any model of the band", o.replicas)
	default:
		fmt.Fprintf(&b, "no split tried is shown to pay: %d do not under any model of the band, %d are inconclusive or rest on the model (more blocks may settle them)", len(not), len(open))
	}
	fmt.Fprintf(&b, "; the largest rise is that of %s (%+.1f %%)", best, 100*bestRise)
	if lost := lostModels(out.colocated); len(lost) > 0 {
		fmt.Fprintf(&b, "; under %s the co-located fleet has no knee above the lowest load of its sweep (a prefill chunk beside a batch of decodes breaks the ITL bound there), so no A/B test there", strings.Join(lost, ", "))
		if kept := keptModels(out.bestCurve, lost); len(kept) > 0 {
			fmt.Fprintf(&b, ", while %s keeps a knee under %s: if the step times are as slow as those models say, splitting pays", out.rows[out.best].name(o), strings.Join(kept, ", "))
		}
	}
	if len(o.bandwidths) > 1 {
		fmt.Fprintf(&b, "; the link's bandwidth (%s GB/s) moves a split's knee by at most %.1f %% of co-located's", joinFloats(o.bandwidths), 100*bandwidthSpread(out, o))
	}
	if (len(pays) > 0 || len(payNominal) > 0) && len(not)+len(open) > 0 {
		fmt.Fprintf(&b, "; of the others, %d do not pay under any model, %d are inconclusive or rest on the model", len(not), len(open))
	}
	return b.String()
}

// lostModels are the models of the band under which the co-located knee
// lies below its sweep's lowest load.
func lostModels(c *analysis.Curve) []string {
	if c.Band == nil {
		return nil
	}
	var out []string
	for _, v := range c.Band.Variants {
		if k := v.Curve.Knee; !k.Found && k.Censored == analysis.BelowLowest {
			out = append(out, v.Name)
		}
	}
	return out
}

// keptModels are those of models under which c has a knee.
func keptModels(c *analysis.Curve, models []string) []string {
	if c == nil || c.Band == nil {
		return nil
	}
	var out []string
	for _, v := range c.Band.Variants {
		if v.Curve.Knee.Found && slices.Contains(models, v.Name) {
			out = append(out, fmt.Sprintf("%s (%s req/s)", v.Name, num(v.Curve.Knee.Load.Center)))
		}
	}
	return out
}

// bandwidthSpread is the largest difference between the knees of one
// split at two bandwidths (every request remote), relative to the
// co-located knee.
func bandwidthSpread(out *outcome, o options) float64 {
	worst := 0.0
	for i, a := range out.rows {
		for j, b := range out.rows {
			if a.prefill != b.prefill || a.bandwidth == b.bandwidth || !isAlways(a) || !isAlways(b) {
				continue
			}
			d := math.Abs(out.results[i].KneeB.Center-out.results[j].KneeB.Center) / out.colocated.Knee.Load.Center
			worst = max(worst, d)
		}
	}
	return worst
}

// isAlways reports whether the row sends every request remote.
func isAlways(r row) bool {
	_, ok := r.decider.(sim.AlwaysRemote)
	return ok
}

// plural is the verb's "s" for one subject.
func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// num prints a figure with three significant digits, "-" for NaN.
func num(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3g", x)
}

// fixed prints a share with two decimals, "-" for NaN.
func fixed(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// pct prints a relative change and its interval in per cent.
func pct(c, lo, hi float64) string {
	switch {
	case math.IsNaN(c):
		return "-"
	case math.IsNaN(lo):
		return fmt.Sprintf("%+.1f %%", 100*c)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*c, 100*lo, 100*hi)
}

// joinFloats prints numbers with %g, comma-separated.
func joinFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%g", x)
	}
	return strings.Join(s, ", ")
}
