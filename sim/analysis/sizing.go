package analysis

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// Sizing asks how many replicas a fleet needs: the smallest replica
// count n whose fleet (Config's replica copied n times, sim.Copies, behind
// Config's router) meets the attainment Target at the sizing load, Load ×
// (1 + Headroom), judged on Reps seeded replications.
//
// The search doubles n from 1 until a fleet meets the target (or
// MaxReplicas fails it), then bisects between the last count that failed
// and the first that met it. Every count runs the same seeds, Seed(BaseSeed,
// r) for replication r, so the counts compare on common random numbers: a
// count meets the target when its mean attainment over the replications
// does, the knee's criterion. Bisection assumes attainment rises with n,
// which holds on average; a replication's own attainment may dip by noise
// where the target is nearly met, which the seed range shows.
//
// A declared ModelError sizes the fleet again under each model of the
// band, on the same seeds, and the result says whether the size holds
// under every model of the band or rests on the model.
//
// The zero value is not runnable: set Config (with Window.Horizon),
// Workload and Load. The other fields default: Target 0.95, Headroom 0,
// Reps 5, Confidence 0.95, MaxReplicas sim.MaxReplicas, Price 0 (no
// cost), Workers GOMAXPROCS, ModelError none.
//
// ExampleSizing sizes an Atlas fleet; examples/sizing answers the
// question for a diurnal day's peak hour and for the Azure trace, with
// the Atlas model band.
type Sizing struct {
	// Config is every run's configuration but its fleet's size: the
	// replica template is Config.Fleet.Replicas[0] when the fleet lists
	// one replica, or the replica Config.Engine, Config.Model and
	// Config.Speculation configure when it lists none (nil). A fleet of
	// several replicas is refused: sizing copies one template. Seed is set
	// per replication.
	Config   sim.Config
	Workload Workload
	// Load is the offered load the fleet must carry, requests/s (> 0).
	Load float64
	// Headroom is the spare capacity asked for, a fraction >= 0: the
	// fleet must meet the target at Load × (1 + Headroom). 0 means none.
	Headroom float64
	// Target is the attainment to meet; default 0.95.
	Target float64
	// Reps is the number of seeded replications per count; default 5.
	Reps     int
	BaseSeed uint64
	// Confidence of every interval; default 0.95.
	Confidence float64
	// MaxReplicas bounds the search; 0 means sim.MaxReplicas, more is
	// refused.
	MaxReplicas int
	// From is a guess of the answer the search starts at, e.g. the load
	// over one replica's knee: it then steps from From by 1, 2, 4, …
	// replicas (down while fleets meet the target, up while they fail)
	// and bisects the last step, so it runs fleets near the answer only,
	// not the heavily overloaded small ones the doubling from 1 runs. The
	// answer is the same as from 1 wherever attainment rises with n. 0
	// means 1 (doubling from 1); more than MaxReplicas is refused.
	From int
	// Price is the price of one replica for an hour, in any currency (>= 0):
	// when > 0 the result carries the cost per million output tokens. 0
	// means no price.
	Price float64
	// Workers bounds parallel runs; 0 means GOMAXPROCS.
	Workers int
	// ModelError, when declared, sizes the fleet again under every
	// variant of the band (each replacing the template's cost model, as a
	// Sweep's band does) on the same seeds: the first ModelError.Reps of
	// them when set, all Reps otherwise. A variant under which no fleet
	// within MaxReplicas meets the target is recorded as unmet, not an
	// error. The result says whether the size holds under every model of
	// the band or rests on the model (SizingResult.Band, Sizes,
	// BandVerdict). ModelError.Calibrated refuses a template that runs
	// another model than the one the shapes were calibrated to. The zero
	// value declares nothing.
	ModelError ModelError
}

// SizingProbe is one replica count the search ran: its mean attainment
// over the replications, with its interval.
type SizingProbe struct {
	Replicas   int
	Attainment stats.Interval
}

// SizingResult is the answer of a Sizing.
type SizingResult struct {
	// Replicas is the smallest count whose mean attainment meets the
	// target at the sizing load.
	Replicas int
	// Load is the sizing load, Load × (1 + Headroom), requests/s.
	Load   float64
	Target float64
	// Attainment is the mean attainment at Replicas, Below at Replicas −
	// 1 (a count that fails the target; every figure NaN and N 0 when
	// Replicas is 1: no fleet of none).
	Attainment, Below stats.Interval
	// PerSeed is each replication's own answer, the smallest count at
	// which that replication alone meets the target (found by the same
	// search on its own attainment, reusing the counts already run);
	// MaxReplicas + 1 for a replication that meets it at no count within
	// the bound. SeedLo and SeedHi are their minimum and maximum: the seed
	// range, how far the answer moves with the random numbers (with 5
	// replications, the range covers the median replication's answer
	// with probability 1 − 2·0.5⁵ ≈ 0.94).
	PerSeed        []int
	SeedLo, SeedHi int
	// OutputThroughput is the fleet's output tokens per second at
	// Replicas (sim.Summary.OutputThroughput; NaN when a run sketched its
	// latencies and so counted no tokens).
	OutputThroughput stats.Interval
	// CostPerMillion is the cost of a million output tokens at the sizing
	// load: Replicas × Price / (3600 × OutputThroughput) × 10⁶, its
	// interval from the throughput's (the high cost from the low
	// throughput). NaN without a Price.
	CostPerMillion stats.Interval
	// GoodTokenRate is the good requests' output tokens per second of
	// window at Replicas (sim.Summary.GoodTokenRate), and
	// GoodCostPerMillion the cost of a million of them: Replicas × Price
	// / (3600 × GoodTokenRate) × 10⁶, the SLO-qualified figure (NaN
	// without a Price).
	GoodTokenRate      stats.Interval
	GoodCostPerMillion stats.Interval
	// Probes are the counts run, in the order the search ran them.
	Probes []SizingProbe
	// Runs is the number of simulation runs the answer took (the
	// nominal model's; each variant of the band counts its own).
	Runs int
	// Band, when Sizing.ModelError is declared, is the size under each
	// variant of the band, in its order (ModelError's: slower, faster,
	// alternatives, shapes), on the same seeds.
	Band []SizingVariant
	// Sizes is the range of the size over the nominal model and every
	// variant of the band: Lo and Hi the fewest and the most replicas,
	// LoModel and HiModel the models that need them ("nominal" for the
	// template's own; on a tie, the first in the band's order). HiAbove:
	// some variant met the target at no count within MaxReplicas, and Hi
	// is MaxReplicas. The zero Range without a band.
	Sizes Range
	// BandHolds: every variant of the band needs the nominal Replicas
	// (false without a band).
	BandHolds bool
}

// SizingVariant is a sizing's answer under one variant of its model band,
// on the first Reps of the sizing's seeds.
type SizingVariant struct {
	Name string
	Reps int
	// Unmet: no fleet within MaxReplicas met the target under this
	// model. Replicas is then MaxReplicas + 1 (PerSeed's convention),
	// Attainment NaN (no count met it) and Below the attainment at
	// MaxReplicas.
	Unmet bool
	// Replicas, the seed range, the attainment at Replicas and at
	// Replicas − 1 and the cost per million output tokens: as
	// SizingResult's, under this model.
	Replicas          int
	SeedLo, SeedHi    int
	Attainment, Below stats.Interval
	CostPerMillion    stats.Interval
	// Runs is the number of simulation runs this variant took.
	Runs int
}

// BandVerdict says in words whether the size holds under every model of
// the band or rests on the model, naming the variant whose size lies
// farthest from the nominal one (on a tie, the larger; then the first)
// and its size there; "" without a band.
func (r SizingResult) BandVerdict() string {
	if len(r.Band) == 0 {
		return ""
	}
	names := make([]string, len(r.Band))
	for i, v := range r.Band {
		names[i] = v.Name
	}
	band := strings.Join(names, ", ")
	if r.BandHolds {
		return fmt.Sprintf("holds under every model of the band (%s): %d replicas", band, r.Replicas)
	}
	var m *SizingVariant
	dist := func(v *SizingVariant) int { return abs(v.Replicas - r.Replicas) }
	for i := range r.Band {
		v := &r.Band[i]
		if m == nil || dist(v) > dist(m) || dist(v) == dist(m) && v.Replicas > m.Replicas {
			m = v
		}
	}
	need := fmt.Sprintf("it needs %d", m.Replicas)
	if m.Unmet {
		need = fmt.Sprintf("no fleet of at most %d replicas (MaxReplicas) meets the target", m.Replicas-1)
	}
	return fmt.Sprintf("rests on the model: under %s %s (nominal %d); across the band (%s) the size spans %v",
		m.Name, need, r.Replicas, band, r.Sizes)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// SizingUnmetError says that no fleet within the bound met the target:
// the largest, MaxReplicas, attained Attainment at the sizing load.
type SizingUnmetError struct {
	MaxReplicas int
	Load        float64
	Target      float64
	Attainment  stats.Interval
}

func (e *SizingUnmetError) Error() string {
	return fmt.Sprintf("sim: Sizing: no fleet of at most %d replicas (MaxReplicas) meets attainment %.3g at %.4g requests/s: %d replicas attain %v",
		e.MaxReplicas, e.Target, e.Load, e.MaxReplicas, e.Attainment)
}

func (s Sizing) withDefaults() Sizing {
	if s.Target == 0 {
		s.Target = 0.95
	}
	if s.Reps == 0 {
		s.Reps = 5
	}
	if s.Confidence == 0 {
		s.Confidence = 0.95
	}
	if s.MaxReplicas == 0 {
		s.MaxReplicas = sim.MaxReplicas
	}
	if s.Workers <= 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	return s
}

// Validate joins every problem of the sizing, naming each field.
func (s Sizing) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if len(s.Config.Fleet.Replicas) > 1 {
		bad("Sizing.Config.Fleet.Replicas lists %d replicas: sizing copies one template (list one, or none to use Config.Engine and Config.Model)", len(s.Config.Fleet.Replicas))
	} else {
		errs = append(errs, s.Config.Validate())
	}
	if s.Workload == nil {
		bad("Sizing.Workload is nil")
	}
	if !(s.Load > 0) || math.IsInf(s.Load, 0) {
		bad("Sizing.Load must be a positive finite rate, got %v", s.Load)
	}
	if !(s.Headroom >= 0) || math.IsInf(s.Headroom, 0) {
		bad("Sizing.Headroom must be a finite fraction >= 0, got %v", s.Headroom)
	}
	if !(s.Target >= 0 && s.Target <= 1) {
		bad("Sizing.Target must be in [0, 1] (0 means 0.95), got %v", s.Target)
	}
	if s.Reps < 0 {
		bad("Sizing.Reps must be >= 0 (0 means 5), got %d", s.Reps)
	}
	if !(s.Confidence >= 0 && s.Confidence < 1) {
		bad("Sizing.Confidence must be in [0, 1), got %v", s.Confidence)
	}
	bound := s.MaxReplicas
	if bound == 0 {
		bound = sim.MaxReplicas
	}
	if s.From < 0 || s.From > bound {
		bad("Sizing.From must be in [0, MaxReplicas] (0 means 1), got %d", s.From)
	}
	if s.MaxReplicas < 0 || s.MaxReplicas > sim.MaxReplicas {
		bad("Sizing.MaxReplicas must be in [0, sim.MaxReplicas = %d] (0 means the bound), got %d", sim.MaxReplicas, s.MaxReplicas)
	}
	if !(s.Price >= 0) || math.IsInf(s.Price, 0) {
		bad("Sizing.Price must be a finite price >= 0 (0 means none), got %v", s.Price)
	}
	if s.Config.Window.Horizon == 0 {
		bad("Sizing.Config.Window.Horizon must be set: sizing compares steady windows")
	}
	if err := s.ModelError.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Sizing: %w", err))
	}
	for _, err := range []error{s.ModelError.checkCalibrated(s.Config), s.ModelError.checkDeclared(s.Config)} {
		if err != nil {
			errs = append(errs, fmt.Errorf("Sizing.Config: %w", err))
		}
	}
	return errors.Join(errs...)
}

// fleet is the configuration of a fleet of n copies of the template.
func (s Sizing) fleet(n int) sim.Config {
	c := s.Config
	tmpl := sim.ReplicaConfig{Engine: c.Engine, Model: c.Model, Speculation: c.Speculation}
	if len(c.Fleet.Replicas) == 1 {
		tmpl = c.Fleet.Replicas[0]
	}
	c.Engine, c.Model, c.Speculation = engine.Config{}, nil, sim.Speculation{}
	c.Fleet.Replicas = sim.Copies(n, tmpl)
	return c
}

// sizingRuns is one count's replications and what they say.
type sizingRuns struct {
	runs       []sim.Summary
	attainment stats.Interval
}

// Run searches for the smallest fleet, then, when a ModelError is
// declared, for the smallest under each variant of the band. When none
// within MaxReplicas meets the target under the nominal model it returns
// a *SizingUnmetError (and runs no band).
func (s Sizing) Run() (*SizingResult, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	res, unmet, err := s.search()
	if err != nil {
		return nil, err
	}
	if unmet != nil {
		return nil, unmet
	}
	if s.ModelError.Declared() {
		if err := s.runBand(res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runBand sizes the fleet under every variant of the model band, on the
// first ModelError.Reps seeds, and records each size, their range and
// whether the nominal size holds. A variant's search runs one count after
// another, so the variants run side by side, Workers runs in flight in
// all: each variant's answer is its own runs', whatever the workers.
func (s Sizing) runBand(res *SizingResult) error {
	vars := s.ModelError.variants()
	out := make([]SizingVariant, len(vars))
	errs := make([]error, len(vars))
	side := min(s.Workers, len(vars))
	next := make(chan int)
	var wg sync.WaitGroup
	for range side {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = s.variant(vars[i], max(1, s.Workers/side))
			}
		})
	}
	for i := range vars {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	res.Band, res.BandHolds = out, true
	res.Sizes = Range{Lo: float64(res.Replicas), Hi: float64(res.Replicas), LoModel: "nominal", HiModel: "nominal"}
	for _, v := range out {
		if v.Replicas != res.Replicas {
			res.BandHolds = false
		}
		if n := float64(min(v.Replicas, s.MaxReplicas)); n < res.Sizes.Lo {
			res.Sizes.Lo, res.Sizes.LoModel = n, v.Name
		} else if n > res.Sizes.Hi || v.Unmet && !res.Sizes.HiAbove {
			res.Sizes.Hi, res.Sizes.HiModel, res.Sizes.HiAbove = n, v.Name, v.Unmet
		}
	}
	return nil
}

// variant is the sizing under one variant of the band, its runs on
// workers.
func (s Sizing) variant(v Variant, workers int) (SizingVariant, error) {
	vs := s
	vs.ModelError = ModelError{}
	vs.Config = withModel(s.Config, v.replace, v.scale)
	vs.Workers = workers
	if r := s.ModelError.Reps; r > 0 && r < vs.Reps {
		vs.Reps = r
	}
	vr, unmet, err := vs.search()
	if err != nil {
		return SizingVariant{}, fmt.Errorf("sim: model band, %s: %w", v.Name, err)
	}
	return SizingVariant{Name: v.Name, Reps: vs.Reps, Unmet: unmet != nil, Replicas: vr.Replicas,
		SeedLo: vr.SeedLo, SeedHi: vr.SeedHi, Attainment: vr.Attainment, Below: vr.Below,
		CostPerMillion: vr.CostPerMillion, Runs: vr.Runs}, nil
}

// search is Run's search on a validated sizing with its defaults. When no
// fleet within MaxReplicas meets the target it returns the error beside a
// result whose Replicas is MaxReplicas + 1, Attainment NaN, Below the
// attainment at MaxReplicas, its seed range and its probes.
func (s Sizing) search() (*SizingResult, *SizingUnmetError, error) {
	load := s.Load * (1 + s.Headroom)
	res := &SizingResult{Load: load, Target: s.Target}
	nan := stats.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Confidence: s.Confidence}
	ran := map[int]*sizingRuns{}
	var failed error
	at := func(n int) *sizingRuns {
		if r, ok := ran[n]; ok || failed != nil {
			return r
		}
		sw := Sweep{Config: s.fleet(n), Workload: s.Workload, Reps: s.Reps, BaseSeed: s.BaseSeed, Confidence: s.Confidence, Workers: s.Workers}.withDefaults()
		sums, err := sw.runHere([]float64{load})
		if err != nil {
			failed = fmt.Errorf("sim: Sizing at %d replicas: %w", n, err)
			return nil
		}
		f := figures{runs: sums[0], conf: s.Confidence}
		r := &sizingRuns{runs: sums[0], attainment: f.share(func(x *sim.Summary) float64 { return x.Attainment })}
		ran[n] = r
		res.Runs += len(r.runs)
		res.Probes = append(res.Probes, SizingProbe{Replicas: n, Attainment: r.attainment})
		return r
	}
	meets := func(x float64) bool { return !math.IsNaN(x) && x >= s.Target }
	n, ok := smallestMeeting(s.From, s.MaxReplicas, func(n int) bool {
		r := at(n)
		return r != nil && meets(r.attainment.Center)
	})
	if failed != nil {
		return nil, nil, failed
	}
	var unmet *SizingUnmetError
	if ok {
		res.Replicas = n
		res.Attainment = ran[n].attainment
		res.Below = nan
		if n > 1 {
			res.Below = at(n - 1).attainment
		}
	} else {
		unmet = &SizingUnmetError{MaxReplicas: s.MaxReplicas, Load: load, Target: s.Target, Attainment: ran[s.MaxReplicas].attainment}
		res.Replicas = s.MaxReplicas + 1
		res.Attainment, res.Below = nan, unmet.Attainment
	}
	res.PerSeed = make([]int, s.Reps)
	for r := range s.Reps {
		m, ok := smallestMeeting(s.From, s.MaxReplicas, func(n int) bool {
			x := at(n)
			return x != nil && meets(x.runs[r].Attainment)
		})
		if !ok {
			m = s.MaxReplicas + 1
		}
		res.PerSeed[r] = m
	}
	if failed != nil {
		return nil, nil, failed
	}
	res.SeedLo, res.SeedHi = minMax(res.PerSeed)
	if unmet != nil {
		res.OutputThroughput, res.CostPerMillion = nan, nan
		res.GoodTokenRate, res.GoodCostPerMillion = nan, nan
		return res, unmet, nil
	}
	f := figures{runs: ran[n].runs, conf: s.Confidence}
	res.OutputThroughput = f.rate(func(x *sim.Summary) float64 { return x.OutputThroughput })
	res.CostPerMillion = costPerMillion(n, s.Price, res.OutputThroughput)
	res.GoodTokenRate = f.rate(func(x *sim.Summary) float64 { return x.GoodTokenRate })
	res.GoodCostPerMillion = costPerMillion(n, s.Price, res.GoodTokenRate)
	return res, nil, nil
}

// smallestMeeting is the smallest n in [1, max] for which meets holds:
// from 0 or 1, by doubling from 1 to the first count that meets it, then
// bisecting below; from another count, by steps of 1, 2, 4, … away from
// it (down while counts meet, up while they fail), then bisecting the
// last step. False when max does not meet it.
func smallestMeeting(from, max int, meets func(n int) bool) (int, bool) {
	if from > 1 {
		return gallop(from, max, meets)
	}
	lo, hi := 0, 0 // lo fails (0 trivially), hi meets
	for k := 1; ; k *= 2 {
		k = min(k, max)
		if meets(k) {
			hi = k
			break
		}
		if k == max {
			return 0, false
		}
		lo = k
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if meets(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// gallop is smallestMeeting from a guess: it brackets the answer by
// steps that double away from from, then bisects the bracket.
func gallop(from, max int, meets func(n int) bool) (int, bool) {
	from = min(from, max)
	lo, hi := 0, 0 // lo fails (0 trivially), hi meets
	if meets(from) {
		hi = from
		for step := 1; ; step *= 2 {
			k := hi - step
			if k < 1 {
				break // lo = 0
			}
			if !meets(k) {
				lo = k
				break
			}
			hi = k
		}
	} else {
		lo = from
		for step := 1; ; step *= 2 {
			if lo == max {
				return 0, false
			}
			k := min(lo+step, max)
			if meets(k) {
				hi = k
				break
			}
			lo = k
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if meets(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

func minMax(x []int) (lo, hi int) {
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// costPerMillion prices a million output tokens: n replicas at price an
// hour over the tokens they emit in an hour.
func costPerMillion(n int, price float64, tput stats.Interval) stats.Interval {
	nan := math.NaN()
	if price == 0 {
		return stats.Interval{Center: nan, Lo: nan, Hi: nan, Confidence: tput.Confidence, N: tput.N}
	}
	c := func(t float64) float64 {
		if t <= 0 {
			return math.Inf(1)
		}
		return float64(n) * price / (3600 * t) * 1e6
	}
	out := stats.Interval{Center: c(tput.Center), Lo: nan, Hi: nan, Confidence: tput.Confidence, N: tput.N}
	if !math.IsNaN(tput.Lo) {
		out.Lo, out.Hi = c(tput.Hi), c(tput.Lo)
	}
	return out
}
