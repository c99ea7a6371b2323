package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
)

// summary is one metric's distribution, ms.
type summary struct{ mean, p50, p90, p99 float64 }

// metric compares one latency of the measured and simulated requests.
type metric struct {
	name                string
	measured, simulated summary
	mape                float64 // per-request mean absolute percentage error, %
	factor95            float64 // 95th percentile of |measured/simulated − 1|, %
}

// comparison is the three latencies vLLM's bench reports.
type comparison struct {
	ttft, tpot, e2e metric
	notOK           int       // simulated requests left out: not ok, or cut at MaxModelLen (none expected)
	failed          []outcome // what became of them, by status and reason
}

// outcome is the simulated requests that ended with one status for one
// reason (or ok but length-capped), and the tokens that weigh against
// MaxModelLen, the pool's tokens: a refused request's prompt, a
// length-capped one's prompt + output.
type outcome struct {
	status               string
	reason               string
	n                    int
	minTokens, maxTokens int
}

func (c comparison) metrics() []metric { return []metric{c.ttft, c.tpot, c.e2e} }

// compare pairs measured and simulated requests by their order in the
// trace.
func compare(reqs []request, recs []sim.Record) comparison {
	var m, s [3][]float64 // TTFT, TPOT, E2E
	c := comparison{}
	for i, q := range reqs {
		r := &recs[i]
		if r.Status != sim.StatusOK {
			c.notOK++
			c.fail(r.Status.String(), r.Reason, q.Input)
			continue
		}
		if r.LengthCapped { // served, but fewer tokens than the run's: not comparable
			c.notOK++
			c.fail(lengthCapped, "", q.Input+q.Output)
			continue
		}
		ttft := ms(r.FirstToken - r.Arrival)
		e2e := ms(r.LastToken - r.Arrival)
		for k, pair := range [3][2]float64{{q.ttft(), ttft}, {q.tpot(), (e2e - ttft) / float64(r.Emitted-1)}, {q.e2e(), e2e}} {
			m[k], s[k] = append(m[k], pair[0]), append(s[k], pair[1])
		}
	}
	if c.notOK == len(reqs) {
		return c // nothing to summarise: no percentile of an empty set
	}
	mk := func(k int, name string) metric {
		return metric{name: name, measured: summarize(m[k]), simulated: summarize(s[k]), mape: mape(m[k], s[k]), factor95: factor95(m[k], s[k])}
	}
	c.ttft, c.tpot, c.e2e = mk(0, "TTFT"), mk(1, "TPOT"), mk(2, "E2E")
	return c
}

// lengthCapped is the outcome of requests that ended ok cut at MaxModelLen.
const lengthCapped = "length-capped"

// fail counts a request left out of the comparison, by its status and
// reason.
func (c *comparison) fail(status, reason string, tokens int) {
	i := slices.IndexFunc(c.failed, func(o outcome) bool { return o.status == status && o.reason == reason })
	if i < 0 {
		c.failed = append(c.failed, outcome{status: status, reason: reason, minTokens: tokens, maxTokens: tokens})
		i = len(c.failed) - 1
	}
	o := &c.failed[i]
	o.n++
	o.minTokens, o.maxTokens = min(o.minTokens, tokens), max(o.maxTokens, tokens)
}

// compared is the number of requests the comparison is made on.
func (c comparison) compared(offered int) int { return offered - c.notOK }

func ms[D ~int64](d D) float64 { return float64(d) / 1e6 }

// summarize is the mean and the percentiles by linear interpolation
// between order statistics (numpy's default, as vLLM's bench computes
// them).
func summarize(xs []float64) summary {
	s := slices.Sorted(slices.Values(xs))
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	return summary{mean / float64(len(s)), percentile(s, 0.5), percentile(s, 0.9), percentile(s, 0.99)}
}

func percentile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	i := int(h)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-float64(i))*(sorted[i+1]-sorted[i])
}

func mape(measured, simulated []float64) float64 {
	sum := 0.0
	for i, m := range measured {
		sum += math.Abs(simulated[i]-m) / m
	}
	return 100 * sum / float64(len(measured))
}

// factor95 is the 95th percentile over the requests of |measured /
// simulated − 1|, %: how far a request's simulated figure must be
// scaled to meet the measured one (0.8 × the measured needs 25 %).
func factor95(measured, simulated []float64) float64 {
	f := make([]float64, len(measured))
	for i, m := range measured {
		f[i] = 100 * math.Abs(m/simulated[i]-1)
	}
	slices.Sort(f)
	return percentile(f, 0.95)
}

// impliedBand is the model band the validation implies for a sweep
// priced by this profile: a ModelError.Scale, which multiplies every step
// time by 1 ± Scale, that covers the step-time error of 95 % of the
// requests, read from TPOT (a request's mean gap between tokens, the step
// times of the batches it decoded in), rounded up to the next whole
// percent (less a hair, so that 25 % read as 25.000000000000004 stays 25). E2E's error adds
// queueing to it and is not a step-time error; TTFT's low-load shortfall
// is a scheduling delay the band cannot scale (docs/validation.md).
func impliedBand(c comparison) float64 { return math.Ceil(c.tpot.factor95-1e-9) / 100 }

// bandLine says the band and, with a declared collective, the model a
// sweep must add to it.
func bandLine(c comparison, r *replayed) string {
	l := fmt.Sprintf("band for a sweep  ModelError{Scale: %.2f}: 95 %% of the requests' simulated TPOT (their step times) meet the measured when scaled by at most ±%.1f %%", impliedBand(c), c.tpot.factor95)
	if len(r.band) > 0 {
		l += "; with the declared collective, add its band's model (ProfileModel.CollectiveBand) to ModelError.Shapes"
	}
	return l
}

// printComparison writes the comparison and what it rests on.
func printComparison(w io.Writer, o options, m measured, r *replayed, c comparison) {
	fmt.Fprintln(w, "servesim against a real vLLM run, from kernel profiles alone")
	for _, l := range describe(o, m, r) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	if c.compared(len(m.requests)) == 0 {
		fmt.Fprintf(w, "nothing to compare: none of the %d simulated requests ended ok and whole\n", len(m.requests))
		for _, l := range failures(o, m, c) {
			fmt.Fprintln(w, l)
		}
		return
	}
	for _, l := range table(c) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "per-request MAPE  TTFT %.1f %%  TPOT %.2f %%  E2E %.2f %%\n", c.ttft.mape, c.tpot.mape, c.e2e.mape)
	fmt.Fprintln(w, bandLine(c, r))
	for _, l := range bandLines(m, r) {
		fmt.Fprintln(w, l)
	}
	if m.predictions != nil {
		fmt.Fprintln(w, m.predictions.line(len(m.requests)))
	}
	if c.notOK > 0 {
		fmt.Fprintf(w, "warning: %d of the %d simulated requests did not end ok, or were cut at MaxModelLen, and are left out of the comparison:\n", c.notOK, len(m.requests))
		for _, l := range failures(o, m, c) {
			fmt.Fprintln(w, l)
		}
	}
}

// failures says what became of the requests that did not end ok, or were
// cut, and for those refused or cut at MaxModelLen (by default the KV
// pool's tokens) the bound against the request's size.
func failures(o options, m measured, c comparison) []string {
	var lines []string
	bs := m.meta.Engine.blockSize()
	for _, f := range c.failed {
		size := fmt.Sprintf("%d", f.maxTokens)
		if f.minTokens != f.maxTokens {
			size = fmt.Sprintf("%d to %d", f.minTokens, f.maxTokens)
		}
		pool := fmt.Sprintf("MaxModelLen, the pool's %d tokens (%d KV blocks × block size %d)", o.kvBlocks*bs, o.kvBlocks, bs)
		switch {
		case f.status == lengthCapped:
			lines = append(lines, fmt.Sprintf("  %d %s: served, and stopped at MaxModelLen with fewer output tokens than the run's", f.n, f.status),
				fmt.Sprintf("    each asks for prompt + output = %s tokens, more than %s;", size, pool),
				fmt.Sprintf("    -kvblocks %d or more serves the longest of them whole", (f.maxTokens+bs-1)/bs))
		case f.status == sim.StatusRejected.String() && strings.HasPrefix(f.reason, engine.ErrPromptTooLong.Error()):
			lines = append(lines, fmt.Sprintf("  %d %s: %s", f.n, f.status, f.reason),
				fmt.Sprintf("    each has a prompt of %s tokens, at or above %s;", size, pool),
				fmt.Sprintf("    -kvblocks %d or more admits the longest of them", f.maxTokens/bs+1))
		default:
			lines = append(lines, fmt.Sprintf("  %d %s: %s", f.n, f.status, f.reason))
		}
	}
	return lines
}

// describe is the run, the replica, the model and what was declared.
func describe(o options, m measured, r *replayed) []string {
	first, last := m.requests[0].Queued, m.requests[len(m.requests)-1].Queued
	span := last - first
	e := m.meta.Engine
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	p := r.model.Provenance()
	on := ""
	if m.meta.Device != "" {
		on = " on " + m.meta.Device
	}
	if e.TP > 1 {
		on += fmt.Sprintf(", TP %d", e.TP)
	}
	kv := o.kvFrom
	if o.kvNote != "" && o.kvFrom != kvDeclared {
		kv += " (" + o.kvNote + ")"
	} else if o.kvFrom == kvDeclared {
		kv += " (" + bundleFile + " kv_blocks)"
	}
	lines := []string{
		fmt.Sprintf("run       vLLM %s serving %s%s: %d requests offered %s, started %s",
			m.meta.VLLMVersion, m.meta.Model, on, len(m.requests), offeredOver(len(m.requests), span), m.meta.StartedAt),
		fmt.Sprintf("replica   max_num_seqs %d, max_num_batched_tokens %d, chunked prefill %s, block size %d, prefix caching %s (meta.json; vLLM's defaults where it is silent)",
			e.MaxNumSeqs, e.MaxBatchedTokens, onOff(e.chunkedPrefill()), e.blockSize(), onOff(e.prefixCaching())),
		fmt.Sprintf("          %d KV blocks, %s; the replay's peak use was %d blocks (%.0f %%)",
			o.kvBlocks, kv, r.peakKV, 100*float64(r.peakKV)/float64(o.kvBlocks)),
		fmt.Sprintf("model     %s", r.model),
		fmt.Sprintf("          profiled %s: %s", p.ProfiledAt, p.Method),
		fmt.Sprintf("kernels   %s: per layer %s (× %d layers, %s)",
			r.kernelsFrom, strings.Join(r.kernels[0], ", "), r.layers, r.layersFrom),
		fmt.Sprintf("          per step %s; per sequence %s", strings.Join(r.kernels[1], ", "), strings.Join(r.kernels[2], ", ")),
	}
	if r.collective != "" {
		lines = append(lines, "collective "+r.collective)
	}
	for i, a := range r.model.Assumptions() {
		head := "          "
		if i == 0 {
			head = "declared  "
		}
		lines = append(lines, head+a)
	}
	comp := r.steps
	lines = append(lines,
		"fitted    nothing: every step time is composed from the kernel profile; the run's latencies are only compared against",
		fmt.Sprintf("steps     %d simulated: %d mixed, %d decode-only, %d prefill-only; %d priced outside the profiled grid; %d preemptions",
			comp[0]+comp[1]+comp[2], comp[sim.Mixed], comp[sim.DecodeOnly], comp[sim.PrefillOnly], r.outside, r.preemptions),
		fmt.Sprintf("prefix    the cache served %d prompt tokens to %d requests", r.cached, r.cachedReqs))
	if !m.hashes {
		lines = append(lines, "          the bundle has no "+hashFile+": the replay has no prompt hashes and runs without prefix reuse (the run's cache may have found some)")
	}
	if r.outside > 0 {
		lines = append(lines, "          first: "+strings.ReplaceAll(r.firstOut, "\n", "; "))
	}
	return lines
}

// offeredOver says over what span n requests arrived, and their rate;
// requests that all arrived at one instant have none.
func offeredOver(n int, span float64) string {
	if span > 0 {
		return fmt.Sprintf("over %.1f s (%.1f req/s)", span, float64(n-1)/span)
	}
	return "at one instant (no rate)"
}

// table is the side-by-side comparison.
func table(c comparison) []string {
	lines := []string{fmt.Sprintf("%-17s %10s %10s %8s", "", "measured", "simulated", "diff")}
	for _, m := range c.metrics() {
		for k, pair := range [4][2]float64{
			{m.measured.mean, m.simulated.mean}, {m.measured.p50, m.simulated.p50},
			{m.measured.p90, m.simulated.p90}, {m.measured.p99, m.simulated.p99},
		} {
			label := fmt.Sprintf("     %s", [4]string{"mean", "p50", "p90", "p99"}[k])
			if k == 0 {
				label = fmt.Sprintf("%-4s mean (ms)", m.name)
			}
			lines = append(lines, fmt.Sprintf("%-17s %10s %10s %6.1f %%", label, num(pair[0]), num(pair[1]), 100*(pair[1]/pair[0]-1)))
		}
	}
	return lines
}

// num prints a latency with four significant digits or more.
func num(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.0f", ms)
	case ms >= 100:
		return fmt.Sprintf("%.1f", ms)
	}
	return fmt.Sprintf("%.2f", ms)
}

// bandLines are the replay under the other edge of a declared
// collective's band, beside the nominal one: the error a declared figure
// may carry.
func bandLines(m measured, r *replayed) []string {
	var lines []string
	for _, b := range r.band {
		c := compare(m.requests, b.records)
		if c.compared(len(m.requests)) == 0 {
			lines = append(lines, fmt.Sprintf("declared collective's band, %s: no request ended ok and whole", b.name))
			continue
		}
		lines = append(lines, fmt.Sprintf("declared collective's band, %s: per-request MAPE TTFT %.1f %%  TPOT %.2f %%  E2E %.2f %% (means %+.1f %%, %+.1f %%, %+.1f %%)",
			b.name, c.ttft.mape, c.tpot.mape, c.e2e.mape, meanDiff(c.ttft), meanDiff(c.tpot), meanDiff(c.e2e)))
	}
	return lines
}

func meanDiff(k metric) float64 { return 100 * (k.simulated.mean/k.measured.mean - 1) }
