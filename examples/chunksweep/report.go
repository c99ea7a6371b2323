package main

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/report"
)

// writeReport sweeps every chunk cap and the default, then tests the best
// against the default.
func writeReport(w io.Writer, o options) error {
	rows := make([]row, 0, len(o.chunks)+1)
	for _, c := range append([]int{0}, o.chunks...) {
		r, err := sweepChunk(c, o)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	writeRows(w, rows, o)
	if o.bench != "" {
		if err := writeBench(o.bench, rows); err != nil {
			return err
		}
	}
	best, ok := bestChunk(rows[1:])
	if !ok {
		fmt.Fprintln(w, "\nno chunk cap differs from the default: nothing to test")
		return nil
	}
	base := rows[0].curve.Knee.Load.Center // test around the default's knee
	if math.IsNaN(base) {
		base = rows[0].curve.Peak.Load
	}
	x := sim.Experiment{
		Hypothesis: sim.Hypothesis{
			Claim:     fmt.Sprintf("a %d-token prefill chunk cap raises goodput by at least 5 %% over no cap", best.chunk),
			Metric:    sim.MetricGoodput,
			Threshold: 0.05,
		},
		A: config(0, o.horizon), B: config(best.chunk, o.horizon),
		Workload: documents(o.horizon),
		Loads:    []float64{0.75 * base, base, 1.25 * base},
		Blocks:   o.blocks, BaseSeed: o.seed,
	}
	res, err := x.Run()
	if err != nil {
		return err
	}
	writeVerdict(w, res)
	writeChain(w, rows[0], best)
	return nil
}

// writeChain reads the chapter's hypothesis chain off the measurements:
// what the chunk cap did to the ITL tax, and what it cost in TTFT.
func writeChain(w io.Writer, def, b row) {
	if def.probe.NoMeasured() || b.probe.NoMeasured() {
		fmt.Fprintf(w, "chain:    %s at %s req/s: raise -probe to read the ITL tax\n", noMeasured, rate(def.probe.Load))
		return
	}
	if math.IsNaN(def.probe.ITL.P99.Center + b.probe.ITL.P99.Center + def.probe.TTFT.P99.Center + b.probe.TTFT.P99.Center) {
		fmt.Fprintf(w, "chain:    no request completed at %s req/s (%v): lower -probe to read the ITL tax\n", rate(def.probe.Load), def.probe.Saturation)
		return
	}
	fmt.Fprintf(w, "chain:    at %s req/s a %d-token cap moves ITL p99 %.1f -> %.1f ms (budget %v) and TTFT p99 %.0f -> %.0f ms (budget %v)\n",
		rate(def.probe.Load), b.chunk, def.probe.ITL.P99.Center, b.probe.ITL.P99.Center, def.curve.SLO.ITL,
		def.probe.TTFT.P99.Center, b.probe.TTFT.P99.Center, def.curve.SLO.TTFT)
}

// bestChunk is the chunk cap with the highest knee, by peak goodput where
// no knee was bracketed (ties: the larger cap, which prefills more
// efficiently). A cap of the whole default budget schedules exactly as no
// cap does, so it is not a candidate.
func bestChunk(rows []row) (row, bool) {
	score := func(r row) float64 {
		if r.curve.Knee.Found {
			return r.curve.Knee.Load.Center
		}
		return r.curve.Peak.Goodput.Center
	}
	var best row
	ok := false
	for _, r := range rows {
		if r.chunk == engine.DefaultMaxBatchedTokens {
			continue
		}
		if !ok || score(r) >= score(best) {
			best, ok = r, true
		}
	}
	return best, ok
}

func writeVerdict(w io.Writer, r *sim.Result) {
	h := r.Hypothesis
	fmt.Fprintf(w, "\nHypothesis, declared before the runs: %s (metric %s, threshold %+.0f %%)\n", h.Claim, h.Metric.Name, 100*h.Threshold)
	fmt.Fprintf(w, "%d paired blocks per load, A and B on common random numbers\n\n", r.Blocks)
	for _, l := range r.Loads {
		if l.Verdict == sim.NoMeasured {
			fmt.Fprintf(w, "  at %.3f req/s: %v\n", l.Load, l.Verdict)
			continue
		}
		fmt.Fprintf(w, "  at %.3f req/s: A %.3f, B %.3f, improvement %+.1f %% [%+.1f, %+.1f] -> %v\n", l.Load,
			l.A.Center, l.B.Center, 100*l.Improvement.Center, 100*l.Improvement.Lo, 100*l.Improvement.Hi, l.Verdict)
	}
	if r.Verdict == sim.NoMeasured {
		fmt.Fprintf(w, "\nverdict: %v: no block measured a request under both A and B\n", r.Verdict)
	} else {
		fmt.Fprintf(w, "\nverdict: %v (improvement %+.1f %% [%+.1f, %+.1f] over %s)\n", r.Verdict,
			100*r.Improvement.Center, 100*r.Improvement.Lo, 100*r.Improvement.Hi, r.Regime)
	}
	if r.PastImprovement.N > 0 {
		fmt.Fprintf(w, "past the baseline's knee: %v (improvement %+.1f %% [%+.1f, %+.1f]: A collapses there, so any gain is large)\n", r.PastVerdict,
			100*r.PastImprovement.Center, 100*r.PastImprovement.Lo, 100*r.PastImprovement.Hi)
	}
	fmt.Fprintf(w, "boundary: %s\n", r.Boundary())
}

// writeBench writes every chunk cap's runs at the probe load as Go
// benchmark lines, one configuration each, for benchstat -col config.
func writeBench(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for _, r := range rows {
		name := "chunk=none"
		if r.chunk > 0 {
			name = fmt.Sprintf("chunk=%d", r.chunk)
		}
		if err := (report.Bench{Name: "Documents", Config: name}).Write(f, r.probes); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
