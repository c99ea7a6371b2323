package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// The shipped scenario files are these Go values, written by package
// scenario: `go test ./examples/run -run TestScenarioFiles -update`
// rewrites them after a deliberate change.
func TestScenarioFiles(t *testing.T) {
	reg := scenario.Default()
	for name, s := range map[string]scenario.Scenario{
		"atlas-capacity.json": atlasCapacity(t),
		"routing.json":        routing(),
	} {
		require.NoError(t, s.Validate(), name)
		b, err := reg.Marshal(s)
		require.NoError(t, err)
		golden.Check(t, filepath.Join("scenarios", name), b)
	}
}

// atlasCapacity is the sweep examples/capacity runs at its defaults: the
// Atlas TP4 replica at its operating point (batch 32, a 2,048-token
// budget, no chunk cap, priced by costmodel.Frozen), Poisson arrivals of
// 2,000-token prompts and 200-token answers from 0.5 req/s on, five
// replications, a one-minute warm-up and a ten-minute horizon, step times
// ±10 % declared before the sweep, the estimate's serving capacity for
// the utilisation and 1.5 req/s as the operating load. Its workload is
// data (analysis.Poisson, arrivals without end), where examples/capacity draws
// rate × (window + drain) + 1 requests and stops there.
func atlasCapacity(t *testing.T) scenario.Scenario {
	r := costmodel.AtlasTP4()
	p := &r.Point
	p.SeqTokens, p.Context, p.Target, p.Offered = p.PromptTokens+p.OutputTokens, p.PromptTokens+p.OutputTokens/2, 0.95, 1.5
	e, err := r.Estimate()
	require.NoError(t, err)
	return scenario.Scenario{
		Name:  "atlas-capacity",
		Title: "Atlas TP4 goodput curve (simulated)",
		Claim: fmt.Sprintf("The Atlas TP4 replica keeps 95 %% of requests within TTFT <= %v and every ITL <= %v up to the knee reported below.", p.SLO.TTFT, p.SLO.ITL),
		Sweep: &analysis.Sweep{
			Config: sim.Config{
				Engine: engine.Config{MaxSeqs: p.Batch, MaxBatchedTokens: p.Budget, ChunkCap: p.ChunkCap},
				Model:  r.Cost,
				SLO:    sim.SLO{TTFT: p.SLO.TTFT, ITL: p.SLO.ITL},
				Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute},
			},
			Workload:   analysis.Poisson(workload.Fixed(p.PromptTokens, p.OutputTokens)),
			Grid:       analysis.Grid{Start: 0.5},
			Reps:       5,
			Target:     0.95,
			ModelError: analysis.ModelError{Scale: 0.1},
			Capacity:   e.ServingCapacity.Value,
		},
		Operating: 1.5,
	}
}

// routing is the question examples/routing answers at its defaults: a
// fleet of 4 Atlas TP4 replicas, at low and at high prefix reuse, a sweep
// per router (RoundRobin, LeastLoaded, PrefixAffinity) from 2 req/s with
// 4 replications, then PrefixAffinity (B) against RoundRobin and against
// LeastLoaded (A) on the knee, each block's read over 0.7, 0.8, 0.9, 1,
// 1.1 and 1.2 × RoundRobin's knee, 12 blocks, a 5-minute horizon after a
// 30-second warm-up, and the model band analysis.AtlasBand(0.1) on the
// first 6 blocks, each model at the same multiples of RoundRobin's knee
// under it (RoundRobin's sweep runs the band on its first 2 seeds).
func routing() scenario.Scenario {
	const replicas, horizon = 4, 5 * time.Minute
	routers := []struct {
		name string
		r    sim.Router
	}{{"RoundRobin", sim.RoundRobin{}}, {"LeastLoaded", sim.LeastLoaded{}}, {"PrefixAffinity", sim.PrefixAffinity{}}}
	config := func(r sim.Router) sim.Config {
		return sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(replicas, sim.ReplicaConfig{}), Router: r},
			Window: sim.Window{Warmup: horizon / 10, Horizon: horizon}}
	}
	var groups []scenario.Group
	for _, l := range []struct {
		name   string
		prefix workload.PrefixReuse
	}{{"low-reuse", workload.FleetLowReuse}, {"high-reuse", workload.FleetHighReuse}} {
		wl := analysis.SyntheticWorkload{Spec: workload.Synthetic{Duration: 2 * horizon, Lengths: workload.Fixed(500, 200), Prefix: l.prefix}}
		g := scenario.Group{Name: l.name}
		band := analysis.AtlasBand(0.1)
		for _, r := range routers {
			sw := analysis.Sweep{Config: config(r.r), Workload: wl, Grid: analysis.Grid{Start: 2}, Reps: 4}
			if r.name == "RoundRobin" { // its knee under each model places that model's A/B loads
				sw.ModelError = band
				sw.ModelError.Reps = 2
			}
			g.Sweeps = append(g.Sweeps, scenario.NamedSweep{Name: r.name, Sweep: sw})
		}
		band.Reps = 6
		for _, base := range routers[:2] {
			g.Experiments = append(g.Experiments, scenario.Comparison{
				A: base.name, B: "PrefixAffinity",
				Experiment: analysis.Experiment{
					Hypothesis: analysis.Hypothesis{
						Claim:     fmt.Sprintf("On a fleet of %d Atlas TP4 replicas, PrefixAffinity raises the knee (TTFT- and ITL-qualified) by at least 5 %% over %s", replicas, base.name),
						Metric:    analysis.MetricKnee,
						Threshold: 0.05,
					},
					A: config(base.r), B: config(sim.PrefixAffinity{}), Workload: wl, Blocks: 12,
					ModelError: band,
				},
				Operating: &scenario.Operating{Sweep: "RoundRobin", Factors: []float64{0.7, 0.8, 0.9, 1, 1.1, 1.2}},
			})
		}
		groups = append(groups, g)
	}
	return scenario.Scenario{
		Name:   "routing",
		Title:  fmt.Sprintf("Prefix-aware routing on a fleet of %d Atlas TP4 replicas", replicas),
		Study:  &scenario.Study{Groups: groups},
		Output: scenario.Output{Write: []string{scenario.WriteReport, scenario.WriteCharts, scenario.WriteCard}},
	}
}
