package sim

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
)

// Metric is a per-run figure an experiment compares.
type Metric struct {
	Name string
	// LowerIsBetter is true for latencies: B improves on A when it is
	// lower.
	LowerIsBetter bool
	Of            func(s *Summary) float64
}

// Metrics the chapter's claims are made on.
var (
	MetricGoodput    = Metric{Name: "goodput (req/s)", Of: func(s *Summary) float64 { return s.Goodput }}
	MetricAttainment = Metric{Name: "SLO attainment", Of: func(s *Summary) float64 { return s.Attainment }}
	MetricThroughput = Metric{Name: "request throughput (req/s)", Of: func(s *Summary) float64 { return s.RequestThroughput }}
	MetricTTFTP99    = Metric{Name: "TTFT p99 (ms)", LowerIsBetter: true, Of: func(s *Summary) float64 { return s.TTFT.P99 }}
	MetricITLP99     = Metric{Name: "ITL p99 (ms)", LowerIsBetter: true, Of: func(s *Summary) float64 { return s.ITL.P99 }}
)

// Hypothesis is declared before any run: the claim in words, the metric,
// and the relative improvement B must show over A (0.05 is "at least 5 %").
type Hypothesis struct {
	Claim     string
	Metric    Metric
	Threshold float64
}

// Verdict is the experiment's answer.
type Verdict uint8

const (
	// Inconclusive: the interval of the improvement straddles the
	// threshold; more blocks (or a larger effect) are needed.
	Inconclusive Verdict = iota
	// Improved: the whole interval lies above the threshold.
	Improved
	// NotImproved: the whole interval lies at or below the threshold.
	NotImproved
	// NoMeasured: no block measured a request under both A and B (the
	// window is too short for the load): there is no evidence either way.
	NoMeasured
)

func (v Verdict) String() string {
	return [...]string{"inconclusive", "improved", "not improved", "no measured requests"}[v]
}

// Experiment compares configuration B against A. Both run Blocks seeded
// blocks at every load; within a block A and B share the seed, so they see
// the same requests and the same random numbers (common random numbers),
// and the comparison is on paired per-block differences.
type Experiment struct {
	Hypothesis Hypothesis
	A, B       Config
	Workload   Workload
	Loads      []float64 // offered loads, requests/s
	// Blocks is the number of seeded blocks; default 10. Block b uses
	// Seed(BaseSeed, b).
	Blocks     int
	BaseSeed   uint64
	Confidence float64 // default 0.95
	Workers    int     // 0 means GOMAXPROCS
}

// Validate joins every problem, naming each field.
func (x Experiment) Validate() error {
	errs := []error{x.A.Validate(), x.B.Validate()}
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if x.Hypothesis.Metric.Of == nil {
		bad("Experiment.Hypothesis.Metric is not set")
	}
	if math.IsNaN(x.Hypothesis.Threshold) || math.IsInf(x.Hypothesis.Threshold, 0) {
		bad("Experiment.Hypothesis.Threshold must be finite, got %v", x.Hypothesis.Threshold)
	}
	if x.Workload == nil {
		bad("Experiment.Workload is nil")
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"A", x.A}, {"B", x.B}} {
		if c.cfg.Window.Horizon == 0 {
			bad("Experiment.%s.Window.Horizon must be set: an experiment compares steady windows, and an open window on an unbounded workload never ends", c.name)
		}
	}
	if len(x.Loads) == 0 {
		bad("Experiment.Loads is empty")
	}
	for i, l := range x.Loads {
		if !(l > 0) || math.IsInf(l, 0) {
			bad("Experiment.Loads[%d] must be a positive finite rate, got %v", i, l)
		}
	}
	if x.Blocks < 0 || x.Blocks == 1 {
		bad("Experiment.Blocks must be 0 (default 10) or >= 2, got %d", x.Blocks)
	}
	if !(x.Confidence >= 0 && x.Confidence < 1) {
		bad("Experiment.Confidence must be in [0, 1), got %v", x.Confidence)
	}
	return errors.Join(errs...)
}

// LoadResult is the comparison at one offered load.
type LoadResult struct {
	Load float64
	A, B Estimate // the metric under each configuration, across blocks
	// Improvement is B's relative improvement over A, per block
	// ((B−A)/A, or (A−B)/A when lower is better), across the blocks where
	// both A and B measured a request (Improvement.N of them).
	Improvement Estimate
	Verdict     Verdict
}

// Result is an experiment's outcome: the overall verdict on the
// improvement averaged over the loads, and the boundary — the verdict at
// each load.
type Result struct {
	Hypothesis  Hypothesis
	Blocks      int
	Improvement Estimate
	Verdict     Verdict
	Loads       []LoadResult
}

// Boundary says in words at which loads B wins and where it loses.
func (r Result) Boundary() string {
	var wins, loses, short, unclear, empty []string
	for _, l := range r.Loads {
		s := fmt.Sprintf("%.3g", l.Load)
		switch {
		case l.Verdict == NoMeasured:
			empty = append(empty, s)
		case l.Verdict == Improved:
			wins = append(wins, s)
		case l.Improvement.Hi < 0:
			loses = append(loses, s)
		case l.Verdict == NotImproved:
			short = append(short, s)
		default:
			unclear = append(unclear, s)
		}
	}
	part := func(what string, loads []string) string {
		if len(loads) == 0 {
			return ""
		}
		return fmt.Sprintf("%s at %s req/s; ", what, strings.Join(loads, ", "))
	}
	out := part("B beats the threshold", wins) + part("B is worse than A", loses) +
		part("B falls short of the threshold", short) + part("inconclusive", unclear) +
		part("no measured requests", empty)
	return strings.TrimSuffix(out, "; ")
}

// Run runs every block of A and B at every load and computes the verdicts.
func (x Experiment) Run() (*Result, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	if x.Blocks == 0 {
		x.Blocks = 10
	}
	if x.Confidence == 0 {
		x.Confidence = 0.95
	}
	if x.Workers <= 0 {
		x.Workers = runtime.GOMAXPROCS(0)
	}
	a, b, err := x.runAll()
	if err != nil {
		return nil, err
	}
	res := &Result{Hypothesis: x.Hypothesis, Blocks: x.Blocks}
	// A block's overall improvement averages its loads that measured
	// something; a block that measured nothing at any load has none.
	sum, loads := make([]float64, x.Blocks), make([]int, x.Blocks)
	for i, load := range x.Loads {
		lr := LoadResult{Load: load, A: meanCI(known(a[i]), x.Confidence), B: meanCI(known(b[i]), x.Confidence)}
		imp := x.improvements(a[i], b[i])
		lr.Improvement = meanCI(known(imp), x.Confidence)
		lr.Verdict = x.verdict(lr.Improvement)
		res.Loads = append(res.Loads, lr)
		for k, v := range imp {
			if !math.IsNaN(v) {
				sum[k] += v
				loads[k]++
			}
		}
	}
	overall := make([]float64, 0, x.Blocks)
	for k := range sum {
		if loads[k] > 0 {
			overall = append(overall, sum[k]/float64(loads[k]))
		}
	}
	res.Improvement = meanCI(overall, x.Confidence)
	res.Verdict = x.verdict(res.Improvement)
	return res, nil
}

// known drops the NaNs (runs that measured no request) from x.
func known(x []float64) []float64 {
	out := make([]float64, 0, len(x))
	for _, v := range x {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// improvements are the per-block relative improvements of B over A. A block
// where A's metric is 0 (nothing good at all) counts +1 or -1 (a full gain
// or loss) when B differs from it, 0 when B is 0 too. A block where A or B
// measured no request has no improvement (NaN).
func (x Experiment) improvements(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for k := range a {
		if math.IsNaN(a[k]) || math.IsNaN(b[k]) {
			out[k] = math.NaN()
			continue
		}
		d := b[k] - a[k]
		if x.Hypothesis.Metric.LowerIsBetter {
			d = -d
		}
		switch {
		case a[k] != 0:
			out[k] = d / math.Abs(a[k])
		case d != 0:
			out[k] = math.Copysign(1, d)
		}
	}
	return out
}

// verdict: improved iff the interval lies above the threshold, not
// improved iff it lies at or below it. Identical blocks give a zero-width
// interval; without an interval (one block) the centre stands for it; with
// no block at all there is no verdict.
func (x Experiment) verdict(e Estimate) Verdict {
	if e.N == 0 {
		return NoMeasured
	}
	lo, hi := e.Lo, e.Hi
	if math.IsNaN(lo) {
		lo, hi = e.Center, e.Center
	}
	switch {
	case lo > x.Hypothesis.Threshold:
		return Improved
	case hi <= x.Hypothesis.Threshold:
		return NotImproved
	}
	return Inconclusive
}

// runAll runs A and B for every (load, block), Workers at a time, and
// returns the metric indexed [load][block].
func (x Experiment) runAll() (a, b [][]float64, err error) {
	type job struct{ load, block int }
	a, b = make([][]float64, len(x.Loads)), make([][]float64, len(x.Loads))
	errs := make([]error, len(x.Loads)*x.Blocks)
	for i := range x.Loads {
		a[i], b[i] = make([]float64, x.Blocks), make([]float64, x.Blocks)
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range min(x.Workers, len(errs)) {
		wg.Go(func() {
			for j := range jobs {
				a[j.load][j.block], b[j.load][j.block], errs[j.load*x.Blocks+j.block] = x.runBlock(x.Loads[j.load], j.block)
			}
		})
	}
	for i := range x.Loads {
		for k := range x.Blocks {
			jobs <- job{i, k}
		}
	}
	close(jobs)
	wg.Wait()
	return a, b, joinDistinct(errs)
}

// runBlock runs A then B on the same seed.
func (x Experiment) runBlock(load float64, block int) (ma, mb float64, err error) {
	seed := Seed(x.BaseSeed, block)
	one := func(cfg Config) (float64, error) {
		src, err := x.Workload(load, seed)
		if err != nil {
			return 0, err
		}
		cfg.Seed = seed
		s, err := Run(cfg, src, nil)
		if err != nil {
			return 0, fmt.Errorf("sim: experiment at %v req/s, block %d: %w", load, block, err)
		}
		if s.NoMeasured() {
			return math.NaN(), nil // no measured request reached an outcome: no evidence
		}
		return x.Hypothesis.Metric.Of(&s), nil
	}
	if ma, err = one(x.A); err != nil {
		return 0, 0, err
	}
	mb, err = one(x.B)
	return ma, mb, err
}
