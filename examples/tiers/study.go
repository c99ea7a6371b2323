package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/kvtier"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// level is a prefix reuse level of the study.
type level struct {
	name   string // as the verdict lines name it: "low-reuse"
	preset string // the workload preset's Go name
	prefix workload.PrefixReuse
}

var levels = []level{
	{"low-reuse", "workload.FleetLowReuse", workload.FleetLowReuse},
	{"high-reuse", "workload.FleetHighReuse", workload.FleetHighReuse},
}

// workingSet is the level's distinct shared prefix blocks: every group's
// prefix, in KV blocks of the engine's size (the private suffixes and
// answers are never reused, so they are not in it).
func (l level) workingSet() int {
	return l.prefix.Groups * l.prefix.PrefixTokens / engine.DefaultBlockSize
}

// router is one router of the study, under the name it prints.
type router struct {
	name   string
	router sim.Router
}

// The routers: RoundRobin sets the A/B loads and is A; PrefixAffinity is
// B; tieredPA is PrefixAffinity reading the tiers, swept in tier rows.
var (
	roundRobin     = router{"RoundRobin", sim.RoundRobin{}}
	leastLoaded    = router{"LeastLoaded", sim.LeastLoaded{}}
	prefixAffinity = router{"PrefixAffinity", sim.PrefixAffinity{}}
	tieredPA       = router{"PrefixAffinity+TieredView", sim.PrefixAffinity{View: sim.TieredView{}}}
)

// The KV a block takes below HBM, all of an Atlas TP4 replica's ranks
// together: a host tier keeps every rank's shard, a shared store the
// whole block (sim.HostTier's and sim.SharedStore's docs).
var (
	ranks      = costmodel.AtlasTP4().Hardware.Accelerators
	blockBytes = float64(engine.DefaultBlockSize) * costmodel.AtlasKVBytesPerToken * float64(ranks)
)

// maxTierBlocks is the most blocks a tier may hold.
const maxTierBlocks = kvtier.MaxBlocks

// hostBlocks is a host tier of g GiB in blocks, as sim.HostTier's doc
// converts vLLM's --kv-offloading-size: GiB × 2³⁰ / (BlockSize ×
// KVBytesPerToken × ranks), whole blocks.
func hostBlocks(g float64) int { return int(math.Min(g*(1<<30)/blockBytes, maxTierBlocks+1)) }

// hbmBlocks is the fleet's HBM in KV blocks: every replica's pool.
func hbmBlocks(replicas int) int { return replicas * engine.DefaultKVBlocks }

// sharedBlocks is a shared store of x times the fleet's HBM, in blocks.
func sharedBlocks(x float64, replicas int) int {
	return int(math.Min(math.Round(x*float64(hbmBlocks(replicas))), maxTierBlocks+1))
}

// gib prints bytes in GiB (in MiB below one GiB).
func gib(bytes float64) string {
	if bytes > 0 && bytes < 1<<30 {
		return fmt.Sprintf("%.4g MiB", bytes/(1<<20))
	}
	return fmt.Sprintf("%.4g GiB", bytes/(1<<30))
}

// setup is one row of the study: the fleet's tiers below HBM.
type setup struct {
	name   string
	host   sim.HostTier
	shared sim.SharedStore
	// store is the shared store's size in blocks along which the study
	// interpolates (0 for no tier), -1 off that axis (the host tier).
	store int
}

// tiered reports whether the row has a tier below HBM.
func (s setup) tiered() bool { return s.host.On() || s.shared.On() }

// setups are the study's rows: no tier, a host tier on every replica,
// and a shared store of each size.
func setups(o options) []setup {
	rows := []setup{{name: "no tier"}}
	if o.hostGiB > 0 {
		rows = append(rows, setup{name: fmt.Sprintf("host tier %.4g GiB a replica", o.hostGiB), store: -1,
			host: sim.HostTier{Blocks: hostBlocks(o.hostGiB), Link: sim.Link{Bandwidth: o.hostBandwidth, Latency: o.hostLatency, Sharing: sim.LinkFIFO}}})
	}
	for _, x := range o.shared {
		n := sharedBlocks(x, o.replicas)
		rows = append(rows, setup{name: fmt.Sprintf("shared store %.4gx HBM", x), store: n,
			shared: sim.SharedStore{Blocks: n, Link: sim.Link{Bandwidth: o.sharedBW, Latency: o.sharedLatency, Sharing: sim.LinkFair}}})
	}
	return rows
}

// routers are the row's routers: RoundRobin first (it places the A/B
// loads), PrefixAffinity third, PrefixAffinity reading the tiers last in
// a tier row with -tiered-view.
func (s setup) routers(o options) []router {
	rs := []router{roundRobin, leastLoaded, prefixAffinity}
	if s.tiered() && o.tieredView {
		rs = append(rs, tieredPA)
	}
	return rs
}

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

// config is the fleet of o.replicas Atlas TP4 replicas behind r with the
// row's tiers, fresh load signals, measured from o.warmup to o.horizon.
func config(r sim.Router, s setup, o options) sim.Config {
	return sim.Config{
		Fleet:  sim.Fleet{Replicas: sim.Copies(o.replicas, sim.ReplicaConfig{}), Router: r, HostTier: s.host, SharedStore: s.shared},
		Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon},
	}
}

// hypothesis is declared before any run, as examples/routing declares
// it: on the knee, since below A's knee goodput is the offered load under
// every router.
func hypothesis(o options) analysis.Hypothesis {
	return analysis.Hypothesis{
		Claim: fmt.Sprintf("On a fleet of %d Atlas TP4 replicas, PrefixAffinity raises the knee (TTFT- and ITL-qualified) by at least %.3g %% over RoundRobin",
			o.replicas, 100*o.threshold),
		Metric:    analysis.MetricKnee,
		Threshold: o.threshold,
	}
}

// band is the A/B test's model band, declared before the runs, on the
// first o.bandBlocks blocks; loadBand is the band RoundRobin's sweep runs
// under on its first bandSweepReps replications, whose knee under each
// model places that model's A/B loads (analysis.BandLoads).
func band(o options) analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	m.Reps = o.bandBlocks
	return m
}

func loadBand(o options) analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	m.Reps = min(o.reps, bandSweepReps)
	return m
}

const bandSweepReps = 2

// row is what one setup found at one reuse level.
type row struct {
	setup
	level   level
	routers []router
	curves  []*analysis.Curve // one per router
	loads   []float64         // the A/B loads; nil when RoundRobin's knee was not found
	result  *analysis.ExperimentResult
}

// sweep sweeps every router of the row, side by side.
func (r *row) sweep(o options) error {
	r.curves = make([]*analysis.Curve, len(r.routers))
	return each(len(r.routers), func(i int) (err error) {
		s := analysis.Sweep{Config: config(r.routers[i].router, r.setup, o), Workload: requests(r.level, o), Grid: analysis.Grid{Start: o.start},
			Reps: o.reps, BaseSeed: o.seed, Workers: o.workers}
		if r.routers[i] == roundRobin {
			s.ModelError = loadBand(o)
		}
		if r.curves[i], err = s.Run(); err != nil {
			err = fmt.Errorf("%s, %s, %s sweep: %w", r.level.name, r.name, r.routers[i].name, err)
		}
		return err
	})
}

// test picks the A/B loads from RoundRobin's knee and runs PrefixAffinity
// (B) against RoundRobin (A) there, under the band (no test without a
// knee).
func (r *row) test(o options) error {
	k := r.curves[0].Knee
	if !k.Found {
		return nil
	}
	for _, f := range o.factors {
		r.loads = append(r.loads, f*k.Load.Center)
	}
	x := analysis.Experiment{Hypothesis: hypothesis(o),
		A: config(roundRobin.router, r.setup, o), B: config(prefixAffinity.router, r.setup, o),
		Workload: requests(r.level, o), Loads: r.loads, Blocks: o.blocks, BaseSeed: o.seed, Workers: o.workers,
		ModelError: band(o), BandLoads: analysis.BandLoads(r.curves[0], o.factors)}
	var err error
	if r.result, err = x.Run(); err != nil {
		err = fmt.Errorf("%s, %s, PrefixAffinity against RoundRobin: %w", r.level.name, r.name, err)
	}
	return err
}

// study declares the hypothesis and the tiers, measures every row, and
// writes what they found.
func study(w io.Writer, o options) error {
	if err := writeDeclaration(w, o); err != nil {
		return err
	}
	byLevel, err := measure(o)
	if err != nil {
		return err
	}
	for _, rs := range byLevel {
		writeLevel(w, rs, o)
	}
	for _, rs := range byLevel {
		writeAnswer(w, rs, o)
	}
	return nil
}

// measure sweeps every row of both reuse levels side by side, then runs
// their A/B tests side by side; it returns the rows by level, in the
// order of levels and setups.
func measure(o options) ([][]*row, error) {
	var rows []*row
	byLevel := make([][]*row, len(levels))
	for i, l := range levels {
		for _, s := range setups(o) {
			r := &row{setup: s, level: l, routers: s.routers(o)}
			rows, byLevel[i] = append(rows, r), append(byLevel[i], r)
		}
	}
	if err := each(len(rows), func(i int) error { return rows[i].sweep(o) }); err != nil {
		return nil, err
	}
	if err := each(len(rows), func(i int) error { return rows[i].test(o) }); err != nil {
		return nil, err
	}
	return byLevel, nil
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

// tierHits pools a point's runs: the shares of the measured requests'
// prompt tokens found in HBM, loaded from the host tier and loaded from
// the shared store, the share of their TTFT spent loading, and the mean
// utilisation of the host links and of the shared link (NaN where none).
type tierHits struct {
	hbm, host, shared    float64
	loading              float64
	hostUtil, sharedUtil float64
}

func hitsAt(p *analysis.Point) tierHits {
	var input, hbm, host, shared int
	var loadShare, hostU, sharedU []float64
	for i := range p.Runs {
		s := &p.Runs[i]
		input += s.InputTokens
		hbm += s.Cached
		if t := s.Tiers; t != nil {
			host += t.Host
			shared += t.Shared
			loadShare = append(loadShare, t.TTFTShareLoading)
			hostU = append(hostU, t.HostUtilisation)
			sharedU = append(sharedU, t.SharedUtilisation)
		}
	}
	h := tierHits{hbm: math.NaN(), host: math.NaN(), shared: math.NaN(),
		loading: mean(loadShare), hostUtil: mean(hostU), sharedUtil: mean(sharedU)}
	if input > 0 {
		in := float64(input)
		h.hbm, h.host, h.shared = float64(hbm)/in, float64(host)/in, float64(shared)/in
	}
	return h
}

// mean is the mean of xs' numbers, NaN without any.
func mean(xs []float64) float64 {
	sum, n := 0.0, 0
	for _, x := range xs {
		if !math.IsNaN(x) {
			sum, n = sum+x, n+1
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
