package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// lengths are the chapter's operating point: 2,000-token prompts and
// 200-token answers.
var lengths = workload.Fixed(2000, 200)

// baseConfig is the Atlas TP4 replica (sim.Config{}) with the declared
// verification cost, the SLO gating the chosen ITL series, and the
// window: every configuration's base, K = 0 itself.
func baseConfig(o options) sim.Config {
	c := sim.Config{Window: sim.Window{Warmup: o.horizon / 10, Horizon: o.horizon}, SLO: sim.SLO{ITLSeries: o.series}}
	if o.verify != 0 {
		c.Model = costmodel.Frozen{VerifyPerToken: o.verify}
	}
	return c
}

// speculation is K drafts a step at acceptance α from drafter d; K = 0 is
// none at all (its zero value, which the rest must then be).
func speculation(k int, alpha float64, d drafter) sim.Speculation {
	if k == 0 {
		return sim.Speculation{}
	}
	return sim.Speculation{Tokens: k, Acceptance: alpha, DraftStep: d.step, DraftOverhead: d.overhead}
}

// draftTokens is the dial a study turns: K at a fixed α and drafter.
func draftTokens(alpha float64, d drafter) analysis.Dial {
	return analysis.DialFunc("Speculation.Tokens", "draft tokens a step", func(c *sim.Config, v float64) {
		c.Speculation = speculation(int(v), alpha, d)
	})
}

// sweepAt is the sweep of one (K, α) under drafter d.
func sweepAt(o options, k int, alpha float64, d drafter) analysis.Sweep {
	s := analysis.Sweep{Config: baseConfig(o), Workload: analysis.Poisson(lengths), Grid: analysis.Grid{Start: o.start},
		Reps: o.reps, BaseSeed: o.seed}
	s.Config.Speculation = speculation(k, alpha, d)
	return s
}

// study is one α's dial sweep over K.
type study struct {
	alpha  float64
	result *analysis.DialResult
}

// runStudies sweeps every K at every α, on the same seeds, each K paired
// with K = 0 (the first value).
func runStudies(o options) ([]study, error) {
	var out []study
	for _, a := range o.alphas {
		r, err := dialSweep(o, a).Run()
		if err != nil {
			return nil, fmt.Errorf("α = %g: %w", a, err)
		}
		out = append(out, study{alpha: a, result: r})
	}
	return out, nil
}

// dialSweep is α's sweep over every K of o, each paired with K = 0 (the
// first value).
func dialSweep(o options, alpha float64) analysis.DialSweep {
	values := make([]float64, len(o.ks))
	for i, k := range o.ks {
		values[i] = float64(k)
	}
	return analysis.DialSweep{Sweep: sweepAt(o, 0, alpha, o.drafter), Dial: draftTokens(alpha, o.drafter), Values: values, Probe: o.probe}
}

// hypothesis is the claim, declared before any run. It is on the knee:
// speculation's gain is capacity, and below K = 0's knee goodput is the
// offered load under both, so a goodput claim there could never come out
// improved (analysis.WarnBoundedByLoad).
func hypothesis(o options) analysis.Hypothesis {
	return analysis.Hypothesis{
		Claim: fmt.Sprintf("K = %d at α = %g (%s) raises the knee by at least %.0f %% over K = 0",
			o.claimK, o.claimAlpha, o.drafter.short(), 100*o.threshold),
		Metric:    analysis.MetricKnee,
		Threshold: o.threshold,
	}
}

// experiment is the hypothesis test: A is K = 0, B the claim's K and α
// with the declared drafter, on paired seeded blocks at every load.
func experiment(o options) analysis.Experiment {
	a := baseConfig(o)
	b := a
	b.Speculation = speculation(o.claimK, o.claimAlpha, o.drafter)
	return analysis.Experiment{Hypothesis: hypothesis(o), A: a, B: b, Workload: analysis.Poisson(lengths),
		Loads: o.loads, Blocks: o.blocks, BaseSeed: o.seed, ModelError: modelBand(o)}
}

// modelBand is the hypothesis test's model band, declared before the
// runs: every step time ±o.modelError and, with -shapes atlas,
// analysis.AtlasBand's shape alternatives (each holding Frozen's 45 ms at
// batch 32 / 2,000 context and its prefill line, and pricing a verified
// draft at Frozen's 0.035 ms), each variant on the first o.bandBlocks
// blocks. A and B keep their speculation under every variant: the
// drafter wraps the variant's model (costmodel.Drafting), its step scaled
// with the step times by a scale variant and kept by a shape, which holds
// the target's step at the operating point and so the drafter's share c.
func modelBand(o options) analysis.ModelError {
	m := analysis.ModelError{Scale: o.modelError}
	if o.shapes == "atlas" {
		m = analysis.AtlasBand(o.modelError)
	}
	m.Reps = o.bandBlocks
	return m
}

// heavier is the claim's (K, α) under one drafter of the -drafters list.
type heavier struct {
	drafter drafter
	curve   *analysis.Curve
}

// runDrafters sweeps the claim's K and α under each drafter, on the
// grid's seeds.
func runDrafters(o options) ([]heavier, error) {
	var out []heavier
	for _, step := range o.drafters {
		d := drafter{step: step, overhead: o.drafter.overhead}
		c, err := sweepAt(o, o.claimK, o.claimAlpha, d).Run()
		if err != nil {
			return nil, fmt.Errorf("draft step %v: %w", step, err)
		}
		out = append(out, heavier{drafter: d, curve: c})
	}
	return out, nil
}

// longestStep is the longest step the Atlas scheduler can form with K
// drafts a decode under drafter d, and the decodes in it: b decodes
// verifying K + 1 positions each beside a prefill that fills the rest of
// the 2,048-token budget, over b from 1 to the batch cap, priced as the
// simulation prices it (the verifier, then the drafter). With K = 0 it is
// engine.LargestStep's, which knows no drafts.
func longestStep(o options, k int, d drafter) (time.Duration, int) {
	eng := engine.Config{}.WithDefaults()
	var m costmodel.Model = costmodel.Frozen{VerifyPerToken: o.verify}
	if k > 0 {
		m = costmodel.Drafting{Model: m, DraftStep: d.step, Overhead: d.overhead}
	}
	var best time.Duration
	decodes := 0
	for b := 1; b <= eng.MaxSeqs && b*(k+1) <= eng.MaxBatchedTokens; b++ {
		batch := costmodel.Batch{Decode: make([]int, b)}
		if k > 0 {
			batch.Verify = slices.Repeat([]int{k + 1}, b)
		}
		if left := eng.MaxBatchedTokens - b*(k+1); left > 0 {
			batch.Prefill = []costmodel.Chunk{{NewTokens: left}}
		}
		if t := m.StepTime(batch); t > best {
			best, decodes = t, b
		}
	}
	return best, decodes
}

// theory is the mean tokens a step of K drafts emits under i.i.d.
// acceptance α: (1 − α^(K+1))/(1 − α), K + 1 at α = 1 (Leviathan et al.).
func theory(k int, alpha float64) float64 {
	if alpha == 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(alpha, float64(k+1))) / (1 - alpha)
}
