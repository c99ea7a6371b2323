package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// level is a prefix reuse level of the study.
type level struct {
	name   string // as the verdict line names it: "low-reuse"
	preset string // the workload preset's Go name
	prefix workload.PrefixReuse
}

var levels = []level{
	{"low-reuse", "workload.FleetLowReuse", workload.FleetLowReuse},
	{"high-reuse", "workload.FleetHighReuse", workload.FleetHighReuse},
}

// router is one router of the study, under its Go name.
type router struct {
	name   string
	router sim.Router
}

// The routers, baselines first: RoundRobin sets the operating loads and is
// the primary baseline; PrefixAffinity is B in both comparisons.
var (
	roundRobin     = router{"RoundRobin", sim.RoundRobin{}}
	leastLoaded    = router{"LeastLoaded", sim.LeastLoaded{}}
	prefixAffinity = router{"PrefixAffinity", sim.PrefixAffinity{}}
	routers        = []router{roundRobin, leastLoaded, prefixAffinity}
	baselines      = []router{roundRobin, leastLoaded}
)

// requests is the level's open-loop Poisson workload: each request is its
// shared prefix (when the preset gives it one) followed by o.input fresh
// prompt tokens, and asks for o.output tokens. Arrivals stop at twice the
// horizon, after the last instant a run can reach (Horizon + Drain).
func requests(l level, o options) analysis.Workload {
	return analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		return workload.NewSynthetic(workload.Synthetic{
			Seed: seed, Duration: 2 * o.horizon, Arrival: workload.Arrival{Rate: rate},
			Lengths: workload.Fixed(o.input, o.output), Prefix: l.prefix,
		})
	})
}

// config is the fleet of o.replicas Atlas TP4 replicas behind r, with
// fresh load signals, measured from a tenth of the horizon to the horizon.
func config(r sim.Router, o options) sim.Config {
	return sim.Config{
		Fleet:  sim.Fleet{Replicas: sim.Copies(o.replicas, sim.ReplicaConfig{}), Router: r},
		Window: sim.Window{Warmup: o.horizon / 10, Horizon: o.horizon},
	}
}

// hypothesis is declared before any run: B is PrefixAffinity, A the
// baseline. It is on the knee: below A's knee goodput is the offered load
// under every router, so a goodput claim there could never come out
// improved (analysis.WarnBoundedByLoad); what a router can buy is
// capacity, and at the loads A serves, latency (the second readout).
func hypothesis(base router, o options) analysis.Hypothesis {
	return analysis.Hypothesis{
		Claim: fmt.Sprintf("On a fleet of %d Atlas TP4 replicas, PrefixAffinity raises the knee (TTFT- and ITL-qualified) by at least %.3g %% over %s",
			o.replicas, 100*o.threshold, base.name),
		Metric:    analysis.MetricKnee,
		Threshold: o.threshold,
	}
}

// band is the model band the experiments rerun under, declared before the
// runs: step times ±o.modelError and the Atlas shape alternatives (a
// batch- and context-dependent step each, holding Frozen's operating
// point), on the first o.bandBlocks blocks (0: every block).
func band(o options) analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	m.Reps = o.bandBlocks
	return m
}

// loadBand is the band RoundRobin's sweep runs under, on its first
// bandSweepReps replications: each model's own knee places that model's
// A/B loads (analysis.BandLoads), as the nominal knee places the nominal
// ones. Read at the nominal loads, a model that moves the knee past
// their span leaves no block's knees to compare.
func loadBand(o options) analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	m.Reps = min(o.reps, bandSweepReps)
	return m
}

// bandSweepReps is the replications of RoundRobin's sweep under each
// model of the band: its knee places loads, it is not a verdict.
const bandSweepReps = 2

// outcome is what one reuse level found.
type outcome struct {
	level
	sweeps  []analysis.Sweep  // one per router, in the order of routers
	curves  []*analysis.Curve // one per router
	loads   []float64         // the A/B test's loads; nil when RoundRobin's knee was not found
	tests   []analysis.Experiment
	result  []*analysis.ExperimentResult // per baseline; nil without operating loads
	sizes   []*analysis.SizingResult     // per router: the fleet it needs for -size-load; nil entries without
	unmet   []*analysis.SizingUnmetError // per router: set when no fleet within maxSizing carried it
	cp      []cpResult                   // each control plane's A/B test; nil without A/B loads
	gateway *analysis.Curve              // PrefixAffinity behind the shedding gateway
}

// sweepLevel sweeps every router at one reuse level, the routers side by
// side (each sweep runs its replications in parallel as well).
func sweepLevel(l level, o options) (*outcome, error) {
	out := &outcome{level: l, sweeps: levelSweeps(l, o), curves: make([]*analysis.Curve, len(routers))}
	errs := make([]error, len(routers))
	var wg sync.WaitGroup
	for i, r := range routers {
		wg.Go(func() {
			out.curves[i], errs[i] = out.sweeps[i].Run()
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s, %s sweep: %w", l.name, r.name, errs[i])
			}
		})
	}
	var gwErr error
	wg.Go(func() {
		if out.gateway, gwErr = gatewaySweep(l, o).Run(); gwErr != nil {
			gwErr = fmt.Errorf("%s, PrefixAffinity behind the gateway: %w", l.name, gwErr)
		}
	})
	wg.Wait()
	return out, errors.Join(append(errs, gwErr)...)
}

// levelSweeps declares the level's sweeps, one per router in the order
// of routers.
func levelSweeps(l level, o options) []analysis.Sweep {
	sweeps := make([]analysis.Sweep, len(routers))
	for i, r := range routers {
		sweeps[i] = analysis.Sweep{Config: config(r.router, o), Workload: requests(l, o), Grid: analysis.Grid{Start: o.start},
			Reps: o.reps, BaseSeed: o.seed, Workers: o.workers}
		if r == roundRobin {
			sweeps[i].ModelError = loadBand(o)
		}
		if r == prefixAffinity {
			sweeps[i].Grid.PastKnee = true
		}
	}
	return sweeps
}

// operate picks the A/B test's loads from RoundRobin's knee and declares
// the experiment against each baseline there (none without a knee): each
// block's knee is read over them. Each model of the band runs at the
// same factors times RoundRobin's knee under that model.
func operate(out *outcome, o options) {
	if k := out.curves[0].Knee; k.Found {
		for _, f := range o.factors {
			out.loads = append(out.loads, f*k.Load.Center)
		}
	}
	bandLoads := analysis.BandLoads(out.curves[0], o.factors)
	for _, base := range baselines {
		x := experiment(out.level, base, o)
		x.Loads, x.BandLoads = out.loads, bandLoads
		out.tests = append(out.tests, x)
	}
}

// experiment declares the level's A/B test of PrefixAffinity (B) against
// base (A), without its loads: they come from RoundRobin's knee.
func experiment(l level, base router, o options) analysis.Experiment {
	return analysis.Experiment{
		Hypothesis: hypothesis(base, o),
		A:          config(base.router, o), B: config(prefixAffinity.router, o),
		Workload: requests(l, o), Blocks: o.blocks, BaseSeed: o.seed, Workers: o.workers,
		ModelError: band(o),
	}
}

// test runs the level's experiments side by side; a level without
// operating loads has no results.
func test(out *outcome) error {
	out.result = make([]*analysis.ExperimentResult, len(out.tests))
	if out.loads == nil {
		return nil
	}
	errs := make([]error, len(out.tests))
	var wg sync.WaitGroup
	for k, x := range out.tests {
		wg.Go(func() {
			out.result[k], errs[k] = x.Run()
			if errs[k] != nil {
				errs[k] = fmt.Errorf("%s, PrefixAffinity against %s: %w", out.name, baselines[k].name, errs[k])
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// study declares the hypothesis, sweeps both reuse levels side by side,
// picks the operating loads, runs the experiments and writes what they
// found.
func study(w io.Writer, o options) error {
	writeDeclaration(w, o)
	outs := make([]*outcome, len(levels))
	if err := each(len(levels), func(i int) (err error) {
		outs[i], err = sweepLevel(levels[i], o)
		return err
	}); err != nil {
		return err
	}
	for _, out := range outs {
		operate(out, o)
	}
	if err := each(len(outs), func(i int) error { return test(outs[i]) }); err != nil {
		return err
	}
	if err := each(len(outs), func(i int) error { return sizeLevel(outs[i], o) }); err != nil {
		return err
	}
	if err := each(len(outs), func(i int) (err error) {
		outs[i].cp, err = controlPlane(outs[i], o)
		return err
	}); err != nil {
		return err
	}
	for _, out := range outs {
		writeLevel(w, out, o)
	}
	for _, out := range outs {
		fmt.Fprintln(w, verdictLine(out))
	}
	for _, out := range outs {
		if l := bandLine(out); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	for _, out := range outs {
		if l := sizeLine(out, o); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	if o.out == "" {
		return nil
	}
	return writeOutputs(w, outs, o)
}

// each calls f(0), …, f(n-1) side by side and joins their errors.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hitRate pools the prefix hit rate of a point's runs: prompt tokens
// served from a prefix cache over all prompt tokens of the measured
// requests (NaN without any).
func hitRate(p *analysis.Point) float64 {
	var cached, input int
	for i := range p.Runs {
		cached += p.Runs[i].Cached
		input += p.Runs[i].InputTokens
	}
	if input == 0 {
		return math.NaN()
	}
	return float64(cached) / float64(input)
}

// imbalance is the mean over a point's runs of the busiest replica's
// share of measured requests over the mean share (1 is even; NaN without
// any).
func imbalance(p *analysis.Point) float64 {
	sum, n := 0.0, 0
	for i := range p.Runs {
		if v := p.Runs[i].Imbalance.Requests; !math.IsNaN(v) {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// commonLoad is the load every curve ran that lies nearest to target
// (every automatic sweep starts at -start and grows by the same factor,
// so they share their geometric points), or NaN if they share none.
func commonLoad(curves []*analysis.Curve, target float64) float64 {
	best := math.NaN()
	for _, p := range curves[0].Points {
		shared := true
		for _, c := range curves[1:] {
			if pointAt(c, p.Load) == nil {
				shared = false
				break
			}
		}
		if shared && (math.IsNaN(best) || math.Abs(p.Load-target) < math.Abs(best-target)) {
			best = p.Load
		}
	}
	return best
}

// pointAt is the curve's point at load, or nil.
func pointAt(c *analysis.Curve, load float64) *analysis.Point {
	for i := range c.Points {
		if c.Points[i].Load == load {
			return &c.Points[i]
		}
	}
	return nil
}
