package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Process is the renewal process of an open-loop arrival schedule.
type Process int

const (
	// Poisson: exponential gaps (a gamma process with burstiness 1).
	Poisson Process = iota
	// Gamma: gamma gaps of shape Burstiness and mean 1/rate, so the
	// coefficient of variation is 1/√Burstiness (vLLM's --burstiness).
	Gamma
	// Periodic: a constant rate with every gap exactly 1/rate (vLLM's
	// burstiness = inf).
	Periodic
)

func (p Process) String() string {
	switch p {
	case Poisson:
		return "poisson"
	case Gamma:
		return "gamma"
	case Periodic:
		return "periodic"
	}
	return fmt.Sprintf("Process(%d)", int(p))
}

// RampStrategy is vLLM's --ramp-up-strategy.
type RampStrategy int

const (
	NoRamp          RampStrategy = iota // constant Rate
	RampLinear                          // rate = start + (end-start)·progress
	RampExponential                     // rate = start·(end/start)^progress
)

func (s RampStrategy) String() string {
	switch s {
	case NoRamp:
		return "none"
	case RampLinear:
		return "linear"
	case RampExponential:
		return "exponential"
	}
	return fmt.Sprintf("RampStrategy(%d)", int(s))
}

// Ramp is vLLM's ramp-up: request i (of N) is sent at the rate reached at
// progress i/max(N-1, 1), moving from StartRate to EndRate. As in vLLM, a
// ramped schedule is never normalised. Needs a request count.
type Ramp struct {
	Strategy           RampStrategy
	StartRate, EndRate float64 // requests/s, both > 0 when Strategy is set
}

// Arrival describes an open-loop arrival process. The zero value is not
// valid: at least Rate (or a Ramp or a Schedule) must be set.
//
// Every process draws unit-rate gaps (mean 1) from the stream "arrivals"
// and divides them by the rate in force, so the same seed at rate λ and at
// rate 2λ yields the same requests with instants halved (to the
// nanosecond): common random numbers across a load sweep.
type Arrival struct {
	// Process is the gap distribution; zero is Poisson.
	Process Process
	// Rate is the mean arrival rate in requests/s (> 0), unless Ramp or
	// Schedule sets the rate.
	Rate float64
	// Burstiness is the gamma shape k (> 0) for Process Gamma: CV = 1/√k,
	// k = 1 is Poisson, k < 1 burstier, k > 1 smoother. Zero means 1.
	Burstiness float64
	// Normalize rescales the whole schedule so that the last of Count
	// requests arrives at exactly Count/Rate, as vLLM's bench serve does
	// when no ramp-up is set ("closes the 1-2% gap" between summed gaps and
	// the target). It needs a Count and costs one extra pass over the
	// random stream at construction (no memory).
	Normalize bool
	// Ramp, when its Strategy is set, replaces Rate (vLLM's ramp-up).
	Ramp Ramp
	// Schedule, when not empty, replaces Rate by a piecewise-constant rate
	// (see Schedule); instants are the time change of a unit-rate process.
	Schedule Schedule
}

// Validate reports every problem with the configuration. count is the
// number of requests the process will yield (0 if unbounded).
func (a Arrival) Validate(count int) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("workload: Arrival."+format, args...))
	}
	if a.Process < Poisson || a.Process > Periodic {
		add("Process must be Poisson, Gamma or Periodic, got %d", int(a.Process))
	}
	if a.Burstiness < 0 || math.IsNaN(a.Burstiness) {
		add("Burstiness must be > 0 (or 0 for 1), got %v", a.Burstiness)
	}
	rateSources := 0
	if a.Ramp.Strategy != NoRamp {
		rateSources++
		errs = append(errs, a.Ramp.validate(count))
	}
	if len(a.Schedule.Steps) > 0 {
		rateSources++
		errs = append(errs, a.Schedule.Validate())
	}
	switch {
	case rateSources > 1:
		add("set at most one of Ramp and Schedule")
	case rateSources == 0 && !(a.Rate > 0) || math.IsInf(a.Rate, 0):
		add("Rate must be > 0 and finite, got %v", a.Rate)
	}
	if a.Normalize && (count <= 0 || rateSources > 0) {
		add("Normalize needs a request Count and a constant Rate (vLLM does not normalise a ramp)")
	}
	return errors.Join(errs...)
}

func (r Ramp) validate(count int) error {
	var errs []error
	if r.Strategy != RampLinear && r.Strategy != RampExponential {
		errs = append(errs, fmt.Errorf("workload: Arrival.Ramp.Strategy must be RampLinear or RampExponential, got %d", int(r.Strategy)))
	}
	if !(r.StartRate > 0) || !(r.EndRate > 0) || math.IsInf(r.StartRate, 0) || math.IsInf(r.EndRate, 0) {
		errs = append(errs, fmt.Errorf("workload: Arrival.Ramp rates must be > 0 and finite, got %v and %v", r.StartRate, r.EndRate))
	}
	if count <= 0 {
		errs = append(errs, errors.New("workload: Arrival.Ramp needs a request Count (progress is i/(N-1))"))
	}
	return errors.Join(errs...)
}

// rateAt is vLLM's _get_current_request_rate for request i of n.
func (r Ramp) rateAt(i, n int) float64 {
	progress := float64(i) / float64(max(n-1, 1))
	if r.Strategy == RampLinear {
		return r.StartRate + (r.EndRate-r.StartRate)*progress
	}
	return r.StartRate * math.Pow(r.EndRate/r.StartRate, progress)
}

func (a Arrival) String() string {
	s := a.Process.String()
	if a.Process == Gamma {
		s += fmt.Sprintf("(k=%g)", a.shape())
	}
	switch {
	case a.Ramp.Strategy != NoRamp:
		s += fmt.Sprintf(" ramp %s %g→%g req/s", a.Ramp.Strategy, a.Ramp.StartRate, a.Ramp.EndRate)
	case len(a.Schedule.Steps) > 0:
		s += " " + a.Schedule.String()
	default:
		s += fmt.Sprintf(" %g req/s", a.Rate)
	}
	if a.Normalize {
		s += " normalised"
	}
	return s
}

func (a Arrival) shape() float64 {
	if a.Burstiness == 0 {
		return 1
	}
	return a.Burstiness
}

// unitGap draws one gap of a unit-rate process (mean 1).
func (a Arrival) unitGap(r *rand.Rand) float64 {
	switch {
	case a.Process == Periodic || math.IsInf(a.Burstiness, 1):
		return 1
	case a.Process == Poisson || a.shape() == 1:
		return r.ExpFloat64()
	}
	k := a.shape()
	return distuv.Gamma{Alpha: k, Beta: k, Src: r}.Rand()
}

// arrivals yields the instants of an Arrival process, one at a time.
type arrivals struct {
	cfg   Arrival
	r     *rand.Rand
	count int     // requests to yield; 0 = unbounded
	i     int     // requests yielded
	unit  float64 // cumulative unit-rate time (or real seconds for a ramp)
	scale float64 // seconds per unit of cumulative time
	clock scheduleClock
	exp   bool // the gaps are exponential (Poisson): drawn inline, without copying cfg to call unitGap
	ramp  bool // cfg.Ramp.Strategy != NoRamp
}

// newArrivals starts the process for seed; count is the number of requests
// (0 = unbounded). cfg must be valid.
func newArrivals(cfg Arrival, seed uint64, count int) *arrivals {
	a := &arrivals{cfg: cfg, r: NewStream(seed, "arrivals"), count: count}
	a.clock = scheduleClock{s: cfg.Schedule}
	a.exp = !(cfg.Process == Periodic || math.IsInf(cfg.Burstiness, 1)) && (cfg.Process == Poisson || cfg.shape() == 1)
	a.ramp = cfg.Ramp.Strategy != NoRamp
	if cfg.Rate > 0 {
		a.scale = 1 / cfg.Rate
	}
	if cfg.Normalize {
		a.scale = a.normalizedScale(seed)
	}
	return a
}

// normalizedScale replays the count unit gaps on a twin stream to find
// their sum S, so that the last instant is S·(count/S)/Rate = count/Rate.
func (a *arrivals) normalizedScale(seed uint64) float64 {
	twin := NewStream(seed, "arrivals")
	sum := 0.0
	for range a.count {
		sum += a.cfg.unitGap(twin)
	}
	if sum == 0 {
		return 1 / a.cfg.Rate
	}
	return float64(a.count) / sum / a.cfg.Rate
}

// next returns the next instant, or false when the process is exhausted
// (count reached, or the end of a non-repeating schedule).
func (a *arrivals) next() (time.Duration, bool) {
	if a.count > 0 && a.i >= a.count {
		return 0, false
	}
	var gap float64
	if a.exp { // unitGap's answer, the usual one
		gap = a.r.ExpFloat64()
	} else {
		gap = a.cfg.unitGap(a.r)
	}
	var sec float64
	switch {
	case a.ramp:
		a.unit += gap / a.cfg.Ramp.rateAt(a.i, a.count)
		sec = a.unit
	case len(a.cfg.Schedule.Steps) > 0:
		a.unit += gap
		var ok bool
		if sec, ok = a.clock.at(a.unit); !ok {
			return 0, false
		}
	default:
		a.unit += gap
		sec = a.unit * a.scale
	}
	a.i++
	return seconds(sec), true
}

// seconds converts seconds to a Duration, rounding to the nanosecond and
// saturating instead of overflowing.
func seconds(s float64) time.Duration {
	if ns := s * 1e9; ns >= 0 && ns < 1<<52 {
		// math.Round's answer, the usual case inline: below 2⁵², ns less
		// its truncation is exact, and rounds up from one half
		// (TestSecondsRoundsAsMathRound). math.Round's bit arithmetic
		// cost RunAtlas 10 instructions a request: servesim's own 5,036
		// then 5,026 (cachegrind's marginal count).
		t := int64(ns)
		if ns-float64(t) >= 0.5 {
			t++
		}
		return time.Duration(t)
	}
	ns := math.Round(s * 1e9)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
