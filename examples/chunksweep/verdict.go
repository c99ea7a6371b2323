package main

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// claimExperiment is the hypothesis declared before any run — a -claim
// chunk cap raises the knee by at least -threshold over vLLM's defaults —
// as an experiment on the knee: A is the defaults, B the chunk cap, each
// block a curve over the loads on one seed for both.
func claimExperiment(o options, loads []float64) analysis.Experiment {
	base := baseConfig(o.horizon)
	return analysis.Experiment{
		Hypothesis: analysis.Hypothesis{
			Claim: fmt.Sprintf("a %d-token prefill chunk cap raises the knee by at least %g %% over vLLM's defaults",
				o.claim, 100*o.threshold),
			Metric: analysis.MetricKnee, Threshold: o.threshold,
		},
		A: base, B: analysis.DialChunkCap.Set(base, float64(o.claim)),
		Workload: documents(o.horizon), Loads: loads, Blocks: o.blocks, BaseSeed: o.seed,
	}
}

// testClaim runs the experiment over the loads the baseline's curve and
// the claim's curve (if swept) were measured at, so that both knees lie
// inside them when the sweeps found them.
func testClaim(studies []study, o options) (analysis.Experiment, *analysis.ExperimentResult, error) {
	var loads []float64
	for _, s := range studies {
		r := s.result
		for i, c := range r.Curves {
			if i != r.Baseline && !(s.short == "chunk" && r.Values[i] == float64(o.claim)) {
				continue
			}
			for _, p := range c.Points {
				loads = append(loads, p.Load)
			}
		}
	}
	slices.Sort(loads)
	loads = slices.Compact(loads)
	x := claimExperiment(o, loads)
	res, err := x.Run()
	if err != nil {
		return x, nil, fmt.Errorf("the hypothesis test: %w", err)
	}
	return x, res, nil
}

// writeVerdict prints the hypothesis, the verdict on the paired knee
// improvement, and where B loses or wins in attainment.
func writeVerdict(w io.Writer, x analysis.Experiment, r *analysis.ExperimentResult, studies []study) {
	h := r.Hypothesis
	fmt.Fprintf(w, "\nHypothesis, declared before the runs: %s (metric %s, threshold %+.0f %%)\n", h.Claim, h.Metric.Name, 100*h.Threshold)
	fmt.Fprintf(w, "%d paired blocks, A (defaults) and B (chunk cap) on common random numbers; each block's knee is where its\n", r.Blocks)
	fmt.Fprintf(w, "attainment over %d loads (%s to %s req/s) crosses the 0.95 target\n", len(x.Loads), rate(x.Loads[0]), rate(x.Loads[len(x.Loads)-1]))
	switch {
	case r.Verdict == analysis.NoMeasured:
		fmt.Fprintf(w, "verdict:  none: in no block did both A's and B's attainment cross the target inside the loads (B's knee %s req/s)\n",
			claimKnee(studies, x))
	default:
		fmt.Fprintf(w, "verdict:  %v (knee improvement %+.1f %% [%+.1f, %+.1f], %d of %d blocks with both knees)\n", r.Verdict,
			100*r.Improvement.Center, 100*r.Improvement.Lo, 100*r.Improvement.Hi, r.Improvement.N, r.Blocks)
	}
	fmt.Fprintf(w, "boundary: attainment at each load: %s\n", r.Boundary())
}

// claimKnee is how the chunk-cap sweep saw the claim's knee, or "not
// swept".
func claimKnee(studies []study, x analysis.Experiment) string {
	for _, s := range studies {
		if s.short != "chunk" {
			continue
		}
		for i, v := range s.result.Values {
			if v == float64(x.B.Engine.ChunkCap) {
				return knee(s.result.Curves[i])
			}
		}
	}
	return "not swept"
}

// writeChain reads the chapter's hypothesis chain off the chunk-cap
// sweep's probe points: what the claim's chunk cap did to the ITL tax,
// and what it cost in TTFT.
func writeChain(w io.Writer, studies []study, o options) {
	var def, b *analysis.Point
	var slo sim.SLO
	for _, s := range studies {
		if s.short != "chunk" {
			continue
		}
		r := s.result
		slo = r.Curves[r.Baseline].SLO
		def = &r.Probe[r.Baseline]
		for i, v := range r.Values {
			if v == float64(o.claim) {
				b = &r.Probe[i]
			}
		}
	}
	switch {
	case def == nil || b == nil:
		return // no chunk-cap sweep
	case def.NoMeasured() || b.NoMeasured():
		fmt.Fprintf(w, "chain:    %s at %s req/s: raise -probe to read the ITL tax\n", noMeasured, rate(def.Load))
	case math.IsNaN(def.ITL.P99.Center + b.ITL.P99.Center + def.TTFT.P99.Center + b.TTFT.P99.Center):
		fmt.Fprintf(w, "chain:    no request completed at %s req/s (%v): lower -probe to read the ITL tax\n", rate(def.Load), def.Saturation)
	default:
		fmt.Fprintf(w, "chain:    at %s req/s a %d-token cap moves ITL p99 %.1f -> %.1f ms (budget %v) and TTFT p99 %.0f -> %.0f ms (budget %v)\n",
			rate(def.Load), o.claim, def.ITL.P99.Center, b.ITL.P99.Center, slo.ITL, def.TTFT.P99.Center, b.TTFT.P99.Center, slo.TTFT)
	}
}
