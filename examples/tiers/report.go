package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// writeDeclaration writes the fleet, the workloads with their working
// sets, the tiers in GiB and blocks, their restore bounds, the hypothesis
// and what will run, before any run.
func writeDeclaration(w io.Writer, o options) error {
	e := engine.Config{}.WithDefaults()
	slo := sim.SLO{}.WithDefaults()
	hbm := hbmBlocks(o.replicas)
	fmt.Fprintf(w, "Fleet:      %d Atlas TP4 replicas (engine.Config{}: batch %d, %d KV blocks of %d tokens, %s a block over the %d ranks: %s of HBM KV a replica, %d blocks = %s for the fleet; costmodel.Frozen{}), fresh load signals\n",
		o.replicas, e.MaxSeqs, e.KVBlocks, e.BlockSize, gib(blockBytes), ranks, gib(float64(e.KVBlocks)*blockBytes), hbm, gib(float64(hbm)*blockBytes))
	fmt.Fprintf(w, "SLO:        good iff ok, TTFT <= %v and every ITL <= %v; goodput = good requests/s (sim.MetricGoodput)\n", slo.TTFT, slo.ITL)
	fmt.Fprintf(w, "Workload:   open-loop Poisson; a request is its shared prefix, if any, then %d fresh prompt tokens; %d output tokens\n", o.input, o.output)
	for _, l := range levels {
		ws := l.workingSet()
		fmt.Fprintf(w, "  %-11s %s: %v; working set %d prefix blocks (%s, %.3gx the fleet's HBM)\n",
			l.name+":", l.preset, l.prefix, ws, gib(float64(ws)*blockBytes), float64(ws)/float64(hbm))
	}
	fmt.Fprintf(w, "Routers:    %s, %s, %s (SGLang's cache-aware policy, sim.PrefixAffinity{} at its defaults)", roundRobin.name, leastLoaded.name, prefixAffinity.name)
	if o.tieredView {
		fmt.Fprintf(w, "; in the tier rows also %s (PrefixAffinity{View: sim.TieredView{}}: it sees the host tier and the shared store)", tieredPA.name)
	}
	fmt.Fprintf(w, "\nTiers below HBM, every full block written through as computed, LRU (sim.HostTier, sim.SharedStore):\n")
	if o.hostGiB > 0 {
		n := hostBlocks(o.hostGiB)
		fmt.Fprintf(w, "  host tier:    %.4g GiB a replica as vLLM's --kv-offloading-size declares it (%.4g GiB on each of its %d ranks) = %d blocks (%.3gx its HBM); each accelerator's PCIe link %s, %v latency, LinkFIFO\n",
			o.hostGiB, o.hostGiB/float64(ranks), ranks, n, float64(n)/float64(e.KVBlocks), rate(o.hostBandwidth), o.hostLatency)
	}
	if len(o.shared) > 0 {
		fmt.Fprintf(w, "  shared store: one network link for the fleet, %s, %v latency, LinkFair; sizes:\n", rate(o.sharedBW), o.sharedLatency)
		for _, x := range o.shared {
			n := sharedBlocks(x, o.replicas)
			ws := make([]string, len(levels))
			for i, l := range levels {
				ws[i] = fmt.Sprintf("%.3gx the %s working set", float64(n)/float64(l.workingSet()), l.name)
			}
			fmt.Fprintf(w, "    %.4gx the fleet's HBM = %d blocks = %s (%s)\n", x, n, gib(float64(n)*blockBytes), strings.Join(ws, ", "))
		}
	}
	if err := writeRestore(w, o); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nHypothesis, declared before the runs: in every row at each reuse level, PrefixAffinity (B) raises the knee (the highest load at which 95 %% of requests are good) by at least %.3g %% over RoundRobin (A).\n",
		100*o.threshold)
	fmt.Fprintf(w, "Test:       paired seeded blocks (A and B on common random numbers), each block's knee read over the A/B loads; improved iff the 95 %% interval of the relative rise lies above %+.3g %%, not improved iff at or below it, else inconclusive.\n", 100*o.threshold)
	fmt.Fprintf(w, "A/B loads:  %s x RoundRobin's knee in each row, read from its sweep before any A/B run; model band %s on the first %d blocks, each model at the same multiples of RoundRobin's knee under it (its sweep on %d seeds).\n",
		joinFloats(o.factors, ", "), bandNames(o), o.bandBlocks, loadBand(o).Reps)
	fmt.Fprintf(w, "Ran:        per row and router, a sweep from %s req/s (x1.5 to collapse, 3 bisections at the knee), %d replications per load; %d A/B blocks, each at every A/B load;\n",
		num(o.start), o.reps, o.blocks)
	fmt.Fprintf(w, "            window %v to %v of simulated time (measured requests may finish up to %v later); base seed %d.\n\n",
		o.warmup, o.horizon, o.horizon-o.warmup, o.seed)
	return nil
}

// writeRestore prints the restore bounds of the declared tiers
// (costmodel.Tiers), once: why a slow network store may not pay.
func writeRestore(w io.Writer, o options) error {
	t := costmodel.Tiers{Replica: costmodel.AtlasTP4(), Replicas: o.replicas}
	if o.hostGiB > 0 {
		t.Host = costmodel.TierLink{Bandwidth: o.hostBandwidth, Latency: o.hostLatency}
	}
	if len(o.shared) > 0 {
		t.Shared = costmodel.TierLink{Bandwidth: o.sharedBW, Latency: o.sharedLatency}
	}
	est, err := t.Estimate()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Restore bounds (costmodel.Tiers: Atlas TP4, the links above, %d replicas sharing the store's link):\n", o.replicas)
	for _, f := range est.Figures() {
		fmt.Fprintf(w, "  %-32s %10.4g %-8s %s\n", f.Name, f.Value, f.Unit, f.Basis)
	}
	fmt.Fprintf(w, "  A ratio compares one prefix's two times. A load overlaps the other requests' steps (the request waits outside the batch), so a tier\n"+
		"  that restores slower than the replica recomputes still frees the replica's compute for others, up to its restore bound, while the\n"+
		"  request that loads waits longer: the rows measure which wins (TTFT loading is the share of TTFT that wait takes).\n")
	return nil
}

// bandNames lists the band's models.
func bandNames(o options) string {
	m := analysis.AtlasBand(o.modelError)
	var names []string
	if m.Scale > 0 {
		names = append(names, fmt.Sprintf("step times ×%.4g and ×%.4g", 1+m.Scale, 1-m.Scale))
	}
	for _, s := range m.Shapes {
		names = append(names, s.Name)
	}
	return "(analysis.AtlasBand: " + strings.Join(names, ", ") + ")"
}

// writeLevel writes every row of a reuse level: each router's knee and
// its hits per tier at one load every sweep of the level ran, and
// PrefixAffinity's paired Δknee over RoundRobin with the band's verdict.
func writeLevel(w io.Writer, rs []*row, o options) {
	l := rs[0].level
	ws := l.workingSet()
	fmt.Fprintf(w, "== %s (%s): working set %d prefix blocks, %s ==\n", l.name, l.preset, ws, gib(float64(ws)*blockBytes))
	at := hitLoad(rs)
	fmt.Fprintf(w, "  hits at %s req/s, a load every sweep of the level ran: the share of the measured requests' prompt tokens found in HBM, loaded from the host tier, loaded from the shared store; the share of TTFT spent waiting for loads; the links' mean utilisation\n", num(at))
	for _, r := range rs {
		fmt.Fprintf(w, "  -- %s --\n", r.name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    router\tknee (req/s) [95%% CI]\tHBM\thost\tshared\tTTFT loading\tlink use\n")
		for i, rt := range r.routers {
			h := tierHits{hbm: math.NaN(), host: math.NaN(), shared: math.NaN(), loading: math.NaN(), hostUtil: math.NaN(), sharedUtil: math.NaN()}
			if p := pointAt(r.curves[i], at); p != nil {
				h = hitsAt(p)
			}
			host, shared, util := "-", "-", "-"
			if r.host.On() {
				host, util = fixed(h.host), fixed(h.hostUtil)
			}
			if r.shared.On() {
				shared, util = fixed(h.shared), fixed(h.sharedUtil)
			}
			loading := "-"
			if r.tiered() {
				loading = fixed(h.loading)
			}
			fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%s\t%s\n", rt.name, knee(r.curves[i]), fixed(h.hbm), host, shared, loading, util)
		}
		tw.Flush()
		for i, rt := range r.routers {
			for _, warn := range r.curves[i].Warnings {
				fmt.Fprintf(w, "    note: %s: %s\n", rt.name, warn)
			}
		}
		if r.result == nil {
			fmt.Fprintf(w, "    no A/B test: RoundRobin's knee was not found (%s)\n", r.curves[0].Knee.Reason())
			continue
		}
		fmt.Fprintf(w, "    A/B loads %s req/s: PrefixAffinity (B) against RoundRobin (A): %s\n", joinFloats(r.loads, ", "), report.ComparisonLine(r.result, roundRobin.name))
		for _, warn := range r.result.Warnings {
			fmt.Fprintf(w, "      note: %s\n", warn)
		}
		fmt.Fprintf(w, "    model band: %s\n", r.result.BandVerdict())
		if len(r.routers) > 3 {
			fmt.Fprintf(w, "    %s\n", viewLine(r.curves[2], r.curves[3]))
		}
	}
	fmt.Fprintln(w)
}

// viewLine says whether reading the tiers moves PrefixAffinity's knee:
// its sweep's knee against PrefixAffinity's own (the same seeds), and
// whether their intervals are apart.
func viewLine(pa, tiered *analysis.Curve) string {
	a, b := pa.Knee, tiered.Knee
	if !a.Found || !b.Found {
		return fmt.Sprintf("seeing the tiers: PrefixAffinity's knee %s, with sim.TieredView %s", knee(pa), knee(tiered))
	}
	moves := "within the sweeps' noise (the intervals overlap)"
	switch {
	case math.IsNaN(a.Load.Lo) || math.IsNaN(a.Load.Hi) || math.IsNaN(b.Load.Lo) || math.IsNaN(b.Load.Hi):
		moves = "a knee without an interval, so no word on noise"
	case b.Load.Lo > a.Load.Hi:
		moves = "a rise (the intervals are apart)"
	case b.Load.Hi < a.Load.Lo:
		moves = "a fall (the intervals are apart)"
	}
	return fmt.Sprintf("seeing the tiers (sim.TieredView) moves PrefixAffinity's knee from %s to %s req/s, %+.1f %%: %s",
		num(a.Load.Center), num(b.Load.Center), 100*(b.Load.Center/a.Load.Center-1), moves)
}

// hitLoad is where a level's hits are compared: the load every sweep of
// every row ran nearest the middle A/B load of the row without tiers (or
// its RoundRobin's last load when it has none).
func hitLoad(rs []*row) float64 {
	base := rs[0]
	target := base.curves[0].Points[len(base.curves[0].Points)-1].Load
	if len(base.loads) > 0 {
		sorted := slices.Sorted(slices.Values(base.loads))
		target = sorted[len(sorted)/2]
	}
	var all []*analysis.Curve
	for _, r := range rs {
		all = append(all, r.curves...)
	}
	return commonLoad(all, target)
}

// writeAnswer writes a level's answer: the verdict of every row, then in
// conditional language how each tier moves PrefixAffinity's rise over
// RoundRobin from the row without tiers and whether it still pays, and
// where along the store sizes it stops paying.
func writeAnswer(w io.Writer, rs []*row, o options) {
	l := rs[0].level
	for _, r := range rs {
		fmt.Fprintln(w, report.VerdictLine(l.name+", "+r.name, []string{roundRobin.name}, []*analysis.ExperimentResult{r.result},
			fmt.Sprintf("RoundRobin's knee was not found in its sweep, so there are no A/B loads (%s)", r.curves[0].Knee.Reason())))
	}
	base := rs[0].result
	for _, r := range rs[1:] {
		if base == nil || r.result == nil {
			continue
		}
		fmt.Fprintf(w, "if %s: %s\n", survive(r, l), ifLine(base, r.result))
	}
	var sizes []int
	var rises []stats.Interval
	for _, r := range rs {
		if r.store >= 0 && r.result != nil {
			sizes, rises = append(sizes, r.store), append(rises, r.result.Improvement)
		}
	}
	if len(sizes) > 1 {
		fmt.Fprintf(w, "store sizes %s: %s\n", l.name, stopsPaying(sizes, rises, o.threshold, l.workingSet()))
	}
	fmt.Fprintln(w)
}

// survive is the row's condition: where the evicted blocks survive.
func survive(r *row, l level) string {
	if r.host.On() {
		return fmt.Sprintf("evicted blocks survive in a host tier of %s a replica (%d blocks) at %s", gib(float64(r.host.Blocks)*blockBytes), r.host.Blocks, l.name)
	}
	return fmt.Sprintf("evicted blocks survive in a shared store of %d blocks (%s, %.3gx the working set) at %s",
		r.shared.Blocks, gib(float64(r.shared.Blocks)*blockBytes), float64(r.shared.Blocks)/float64(l.workingSet()), l.name)
}

// ifLine says how the tier moves PrefixAffinity's rise over RoundRobin
// from the row without tiers, whether prefix-aware routing still pays,
// and whether that verdict holds under every model of the band.
func ifLine(base, r *analysis.ExperimentResult) string {
	moves := "a fall"
	switch c := r.Improvement.Center; {
	case c > base.Improvement.Center:
		moves = "a rise"
	case c == base.Improvement.Center:
		moves = "no change"
	}
	held := "under every model of the band"
	if !r.BandHolds {
		held = "resting on the model (" + strings.TrimPrefix(r.BandVerdict(), "rests on the model: ") + ")"
	}
	diff := "none"
	if d := r.KneeDiff; !math.IsNaN(d.Center) {
		diff = fmt.Sprintf("%+.3f [%.3f, %.3f] req/s", d.Center, d.Lo, d.Hi)
	}
	return fmt.Sprintf("PrefixAffinity's rise of the knee over RoundRobin is %s without the tier, %s with it (%s; %s -> %s req/s, paired %s): %s, %s",
		percent(base.Improvement), percent(r.Improvement), moves, num(r.KneeA.Center), num(r.KneeB.Center), diff, pays(r), held)
}

// pays says whether prefix-aware routing pays, in the strength the
// verdict gives: surely (improved), surely not (not improved), or likely
// either way (inconclusive, by the side of the threshold the rise's
// centre lies on).
func pays(r *analysis.ExperimentResult) string {
	th := 100 * r.Hypothesis.Threshold
	switch {
	case r.Verdict == analysis.Improved:
		return fmt.Sprintf("prefix-aware routing pays (improved: the rise is surely above %+.3g %%)", th)
	case r.Verdict == analysis.NotImproved:
		return fmt.Sprintf("prefix-aware routing does not pay (not improved: the rise is surely at or below %+.3g %%)", th)
	case r.Verdict == analysis.Inconclusive && r.Improvement.Center >= r.Hypothesis.Threshold:
		return fmt.Sprintf("prefix-aware routing likely pays, not surely (inconclusive: the interval straddles %+.3g %%)", th)
	case r.Verdict == analysis.Inconclusive:
		return fmt.Sprintf("prefix-aware routing likely does not pay, not surely (inconclusive: the interval straddles %+.3g %%)", th)
	}
	return "no verdict: " + r.Verdict.String()
}

// stopsPaying says where, along the shared store's sizes (in blocks; 0 is
// no store), PrefixAffinity's relative rise of the knee over RoundRobin
// (the interval's centre) falls below the threshold: between the last
// size at or above it and the first below it, by linear interpolation of
// the rise in the size, in blocks, GiB and multiples of the working set;
// or that it pays (or does not) at every size tried. A rise that comes
// back above the threshold at a larger size is said too.
func stopsPaying(sizes []int, rises []stats.Interval, threshold float64, workingSet int) string {
	pct := 100 * threshold
	below := func(i int) bool { return math.IsNaN(rises[i].Center) || rises[i].Center < threshold }
	size := func(n float64) string {
		return fmt.Sprintf("%.0f blocks (%s, %.3gx the working set)", n, gib(n*blockBytes), n/float64(workingSet))
	}
	if below(0) {
		with := "without a store"
		if sizes[0] > 0 {
			with = "with a store of " + size(float64(sizes[0]))
		}
		return fmt.Sprintf("PrefixAffinity's rise over RoundRobin is below %.3g %% already %s (%s)", pct, with, percent(rises[0]))
	}
	for i := 1; i < len(rises); i++ {
		if !below(i) {
			continue
		}
		at := float64(sizes[i])
		if !math.IsNaN(rises[i].Center) {
			f := (rises[i-1].Center - threshold) / (rises[i-1].Center - rises[i].Center)
			at = float64(sizes[i-1]) + f*float64(sizes[i]-sizes[i-1])
		}
		s := fmt.Sprintf("PrefixAffinity stops paying (its rise over RoundRobin falls below %.3g %%, from %s to %s) between %d and %d blocks of store, at about %s interpolated",
			pct, percent(rises[i-1]), percent(rises[i]), sizes[i-1], sizes[i], size(math.Round(at)))
		for k := i + 1; k < len(rises); k++ {
			if !below(k) {
				s += fmt.Sprintf("; its rise is back at or above %.3g %% with %d blocks (%s)", pct, sizes[k], percent(rises[k]))
				break
			}
		}
		return s
	}
	return fmt.Sprintf("PrefixAffinity's rise over RoundRobin stays at or above %.3g %% up to %s, the largest store tried (%s)", pct, size(float64(sizes[len(sizes)-1])), percent(rises[len(rises)-1]))
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

// percent is a relative improvement's centre and interval in percent.
func percent(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none measured"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// rate prints bytes/s in GB/s.
func rate(bps float64) string { return fmt.Sprintf("%.4g GB/s", bps/1e9) }

// fixed prints a fraction with three decimals, "-" for NaN.
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
