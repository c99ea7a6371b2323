package main

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// wholeBudget is the token budget a replica without chunked prefill needs:
// a request's prompt + output − 1 tokens must fit in one step's budget
// (vLLM's max_num_batched_tokens ≥ max_model_len), and the Atlas document
// workload's longest is 7,000 + 1,000 − 1.
const wholeBudget = 8192

// documents is the Atlas document workload at rate req/s, enough requests
// to cover the window and its drain.
func documents(horizon time.Duration) analysis.Workload {
	return analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		n := math.Trunc(rate*2*horizon.Seconds()) + 1
		if !(n < math.MaxInt64) {
			return nil, fmt.Errorf("%.3g requests in %v of arrivals (twice the horizon): more than a run can count", n, 2*horizon)
		}
		return workload.NewSynthetic(workload.Synthetic{
			Seed: seed, Count: int(n),
			Arrival: workload.Arrival{Rate: rate}, Lengths: workload.AtlasDocuments(),
		})
	})
}

// baseConfig is the Atlas replica at vLLM V1's defaults (token budget
// 2,048, chunked prefill on, no per-request chunk cap): every dial's
// baseline.
func baseConfig(horizon time.Duration) sim.Config {
	return sim.Config{Window: sim.Window{Warmup: horizon / 10, Horizon: horizon}}
}

// chunkedPrefill is chunked prefill on (1) or off (0), off with the budget
// a whole prompt needs.
var chunkedPrefill = analysis.DialFunc("Engine.DisableChunkedPrefill", "on (1) / off (0, with MaxBatchedTokens 8192)",
	func(c *sim.Config, v float64) {
		*c = analysis.DialChunkedPrefill.Set(*c, v)
		if v == 0 {
			*c = analysis.DialTokenBudget.Set(*c, wholeBudget)
		}
	})

// dial is one of the program's dial sweeps: what it turns, how its values
// read, and which is vLLM's default.
type dial struct {
	title  string // the table's heading
	short  string // the chart and card file name, the benchmark config key
	column string // the value column's heading
	unit   string // under it
	dial   analysis.Dial
	values []float64 // in increasing order, or the baseline first
	base   float64   // the baseline: vLLM's default
	label  func(v float64) string
}

// dials are the sweeps the flags ask for: chunk caps, token budgets, and
// chunked prefill off; each with vLLM's default as its baseline, first.
func dials(o options) []dial {
	var out []dial
	if len(o.chunks) > 0 {
		out = append(out, dial{
			title: "Chunk cap (Engine.ChunkCap: vLLM's long_prefill_token_threshold; a cap above the budget raises the budget to it)",
			short: "chunk", column: "chunk cap", unit: "tokens", dial: analysis.DialChunkCap,
			values: withBase(o.chunks, 0), base: 0,
			label: func(v float64) string { return orNone(v) },
		})
	}
	if len(o.budgets) > 0 {
		out = append(out, dial{
			title: "Token budget (Engine.MaxBatchedTokens: vLLM's max_num_batched_tokens, Sarathi's chunk size)",
			short: "budget", column: "budget", unit: "tokens", dial: analysis.DialTokenBudget,
			values: withBase(o.budgets, engine.DefaultMaxBatchedTokens), base: engine.DefaultMaxBatchedTokens,
			label: func(v float64) string { return fmt.Sprint(v) },
		})
	}
	if o.whole {
		out = append(out, dial{
			title: fmt.Sprintf("Chunked prefill (off: whole prompts beside the decodes, as vLLM V1, budget %d to hold the longest request)", wholeBudget),
			short: "prefill", column: "chunked prefill", dial: chunkedPrefill,
			values: []float64{1, 0}, base: 1,
			label: func(v float64) string { return map[bool]string{true: "on", false: "off"}[v == 1] },
		})
	}
	return out
}

// withBase are xs and the baseline as dial values, in increasing order,
// each once.
func withBase(xs []int, base int) []float64 {
	out := []float64{float64(base)}
	for _, x := range xs {
		out = append(out, float64(x))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func orNone(v float64) string {
	if v == 0 {
		return "none"
	}
	return fmt.Sprint(v)
}

// modelBand is the chunk-cap sweep's model band the flags declare:
// ±-model-error, and with -shapes atlas the three shapes of
// analysis.AtlasBand (calibrated to Frozen's defaults, the model every
// chunk cap runs).
func modelBand(o options) analysis.ModelError {
	m := analysis.ModelError{Scale: o.modelError}
	if o.shapes == "atlas" {
		m = analysis.AtlasBand(o.modelError)
	}
	if m.Declared() {
		m.Reps = o.bandReps
	}
	return m
}

// sweepOf is d's dial sweep: every value swept from -start on the same
// seeds, read at the probe load.
func sweepOf(d dial, o options) analysis.DialSweep {
	var band analysis.ModelError
	if d.short == "chunk" {
		band = modelBand(o)
	}
	return analysis.DialSweep{
		Sweep: analysis.Sweep{Config: baseConfig(o.horizon), Workload: documents(o.horizon), Grid: analysis.Grid{Start: o.start},
			Reps: o.reps, BaseSeed: o.seed, ModelError: band},
		Dial: d.dial, Values: d.values, Baseline: slices.Index(d.values, d.base), Probe: o.probe,
	}
}

// study is one dial's sweep and what it found.
type study struct {
	dial
	sweep  analysis.DialSweep
	result *analysis.DialResult
}

// runStudies sweeps every dial.
func runStudies(o options) ([]study, error) {
	var out []study
	for _, d := range dials(o) {
		s := study{dial: d, sweep: sweepOf(d, o)}
		r, err := s.sweep.Run()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.dial.Name, err)
		}
		s.result = r
		out = append(out, s)
	}
	return out, nil
}

// configAt is the configuration of d at value v.
func configAt(d analysis.Dial, v float64, horizon time.Duration) sim.Config {
	return d.Set(baseConfig(horizon), v)
}

// mixedStep is the longest step the engine forms with one prefill chunk
// beside its decodes (engine.LargestStep with one prefilling request): the
// ITL tax the chapter walks at the engine level, 73.96 ms for a 256-token
// chunk beside 31 decodes. Without chunked prefill it is one decode beside
// a whole prompt of the rest of the budget (vLLM V1 schedules the running
// decodes first either way).
func mixedStep(c sim.Config) time.Duration {
	d, _ := engine.LargestStep(c.Engine, nil, 0, 1)
	return d
}
