package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// Frozen is the chapter's frozen step-cost model (the Atlas TP4 replica): a
// step with any decoding sequence pays DecodeStep, flat in batch size and
// context (the memory-bound regime); a step with prefill pays PrefillBase +
// PrefillPerToken × (prefill tokens in the step); a mixed step pays both.
//
// The zero value is the Atlas TP4 preset: 45 ms decode step, 20 ms + 0.035 ms
// per prefill token. So a 256-token chunk mixed into a decode batch costs
// 45 + 20 + 8.96 = 73.96 ms and a lone 2,000-token prefill costs 90 ms.
// Set a field to override it; a field cannot be set to exactly zero.
//
// Speculative decoding: a decode step whose sequences verify draft tokens
// (Batch.Verify) pays VerifyPerToken for every position verified beyond
// one per sequence. The chapter gives no such figure; the default prices a
// verified draft like a prefill token (0.035 ms: the same forward pass
// computes it), so at batch 32 with 4 drafts each the step costs
// 45 + 128 × 0.035 = 49.48 ms. Declare a measured figure when you have one.
type Frozen struct {
	DecodeStep      time.Duration // default 45 ms
	PrefillBase     time.Duration // default 20 ms
	PrefillPerToken time.Duration // default 35 µs
	VerifyPerToken  time.Duration // default PrefillPerToken
}

// Atlas TP4 frozen costs from the reference chapter.
const (
	AtlasDecodeStep      = 45 * time.Millisecond
	AtlasPrefillBase     = 20 * time.Millisecond
	AtlasPrefillPerToken = 35 * time.Microsecond
)

// WithDefaults returns f with every zero field set to its Atlas default.
func (f Frozen) WithDefaults() Frozen {
	if f.DecodeStep == 0 {
		f.DecodeStep = AtlasDecodeStep
	}
	if f.PrefillBase == 0 {
		f.PrefillBase = AtlasPrefillBase
	}
	if f.PrefillPerToken == 0 {
		f.PrefillPerToken = AtlasPrefillPerToken
	}
	if f.VerifyPerToken == 0 {
		f.VerifyPerToken = f.PrefillPerToken
	}
	return f
}

// Validate refuses negative figures.
func (f Frozen) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    time.Duration
	}{{"DecodeStep", f.DecodeStep}, {"PrefillBase", f.PrefillBase}, {"PrefillPerToken", f.PrefillPerToken}, {"VerifyPerToken", f.VerifyPerToken}} {
		if p.v < 0 {
			errs = append(errs, fmt.Errorf("costmodel: Frozen.%s must be >= 0 (0 means the Atlas default), got %v", p.name, p.v))
		}
	}
	return errors.Join(errs...)
}

// StepTime prices b. It uses integer arithmetic only, so sums are exact.
// A non-empty step costs at least 1 ns, even with invalid figures.
//
// It reads b's fields in place: through Batch's methods (ExtraVerified,
// PrefillTokens, Empty) Go copied the 72-byte Batch once for each, a
// third of a pricing.
func (f Frozen) StepTime(b Batch) time.Duration {
	f = f.WithDefaults()
	var d time.Duration
	if len(b.Decode) > 0 {
		d += f.DecodeStep
		if len(b.Verify) > 0 { // integers: the same sum in any grouping
			extra := -len(b.Verify) // b.ExtraVerified(): Σ v, less one a decode
			for _, v := range b.Verify {
				extra += v
			}
			d += time.Duration(extra) * f.VerifyPerToken
		}
	}
	n := 0 // b.PrefillTokens()
	for _, c := range b.Prefill {
		n += c.NewTokens
	}
	if n > 0 {
		d += f.PrefillBase + time.Duration(n)*f.PrefillPerToken
	}
	if d <= 0 && (len(b.Prefill) > 0 || len(b.Decode) > 0) { // !b.Empty()
		return 1 // only an invalid Frozen (negative figures) gets here
	}
	return d
}

// DecodeStepTime is StepTime of a batch that decodes, verifies extra
// positions beyond one a decode (b.ExtraVerified()) and prefills n
// tokens (b.PrefillTokens()), from those sums alone: the same integer
// sums in another grouping. The engine prices a speculative step with
// prefill by it (engine's mixedSpecPrice), without building the batch
// or walking it; TestDecodeStepTimeIsStepTime holds it to StepTime.
func (f Frozen) DecodeStepTime(extra, n int) time.Duration {
	f = f.WithDefaults()
	d := f.DecodeStep + time.Duration(extra)*f.VerifyPerToken
	if n > 0 {
		d += f.PrefillBase + time.Duration(n)*f.PrefillPerToken
	}
	if d <= 0 {
		return 1 // StepTime's floor for a non-empty step
	}
	return d
}

// DecodeSum reports true: a decode step costs DecodeStep whatever its
// contexts (see DecodeSum).
func (Frozen) DecodeSum() bool { return true }

// ContextFree reports true: a step is priced by whether it decodes, not by
// what its decodes read (see ContextFree).
func (Frozen) ContextFree() bool { return true }

// PrefillContextFree reports true: a chunk costs its tokens, whatever
// its context (see PrefillContextFree).
func (Frozen) PrefillContextFree() bool { return true }

// PrefillTime is the prefill work for an n-token chunk alone: PrefillBase +
// n × PrefillPerToken (the chapter's prefill_ms(n)); 0 for n <= 0.
func (f Frozen) PrefillTime(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	f = f.WithDefaults()
	return f.PrefillBase + time.Duration(n)*f.PrefillPerToken
}
