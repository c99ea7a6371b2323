package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/servesim/servesim/internal/joinerr"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// Metric is a per-run figure an experiment compares.
type Metric struct {
	Name string
	// LowerIsBetter is true for latencies: B improves on A when it is
	// lower.
	LowerIsBetter bool
	Of            func(s *sim.Summary) float64
	knee          bool // MetricKnee: a figure of the whole curve, not of a run
}

// Metrics the chapter's claims are made on.
var (
	MetricGoodput    = Metric{Name: "goodput (req/s)", Of: func(s *sim.Summary) float64 { return s.Goodput }}
	MetricAttainment = Metric{Name: "SLO attainment", Of: func(s *sim.Summary) float64 { return s.Attainment }}
	MetricThroughput = Metric{Name: "request throughput (req/s)", Of: func(s *sim.Summary) float64 { return s.RequestThroughput }}
	MetricTTFTMean   = Metric{Name: "mean TTFT (ms)", LowerIsBetter: true, Of: func(s *sim.Summary) float64 { return s.TTFT.Mean }}
	MetricTTFTP50    = Metric{Name: "TTFT p50 (ms)", LowerIsBetter: true, Of: func(s *sim.Summary) float64 { return s.TTFT.Median }}
	MetricTTFTP99    = Metric{Name: "TTFT p99 (ms)", LowerIsBetter: true, Of: func(s *sim.Summary) float64 { return s.TTFT.P99 }}
	MetricITLP99     = Metric{Name: "ITL p99 (ms)", LowerIsBetter: true, Of: func(s *sim.Summary) float64 { return s.ITL.P99 }}
	// MetricKnee compares knees: in each block, A's and B's knee is where
	// their attainment at the experiment's loads (one curve per block, on
	// the block's seed) crosses Experiment.Target, interpolated; a block
	// whose curve does not cross inside the loads has none. So a claim can
	// read "B's knee is at least 5 % above A's". The per-load results
	// compare attainment.
	MetricKnee = Metric{Name: "knee (req/s)", Of: func(s *sim.Summary) float64 { return s.Attainment }, knee: true}
)

// latencyReadout is what a knee experiment reads at each of its loads
// beside the knee (LoadResult.Latency): goodput below the knee is bounded
// by the offered load, latency is not.
var latencyReadout = [...]Metric{MetricTTFTP50, MetricTTFTP99, MetricITLP99}

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
	A, B       sim.Config
	Workload   Workload
	Loads      []float64 // offered loads, requests/s
	// Blocks is the number of seeded blocks; default 10. Block b uses
	// Seed(BaseSeed, b).
	Blocks     int
	BaseSeed   uint64
	Confidence float64 // default 0.95
	Workers    int     // 0 means GOMAXPROCS
	// Target is the attainment that places a load at or below the
	// baseline's knee; default 0.95, as a Sweep's.
	Target float64
	// AllLoads makes the headline cover every load instead of the loads
	// at or below the baseline's knee.
	AllLoads bool
	// ModelError, when declared, reruns the experiment under every
	// variant of the band (each replacing the cost model of A's and B's
	// every replica, as a Sweep's band does) on the same loads and the
	// same seeds, and the result says whether its verdict holds under
	// every model of the band or rests on the model
	// (ExperimentResult.Band, BandVerdict). ModelError.Reps, when set
	// (>= 2), runs each variant on the first Reps blocks only. The zero
	// value declares nothing. Package sim/shard refuses a banded
	// experiment.
	ModelError ModelError
	// BandLoads are the loads a variant of the band runs at instead of
	// Loads, by the variant's name (VariantVerdict.Name: "step times
	// ×1.1", "atlas-linear"); a variant it does not name runs at Loads. A
	// knee hypothesis needs them whenever a model moves A's knee by more
	// than the span of Loads: at the nominal loads both knees then lie
	// beyond the same end, and the variant has no verdict. An empty list
	// says no loads could be placed under that model (A's knee under it
	// lies below every load its sweep ran): the variant does not run, and
	// its verdict is NoMeasured with no Loads. BandLoads derives them
	// from a banded sweep of A, as each model's own knee times the
	// factors the nominal loads were drawn with. Nil means every variant
	// runs at Loads.
	BandLoads map[string][]float64 `json:",omitempty"`
}

// Validate joins every problem, naming each field.
func (x Experiment) Validate() error {
	errs := []error{x.A.Validate(), x.B.Validate()}
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+format, a...)) }
	if x.Hypothesis.Metric.Of == nil {
		bad("Experiment.Hypothesis.Metric is not set")
	}
	if x.Hypothesis.Metric.knee && len(x.Loads) < 2 {
		bad("Experiment.Loads must hold 2 loads or more to compare knees, got %d", len(x.Loads))
	}
	if math.IsNaN(x.Hypothesis.Threshold) || math.IsInf(x.Hypothesis.Threshold, 0) {
		bad("Experiment.Hypothesis.Threshold must be finite, got %v", x.Hypothesis.Threshold)
	}
	if x.Workload == nil {
		bad("Experiment.Workload is nil")
	}
	for _, c := range []struct {
		name string
		cfg  sim.Config
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
	if !(x.Target >= 0 && x.Target <= 1) {
		bad("Experiment.Target must be in [0, 1], got %v", x.Target)
	}
	errs = append(errs, x.ModelError.Validate())
	if x.ModelError.Reps == 1 {
		bad("Experiment.ModelError.Reps must be 0 (every block) or >= 2: a variant's verdict needs an interval, got 1")
	}
	errs = append(errs, x.validateBandLoads())
	for _, c := range []struct {
		name string
		cfg  sim.Config
	}{{"A", x.A}, {"B", x.B}} {
		if err := x.ModelError.checkCalibrated(c.cfg); err != nil {
			errs = append(errs, fmt.Errorf("Experiment.%s: %w", c.name, err))
		}
		if err := x.ModelError.checkDeclared(c.cfg); err != nil {
			errs = append(errs, fmt.Errorf("Experiment.%s: %w", c.name, err))
		}
	}
	return errors.Join(errs...)
}

// validateBandLoads refuses loads for a variant the band does not have
// (a misspelt name would otherwise run at Loads unnoticed) and loads a
// variant could not run at.
func (x Experiment) validateBandLoads() error {
	if len(x.BandLoads) == 0 {
		return nil
	}
	var errs []error
	known := map[string]bool{}
	var names []string
	for _, v := range x.ModelError.variants() {
		known[v.Name] = true
		names = append(names, fmt.Sprintf("%q", v.Name))
	}
	keys := slices.Sorted(maps.Keys(x.BandLoads))
	for _, name := range keys {
		loads := x.BandLoads[name]
		if !known[name] {
			errs = append(errs, fmt.Errorf("sim: Experiment.BandLoads[%q]: the model band (%v) has no such variant; its variants are %s",
				name, x.ModelError, strings.Join(names, ", ")))
			continue
		}
		if x.Hypothesis.Metric.knee && len(loads) == 1 {
			errs = append(errs, fmt.Errorf("sim: Experiment.BandLoads[%q] must hold 2 loads or more to compare knees (or none: no verdict under it), got 1", name))
		}
		for i, l := range loads {
			if !(l > 0) || math.IsInf(l, 0) {
				errs = append(errs, fmt.Errorf("sim: Experiment.BandLoads[%q][%d] must be a positive finite rate, got %v", name, i, l))
			}
		}
	}
	return errors.Join(errs...)
}

// BandLoads are the loads each variant of c's band runs an experiment at:
// factors times the variant's own knee, as the nominal loads are factors
// times c's knee (Experiment.BandLoads). A variant whose curve's knee lies
// below every load it ran gets no loads (an empty list: no verdict under
// it, rather than one read where A collapses); one whose curve placed no
// knee otherwise is left out (it runs at the nominal loads). Nil when c
// has no band.
func BandLoads(c *Curve, factors []float64) map[string][]float64 {
	if c == nil || c.Band == nil {
		return nil
	}
	out := map[string][]float64{}
	for _, v := range c.Band.Variants {
		if v.Curve == nil {
			continue
		}
		k := v.Curve.Knee
		if !k.Found {
			if k.Censored == BelowLowest {
				out[v.Name] = []float64{}
			}
			continue
		}
		loads := make([]float64, len(factors))
		for i, f := range factors {
			loads[i] = f * k.Load.Center
		}
		out[v.Name] = loads
	}
	return out
}

// LoadResult is the comparison at one offered load.
type LoadResult struct {
	Load float64
	A, B stats.Interval // the metric under each configuration, across blocks
	// Improvement is B's relative improvement over A, per block
	// ((B−A)/A, or (A−B)/A when lower is better), across the blocks where
	// both A and B measured a request (Improvement.N of them).
	Improvement stats.Interval
	Verdict     Verdict
	// Latency, for MetricKnee, is the second readout at this load: TTFT
	// p50, TTFT p99 and ITL p99 under A and under B, and B−A paired on
	// each block's seed. Nil for the other metrics.
	Latency []MetricDiff
}

// MetricDiff is one metric under A and under B at one load, across
// blocks, and the paired difference B−A: per block (A and B on the same
// seed), across the blocks where both measured a request (Diff.N of
// them). A and B identical give exactly 0 with a zero-width interval.
type MetricDiff struct {
	Metric        string
	A, B          stats.Interval
	Diff          stats.Interval
	LowerIsBetter bool
}

// ExperimentResult is an experiment's outcome: the headline verdict on the
// improvement averaged over the loads of its regime, the same over the
// loads past it, and the boundary — the verdict at each load.
type ExperimentResult struct {
	Hypothesis Hypothesis
	Blocks     int
	// Regime says which loads the headline covers. By default they are
	// those at or below the baseline's knee: the lowest loads, up to the
	// last at which A's mean attainment meets the target. Past the knee A
	// collapses, and any relative improvement there is large whatever B
	// is worth, so a headline over every load would be carried by it.
	Regime string
	// BaselineKnee is the highest load of the regime; NaN when A misses
	// the target at every load (the headline then covers every load).
	BaselineKnee float64
	Improvement  stats.Interval
	Verdict      Verdict
	// PastImprovement and PastVerdict are the same comparison over the
	// loads past the baseline's knee (N = 0 and NoMeasured when none).
	PastImprovement stats.Interval
	PastVerdict     Verdict
	Loads           []LoadResult
	// KneeBounds and KneeUnpaired, for MetricKnee: the blocks compared
	// through a knee beyond the loads (its bound, which understates the
	// difference without changing its sign) and those left out (both
	// knees beyond the same end of the loads).
	KneeBounds, KneeUnpaired int
	// KneeA, KneeB and KneeDiff, for MetricKnee: A's and B's knee (its
	// interval clamped at 0) and the paired difference B−A, req/s, across
	// the blocks compared (Improvement's, which is KneeDiff relative to A's
	// knee per block).
	KneeA, KneeB, KneeDiff stats.Interval
	// Warnings are the result's caveats in words: TypedWarnings[i].String()
	// is Warnings[i].
	Warnings      []string
	TypedWarnings []Warning
	// Band, when Experiment.ModelError is declared, is the experiment
	// under each variant of the band, in its order (ModelError.variants:
	// slower, faster, alternatives, shapes), on the same loads and seeds.
	Band []VariantVerdict `json:",omitempty"`
	// BandHolds: every variant's verdict equals the nominal Verdict
	// (false without a band). BandFlip is the first variant whose verdict
	// differs from it, nil when none does.
	BandHolds bool            `json:",omitempty"`
	BandFlip  *VariantVerdict `json:",omitempty"`
	// ModelError is the band declared (Experiment.ModelError), the zero
	// value when none was: what a card says the verdict was tested under
	// (ModelError.String).
	ModelError ModelError `json:"-"`
}

// VariantVerdict is an experiment's outcome under one variant of its
// model band.
type VariantVerdict struct {
	Name   string
	Blocks int // the blocks it ran: ModelError.Reps, or the experiment's
	// Loads are the loads it ran at: Experiment.BandLoads[Name], or the
	// experiment's Loads.
	Loads []float64
	// Improvement and Verdict are the headline's under this model.
	Improvement stats.Interval
	Verdict     Verdict
	// KneeDiff, for MetricKnee, is the paired difference of the knees
	// B−A, req/s, under this model.
	KneeDiff stats.Interval
	// KneeUnpaired, for MetricKnee: blocks left out under this model
	// (both knees beyond the same end of the loads).
	KneeUnpaired int
}

// BandVerdict says in words whether the verdict holds under every model
// of the band or rests on the model, naming each variant under which it
// flips, in the band's order, with its improvement and its verdict there
// (or why it has none); "" without a band.
func (r ExperimentResult) BandVerdict() string {
	if len(r.Band) == 0 {
		return ""
	}
	if r.BandHolds {
		names := make([]string, len(r.Band))
		for i, v := range r.Band {
			names[i] = v.Name
		}
		return fmt.Sprintf("holds under every model of the band (%s)", strings.Join(names, ", "))
	}
	var flips []string
	for _, v := range r.Band {
		if v.Verdict != r.Verdict {
			flips = append(flips, "under "+v.words())
		}
	}
	return "rests on the model: " + strings.Join(flips, "; ")
}

// words is the variant's outcome after "under": its name, then its
// improvement and verdict, or why it has none.
func (v VariantVerdict) words() string {
	switch {
	case v.Verdict == NoMeasured && v.Loads != nil && len(v.Loads) == 0:
		return fmt.Sprintf("%s no A/B loads were placed (A's knee under it lies below every load of its sweep), so no verdict", v.Name)
	case v.Verdict == NoMeasured && v.KneeUnpaired > 0:
		return fmt.Sprintf("%s no block's knees were compared (in %d of %d blocks both lie beyond the same end of the loads), so no verdict",
			v.Name, v.KneeUnpaired, v.Blocks)
	}
	return fmt.Sprintf("%s %s %s", v.Name, percent(v.Improvement), v.Verdict)
}

// percent prints a relative improvement in per cent with its interval.
func percent(e stats.Interval) string {
	switch {
	case e.N == 0 || math.IsNaN(e.Center):
		return "none compared,"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// warn adds a caveat to the result, in words and as a value.
func (r *ExperimentResult) warn(w Warning) {
	r.Warnings = append(r.Warnings, w.String())
	r.TypedWarnings = append(r.TypedWarnings, w)
}

// Boundary says in words at which loads B wins and where it loses.
func (r ExperimentResult) Boundary() string {
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
func (x Experiment) Run() (*ExperimentResult, error) {
	if err := x.Validate(); err != nil {
		return nil, err
	}
	x = x.withDefaults()
	blocks, err := x.runAll()
	if err != nil {
		return nil, err
	}
	res := x.result(blocks)
	if x.ModelError.Declared() {
		res.ModelError = x.ModelError
		if err := x.runBand(res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// runBand reruns the experiment under every variant of its model band, on
// the same loads and seeds (the first ModelError.Reps blocks when set),
// and records each variant's verdict and whether the nominal one holds.
func (x Experiment) runBand(res *ExperimentResult) error {
	res.BandHolds = true
	for _, v := range x.ModelError.variants() {
		vx := x
		vx.ModelError = ModelError{}
		vx.A = withModel(x.A, v.replace, v.scale)
		vx.B = withModel(x.B, v.replace, v.scale)
		if r := x.ModelError.Reps; r > 0 && r < vx.Blocks {
			vx.Blocks = r
		}
		if l, ok := x.BandLoads[v.Name]; ok {
			vx.Loads = l
		}
		vx.BandLoads = nil
		if len(vx.Loads) == 0 { // no loads under this model: no verdict
			vv := VariantVerdict{Name: v.Name, Blocks: vx.Blocks, Loads: []float64{}, Verdict: NoMeasured,
				Improvement: stats.MeanInterval(nil, x.Confidence), KneeDiff: stats.MeanInterval(nil, x.Confidence)}
			res.Band = append(res.Band, vv)
			if res.BandHolds && vv.Verdict != res.Verdict {
				res.BandHolds, res.BandFlip = false, &vv
			}
			continue
		}
		blocks, err := vx.runAll()
		if err != nil {
			return fmt.Errorf("sim: model band, %s: %w", v.Name, err)
		}
		vr := vx.result(blocks)
		vv := VariantVerdict{Name: v.Name, Blocks: vx.Blocks, Loads: slices.Clone(vx.Loads), Improvement: vr.Improvement, Verdict: vr.Verdict,
			KneeDiff: vr.KneeDiff, KneeUnpaired: vr.KneeUnpaired}
		res.Band = append(res.Band, vv)
		if vv.Verdict != res.Verdict && res.BandHolds {
			res.BandHolds = false
			res.BandFlip = &vv
		}
	}
	return nil
}

func (x Experiment) withDefaults() Experiment {
	if x.Blocks == 0 {
		x.Blocks = 10
	}
	if x.Confidence == 0 {
		x.Confidence = 0.95
	}
	if x.Workers <= 0 {
		x.Workers = runtime.GOMAXPROCS(0)
	}
	if x.Target == 0 {
		x.Target = 0.95
	}
	return x
}

// result computes the verdicts from the blocks, indexed [load][block]
// (from the runs, or from the shard files: ResultOf).
func (x Experiment) result(blocks [][]Block) *ExperimentResult {
	n := len(x.Loads)
	a, b, attain, attainB := make([][]float64, n), make([][]float64, n), make([][]float64, n), make([][]float64, n)
	for i, row := range blocks {
		a[i], b[i], attain[i], attainB[i] = make([]float64, len(row)), make([]float64, len(row)), make([]float64, len(row)), make([]float64, len(row))
		for k, bl := range row {
			a[i][k], b[i][k], attain[i][k], attainB[i][k] = bl.A, bl.B, bl.AttainA, bl.AttainB
		}
	}
	res := &ExperimentResult{Hypothesis: x.Hypothesis, Blocks: x.Blocks}
	if x.Hypothesis.Metric.knee {
		x.kneeResult(res, a, b, attain, attainB)
		for i := range res.Loads {
			res.Loads[i].Latency = x.latency(blocks[i])
		}
		return res
	}
	imps := make([][]float64, len(x.Loads))
	for i, load := range x.Loads {
		lr := LoadResult{Load: load, A: stats.MeanInterval(known(a[i]), x.Confidence), B: stats.MeanInterval(known(b[i]), x.Confidence)}
		imps[i] = x.improvements(a[i], b[i])
		lr.Improvement = stats.MeanInterval(known(imps[i]), x.Confidence)
		lr.Verdict = x.verdict(lr.Improvement)
		res.Loads = append(res.Loads, lr)
	}
	in := x.regime(attain, res)
	res.Improvement = stats.MeanInterval(x.overall(imps, in, true), x.Confidence)
	res.Verdict = x.verdict(res.Improvement)
	res.PastImprovement = stats.MeanInterval(x.overall(imps, in, false), x.Confidence)
	res.PastVerdict = x.verdict(res.PastImprovement)
	x.warnBounded(res)
	return res
}

// warnBounded warns when a hypothesis on goodput or throughput is tested
// only at loads where the metric is bounded by the offered load: at each,
// the load lies within A's interval widened by the threshold (A's upper
// bound times 1 + the threshold reaches it), so no B could show the
// improvement there.
func (x Experiment) warnBounded(res *ExperimentResult) {
	name := x.Hypothesis.Metric.Name
	if name != MetricGoodput.Name && name != MetricThroughput.Name || len(res.Loads) == 0 {
		return
	}
	for _, l := range res.Loads {
		hi := l.A.Hi
		if math.IsNaN(hi) {
			hi = l.A.Center
		}
		if !(l.Load <= hi*(1+max(x.Hypothesis.Threshold, 0))) {
			return
		}
	}
	res.warn(Warning{Kind: WarnBoundedByLoad, Metrics: []string{name}, Loads: slices.Clone(x.Loads), Threshold: x.Hypothesis.Threshold})
}

// latency is the latency readout at one load: each metric under A and B,
// and B−A paired on each block's seed.
func (x Experiment) latency(row []Block) []MetricDiff {
	out := make([]MetricDiff, len(latencyReadout))
	for m, metric := range latencyReadout {
		var a, b, d []float64
		for _, bl := range row {
			va, vb := bl.LatencyA[m], bl.LatencyB[m]
			if !math.IsNaN(va) {
				a = append(a, va)
			}
			if !math.IsNaN(vb) {
				b = append(b, vb)
			}
			if !math.IsNaN(va) && !math.IsNaN(vb) {
				d = append(d, vb-va)
			}
		}
		out[m] = MetricDiff{Metric: metric.Name, LowerIsBetter: metric.LowerIsBetter,
			A: stats.MeanInterval(a, x.Confidence), B: stats.MeanInterval(b, x.Confidence), Diff: stats.MeanInterval(d, x.Confidence)}
	}
	return out
}

// kneeResult compares each block's knees: its curve is A's (B's)
// attainment at the loads on that block's seed.
func (x Experiment) kneeResult(res *ExperimentResult, a, b, attainA, attainB [][]float64) {
	for i, load := range x.Loads {
		lr := LoadResult{Load: load, A: stats.MeanInterval(known(a[i]), x.Confidence), B: stats.MeanInterval(known(b[i]), x.Confidence)}
		lr.Improvement = stats.MeanInterval(known(x.improvements(a[i], b[i])), x.Confidence)
		lr.Verdict = x.verdict(lr.Improvement)
		res.Loads = append(res.Loads, lr)
	}
	var imp, kas, kbs, diffs []float64
	for k := range x.Blocks {
		ka, sa := x.blockKnee(attainA, k)
		kb, sb := x.blockKnee(attainB, k)
		d, bound, ok := pairKnees(ka, sa, kb, sb)
		if !ok || ka <= 0 {
			res.KneeUnpaired++
			continue
		}
		imp = append(imp, d/ka)
		kas, kbs, diffs = append(kas, ka), append(kbs, kb), append(diffs, d)
		if bound {
			res.KneeBounds++
		}
	}
	res.Regime = fmt.Sprintf("the knee of each block's curve over the %d loads", len(x.Loads))
	if res.KneeBounds > 0 || res.KneeUnpaired > 0 {
		res.Regime += fmt.Sprintf(" (%d blocks paired through a knee beyond the loads, understating the difference; %d left out, both knees beyond the same end)", res.KneeBounds, res.KneeUnpaired)
	}
	res.BaselineKnee = math.NaN()
	res.Improvement = stats.MeanInterval(imp, x.Confidence)
	res.Verdict = x.verdict(res.Improvement)
	res.PastImprovement = stats.MeanInterval(nil, x.Confidence)
	res.PastVerdict = x.verdict(res.PastImprovement)
	res.KneeA = stats.Clamp(stats.MeanInterval(kas, x.Confidence), 0, math.Inf(1))
	res.KneeB = stats.Clamp(stats.MeanInterval(kbs, x.Confidence), 0, math.Inf(1))
	res.KneeDiff = stats.MeanInterval(diffs, x.Confidence)
}

// blockKnee is where block k's attainment over the loads crosses the
// target: a curve of one replication.
func (x Experiment) blockKnee(attain [][]float64, k int) (float64, int) {
	c := Curve{Target: x.Target}
	for i, load := range x.Loads {
		c.add(Point{Load: load, Runs: []sim.Summary{{Attainment: attain[i][k]}}})
	}
	return c.repKneeBound(0)
}

// regime marks the loads the headline covers and says which they are:
// those at or below the baseline's knee (A's mean attainment meets the
// target at each and at every lower load), or every load.
func (x Experiment) regime(attain [][]float64, res *ExperimentResult) []bool {
	in := make([]bool, len(x.Loads))
	res.BaselineKnee = math.NaN()
	order := make([]int, len(x.Loads))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(x.Loads[i], x.Loads[j]) })
	for _, i := range order {
		if m := stats.MeanInterval(known(attain[i]), x.Confidence).Center; !(m >= x.Target) {
			break
		}
		in[i], res.BaselineKnee = true, x.Loads[i]
	}
	switch {
	case x.AllLoads:
		res.Regime = "every load (Experiment.AllLoads)"
	case math.IsNaN(res.BaselineKnee):
		res.Regime = fmt.Sprintf("every load: the baseline misses the %.2f attainment target at all of them", x.Target)
	default:
		res.Regime = fmt.Sprintf("the loads at or below the baseline's knee (A meets the %.2f attainment target up to %.3g req/s)", x.Target, res.BaselineKnee)
		return in
	}
	for i := range in {
		in[i] = true
	}
	return in
}

// overall is each block's improvement averaged over the loads marked in
// (or, with inside false, over the others) that measured something; a
// block that measured nothing at any of them has none.
func (x Experiment) overall(imps [][]float64, in []bool, inside bool) []float64 {
	sum, loads := make([]float64, x.Blocks), make([]int, x.Blocks)
	for i, imp := range imps {
		if in[i] != inside {
			continue
		}
		for k, v := range imp {
			if !math.IsNaN(v) {
				sum[k] += v
				loads[k]++
			}
		}
	}
	out := make([]float64, 0, x.Blocks)
	for k := range sum {
		if loads[k] > 0 {
			out = append(out, sum[k]/float64(loads[k]))
		}
	}
	return out
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
func (x Experiment) verdict(e stats.Interval) Verdict {
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
// returns the blocks indexed [load][block].
func (x Experiment) runAll() ([][]Block, error) {
	type job struct{ load, block int }
	blocks := make([][]Block, len(x.Loads))
	errs := make([]error, len(x.Loads)*x.Blocks)
	for i := range x.Loads {
		blocks[i] = make([]Block, x.Blocks)
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range min(x.Workers, len(errs)) {
		wg.Go(func() {
			for j := range jobs {
				i, k := j.load, j.block
				blocks[i][k], errs[i*x.Blocks+k] = x.runBlock(x.Loads[i], k)
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
	return blocks, joinerr.Distinct(errs)
}

// runBlock runs A then B on the same seed, and returns their metric,
// their attainment and, for MetricKnee, their latency readout.
func (x Experiment) runBlock(load float64, block int) (Block, error) {
	seed := Seed(x.BaseSeed, block)
	var out Block
	one := func(cfg sim.Config, metric, attain *float64, lat *[len(latencyReadout)]float64) error {
		src, err := x.Workload.Source(load, seed)
		if err != nil {
			return err
		}
		cfg.Seed = seed
		s, err := sim.Run(cfg, src, nil)
		if err != nil {
			return fmt.Errorf("sim: experiment at %v req/s, block %d: %w", load, block, err)
		}
		if s.NoMeasured() { // no measured request reached an outcome: no evidence
			*metric, *attain = math.NaN(), math.NaN()
			if x.Hypothesis.Metric.knee {
				for m := range lat {
					lat[m] = math.NaN()
				}
			}
			return nil
		}
		*metric, *attain = x.Hypothesis.Metric.Of(&s), s.Attainment
		if x.Hypothesis.Metric.knee {
			for m, lm := range latencyReadout {
				lat[m] = lm.Of(&s)
			}
		}
		return nil
	}
	if err := one(x.A, &out.A, &out.AttainA, &out.LatencyA); err != nil {
		return Block{}, err
	}
	if err := one(x.B, &out.B, &out.AttainB, &out.LatencyB); err != nil {
		return Block{}, err
	}
	return out, nil
}
