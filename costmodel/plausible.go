package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrImplausible is wrapped by Validate's error for a coefficient whose
// value, read in its declared unit, no serving step could have: most often
// a coefficient published in one unit (BLIS's microseconds) entered in
// another (Linear's default milliseconds). It is an error, not a warning:
// a run with it would report numbers a thousand times off.
var ErrImplausible = errors.New("costmodel: implausible coefficient for its unit")

// Plausibility limits of the Linear terms, as durations per unit of the
// feature. Each is orders of magnitude above any measured replica (a 70B
// dense TP4 step is tens of ms; BLIS's trained-physics overheads are about
// 126 µs per step and 4 µs per request), so a value over it is a unit
// mistake, not a slow machine:
//   - a step's fixed part over 10 s;
//   - a scheduled or decoding sequence, or a prefill token, over 1 s;
//   - a decode context token (reading its KV once) over 1 ms: 80 KiB at
//     even 1 GB/s is 80 µs;
//   - a prefill attention pair over 1 ms: a few MFLOP across all layers.
var linearLimits = map[string]time.Duration{
	"PerStep":             10 * time.Second,
	"PerSeq":              time.Second,
	"PerDecodeToken":      time.Second,
	"PerPrefillToken":     time.Second,
	"PerDecodeContext":    time.Millisecond,
	"PerPrefillAttention": time.Millisecond,
}

// plausible reports a coefficient over its limit, naming the unit it was
// read in and the unit it would be plausible in.
func (l Linear) plausible(c coefficient) error {
	limit := linearLimits[c.name]
	u := l.unit()
	d := c.v * float64(u) // nanoseconds
	if !(d > float64(limit)) {
		return nil
	}
	hint := fmt.Sprintf("if it is in microseconds (BLIS's β are), set Linear.Unit to time.Microsecond (now %s)", unitName(u))
	if u < time.Millisecond {
		hint = fmt.Sprintf("check Linear.Unit (now %s)", unitName(u))
	}
	return fmt.Errorf("%w: Linear.%s is %g %s = %.4g s, over the %v a real replica could take (%s)",
		ErrImplausible, c.name, c.v, unitName(u), d/1e9, limit, hint)
}

// unitName is a unit's symbol: "ms", "µs", "ns", "s", or the Duration.
func unitName(u time.Duration) string {
	switch u {
	case time.Nanosecond:
		return "ns"
	case time.Microsecond:
		return "µs"
	case time.Millisecond:
		return "ms"
	case time.Second:
		return "s"
	}
	return "×" + u.String()
}

// ticks converts a step time of v units to a Duration truncated down to a
// whole number of ticks, at least one tick (BLIS: int64(µs), then max(1,
// ·)), saturating at the largest whole number of ticks a Duration holds.
// NaN and negative values, which only an invalid model produces, become
// one tick.
func ticks(v float64, unit, tick time.Duration) time.Duration {
	n := math.Floor(v * (float64(unit) / float64(tick)))
	limit := math.MaxInt64 / int64(tick)
	switch {
	case !(n >= 1): // also NaN
		return tick
	case n >= float64(limit):
		return time.Duration(limit) * tick
	}
	return time.Duration(n) * tick
}
