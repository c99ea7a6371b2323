package workload

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The plausible range of a recorded trace's offered rate, requests/s. A
// rate outside it almost always means the arrival column was read in the
// wrong unit: a microsecond column read as seconds replays a 5 requests/s
// trace at 5e-6 requests/s, one every two days.
const (
	MinTraceRate = 1.0 / 86400 // one request a day
	MaxTraceRate = 1e6         // a million requests a second
)

// ErrImplausibleRate is wrapped by the error that ends a replay whose
// implied offered rate (TraceClock.Rate) lies outside [MinTraceRate,
// MaxTraceRate], unless the configuration accepts any rate
// (TraceConfig.AnyRate). The error names the file, the unit assumed, the
// setting that chooses it, and the unit that would give a plausible rate.
var ErrImplausibleRate = errors.New("workload: trace's implied offered rate is implausible")

// TraceClock is what a trace reader assumed of its arrival column, and the
// offered rate that implies over the requests yielded so far; after the
// last, over the whole replay.
type TraceClock struct {
	// Unit is the unit a numeric arrival column is read in; 0 when the
	// column holds date-times, which carry their own.
	Unit time.Duration
	// Field is the setting that chooses Unit, "TraceConfig.Columns.
	// ArrivalUnit"; "" when the format fixes it (BLIS's TraceV2: µs).
	Field string
	// Requests is the number of requests yielded; Span the time from the
	// first of them to the last, as recorded: after the Transform's window
	// and before its Slowdown or TargetRate scale the clock.
	Requests int
	Span     time.Duration
}

// Rate is the implied offered rate, Requests / Span in requests/s (vLLM's
// convention, as TargetRate's: N requests at rate λ span N/λ); NaN with
// fewer than two requests or a zero span, where no rate is implied.
func (c TraceClock) Rate() float64 {
	if c.Requests < 2 || c.Span <= 0 {
		return math.NaN()
	}
	return float64(c.Requests) / c.Span.Seconds()
}

// String says what was assumed and what it implies, e.g.
//
//	arrivals read in seconds, as TraceConfig.Columns.ArrivalUnit says; 19366 requests over 1h0m0s: 5.379 requests/s
func (c TraceClock) String() string {
	unit := "date-time arrivals"
	switch {
	case c.Unit > 0 && c.Field == "":
		unit = fmt.Sprintf("arrivals read in %s, as the format says", unitWord(c.Unit))
	case c.Unit > 0:
		unit = fmt.Sprintf("arrivals read in %s, as %s says", unitWord(c.Unit), c.Field)
	}
	rate := "no rate implied"
	if r := c.Rate(); !math.IsNaN(r) {
		rate = fmt.Sprintf("%.4g requests/s", r)
	}
	return fmt.Sprintf("%s; %d requests over %v: %s", unit, c.Requests, c.Span, rate)
}

// Check returns an error wrapping ErrImplausibleRate when the implied
// rate lies outside [MinTraceRate, MaxTraceRate], naming the file (name),
// the unit assumed, the unit that would give a plausible rate, and escape,
// the setting that accepts any rate; nil when the rate is plausible or
// none is implied. A reader of another format (workload/blis) calls it
// after the last request.
func (c TraceClock) Check(name, escape string) error {
	r := c.Rate()
	if math.IsNaN(r) || r >= MinTraceRate && r <= MaxTraceRate {
		return nil
	}
	bound := "below one a day"
	if r > MaxTraceRate {
		bound = "above a million a second"
	}
	fix := "date-times carry their unit: check the file"
	if c.Unit > 0 {
		fix = "set " + c.Field + " to the column's unit"
		if c.Field == "" {
			fix = "convert the column to " + unitWord(c.Unit)
		}
		if u, ur, ok := c.plausibleUnit(); ok {
			fix += fmt.Sprintf(" (read in %s it would be %.4g requests/s)", unitWord(u), ur)
		}
	}
	return fmt.Errorf("%w: %s: %s, %s: %s, or set %s to accept it",
		ErrImplausibleRate, name, c, bound, fix, escape)
}

// plausibleUnit is the unit among ns, µs, ms and s, other than the one
// assumed, that gives a plausible rate closest to 10 requests/s.
func (c TraceClock) plausibleUnit() (time.Duration, float64, bool) {
	var best time.Duration
	var bestRate float64
	for _, u := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second} {
		if u == c.Unit {
			continue
		}
		r := c.Rate() * float64(c.Unit) / float64(u)
		if r < MinTraceRate || r > MaxTraceRate {
			continue
		}
		if best == 0 || math.Abs(math.Log10(r)-1) < math.Abs(math.Log10(bestRate)-1) {
			best, bestRate = u, r
		}
	}
	return best, bestRate, best != 0
}

// unitWord names a unit in words: "seconds", "milliseconds", ...
func unitWord(u time.Duration) string {
	switch u {
	case time.Nanosecond:
		return "nanoseconds"
	case time.Microsecond:
		return "microseconds"
	case time.Millisecond:
		return "milliseconds"
	case time.Second:
		return "seconds"
	}
	return "units of " + u.String()
}

// clockTrack follows the first and last recorded instants of the
// requests a reader yields.
type clockTrack struct {
	n           int
	first, last time.Duration
}

// addRun is add of k instants in order, the first at first, the last
// at last.
func (k *clockTrack) addRun(first, last time.Duration, n int) {
	if k.n == 0 {
		k.first = first
	}
	k.last = max(k.last, last)
	k.n += n
}

func (k *clockTrack) add(at time.Duration) {
	if k.n == 0 {
		k.first = at
	}
	k.last = max(k.last, at)
	k.n++
}

func (k clockTrack) span() time.Duration {
	if k.n == 0 {
		return 0
	}
	return k.last - k.first
}
