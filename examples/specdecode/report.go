package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// writeReport declares the setting, the drafter and the hypothesis, then
// runs and prints the (K, α) table, the hypothesis test, the heavier
// drafters and the chart.
func writeReport(w io.Writer, o options) error {
	writeHeader(w, o)
	studies, err := runStudies(o)
	if err != nil {
		return err
	}
	writeTable(w, studies, o)
	x := experiment(o)
	res, err := x.Run()
	if err != nil {
		return err
	}
	writeVerdict(w, x, res, o)
	writeGain(w, studies, o)
	if len(o.drafters) > 0 {
		hs, err := runDrafters(o)
		if err != nil {
			return err
		}
		writeDrafters(w, hs, studies[0].result.Curves[0], o)
	}
	if o.out == "" {
		return nil
	}
	if err := writeChart(w, studies, o); err != nil {
		return err
	}
	return writeCard(w, studies, x, res, o)
}

// itlBound is the SLO's ITL bound: the Atlas default, 150 ms.
var itlBound = sim.SLO{}.WithDefaults().ITL

func writeHeader(w io.Writer, o options) {
	slo := sim.SLO{ITLSeries: o.series}.WithDefaults()
	verify := costmodel.Frozen{VerifyPerToken: o.verify}.WithDefaults().VerifyPerToken
	fmt.Fprintf(w, "Speculative decoding on Atlas TP4 (sim.Config{}: costmodel.Frozen, vLLM V1's scheduler, batch cap 32, budget 2048)\n")
	fmt.Fprintf(w, "workload:  open-loop Poisson, %v\n", lengths)
	fmt.Fprintf(w, "SLO:       TTFT <= %v, every ITL <= %v %s; knee: the highest load with attainment >= 0.95\n", slo.TTFT, slo.ITL, seriesNote(o.series))
	fmt.Fprintf(w, "drafter:   %s, declared before the runs\n", o.drafter)
	fmt.Fprintf(w, "verifier:  45 ms a decode step + %v a verified draft (Frozen.VerifyPerToken)\n", verify)
	fmt.Fprintf(w, "method:    %d replications a load, the same seeds for every (K, α); window %v (warm-up %v); loads from %s req/s\n",
		o.reps, o.horizon, o.horizon/10, rate(o.start))
	fmt.Fprintf(w, "           x1.5 to collapse, then bisected 3 times; Δ knee paired with K = 0 replication by replication\n")
	if o.reps <= 5 && o.horizon <= 10*time.Minute {
		fmt.Fprintf(w, "           (kept small to run in under a minute on 2 cores: -reps 10 -horizon 30m for tighter intervals)\n")
	}
}

func seriesNote(s sim.ITLSeries) string {
	if s == sim.PerToken {
		return "per token (retokenized, as SGLang's use_retokenized_itl)"
	}
	return "per streamed chunk (as vLLM's bench and a streaming client see it)"
}

// writeTable prints one row for K = 0 and one per (α, K > 0).
func writeTable(w io.Writer, studies []study, o options) {
	fmt.Fprintf(w, "\nKnee against the draft length K and the acceptance α; tokens a step and ITL p99 at %s req/s\n", rate(o.probe))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "K\tα\tknee\tknee 95%% CI\tΔ knee\tΔ 95%% CI\ttokens/step\t95%% CI\ttheory\tITL p99 chunk\tITL p99 token\tlongest step\t\n")
	fmt.Fprintf(tw, "\t\treq/s\treq/s\treq/s\treq/s\t\t\t\tms\tms\tms\t\n")
	for si, s := range studies {
		r := s.result
		for i, v := range r.Values {
			k := int(v)
			if k == 0 && si > 0 {
				continue // K = 0 is the same at every α: printed once
			}
			alpha := "-"
			if k > 0 {
				alpha = fmt.Sprint(s.alpha)
			}
			step, _ := longestStep(o, k, o.drafter)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k, alpha, knee(r.Curves[i]), kneeCI(r.Curves[i].Knee),
				diff(r.KneeDiff[i], i == r.Baseline), diffCI(r.KneeDiff[i], i == r.Baseline), tokens(&r.Probe[i], k, s.alpha),
				itlCells(&r.Probe[i]), ms(step))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "tokens/step: the mean tokens a step of K drafts emitted (accepted drafts + the sampled token), theory (1 - α^(K+1))/(1 - α).\n")
	fmt.Fprintf(w, "longest step: one decode beside a prefill filling the budget, its drafter's time included; past %v every decode\n", itlBound)
	fmt.Fprintf(w, "that meets another request's prefill misses the ITL bound (a retokenized gap is the chunk's over its tokens).\n")
}

// tokens are the mean tokens a full speculative step emitted at the probe
// load, its interval over the replications, and the theory; 1 without
// speculation.
func tokens(p *analysis.Point, k int, alpha float64) string {
	if k == 0 {
		return "1\t-\t1"
	}
	m := p.MeanAccepted
	if math.IsNaN(m.Center) {
		return fmt.Sprintf("-\t-\t%.3f", theory(k, alpha))
	}
	return fmt.Sprintf("%.3f\t%s\t%.3f", m.Center, ci(m), theory(k, alpha))
}

// itlCells are ITL p99 per chunk and retokenized at the probe load.
func itlCells(p *analysis.Point) string {
	if p.NoMeasured() {
		return "-\t-"
	}
	return fmt.Sprintf("%s\t%s", millis(p.ITL.P99.Center), millis(p.ITLRetokenized.P99.Center))
}

// writeVerdict prints the knee hypothesis's test: each block's knee
// over the loads, A's and B's paired, the verdict; then at each load the
// attainment the knees are read from and the paired latency readout; and
// where speculation stops paying among the loads.
func writeVerdict(w io.Writer, x analysis.Experiment, res *analysis.ExperimentResult, o options) {
	h := x.Hypothesis
	fmt.Fprintf(w, "\nHypothesis, declared before the runs: %s\n", h.Claim)
	fmt.Fprintf(w, "%d paired blocks, A (K = 0) and B on each block's seed (common random numbers) at each of %d loads, %s to %s req/s;\n",
		res.Blocks, len(x.Loads), rate(slices.Min(x.Loads)), rate(slices.Max(x.Loads)))
	fmt.Fprintf(w, "a block's knee is where its attainment crosses 0.95 over the loads, interpolated; window %v\n", o.horizon-o.horizon/10)
	fmt.Fprintf(w, "knee:      A %s, B %s req/s; paired difference %s %s req/s (%s)\n",
		kneeEst(res.KneeA), kneeEst(res.KneeB), diff(res.KneeDiff, false), diffCI(res.KneeDiff, false), blocksNote(res))
	fmt.Fprintf(w, "verdict:   %v: %+.1f %% %s against a threshold of %+.0f %%\n", res.Verdict,
		100*res.Improvement.Center, pctCI(res.Improvement), 100*h.Threshold)
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "note:      %s\n", warn)
	}
	writeBand(w, x, res)
	target := x.WithDefaults().Target
	var past []string
	fmt.Fprintf(w, "latency at the operating loads (A's attainment >= %.2f), the second readout: B - A paired on each block's seed, ms [95%% CI]\n", target)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "load\tA attain\tB attain\tTTFT p50 A\tΔ TTFT p50\tTTFT p99 A\tΔ TTFT p99\tITL p99 A\tΔ ITL p99\t\n")
	fmt.Fprintf(tw, "req/s\t\t\tms\tms\tms\tms\tms\tms\t\n")
	for _, l := range res.Loads {
		if !(l.A.Center >= target) {
			past = append(past, fmt.Sprintf("%s (A %s, B %s)", rate(l.Load), fixed3(l.A.Center), fixed3(l.B.Center)))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", rate(l.Load), fixed3(l.A.Center), fixed3(l.B.Center))
		for _, d := range l.Latency {
			fmt.Fprintf(tw, "\t%s\t%s", millis(d.A.Center), report.PairedDiff(d.Diff))
		}
		fmt.Fprintf(tw, "\t\n")
	}
	tw.Flush()
	if len(past) > 0 {
		fmt.Fprintf(w, "past A's knee, attainment: %s req/s; A's queue grows there, and its latency with it\n", strings.Join(past, ", "))
	}
	fmt.Fprintf(w, "stops paying: %s\n", stopsPaying(res, o))
}

// writeBand says whether the verdict holds under every model of the
// band declared before the runs or rests on the model, then the verdict
// under each model, paired on its blocks (nothing without a band).
func writeBand(w io.Writer, x analysis.Experiment, res *analysis.ExperimentResult) {
	if len(res.Band) == 0 {
		return
	}
	m := x.ModelError
	blocks := "each model on the same blocks"
	if n := x.WithDefaults().Blocks; m.Reps > 0 && m.Reps < n {
		blocks = fmt.Sprintf("each model on the first %d of the %d blocks", m.Reps, n)
	}
	fmt.Fprintf(w, "model band, declared before the runs: %v (%s; A and B keep their drafter)\n", m, blocks)
	fmt.Fprintf(w, "band:      the verdict %s\n", res.BandVerdict())
	for _, line := range report.BandVerdicts(res) {
		fmt.Fprintf(w, "           %s\n", line)
	}
}

// kneeEst prints a knee across blocks with its interval.
func kneeEst(e stats.Interval) string {
	if e.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f %s", e.Center, ci(e))
}

// blocksNote says how many blocks the knee difference pairs, and how.
func blocksNote(res *analysis.ExperimentResult) string {
	s := fmt.Sprintf("%d blocks", res.KneeDiff.N)
	if res.KneeBounds > 0 {
		s += fmt.Sprintf(", %d of them through a knee beyond the loads, its bound", res.KneeBounds)
	}
	if res.KneeUnpaired > 0 {
		s += fmt.Sprintf("; %d left out, both knees beyond the same end", res.KneeUnpaired)
	}
	return s
}

// fixed3 prints a fraction with three decimals, "-" for NaN.
func fixed3(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.3f", x)
}

// writeGain prints the claim's knee against K = 0's from the grid (when
// it holds the claim's K and α): the same capacity gain read from the
// automatic sweeps, a check on the experiment's.
func writeGain(w io.Writer, studies []study, o options) {
	for _, s := range studies {
		i := slices.Index(s.result.Values, float64(o.claimK))
		if s.alpha != o.claimAlpha || i < 0 {
			continue
		}
		r := s.result
		d := r.KneeDiff[i]
		fmt.Fprintf(w, "grid:      K = %d moves the knee from %s to %s req/s, paired difference %s %s (the grid above: its own loads and replications)\n",
			o.claimK, knee(r.Curves[r.Baseline]), knee(r.Curves[i]), diff(d, false), diffCI(d, false))
		return
	}
}

// stopsPaying says at which loads B's attainment is below A's (the
// interval of the improvement wholly below 0), and why.
func stopsPaying(res *analysis.ExperimentResult, o options) string {
	var worse []string
	for _, l := range res.Loads {
		if l.Verdict != analysis.NoMeasured && l.Improvement.Hi < 0 {
			worse = append(worse, rate(l.Load))
		}
	}
	step, _ := longestStep(o, o.claimK, o.drafter)
	why := fmt.Sprintf("the longest step with %d drafts is %s ms, %s the %v ITL bound", o.claimK, ms(step), within(step), itlBound)
	if len(worse) == 0 {
		return fmt.Sprintf("nowhere in the loads tested (%s to %s req/s): B's attainment is never below A's (%s)",
			rate(slices.Min(o.loads)), rate(slices.Max(o.loads)), why)
	}
	return fmt.Sprintf("B's attainment is below A's at %s req/s (%s)", strings.Join(worse, ", "), why)
}

func within(step time.Duration) string {
	if step > itlBound {
		return "past"
	}
	return "within"
}

// writeDrafters prints the claim's (K, α) under each heavier drafter, and
// the draft step at which its longest step passes the ITL bound.
func writeDrafters(w io.Writer, hs []heavier, base *analysis.Curve, o options) {
	fmt.Fprintf(w, "\nWhere it would stop paying: K = %d at α = %g against the drafter's step (K = 0's knee: %s %s req/s)\n",
		o.claimK, o.claimAlpha, knee(base), kneeCI(base.Knee))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "draft step\tc\tlongest step\tknee\tknee 95%% CI\tvs K = 0\t\n")
	fmt.Fprintf(tw, "\t\tms\treq/s\treq/s\t\t\n")
	for _, h := range hs {
		step, _ := longestStep(o, o.claimK, h.drafter)
		name := fmt.Sprint(h.drafter.step)
		if h.drafter.step == 0 {
			name = "0 (n-gram)"
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\t%s\t\n", name, h.drafter.step.Seconds()/0.045, ms(step), knee(h.curve), kneeCI(h.curve.Knee), versus(h.curve.Knee, base.Knee))
	}
	tw.Flush()
	fmt.Fprintf(w, "c: the draft step over the 45 ms target step (a 7-8B draft model beside a 70B target is about 0.1).\n")
	if d, ok := crossing(o); ok {
		fmt.Fprintf(w, "the longest step with %d drafts passes the %v ITL bound from a draft step of %v (c = %.3f)\n", o.claimK, itlBound, d, d.Seconds()/0.045)
	}
}

// versus says whether a knee lies above K = 0's: both intervals apart,
// or the censored side.
func versus(k, base analysis.Knee) string {
	switch {
	case k.Censored == analysis.BelowLowest:
		return "below: stops paying"
	case !k.Found || !base.Found:
		return "-"
	case k.Load.Lo > base.Load.Hi:
		return "above: pays"
	case k.Load.Hi < base.Load.Lo:
		return "below: stops paying"
	}
	return "~ (intervals overlap)"
}

// crossing is the least draft step, to the microsecond, at which the
// claim's longest step passes the ITL bound; false if none below a
// second does.
func crossing(o options) (time.Duration, bool) {
	past := func(step time.Duration) bool {
		t, _ := longestStep(o, o.claimK, drafter{step: step, overhead: o.drafter.overhead})
		return t > itlBound
	}
	lo, hi := time.Duration(0), time.Second
	if past(lo) {
		return 0, true
	}
	if !past(hi) {
		return 0, false
	}
	for hi-lo > time.Microsecond {
		mid := (lo + hi) / 2
		if past(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.Round(time.Microsecond), true
}

// knee prints the knee, or the side of the measured loads it lies beyond.
func knee(c *analysis.Curve) string {
	switch k := c.Knee; {
	case k.Found:
		return fmt.Sprintf("%.3f", k.Load.Center)
	case k.Censored == analysis.BelowLowest:
		return fmt.Sprintf("< %.3g", k.FirstMiss)
	case k.Censored == analysis.AboveHighest:
		return fmt.Sprintf("> %.3g", k.LastMet)
	}
	return "none"
}

func kneeCI(k analysis.Knee) string {
	if !k.Found {
		return "-"
	}
	return ci(k.Load)
}

// diff prints a paired knee difference, "-" where no replication found
// both knees.
func diff(e stats.Interval, baseline bool) string {
	if baseline {
		return "base"
	}
	if e.N == 0 || math.IsNaN(e.Center) {
		return "-"
	}
	return fmt.Sprintf("%+.3f", e.Center)
}

func diffCI(e stats.Interval, baseline bool) string {
	switch {
	case baseline:
		return ""
	case e.N == 0:
		return "no knee to pair"
	}
	return ci(e)
}

func ci(e stats.Interval) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", e.Lo, e.Hi)
}

func pctCI(e stats.Interval) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "-"
	}
	return fmt.Sprintf("[%+.1f, %+.1f]", 100*e.Lo, 100*e.Hi)
}

// millis prints a latency in ms, "-" where none was measured.
func millis(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f", x)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

// rate prints a load in req/s.
func rate(x float64) string { return fmt.Sprintf("%.2f", x) }
