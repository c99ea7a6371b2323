package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// Saturation labels a point of the curve by what happened to the replica's
// backlog across the measurement window. The excess is the growth of the
// requests held (window end minus start) plus the requests shed (rejected or
// timed out), summed over the replications; the noise allowance is three
// standard deviations of the difference of two Poisson counts with the mean
// number held, 3·√(2·Σ(L+1)), since a steady replica's occupancy at two
// instants differs by about that much.
type Saturation uint8

const (
	// Stable: the excess is within max(2 % of the offered requests, the
	// noise allowance).
	Stable Saturation = iota
	// Backlogged: the excess is within max(10 % of the offered requests,
	// twice the noise allowance): the window is not a steady state.
	Backlogged
	// Overloaded: more than that; the replica does not sustain the load.
	Overloaded
	// Refused: the replica refused every request offered to every
	// replication at arrival (each prompt at or above MaxModelLen, say:
	// engine.ErrPromptTooLong). Nothing was served, so the load says nothing
	// of overload: the replica cannot serve such requests at any load.
	Refused
)

func (s Saturation) String() string {
	if s > Refused {
		return fmt.Sprintf("Saturation(%d)", uint8(s))
	}
	return [...]string{"stable", "backlogged", "overloaded", "refused"}[s]
}

// Percentiles are the median, p90 and p99 of one latency metric (ms) with
// bootstrap intervals.
type Percentiles struct {
	P50, P90, P99 stats.Interval
}

// Point is one offered load of a sweep, over its replications.
type Point struct {
	Load float64       // nominal offered load, requests/s
	Runs []sim.Summary // one per replication, in replication order

	Offered    stats.Interval // measured arrivals per second
	Throughput stats.Interval // ok requests per second
	Goodput    stats.Interval // good requests per second
	Attainment stats.Interval // good / offered
	// Misses are the exclusive miss rates, per second of window.
	MissNotOK, MissTTFT, MissITL, MissOther stats.Interval
	// MissGateway is the rate of requests the gateway ended (throttled,
	// shed, refused for a full queue, expired: sim.Misses.Gateway), per
	// second of window, attributed before MissNotOK; 0 without a gateway.
	MissGateway stats.Interval

	TTFT, ITL, TPOT, E2E Percentiles
	// ITLRetokenized is the per-token ITL series (Summary.ITLRetokenized);
	// ITL is per chunk, as vLLM measures it.
	ITLRetokenized Percentiles
	// MeanAccepted and AcceptanceRate are the speculative decoding's
	// (Summary.Speculation), NaN without any.
	MeanAccepted, AcceptanceRate stats.Interval
	// TTFTOffered is TTFT over every measured request (Summary.TTFTOffered):
	// what the successful-only TTFT leaves out.
	TTFTOffered Percentiles
	// WorstITL is each request's worst inter-token gap (Summary.WorstITL):
	// what an SLO on every ITL gates, where ITL is over every gap.
	WorstITL Percentiles

	Saturation Saturation
	// Classes is each request class's share of the point, in
	// Summary.Classes' order; nil without classes.
	Classes []ClassPoint
	// Utilisation is the offered load over the serving capacity the sweep
	// was told (Sweep.Capacity); 0 when it was not.
	Utilisation float64
	// Warnings are the point's caveats in words: TypedWarnings[i].String()
	// for each i, on a point a sweep computed.
	Warnings []string
	// TypedWarnings are the same caveats as values, in the same order, to
	// branch on by Kind rather than by matching words.
	TypedWarnings []Warning
}

// Warning is one caveat on a point of the curve, as x/perf's benchmath
// carries warnings on its results: Kind says which, the fields its Kind
// reads hold its figures (the others are zero), and String says it in
// the words of Point.Warnings.
type Warning struct {
	Kind WarningKind
	// Metrics names the latency metrics it is about: each one a
	// replication summarised by a sketch (WarnSketched), or the one whose
	// p99 rests on few samples (WarnFewTailSamples).
	Metrics []string
	// N counts what it is about: the samples pooled (WarnFewTailSamples),
	// the measured requests never sent (WarnClientBacklog), or the
	// replications that stopped overloaded (WarnOverloadedRuns) or
	// measured nothing (WarnEmptyRuns).
	N int
	// Reps is the point's replications (WarnOverloadedRuns, WarnEmptyRuns).
	Reps int
	// RelErr is the largest relative error of a replication's sketch, a
	// fraction (WarnSketched).
	RelErr float64
	// OfferedP99 and OKP99 are the mean TTFT p99, ms, over every measured
	// request and over the successful ones (WarnFailuresHideTail).
	OfferedP99, OKP99 float64
	// Backlog is the client queue's mean growth over the window, requests
	// (WarnClientBacklog).
	Backlog float64
	// Utilisation, Capacity and Saturation are the point's (WarnNearCapacity):
	// offered load over the serving capacity, the capacity in req/s, and
	// the point's label.
	Utilisation, Capacity float64
	Saturation            Saturation
	// Knee is the curve's knee (WarnKneeCensored, WarnWideKneeBracket).
	Knee Knee
	// Load is the load it is about, in Unit: a point's
	// (WarnUnsteadyMeetsTarget, with Saturation) or a class's knee
	// (WarnClassBinds, WarnClassBindsBelow).
	Load float64
	// Unit is the sweep axis's unit (the curve-level kinds).
	Unit string
	// Class names the class that binds first, Target the attainment
	// target (WarnClassBinds, WarnClassBindsBelow).
	Class  string
	Target float64
	// Declared and KneeRange are the model band's declared error and the
	// knee's range across it (WarnModelFragile); LargestStep and ITLBound
	// are the largest step the configuration can form and the ITL bound
	// when that step is what makes the knee fragile (zero otherwise).
	Declared              ModelError
	KneeRange             Range
	LargestStep, ITLBound time.Duration
	// Mover is the band's variant that moves the knee most and its knee
	// there (WarnModelFragile, when the band declares alternatives or
	// shapes; with ±scale alone the range's low end is it).
	Mover Move
	// Loads are the loads an experiment tested and Threshold its
	// hypothesis's threshold; Metrics holds the hypothesis's metric
	// (WarnBoundedByLoad).
	Loads     []float64
	Threshold float64
}

// WarningKind is what a Warning is about. The zero value is no kind.
type WarningKind uint8

const (
	_ WarningKind = iota
	// WarnFewTailSamples: a latency's p99 pooled from fewer than 1,000
	// samples, fewer than 10 beyond it.
	WarnFewTailSamples
	// WarnSketched: some replication kept a latency in a sketch, so its
	// percentiles are each replication's own, within RelErr, with the
	// interval across replications.
	WarnSketched
	// WarnFailuresHideTail: the TTFT p99 over every measured request is
	// over 1.1 times the p99 over the successful ones (or the successful
	// ones have none): failures hide the tail.
	WarnFailuresHideTail
	// WarnClientBacklog: requests waited in the client queue
	// (Config.MaxConcurrency), which TTFT does not see.
	WarnClientBacklog
	// WarnOverloadedRuns: replications passed Config.MaxBacklog and stopped
	// early.
	WarnOverloadedRuns
	// WarnOneReplication: one replication, so no interval.
	WarnOneReplication
	// WarnNothingMeasured: no replication measured a request; the point
	// has no attainment and no part in the knee.
	WarnNothingMeasured
	// WarnEmptyRuns: some replications measured no request; attainment is
	// the others'.
	WarnEmptyRuns
	// WarnNearCapacity: the load is at 90 % of the serving capacity the
	// sweep was told (Sweep.Capacity) or more.
	WarnNearCapacity
	// WarnKneeCensored: the curve's knee is censored (Knee.Reason).
	WarnKneeCensored
	// WarnWideKneeBracket: the knee is interpolated between loads more
	// than a factor 2 apart.
	WarnWideKneeBracket
	// WarnUnsteadyMeetsTarget: a load meets the target but is not Stable.
	WarnUnsteadyMeetsTarget
	// WarnClassBinds: a class's own knee is the lowest of the classes'.
	WarnClassBinds
	// WarnClassBindsBelow: a class misses the target already at the
	// lowest load.
	WarnClassBindsBelow
	// WarnModelFragile: the knee moves across the model band by more than
	// ModelError.Fragile of itself (Band.Fragile).
	WarnModelFragile
	// WarnBoundedByLoad, on an experiment (ExperimentResult.TypedWarnings):
	// the hypothesis is on goodput or throughput, and at every load tested
	// the offered load lies within A's interval of the metric widened by
	// the threshold: there the metric is bounded by the offered load, so
	// even a B that served every request well could not show the
	// improvement. Declare it on MetricKnee, or test loads past A's knee.
	WarnBoundedByLoad
)

func (k WarningKind) String() string {
	names := [...]string{"", "few tail samples", "sketched", "failures hide the tail", "client backlog", "overloaded runs", "one replication", "nothing measured", "empty runs", "near capacity", "knee censored", "wide knee bracket", "unsteady meets target", "class binds", "class binds below", "model fragile", "bounded by load"}
	if k == 0 || int(k) >= len(names) {
		return fmt.Sprintf("WarningKind(%d)", uint8(k))
	}
	return names[k]
}

// String says the warning in words, as Point.Warnings holds it.
func (w Warning) String() string {
	switch w.Kind {
	case WarnFewTailSamples:
		return fmt.Sprintf("%s p99 from %d requests: fewer than 10 beyond it", strings.Join(w.Metrics, ", "), w.N)
	case WarnSketched:
		return fmt.Sprintf("%s percentiles from a sketch (a replication measured more than Config.ExactSamples requests): each within %g %% of the exact value, the interval across replications rather than bootstrapped", strings.Join(w.Metrics, ", "), 100*w.RelErr)
	case WarnFailuresHideTail:
		return fmt.Sprintf("TTFT p99 over every offered request, %s ms, against %s ms over the successful ones: failures (timeouts, rejections, requests still waiting) hide the tail", fmtMS(w.OfferedP99), fmtMS(w.OKP99))
	case WarnClientBacklog:
		return fmt.Sprintf("the client queue (Config.MaxConcurrency) grew by %.0f requests over the window on average, and %d measured requests were never sent: TTFT counts from the send, as vLLM's does, so attainment and goodput here do not see that wait (Summary.ClientWait does)", w.Backlog, w.N)
	case WarnOverloadedRuns:
		return fmt.Sprintf("overloaded: %d of %d replications passed Config.MaxBacklog and stopped early", w.N, w.Reps)
	case WarnOneReplication:
		return "one replication: no intervals"
	case WarnNothingMeasured:
		return "no measured requests: no attainment, and no part in the knee"
	case WarnEmptyRuns:
		return fmt.Sprintf("no measured requests in %d of %d replications: attainment from the other %d", w.N, w.Reps, w.Reps-w.N)
	case WarnNearCapacity:
		return fmt.Sprintf("at %.0f %% of the serving capacity (%.3g req/s): queues grow as 1/(1−ρ), and a %v label rests on how long the window ran", 100*w.Utilisation, w.Capacity, w.Saturation)
	case WarnKneeCensored:
		return w.Knee.Reason()
	case WarnWideKneeBracket:
		return fmt.Sprintf("the knee is interpolated between %.4g and %.4g %s, more than a factor 2 apart: add loads between them", w.Knee.LastMet, w.Knee.FirstMiss, w.Unit)
	case WarnUnsteadyMeetsTarget:
		return fmt.Sprintf("load %.4g meets the target but is %v: its window is no steady state", w.Load, w.Saturation)
	case WarnClassBinds:
		return fmt.Sprintf("class %q binds first: its own attainment meets the %.2f target up to %.4g %s", w.Class, w.Target, w.Load, w.Unit)
	case WarnClassBindsBelow:
		return fmt.Sprintf("class %q binds first: its own attainment misses the %.2f target already at %.4g %s, the lowest load", w.Class, w.Target, w.Load, w.Unit)
	case WarnModelFragile:
		moves := fmt.Sprintf("the knee moves across the model band (%v) over %v %s", w.Declared, w.KneeRange, w.Unit)
		if w.Mover.Model != "" {
			moves += fmt.Sprintf(", most under %s (knee %v %s)", w.Mover.Model, w.Mover, w.Unit)
		}
		if w.ITLBound > 0 {
			return fmt.Sprintf("%s: the largest step this configuration can form, %v, is %.0f %% of the %v ITL bound, so a few percent of cost error fails every request that meets such a step; a smaller token budget or batch shrinks that step, a chunk cap makes it rare (several prompts must then prefill at once to form it)",
				moves, w.LargestStep.Round(time.Microsecond), 100*float64(w.LargestStep)/float64(w.ITLBound), w.ITLBound)
		}
		return moves + ": the result rests on the cost model's step times; measure them (costmodel.Fit, Table) before trusting the knee"
	case WarnBoundedByLoad:
		loads := make([]string, len(w.Loads))
		for i, l := range w.Loads {
			loads[i] = fmt.Sprintf("%.3g", l)
		}
		return fmt.Sprintf("%s is bounded by the offered load, and at every load tested (%s req/s) A's is within %+.3g %% of it: B could not improve on it by the threshold however good it is; declare the hypothesis on the knee (analysis.MetricKnee) or test loads past A's knee",
			strings.Join(w.Metrics, ", "), strings.Join(loads, ", "), 100*w.Threshold)
	}
	return fmt.Sprintf("warning of kind %v", w.Kind)
}

// warn adds a caveat to the point, in words and as a value.
func (p *Point) warn(w Warning) {
	p.Warnings = append(p.Warnings, w.String())
	p.TypedWarnings = append(p.TypedWarnings, w)
}

// utilisation sets the point's utilisation against a serving capacity
// (none when 0), and warns at 90 % of it or more: queues there grow as
// 1/(1−ρ), and a window may end before they show it.
func (p *Point) utilisation(capacity float64) {
	if capacity <= 0 {
		return
	}
	p.Utilisation = p.Load / capacity
	if p.Utilisation >= 0.9 && p.Saturation != Refused {
		p.warn(Warning{Kind: WarnNearCapacity, Utilisation: p.Utilisation, Capacity: capacity, Saturation: p.Saturation})
	}
}

// newPoint is the point at load from its replications: one line a
// figure, then its caveats. The pooled percentiles draw from one
// bootstrap stream in the order they are computed here.
func newPoint(load float64, runs []sim.Summary, conf float64, seed uint64) Point {
	p := Point{Load: load, Runs: runs}
	f := figures{runs: runs, conf: conf, rng: stats.BootstrapStream(seed, fmt.Sprintf("sim/bootstrap/%v", load))}
	p.Offered = f.mean(func(s *sim.Summary) float64 { return perSecond(s.Offered, s) })
	p.Throughput = f.rate(func(s *sim.Summary) float64 { return s.RequestThroughput })
	p.Goodput = f.rate(func(s *sim.Summary) float64 { return s.Goodput })
	p.Attainment = f.share(func(s *sim.Summary) float64 { return s.Attainment })
	p.MissNotOK = f.rate(func(s *sim.Summary) float64 { return perSecond(s.Misses.NotOK, s) })
	p.MissGateway = f.rate(func(s *sim.Summary) float64 { return perSecond(s.Misses.Gateway, s) })
	p.MissTTFT = f.rate(func(s *sim.Summary) float64 { return perSecond(s.Misses.TTFT, s) })
	p.MissITL = f.rate(func(s *sim.Summary) float64 { return perSecond(s.Misses.ITL, s) })
	p.MissOther = f.rate(func(s *sim.Summary) float64 { return perSecond(s.Misses.TPOT+s.Misses.E2E, s) })
	p.TTFT = f.pooled(&p, "TTFT", func(s *sim.Summary) (stats.Dist, []float64) { return s.TTFT, s.Samples.TTFT })
	p.TPOT = f.pooled(&p, "TPOT", func(s *sim.Summary) (stats.Dist, []float64) { return s.TPOT, s.Samples.TPOT })
	p.E2E = f.pooled(&p, "E2E", func(s *sim.Summary) (stats.Dist, []float64) { return s.E2E, s.Samples.E2E })
	p.ITL = f.gaps("ITL", func(s *sim.Summary) (stats.Dist, []sim.ValueCount) { return s.ITL, s.Samples.ITL })
	p.ITLRetokenized = f.gaps("retokenized ITL", func(s *sim.Summary) (stats.Dist, []sim.ValueCount) {
		return s.ITLRetokenized, s.Samples.ITLRetokenized
	})
	p.MeanAccepted = f.mean(func(s *sim.Summary) float64 { return s.Speculation.MeanAccepted })
	p.AcceptanceRate = f.share(func(s *sim.Summary) float64 { return s.Speculation.AcceptanceRate })
	p.TTFTOffered = f.pooled(nil, "TTFT over every offered request", func(s *sim.Summary) (stats.Dist, []float64) { return s.TTFTOffered, s.Samples.TTFTOffered })
	p.WorstITL = f.pooled(nil, "worst ITL", func(s *sim.Summary) (stats.Dist, []float64) { return s.WorstITL, s.Samples.WorstITL })
	p.Saturation = saturation(runs)
	p.classPoints(conf, seed)
	p.caveats(f.sketched)
	return p
}

// caveats adds the point's warnings about what its figures rest on, after
// those its percentiles gave (WarnFewTailSamples), in this order.
func (p *Point) caveats(sketched []string) {
	runs := p.Runs
	if len(sketched) > 0 {
		p.warn(Warning{Kind: WarnSketched, Metrics: sketched, RelErr: maxRelErr(runs)})
	}
	if all, ok := p.TTFTOffered.P99.Center, p.TTFT.P99.Center; all > 1.1*ok || (math.IsNaN(ok) && !math.IsNaN(all)) {
		p.warn(Warning{Kind: WarnFailuresHideTail, OfferedP99: all, OKP99: ok})
	}
	if grew, unsent := clientBacklog(runs); grew > 0 || unsent > 0 {
		p.warn(Warning{Kind: WarnClientBacklog, Backlog: grew, N: unsent})
	}
	if n := overloadedRuns(runs); n > 0 {
		p.warn(Warning{Kind: WarnOverloadedRuns, N: n, Reps: len(runs)})
	}
	if len(runs) < 2 {
		p.warn(Warning{Kind: WarnOneReplication})
	}
	switch empty := p.emptyRuns(); {
	case empty == len(runs):
		p.warn(Warning{Kind: WarnNothingMeasured})
	case empty > 0:
		p.warn(Warning{Kind: WarnEmptyRuns, N: empty, Reps: len(runs)})
	}
}

// figures estimates a point's figures from its replications, drawing the
// pooled percentiles' bootstrap from rng and noting each latency a
// replication kept in a sketch.
type figures struct {
	runs     []sim.Summary
	conf     float64
	rng      *rand.PCG
	sketched []string
}

// perSecond is a count of a run's over its window, per second.
func perSecond(n int, s *sim.Summary) float64 { return float64(n) / s.Window.Seconds() }

// mean is the mean of x over the runs with its interval. A run that
// measured no request has no attainment (NaN): it is left out, and a
// point where no run measured anything has none at all.
func (f *figures) mean(x func(s *sim.Summary) float64) stats.Interval {
	v := make([]float64, 0, len(f.runs))
	for i := range f.runs {
		if y := x(&f.runs[i]); !math.IsNaN(y) {
			v = append(v, y)
		}
	}
	return stats.MeanInterval(v, f.conf)
}

// rate is the mean of a rate, clamped to be non-negative.
func (f *figures) rate(x func(s *sim.Summary) float64) stats.Interval {
	return stats.Clamp(f.mean(x), 0, math.Inf(1))
}

// share is the mean of a fraction, clamped to [0, 1].
func (f *figures) share(x func(s *sim.Summary) float64) stats.Interval {
	return stats.Clamp(f.mean(x), 0, 1)
}

// pooled is a latency's p50/p90/p99 from every run's samples pooled, with
// bootstrap intervals, warning p of a thin tail (none when p is nil); a
// latency some run sketched keeps no samples to pool: its percentiles are
// each run's own, with the interval across replications.
func (f *figures) pooled(p *Point, name string, x func(s *sim.Summary) (stats.Dist, []float64)) Percentiles {
	ds, samples := make([]stats.Dist, len(f.runs)), make([][]float64, len(f.runs))
	for i := range f.runs {
		ds[i], samples[i] = x(&f.runs[i])
	}
	if sketchedIn(ds) {
		f.sketched = append(f.sketched, name)
		return acrossRuns(ds, f.conf)
	}
	if p != nil {
		p.thinTail(name, samples)
	}
	q := stats.QuantileIntervals(samples, []float64{0.5, 0.9, 0.99}, f.conf, f.rng)
	return Percentiles{P50: q[0], P90: q[1], P99: q[2]}
}

// gaps is an inter-token latency's p50/p90/p99 (itlPercentiles), or each
// run's own when some run sketched it.
func (f *figures) gaps(name string, x func(s *sim.Summary) (stats.Dist, []sim.ValueCount)) Percentiles {
	ds, samples := make([]stats.Dist, len(f.runs)), make([][]sim.ValueCount, len(f.runs))
	for i := range f.runs {
		ds[i], samples[i] = x(&f.runs[i])
	}
	if sketchedIn(ds) {
		f.sketched = append(f.sketched, name)
		return acrossRuns(ds, f.conf)
	}
	return itlPercentiles(samples, f.conf)
}

// maxRelErr is the largest relative error of the runs' sketches.
func maxRelErr(runs []sim.Summary) float64 {
	acc := 0.0
	for i := range runs {
		acc = max(acc, runs[i].MaxRelErr())
	}
	return acc
}

// clientBacklog is the mean growth of the client queue over the window
// (requests) and the measured requests never sent, over the replications:
// how much of the load waited outside the fleet.
func clientBacklog(runs []sim.Summary) (grew float64, unsent int) {
	for i := range runs {
		grew += float64(runs[i].ClientHeldAtEnd-runs[i].ClientHeldAtStart) / float64(len(runs))
		unsent += runs[i].Unsent
	}
	if grew < 1 {
		grew = 0
	}
	return grew, unsent
}

// fmtMS prints a latency in ms: whole milliseconds, "∞" beyond every bound,
// "none" without any.
func fmtMS(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case math.IsNaN(x):
		return "none"
	}
	return fmt.Sprintf("%.0f", x)
}

// emptyRuns counts the replications that measured no request.
func (p *Point) emptyRuns() int {
	n := 0
	for i := range p.Runs {
		if p.Runs[i].NoMeasured() {
			n++
		}
	}
	return n
}

// NoMeasured reports whether no replication of the point measured a
// request that reached an outcome (Summary.NoMeasured): its attainment is
// NaN and it takes no part in the knee.
func (p *Point) NoMeasured() bool { return p.emptyRuns() == len(p.Runs) }

// thinTail warns when a latency's pooled samples are too few for its
// tail: fewer than ten beyond the p99 make it a handful of samples
// wearing a percentile costume.
func (p *Point) thinTail(name string, samples [][]float64) {
	n := 0
	for _, s := range samples {
		n += len(s)
	}
	if n > 0 && float64(n)*(1-0.99) < 10 {
		p.warn(Warning{Kind: WarnFewTailSamples, Metrics: []string{name}, N: n})
	}
}

// itlPercentiles: inter-token gaps number in the hundreds of thousands, so
// their percentiles are estimated per replication and the interval is the
// Student-t interval across replications.
func itlPercentiles(samples [][]sim.ValueCount, conf float64) Percentiles {
	q := func(pr float64) stats.Interval {
		x := make([]float64, 0, len(samples))
		for _, vc := range samples {
			vals, cum := expand(vc)
			if len(vals) > 0 {
				x = append(x, stats.LinearInterpolation.QuantileCounts(pr, vals, cum))
			}
		}
		return stats.MeanInterval(x, conf)
	}
	return Percentiles{P50: q(0.5), P90: q(0.9), P99: q(0.99)}
}

// sketchedIn reports whether some run summarised the metric by a sketch,
// keeping no samples to pool.
func sketchedIn(ds []stats.Dist) bool {
	for _, d := range ds {
		if d.RelErr > 0 {
			return true
		}
	}
	return false
}

// acrossRuns estimates p50/p90/p99 when samples were not kept: each run's
// own percentiles (a sketch's within its relative error), and the
// Student-t interval across replications, as for ITL.
func acrossRuns(ds []stats.Dist, conf float64) Percentiles {
	q := func(f func(d stats.Dist) float64) stats.Interval {
		x := make([]float64, 0, len(ds))
		for _, d := range ds {
			if d.N > 0 {
				x = append(x, f(d))
			}
		}
		return stats.MeanInterval(x, conf)
	}
	return Percentiles{P50: q(func(d stats.Dist) float64 { return d.Median }), P90: q(func(d stats.Dist) float64 { return d.P90 }), P99: q(func(d stats.Dist) float64 { return d.P99 })}
}

func expand(vc []sim.ValueCount) (vals []float64, cum []int) {
	total := 0
	for _, v := range vc {
		total += v.Count
		vals = append(vals, v.Value)
		cum = append(cum, total)
	}
	return vals, cum
}

// allRefused reports whether some replication was offered a request and
// every request offered to every replication was rejected at arrival.
func allRefused(runs []sim.Summary) bool {
	offered := 0
	for i := range runs {
		s := &runs[i]
		if s.Count(sim.StatusRejected) != s.Offered {
			return false
		}
		offered += s.Offered
	}
	return offered > 0
}

func overloadedRuns(runs []sim.Summary) int {
	n := 0
	for i := range runs {
		if runs[i].Overloaded {
			n++
		}
	}
	return n
}

// saturation labels runs by backlog growth plus shed requests (refused by
// the replica, timed out, or ended by a gateway: load offered beyond
// what was served); a run that
// stopped on its backlog bound is overloaded by definition, and runs whose
// every offered request was refused at arrival are Refused.
func saturation(runs []sim.Summary) Saturation {
	if overloadedRuns(runs) > 0 {
		return Overloaded
	}
	if allRefused(runs) {
		return Refused
	}
	var excess, offered, held float64
	for i := range runs {
		s := &runs[i]
		excess += float64(s.HeldAtEnd-s.HeldAtStart+s.ClientHeldAtEnd-s.ClientHeldAtStart) + float64(s.Count(sim.StatusRejected)+s.Count(sim.StatusTimedOut)+s.Misses.Gateway)
		offered += float64(s.Offered)
		held += s.MeanInSystem + 1
	}
	noise := 3 * math.Sqrt(2*held)
	switch {
	case excess <= math.Max(0.02*offered, noise):
		return Stable
	case excess <= math.Max(0.10*offered, 2*noise):
		return Backlogged
	default:
		return Overloaded
	}
}

// Curve is a goodput curve: its points in increasing load, and what is
// computed from them.
type Curve struct {
	Points     []Point
	Target     float64 // attainment target of the knee
	Confidence float64
	SLO        sim.SLO
	// Axis is what Point.Load measures: Rate (requests/s) or Concurrency
	// (clients); the knee, peak and collapse are loads on it.
	Axis Axis

	Knee     Knee
	Peak     Peak
	Collapse Collapse
	// Retained is the goodput retained past the knee, at each of
	// PastKnee's multiples of its load: measured at those loads when the
	// sweep ran them (Grid.PastKnee), else marked not run.
	Retained []Retained
	// Band is the curve's model range when the sweep declared its cost
	// model's uncertainty (Sweep.ModelError); nil otherwise.
	Band *Band
	// ClassKnees is each request class's own knee, in Summary.Classes'
	// order; nil without classes. The curve's Knee judges every request
	// by its class's SLO together.
	ClassKnees []ClassKnee
	// Warnings are the curve's own caveats in words: TypedWarnings[i].String()
	// is Warnings[i].
	Warnings []string
	// TypedWarnings are the same caveats as values, in the same order.
	TypedWarnings []Warning
}

// warn adds a caveat to the curve, in words and as a value.
func (c *Curve) warn(w Warning) {
	c.Warnings = append(c.Warnings, w.String())
	c.TypedWarnings = append(c.TypedWarnings, w)
}

// Knee is the highest offered load that meets the attainment target,
// interpolated where the mean attainment crosses it; Lo and Hi are where the
// attainment interval's upper and lower bounds cross it (so the knee lies in
// [Lo, Hi] at the curve's confidence). Lo and Hi are NaN from fewer than
// two replications: one run has no interval.
type Knee struct {
	Load  stats.Interval
	Found bool // the target was met at some load and missed at a higher one
	// Censored says on which side of the sweep the knee lies when it was
	// not found inside it; Reason says it in words.
	Censored  Censoring
	LastMet   float64 // highest grid load whose mean attainment met the target
	FirstMiss float64 // lowest grid load above it that missed
	Target    float64 // the attainment target
}

// Censoring is why a knee was not found inside a sweep.
type Censoring uint8

const (
	NotCensored    Censoring = iota // found (or not yet analysed)
	NoPoints                        // the curve has no points
	NoLoadMeasured                  // no load measured a request that reached an outcome
	BelowLowest                     // the lowest measured load already misses the target (FirstMiss)
	AboveHighest                    // every measured load meets the target (LastMet is the highest)
)

func (c Censoring) String() string {
	names := [...]string{"not censored", "no points", "no load measured", "below the lowest load", "above the highest load"}
	if int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("Censoring(%d)", uint8(c))
}

// Reason says in words where the knee lies when it was not found inside
// the sweep ("" when it was).
func (k Knee) Reason() string {
	switch k.Censored {
	case NoPoints:
		return "no points"
	case NoLoadMeasured:
		return "no load measured any request: no knee"
	case BelowLowest:
		return fmt.Sprintf("the lowest measured load %.4g already misses the %.2f attainment target: the knee is below it", k.FirstMiss, k.Target)
	case AboveHighest:
		return fmt.Sprintf("every measured load meets the %.2f attainment target: the knee is above %.4g", k.Target, k.LastMet)
	}
	return ""
}

// Peak is the highest mean goodput and the load where it occurs.
type Peak struct {
	Load    float64
	Goodput stats.Interval
}

// Collapse is the first load past the peak whose mean goodput fell below 90 %
// of the peak: the start of the overload region. Found is false when the
// sweep did not reach it.
type Collapse struct {
	Load  float64
	Found bool
}

func (c *Curve) add(p Point) {
	i, _ := slices.BinarySearchFunc(c.Points, p.Load, func(q Point, l float64) int {
		switch {
		case q.Load < l:
			return -1
		case q.Load > l:
			return 1
		}
		return 0
	})
	c.Points = slices.Insert(c.Points, i, p)
}

// collapsed reports whether the sweep has passed the knee and the peak
// (of an analysed curve).
func (c *Curve) collapsed() bool {
	last := c.Points[len(c.Points)-1]
	return last.Attainment.Center < c.Target && c.Collapse.Found
}

// bracket returns the grid loads around the knee still worth bisecting.
func (c *Curve) bracket() (lo, hi float64, ok bool) {
	if !c.Knee.Found {
		return 0, 0, false
	}
	return c.Knee.LastMet, c.Knee.FirstMiss, true
}

// analyse computes the knee, the peak and the collapse from the points.
func (c *Curve) analyse() {
	c.Warnings, c.TypedWarnings = c.Warnings[:0], c.TypedWarnings[:0]
	c.Knee = c.knee()
	if c.Knee.Reason() != "" {
		c.warn(Warning{Kind: WarnKneeCensored, Knee: c.Knee})
	}
	c.classKnees()
	c.Peak, c.Collapse = Peak{}, Collapse{}
	for i, p := range c.Points {
		if i == 0 || p.Goodput.Center > c.Peak.Goodput.Center {
			c.Peak = Peak{Load: p.Load, Goodput: p.Goodput}
		}
	}
	for _, p := range c.Points {
		if p.Load > c.Peak.Load && p.Goodput.Center < 0.9*c.Peak.Goodput.Center {
			c.Collapse = Collapse{Load: p.Load, Found: true}
			break
		}
	}
	c.Retained = c.retained()
	if k := c.Knee; k.Found && k.FirstMiss > 2*k.LastMet {
		c.warn(Warning{Kind: WarnWideKneeBracket, Knee: k, Unit: c.Axis.Unit()})
	}
	for _, p := range c.Points {
		if p.Saturation != Stable && p.Attainment.Center >= c.Target {
			c.warn(Warning{Kind: WarnUnsteadyMeetsTarget, Load: p.Load, Saturation: p.Saturation})
		}
	}
}

func (c *Curve) knee() Knee {
	k := Knee{Load: stats.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Confidence: c.Confidence}, Target: c.Target}
	if len(c.Points) == 0 {
		k.Censored = NoPoints
		return k
	}
	center := func(p Point) float64 { return p.Attainment.Center }
	k.Load.Center, k.LastMet, k.FirstMiss, k.Found = c.crossing(center)
	// The optimistic bound (upper attainment) crosses later: the knee's Hi.
	k.Load.Hi, _, _, _ = c.crossing(func(p Point) float64 { return orElse(p.Attainment.Hi, center(p)) })
	k.Load.Lo, _, _, _ = c.crossing(func(p Point) float64 { return orElse(p.Attainment.Lo, center(p)) })
	k.Load.N = len(c.Points[0].Runs)
	if k.Load.N < 2 {
		// One replication has no interval: its points' attainment has
		// none, and the crossings above fell back to the centre, which
		// would read as a zero-width interval.
		k.Load.Lo, k.Load.Hi = math.NaN(), math.NaN()
	}
	var known []Point // the points that measured something
	for _, p := range c.Points {
		if !math.IsNaN(center(p)) {
			known = append(known, p)
		}
	}
	switch {
	case k.Found:
	case len(known) == 0:
		k.Censored = NoLoadMeasured
	case center(known[0]) < c.Target:
		k.Censored, k.FirstMiss = BelowLowest, known[0].Load
	default:
		k.Censored, k.LastMet = AboveHighest, known[len(known)-1].Load
	}
	return k
}

func orElse(x, y float64) float64 {
	if math.IsNaN(x) {
		return y
	}
	return x
}

// crossing finds where f falls below the target: the last load of the
// leading run of points meeting it, the next load, and the linear
// interpolation between them. Without a crossing it returns the highest
// load that met the target (or NaN).
func (c *Curve) crossing(f func(Point) float64) (at, lastMet, firstMiss float64, found bool) {
	at = math.NaN()
	var q Point
	met := false
	for _, p := range c.Points {
		if math.IsNaN(f(p)) {
			continue // an empty window is evidence of nothing
		}
		if f(p) >= c.Target {
			at, lastMet, q, met = p.Load, p.Load, p, true
			continue
		}
		if !met {
			return math.NaN(), 0, p.Load, false
		}
		fa, fb := f(q), f(p)
		frac := (fa - c.Target) / (fa - fb)
		return q.Load + frac*(p.Load-q.Load), q.Load, p.Load, true
	}
	return at, lastMet, 0, false
}

// Headroom is the distance from an operating point to the knee.
type Headroom struct {
	Operating float64        // the chosen operating load, requests/s
	Abs       stats.Interval // knee − operating, requests/s
	Rel       stats.Interval // knee / operating − 1: the traffic surprise it absorbs
	// Model is Rel over the curve's model band (Curve.Band): the headroom
	// if the cost model is off by as much as was declared. The zero Range
	// without a band.
	Model Range
}

// Headroom measures the distance from the operating load op to the knee,
// with the knee's interval.
func (c *Curve) Headroom(op float64) Headroom {
	k := c.Knee.Load
	sub := func(x float64) float64 { return x - op }
	rel := func(x float64) float64 { return x/op - 1 }
	h := Headroom{
		Operating: op,
		Abs:       stats.Interval{Center: sub(k.Center), Lo: sub(k.Lo), Hi: sub(k.Hi), Confidence: k.Confidence, N: k.N},
		Rel:       stats.Interval{Center: rel(k.Center), Lo: rel(k.Lo), Hi: rel(k.Hi), Confidence: k.Confidence, N: k.N},
	}
	if b := c.Band; b != nil {
		h.Model = Range{Lo: rel(b.Knee.Lo), Hi: rel(b.Knee.Hi), LoBelow: b.Knee.LoBelow, HiAbove: b.Knee.HiAbove}
	}
	return h
}
