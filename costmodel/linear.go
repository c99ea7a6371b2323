package costmodel

import (
	"errors"
	"time"
)

// Linear prices a step as a linear form over its shape. Every coefficient is
// in milliseconds per unit:
//
//	ms = PerStep
//	   + PerSeq              × scheduled sequences (prefill chunks + decodes)
//	   + PerDecodeToken      × decoding sequences (one token each)
//	   + PerDecodeContext    × Σ decode context tokens (KV read)
//	   + PerPrefillToken     × Σ prefill chunk tokens
//	   + PerPrefillAttention × Σ attention pairs of the chunks
//
// where a chunk of n new tokens on c context tokens attends n·c + n(n+1)/2
// (query, key) pairs (causal attention). A decode that verifies P > 1
// positions (speculative decoding, Batch.Verify) adds P − 1 prefill tokens
// on its context + 1 and their attention pairs, with no per-sequence term.
// The empty batch costs 0; a non-empty step costs at least 1 ns.
//
// The zero Linear prices every non-empty step at 1 ns and is refused by
// Validate; NewLinear3 builds the common three-coefficient form.
type Linear struct {
	PerStep             float64 // ms per non-empty step (launch, sampling, collectives)
	PerSeq              float64 // ms per scheduled sequence
	PerDecodeToken      float64 // ms per decoding sequence
	PerDecodeContext    float64 // ms per context token of a decoding sequence
	PerPrefillToken     float64 // ms per prefill token
	PerPrefillAttention float64 // ms per prefill (query, key) token pair
}

// NewLinear3 returns the three-coefficient form b0 + b1·prefill_tokens +
// b2·decode_tokens, in milliseconds: b0 per step, b1 per prefill token, b2
// per decoding sequence (each decodes one token).
func NewLinear3(b0, b1, b2 float64) Linear {
	return Linear{PerStep: b0, PerPrefillToken: b1, PerDecodeToken: b2}
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

// Validate requires every coefficient to be finite and >= 0 (so the step time
// never falls when work is added) and at least one to be > 0.
func (l Linear) Validate() error {
	var errs []error
	somePositive := false
	for _, c := range l.coefficients() {
		errs = append(errs, nonNegative("Linear."+c.name, c.v))
		somePositive = somePositive || c.v > 0
	}
	if !somePositive {
		errs = append(errs, errors.New("costmodel: Linear needs at least one coefficient > 0, all are 0"))
	}
	return errors.Join(errs...)
}

// StepTime prices b. It does not allocate.
func (l Linear) StepTime(b Batch) time.Duration {
	if b.Empty() {
		return 0
	}
	return stepDuration(l.ms(shapeOf(b)))
}

// ms is the linear form over a batch's sums, in milliseconds.
func (l Linear) ms(s shape) float64 {
	v := s.vector()
	ms := 0.0
	for i, c := range l.coefficients() {
		ms += c.v * v[i]
	}
	return ms
}
