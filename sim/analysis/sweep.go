package analysis

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/servesim/servesim/internal/joinerr"
	"github.com/servesim/servesim/sim"
)

// Grid chooses the offered loads of a sweep. Set Loads for an explicit grid;
// otherwise the sweep starts at Start and multiplies the load by Factor
// until collapse (attainment below the target and goodput below 90 % of the
// peak seen) or MaxPoints, then bisects Bisect times between the last load
// that met the attainment target and the first that did not.
type Grid struct {
	Loads     []float64 // explicit offered loads (requests/s); sorted by the sweep
	Start     float64   // first load of an automatic grid (> 0)
	Factor    float64   // geometric step; default 1.5
	MaxPoints int       // cap on geometric points; default 12
	Bisect    int       // bisection steps around the knee; default 3
	// PastKnee, once the knee is known (after the bisection, or from the
	// explicit Loads), also runs PastKnee's multiples of the knee's load
	// (1.5× and 2×), so that the curve's Retained are measured. false,
	// the zero value, runs no more loads than before.
	PastKnee bool
}

// Sweep runs a configuration across offered loads, Reps seeded replications
// per load, on Workers goroutines (results identical to a serial run).
type Sweep struct {
	Config   sim.Config // every run's configuration; Seed is set per replication
	Workload Workload
	Grid     Grid
	// Reps is the number of replications per load; default 5. Replication r
	// uses seed Seed(BaseSeed, r) for both workload and run.
	Reps     int
	BaseSeed uint64
	// Target is the attainment the knee must meet; default 0.95.
	Target float64
	// Confidence of every interval; default 0.95.
	Confidence float64
	// Workers bounds parallel runs; 0 means GOMAXPROCS.
	Workers int
	// Observe, when set, gives each run its own Observer of every request
	// record (to keep the raw events a card cites). Runs go in parallel:
	// observers must not share unsynchronised state. The runs of a model
	// band are not observed.
	Observe func(load float64, rep int) sim.Observer
	// ModelError declares how far the cost model may be off: the sweep
	// then also runs under each variant, on the same seeds, and the curve
	// carries its Band. The zero value declares nothing.
	ModelError ModelError
	// Capacity is the serving capacity the caller estimated, requests/s
	// (costmodel's Estimate.ServingCapacity): when > 0 every point reports
	// its Utilisation, and a point at 90 % of it or more says so.
	Capacity float64
	// Axis is what the loads measure: arrival rates (the zero value) or
	// client populations (Concurrency, with a Workload such as Clients).
	// On the Concurrency axis every load is a whole number of clients: an
	// automatic grid rounds its loads, and bisection stops at adjacent
	// populations.
	Axis Axis
	// RunLoads, when set, stands in for the sweep's runs: Run (and so
	// the model band's runs and a DialSweep's) hands it each set of runs
	// it would make, as the sweep that makes them (defaults filled in,
	// the Config of the band's variant or the dial's value, RunLoads nil)
	// and their loads, and takes runs[i][r] as the summary of replication
	// r at loads[i], building the curve from them by the code that builds
	// it from its own runs. Package sim/shard plans and merges sharded
	// sweeps through it. nil, the zero value, runs them here (RunOne).
	RunLoads func(s Sweep, loads []float64) (runs [][]sim.Summary, err error)
}

func (s Sweep) withDefaults() Sweep {
	if s.Grid.Factor == 0 {
		s.Grid.Factor = 1.5
	}
	if s.Grid.MaxPoints == 0 {
		s.Grid.MaxPoints = 12
	}
	if s.Grid.Bisect == 0 {
		s.Grid.Bisect = 3
	}
	if s.Reps == 0 {
		s.Reps = 5
	}
	if s.Target == 0 {
		s.Target = 0.95
	}
	if s.Confidence == 0 {
		s.Confidence = 0.95
	}
	if s.Workers <= 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	return s
}

// Validate joins every problem of the sweep, naming each field.
func (s Sweep) Validate() error {
	errs := []error{s.Config.Validate()}
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if s.Workload == nil {
		bad("Sweep.Workload is nil")
	}
	for i, l := range s.Grid.Loads {
		if !s.Axis.validLoad(l) {
			if s.Axis == Concurrency {
				bad("Sweep.Grid.Loads[%d] must be a whole number of clients >= 1 on the Concurrency axis, got %v", i, l)
			} else {
				bad("Sweep.Grid.Loads[%d] must be a positive finite rate, got %v", i, l)
			}
		}
	}
	if len(s.Grid.Loads) == 0 && !(s.Grid.Start > 0 && !math.IsInf(s.Grid.Start, 0)) {
		bad("Sweep.Grid needs Loads or a positive Start, got Start %v", s.Grid.Start)
	}
	if s.Axis != Rate && s.Axis != Concurrency {
		bad("Sweep.Axis must be Rate or Concurrency, got %d", s.Axis)
	}
	if s.Axis == Concurrency && s.Capacity != 0 {
		bad("Sweep.Capacity is a rate: it has no meaning on the Concurrency axis (got %v)", s.Capacity)
	}
	if s.Grid.Factor != 0 && !(s.Grid.Factor > 1) {
		bad("Sweep.Grid.Factor must be > 1, got %v", s.Grid.Factor)
	}
	if s.Grid.MaxPoints < 0 || s.Grid.Bisect < 0 || s.Reps < 0 {
		bad("Sweep.Grid.MaxPoints, Sweep.Grid.Bisect and Sweep.Reps must be >= 0")
	}
	if !(s.Target >= 0 && s.Target <= 1) {
		bad("Sweep.Target must be in [0, 1], got %v", s.Target)
	}
	if !(s.Confidence >= 0 && s.Confidence < 1) {
		bad("Sweep.Confidence must be in [0, 1), got %v", s.Confidence)
	}
	if s.Config.Window.Horizon == 0 {
		bad("Sweep.Config.Window.Horizon must be set: a sweep compares steady windows")
	}
	if !(s.Capacity >= 0) || math.IsInf(s.Capacity, 0) {
		bad("Sweep.Capacity must be a finite rate >= 0 (0 means unknown), got %v", s.Capacity)
	}
	errs = append(errs, s.ModelError.Validate(), s.ModelError.checkCalibrated(s.Config), s.ModelError.checkDeclared(s.Config))
	return errors.Join(errs...)
}

// Seed derives replication r's seed from a base seed, by name, so that
// adding replications changes none of the earlier ones.
func Seed(base uint64, r int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "sim/replication/%d/%d", base, r)
	return h.Sum64()
}

// Run sweeps the offered loads and returns the curve.
func (s Sweep) Run() (*Curve, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	c := s.newCurve()
	if len(s.Grid.Loads) > 0 {
		loads := slices.Clone(s.Grid.Loads)
		slices.Sort(loads)
		if err := s.runLoads(c, slices.Compact(loads)); err != nil {
			return nil, err
		}
	} else if err := s.runAuto(c); err != nil {
		return nil, err
	}
	c.analyse()
	if loads := c.pastKneeLoads(); s.Grid.PastKnee && len(loads) > 0 {
		if err := s.runLoads(c, loads); err != nil {
			return nil, err
		}
		c.analyse()
	}
	if s.ModelError.Declared() {
		if err := s.runBand(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// runLoads runs every replication of every load (or has RunLoads run
// them) and adds the points to c in load order.
func (s Sweep) runLoads(c *Curve, loads []float64) error {
	var sums [][]sim.Summary
	var err error
	if s.RunLoads != nil {
		sums, err = s.runElsewhere(loads)
	} else {
		sums, err = s.runHere(loads)
	}
	if err != nil {
		return err
	}
	// The points' bootstrap intervals cost as much as the runs: build them
	// in parallel too (each point's streams are its own, so the order does
	// not matter), then add them in load order.
	points := make([]Point, len(loads))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(s.Workers, len(loads)) {
		wg.Go(func() {
			for i := range next {
				points[i] = s.point(loads[i], sums[i])
			}
		})
	}
	for i := len(loads) - 1; i >= 0; i-- { // the largest samples first, as in runHere
		next <- i
	}
	close(next)
	wg.Wait()
	for _, p := range points {
		c.add(p)
	}
	return nil
}

// runHere runs every replication of every load, Workers at a time, and
// returns their summaries, [load][replication].
func (s Sweep) runHere(loads []float64) ([][]sim.Summary, error) {
	type job struct{ load, rep int }
	jobs := make(chan job)
	sums := make([][]sim.Summary, len(loads))
	errs := make([][]error, len(loads))
	for i := range loads {
		sums[i] = make([]sim.Summary, s.Reps)
		errs[i] = make([]error, s.Reps)
	}
	var wg sync.WaitGroup
	for range min(s.Workers, len(loads)*s.Reps) {
		wg.Go(func() {
			for j := range jobs {
				sums[j.load][j.rep], errs[j.load][j.rep] = s.runOne(loads[j.load], j.rep)
			}
		})
	}
	// The highest loads first: their runs are the longest (more requests
	// in the window), and handed out last they left one worker running
	// while the others idled. Each run's seed is its replication's and its
	// summary goes to its own place, so the order changes nothing else.
	for i := len(loads) - 1; i >= 0; i-- {
		for r := range s.Reps {
			jobs <- job{i, r}
		}
	}
	close(jobs)
	wg.Wait()
	for i, l := range loads {
		if err := joinerr.Distinct(errs[i]); err != nil {
			return nil, fmt.Errorf("sim: sweep at %v requests/s: %w", l, err)
		}
	}
	return sums, nil
}

func (s Sweep) runOne(load float64, rep int) (sim.Summary, error) {
	seed := Seed(s.BaseSeed, rep)
	src, err := s.Workload.Source(load, seed)
	if err != nil {
		return sim.Summary{}, err
	}
	cfg := s.Config
	cfg.Seed = seed
	var obs sim.Observer
	if s.Observe != nil {
		obs = s.Observe(load, rep)
	}
	sum, err := sim.Run(cfg, src, obs)
	if err != nil {
		return sim.Summary{}, err
	}
	return sum, nil
}

// runAuto grows the load geometrically until collapse, then bisects around
// the knee.
func (s Sweep) runAuto(c *Curve) error {
	load := s.Grid.Start
	for range s.Grid.MaxPoints {
		at := s.Axis.gridLoad(load)
		if n := len(c.Points); n == 0 || c.Points[n-1].Load < at {
			if err := s.runLoads(c, []float64{at}); err != nil {
				return err
			}
			c.analyse()
			if c.collapsed() {
				break
			}
		}
		load *= s.Grid.Factor
	}
	for range s.Grid.Bisect {
		lo, hi, ok := c.bracket()
		if !ok {
			break
		}
		mid := (lo + hi) / 2
		if s.Axis == Concurrency {
			if mid = math.Floor(mid); mid <= lo {
				break // adjacent populations: nothing lies between
			}
		}
		if err := s.runLoads(c, []float64{mid}); err != nil {
			return err
		}
		c.analyse()
	}
	return nil
}

// CurveOf builds the sweep's curve from its runs' summaries, as Run does
// from the runs themselves: runs[i] are the replications at loads[i], in
// replication order (Summarize makes them from records). The model band
// is not rebuilt (its runs are not observed): the curve has no Band, and
// none of the band's warnings.
func (s Sweep) CurveOf(loads []float64, runs [][]sim.Summary) (*Curve, error) {
	if len(loads) != len(runs) {
		return nil, fmt.Errorf("sim: CurveOf needs the runs of every load: %d loads, %d lists of runs", len(loads), len(runs))
	}
	s = s.withDefaults()
	c := s.newCurve()
	for i, l := range loads {
		if len(runs[i]) == 0 {
			return nil, fmt.Errorf("sim: CurveOf: load %v has no runs", l)
		}
		c.add(s.point(l, runs[i]))
	}
	c.analyse()
	return c, nil
}

// newCurve is the sweep's empty curve.
func (s Sweep) newCurve() *Curve {
	return &Curve{Target: s.Target, Confidence: s.Confidence, SLO: s.Config.SLO.WithDefaults(), Axis: s.Axis}
}

// point is the curve's point at load from its replications.
func (s Sweep) point(load float64, runs []sim.Summary) Point {
	p := newPoint(load, runs, s.Confidence, s.BaseSeed)
	p.utilisation(s.Capacity)
	return p
}
