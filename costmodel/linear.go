package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// Linear prices a step as a linear form over its shape. Every coefficient
// is in Unit per unit of its feature (milliseconds when Unit is 0):
//
//	t = PerStep
//	  + PerSeq              × scheduled sequences (prefill chunks + decodes)
//	  + PerDecodeToken      × decoding sequences (one token each)
//	  + PerDecodeContext    × Σ decode context tokens (KV read)
//	  + PerPrefillToken     × Σ prefill chunk tokens
//	  + PerPrefillAttention × Σ attention pairs of the chunks
//
// where a chunk of n new tokens on c context tokens attends n·c + n(n+1)/2
// (query, key) pairs (causal attention). A decode that verifies P > 1
// positions (speculative decoding, Batch.Verify) adds P − 1 prefill tokens
// on its context + 1 and their attention pairs, with no per-sequence term.
// The empty batch costs 0. A non-empty step costs t rounded to the nearest
// nanosecond, at least 1 ns; with a Tick, t truncated down to a whole
// number of Ticks, at least one.
//
// PerSeq is a term per scheduled request, as BLIS's trained-physics model
// charges its β₆ (µs per request in the batch, prefill and decode alike);
// PerDecodeToken is a term per decoding sequence, as NewLinear3 and BLIS's
// former blackbox model charge their third coefficient.
//
// The zero Linear prices every non-empty step at 1 ns and is refused by
// Validate; NewLinear3 builds the common three-coefficient form in
// milliseconds, NewLinear3Requests the form with a per-request term in
// any unit. See docs/other-simulators.md for BLIS's coefficients.
type Linear struct {
	PerStep             float64 // Unit per non-empty step (launch, sampling, collectives)
	PerSeq              float64 // Unit per scheduled sequence (prefill chunk or decode)
	PerDecodeToken      float64 // Unit per decoding sequence
	PerDecodeContext    float64 // Unit per context token of a decoding sequence
	PerPrefillToken     float64 // Unit per prefill token
	PerPrefillAttention float64 // Unit per prefill (query, key) token pair

	// Unit is the time unit every coefficient counts in: 0 means
	// time.Millisecond (the unit before the field existed, and Fit's);
	// time.Microsecond takes coefficients as BLIS and most published
	// regressions give them. A coefficient implausible in this unit is
	// refused by Validate (ErrImplausible), which catches most factor-1000
	// mistakes between the two.
	Unit time.Duration
	// Tick, when > 0, truncates each non-empty step's time down to a
	// whole number of Ticks, at least one. BLIS sums its step time in
	// float microseconds and converts it with int64(), truncating towards
	// zero, then floors it at 1 tick (max(1, ·)): Tick time.Microsecond.
	// 0 rounds to the nearest nanosecond instead.
	Tick time.Duration
}

// NewLinear3 returns the three-coefficient form b0 + b1·prefill_tokens +
// b2·decode_tokens, in milliseconds: b0 per step, b1 per prefill token, b2
// per decoding sequence (each decodes one token). BLIS's former blackbox
// model (β₀ + β₁·cache-miss tokens + β₂·decode tokens, removed from BLIS in
// April 2026) is this form with Unit and Tick time.Microsecond.
func NewLinear3(b0, b1, b2 float64) Linear {
	return Linear{PerStep: b0, PerPrefillToken: b1, PerDecodeToken: b2}
}

// NewLinear3Requests returns b0 + b1·prefill_tokens + b2·scheduled_requests
// with every coefficient in unit (time.Microsecond for BLIS's): b0 per
// step, b1 per prefill token, b2 per request scheduled in the step
// (prefill chunks and decodes alike, as BLIS's trained-physics β₆·B
// counts them). Set Tick to truncate as BLIS does.
func NewLinear3Requests(unit time.Duration, b0, b1, b2 float64) Linear {
	return Linear{PerStep: b0, PerPrefillToken: b1, PerSeq: b2, Unit: unit}
}

// coefficient is one named coefficient of a Linear.
type coefficient struct {
	name string
	v    float64
}

// coefficients lists the coefficients with their field names, in the order
// of the features they multiply (see shape.vector).
func (l Linear) coefficients() [numTerms]coefficient {
	return [numTerms]coefficient{
		{"PerStep", l.PerStep},
		{"PerSeq", l.PerSeq},
		{"PerDecodeToken", l.PerDecodeToken},
		{"PerDecodeContext", l.PerDecodeContext},
		{"PerPrefillToken", l.PerPrefillToken},
		{"PerPrefillAttention", l.PerPrefillAttention},
	}
}

// Validate requires every coefficient to be finite and >= 0 (so the step
// time never falls when work is added), at least one to be > 0, Unit and
// Tick to be >= 0, and every coefficient to be plausible in its Unit
// (plausible.go): a failure of the last kind wraps ErrImplausible.
func (l Linear) Validate() error {
	var errs []error
	somePositive := false
	for _, c := range l.coefficients() {
		err := nonNegative("Linear."+c.name, c.v)
		if err == nil {
			err = l.plausible(c)
		}
		errs = append(errs, err)
		somePositive = somePositive || c.v > 0
	}
	if !somePositive {
		errs = append(errs, errors.New("costmodel: Linear needs at least one coefficient > 0, all are 0"))
	}
	errs = append(errs, durationNonNegative("Linear.Unit", l.Unit), durationNonNegative("Linear.Tick", l.Tick))
	return errors.Join(errs...)
}

// unit is Unit with its default.
func (l Linear) unit() time.Duration {
	if l.Unit <= 0 {
		return time.Millisecond
	}
	return l.Unit
}

// DecodeSum reports true: a batch's decode contexts enter its price only
// through PerDecodeContext × their sum (see DecodeSum).
func (Linear) DecodeSum() bool { return true }

// StepTime prices b. It does not allocate.
func (l Linear) StepTime(b Batch) time.Duration {
	if b.Empty() {
		return 0
	}
	v := l.sum(shapeOf(b))
	if l.Tick > 0 {
		return ticks(v, l.unit(), l.Tick)
	}
	if l.unit() == time.Millisecond {
		return stepDuration(v) // as before Unit existed, to the bit
	}
	return stepDuration(v * (float64(l.unit()) / float64(time.Millisecond)))
}

// sum is the linear form over a batch's sums, in Unit.
func (l Linear) sum(s shape) float64 {
	v := s.vector()
	t := 0.0
	for i, c := range l.coefficients() {
		t += c.v * v[i]
	}
	return t
}

// ms is the linear form over a batch's sums, in milliseconds (before any
// Tick), as Fit compares it with measured steps.
func (l Linear) ms(s shape) float64 {
	if l.unit() == time.Millisecond {
		return l.sum(s)
	}
	return l.sum(s) * (float64(l.unit()) / float64(time.Millisecond))
}

// String names the form with its units, e.g.
//
//	Linear{PerStep 126 µs, PerSeq 4 µs, PerPrefillToken 0.02 µs; tick 1µs}
//
// listing only the non-zero coefficients.
func (l Linear) String() string {
	s := "Linear{"
	sep := ""
	for _, c := range l.coefficients() {
		if c.v != 0 {
			s += fmt.Sprintf("%s%s %g %s", sep, c.name, c.v, unitName(l.unit()))
			sep = ", "
		}
	}
	if l.Tick > 0 {
		s += "; tick " + l.Tick.String()
	}
	return s + "}"
}
