package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// simOptions are the flags of the simulated section.
type simOptions struct {
	skip       bool
	loads      []float64 // offered loads, req/s; nil: automatic grid
	start      float64
	reps       int
	warmup     time.Duration
	horizon    time.Duration
	seed       uint64
	operating  float64  // the load to measure utilisation and headroom from, req/s; 0: none
	modelError float64  // relative error declared on step times; 0: none
	shapes     bool     // also the shape alternatives of analysis.AtlasBand
	out        string   // directory for plots and the card; "": none
	args       []string // the command line, for the card's Command
}

// target is the attainment the knee must meet, and the estimate's
// TTFT-qualified load too: analysis.Sweep's default.
const target = 0.95

// sweepFor builds the sweep of the replica r at its operating point:
// Poisson arrivals of fixed prompt and output lengths, the engine with r's
// batch, token budget and chunk cap (vLLM V1's defaults otherwise), priced
// by r's cost model, with the model error declared and the estimated
// serving capacity for the points' utilisation. It refuses a sweep that
// cannot run, before any run: an invalid configuration, or a load whose
// workload cannot be built (said once, not once per replication).
func sweepFor(r costmodel.Replica, e costmodel.Estimate, o simOptions) (analysis.Sweep, error) {
	p := r.Point
	grid := analysis.Grid{Start: o.start}
	if o.loads != nil {
		grid = analysis.Grid{Loads: o.loads}
	}
	s := analysis.Sweep{
		Config: sim.Config{
			Engine: engineOf(p),
			Model:  r.Cost,
			SLO:    sim.SLO{TTFT: p.SLO.TTFT, ITL: p.SLO.ITL},
			Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon},
		},
		Workload:   analysis.Poisson(workload.Fixed(p.PromptTokens, p.OutputTokens)),
		Grid:       grid,
		Reps:       o.reps,
		BaseSeed:   o.seed,
		Target:     target,
		ModelError: analysis.ModelError{Scale: o.modelError},
		Capacity:   e.ServingCapacity.Value,
	}
	if o.shapes {
		s.ModelError = analysis.AtlasBand(o.modelError)
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	flag, loads := "-loads", o.loads
	if loads == nil {
		flag, loads = "-start", []float64{o.start}
	}
	for _, load := range loads {
		if _, err := s.Workload.Source(load, analysis.Seed(o.seed, 0)); err != nil {
			return s, fmt.Errorf("%s %g req/s: %w", flag, load, err)
		}
	}
	return s, nil
}

// engineOf is the engine configuration of the operating point: its batch,
// token budget and chunk cap, vLLM V1's defaults otherwise.
func engineOf(p costmodel.OperatingPoint) engine.Config {
	return engine.Config{MaxSeqs: p.Batch, MaxBatchedTokens: p.Budget, ChunkCap: p.ChunkCap}
}

// parseLoads reads -loads: positive finite rates in requests/s.
func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-loads: %q is not a positive rate in requests/s", f)
		}
		out = append(out, v)
	}
	return out, nil
}
