package main

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// load is a workload of the study.
type load struct {
	name           string
	about          string
	lengths        workload.Joint
	prompt, output int     // their means, for the estimate
	start          float64 // the co-located sweep's first load, req/s
}

// The workloads: chat prompts are short beside their answers, a
// document's prompt is long beside its answer.
var loads = []load{
	{"chat", "prompts lognormal, mean 600 tokens (cv 0.6); answers lognormal, mean 250 (cv 0.6)",
		workload.Independent{Input: workload.LogNormalMean(600, 0.6), Output: workload.LogNormalMean(250, 0.6)}, 600, 250, 4},
	{"long-document", "prompts lognormal, mean 5,000 tokens (cv 0.3); answers lognormal, mean 200 (cv 0.6)",
		workload.Independent{Input: workload.LogNormalMean(5000, 0.3), Output: workload.LogNormalMean(200, 0.6)}, 5000, 200, 0.5},
}

// requests is the workload's open-loop Poisson source; arrivals stop at
// twice the horizon, after the last instant a run can reach.
func requests(l load, o options) analysis.Workload {
	return analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: 2 * o.horizon,
			Arrival: workload.Arrival{Rate: rate}, Lengths: l.lengths})
	})
}

// row is one fleet of the study: co-located (prefill 0) or split.
type row struct {
	prefill   int     // replicas in the prefill pool; 0: co-located
	bandwidth float64 // GB/s per accelerator
	decider   sim.Decider
}

// name is the row as the report prints it.
func (r row) name(o options) string {
	if r.prefill == 0 {
		return fmt.Sprintf("co-located %d", o.replicas)
	}
	d := "always"
	if _, ok := r.decider.(sim.PrefixThreshold); ok {
		d = "llm-d threshold"
	}
	return fmt.Sprintf("%dP:%dD %g GB/s %s", r.prefill, o.replicas-r.prefill, r.bandwidth, d)
}

// rows are the splits: every ratio at every bandwidth with every request
// remote, then every ratio behind llm-d's decider at the middle
// bandwidth.
func rows(o options) []row {
	var out []row
	for _, p := range o.splits {
		for _, bw := range o.bandwidths {
			out = append(out, row{prefill: p, bandwidth: bw, decider: sim.AlwaysRemote{}})
		}
	}
	mid := o.bandwidths[len(o.bandwidths)/2]
	for _, p := range o.splits {
		out = append(out, row{prefill: p, bandwidth: mid, decider: sim.PrefixThreshold{NonCachedTokens: o.deciderTokens}})
	}
	return out
}

// config is the row's fleet of o.replicas Atlas TP4 replicas behind
// LeastLoaded (each pool's router, fresh signals), measured from a tenth
// of the horizon to the horizon. The link is one per prefill replica,
// shared fairly by its transfers in flight (NIXL's concurrent RDMA
// reads; sim.LinkFair), with 20 µs of latency.
func config(r row, o options) sim.Config {
	cfg := sim.Config{Fleet: sim.Fleet{Router: sim.LeastLoaded{}}, Window: sim.Window{Warmup: o.horizon / 10, Horizon: o.horizon}}
	cfg = analysis.DialPrefillReplicas(o.replicas).Set(cfg, float64(r.prefill))
	if r.prefill > 0 {
		cfg.Fleet.Prefill.Router = sim.LeastLoaded{}
		cfg.Fleet.Prefill.Decider = r.decider
		cfg.Fleet.Prefill.Link = sim.Link{Bandwidth: r.bandwidth * 1e9, Latency: linkLatency, Sharing: sim.LinkFair}
	}
	return cfg
}

// linkLatency is each transfer's fixed time: an RDMA read's setup.
const linkLatency = 20_000 // ns

// hypothesis is declared before any run: A is co-located, B the split.
func hypothesis(r row, o options) analysis.Hypothesis {
	return analysis.Hypothesis{
		Claim: fmt.Sprintf("%s raises the knee (per replica: both fleets have %d) by more than %.3g %% over %d replicas co-located",
			r.name(o), o.replicas, 100*o.threshold, o.replicas),
		Metric: analysis.MetricKnee, Threshold: o.threshold,
	}
}

// band is the model band every test reruns under.
func band(o options) analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	m.Reps = o.bandBlocks
	return m
}

// outcome is what one workload found.
type outcome struct {
	load
	colocated *analysis.Curve
	loads     []float64
	rows      []row
	results   []*analysis.ExperimentResult // per row; nil without A/B loads
	probes    []*sim.Summary               // per row: one run at the co-located knee
	best      int                          // the row with the largest rise
	bestCurve *analysis.Curve              // its sweep, under the band as the co-located one
}

// runLoad sweeps the co-located fleet, places the A/B loads at its knee
// and runs every row's test against it, side by side.
func runLoad(l load, o options) (*outcome, error) {
	out := &outcome{load: l, rows: rows(o)}
	lb := analysis.AtlasBand(o.modelError)
	lb.Reps = 2
	sw := analysis.Sweep{Config: config(row{}, o), Workload: requests(l, o), Grid: analysis.Grid{Start: l.start},
		Reps: o.reps, BaseSeed: o.seed, Workers: o.workers, ModelError: lb}
	var err error
	if out.colocated, err = sw.Run(); err != nil {
		return nil, fmt.Errorf("%s, co-located sweep: %w", l.name, err)
	}
	k := out.colocated.Knee
	if !k.Found {
		return out, nil
	}
	for _, f := range o.factors {
		out.loads = append(out.loads, f*k.Load.Center)
	}
	bandLoads := analysis.BandLoads(out.colocated, o.factors)
	out.results = make([]*analysis.ExperimentResult, len(out.rows))
	out.probes = make([]*sim.Summary, len(out.rows))
	errs := make([]error, len(out.rows))
	var wg sync.WaitGroup
	for i, r := range out.rows {
		wg.Go(func() {
			x := analysis.Experiment{Hypothesis: hypothesis(r, o), A: config(row{}, o), B: config(r, o),
				Workload: requests(l, o), Loads: out.loads, Blocks: o.blocks, BaseSeed: o.seed, Workers: o.workers,
				ModelError: band(o), BandLoads: bandLoads}
			if out.results[i], errs[i] = x.Run(); errs[i] != nil {
				errs[i] = fmt.Errorf("%s, %s: %w", l.name, r.name(o), errs[i])
				return
			}
			out.probes[i], errs[i] = probe(l, r, k.Load.Center, o)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	// The best split swept as the co-located fleet was, under every model
	// of the band: where co-located has no knee under a model, its knee
	// there says whether splitting pays under it.
	for i := range out.rows {
		if out.results[i].Improvement.Center > out.results[out.best].Improvement.Center {
			out.best = i
		}
	}
	bs := sw
	bs.Config = config(out.rows[out.best], o)
	if out.bestCurve, err = bs.Run(); err != nil {
		return out, fmt.Errorf("%s, %s sweep: %w", l.name, out.rows[out.best].name(o), err)
	}
	return out, nil
}

// probe runs the row once at load on the base seed, for what the split
// did there: the decider's share, the pools' and the links' use.
func probe(l load, r row, load float64, o options) (*sim.Summary, error) {
	src, err := requests(l, o).Source(load, o.seed)
	if err != nil {
		return nil, err
	}
	cfg := config(r, o)
	cfg.Seed = o.seed
	s, err := sim.Run(cfg, src, nil)
	return &s, err
}

// study declares the hypothesis, runs both workloads and writes what
// they found.
func study(w io.Writer, o options) error {
	writeDeclaration(w, o)
	outs := make([]*outcome, len(loads))
	errs := make([]error, len(loads))
	var wg sync.WaitGroup
	for i, l := range loads {
		wg.Go(func() { outs[i], errs[i] = runLoad(l, o) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, out := range outs {
		writeLoad(w, out, o)
	}
	for _, out := range outs {
		fmt.Fprintln(w, verdictLine(out, o))
	}
	return nil
}
