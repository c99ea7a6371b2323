package costmodel

import (
	"fmt"
	"math"
	"time"
)

// This file holds the small numeric helpers every model shares: field
// checks for Validate and the float-to-Duration conversion of StepTime.

// positive reports a field that is not a finite number > 0.
func positive(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("costmodel: %s must be finite, got %v", field, v)
	}
	if v <= 0 {
		return fmt.Errorf("costmodel: %s must be > 0, got %v", field, v)
	}
	return nil
}

// nonNegative reports a field that is not a finite number >= 0.
func nonNegative(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("costmodel: %s must be finite, got %v", field, v)
	}
	if v < 0 {
		return fmt.Errorf("costmodel: %s must be >= 0, got %v", field, v)
	}
	return nil
}

// fraction reports a field that is neither 0 (meaning 1) nor in (0, 1].
func fraction(field string, v float64) error {
	if err := nonNegative(field, v); err != nil {
		return err
	}
	if v > 1 {
		return fmt.Errorf("costmodel: %s must be in (0, 1] (0 means 1), got %v", field, v)
	}
	return nil
}

// atLeast reports an integer field below min.
func atLeast(field string, v, min int) error {
	if v < min {
		return fmt.Errorf("costmodel: %s must be >= %d, got %d", field, min, v)
	}
	return nil
}

// durationNonNegative reports a negative Duration field.
func durationNonNegative(field string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("costmodel: %s must be >= 0, got %v", field, d)
	}
	return nil
}

// durationPositive reports a Duration field that is not > 0.
func durationPositive(field string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("costmodel: %s must be > 0, got %v", field, d)
	}
	return nil
}

// stepDuration converts the float milliseconds of a non-empty step to a
// Duration: rounded to the nearest nanosecond, at least 1 ns (so a non-empty
// step is never free), saturating at the largest Duration. NaN and negative
// values, which only an invalid model produces, become 1 ns: StepTime never
// panics and never goes negative, whatever the configuration.
func stepDuration(ms float64) time.Duration {
	ns := math.Round(ms * 1e6)
	switch {
	case !(ns >= 1): // also NaN
		return 1
	case ns >= math.MaxInt64:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// milliseconds converts a Duration to float milliseconds.
func milliseconds(d time.Duration) float64 { return float64(d) / 1e6 }
