package costmodel

import (
	"errors"
	"fmt"
	"time"
)

// Chunk is one prefill chunk scheduled in a step: NewTokens prompt (or
// recomputed) tokens are computed on top of Context tokens already in the KV
// cache for that sequence (earlier chunks, or prefix-cache hits).
type Chunk struct {
	NewTokens int // tokens computed for this sequence in the step, > 0
	Context   int // tokens already in KV before this chunk, >= 0
}

// Batch is the shape of one engine step (one forward pass).
//
// Prefill holds one entry per sequence that computes more than its single
// next token in the step; Decode holds, for each decoding sequence, the
// number of tokens already in its KV cache before the step (its context
// length). A step may mix both.
//
// Verify holds, for each decode, the positions it verifies: 1 without
// speculative decoding (its one new token), K + 1 with K draft tokens (the
// last sampled token and the drafts, computed in one forward pass). nil
// means 1 for every decode; otherwise it has one entry per Decode entry.
//
// The zero Batch is empty; models return 0 for it. Callers that price many
// steps reuse the slices: a Model must not retain them.
type Batch struct {
	Prefill []Chunk
	Decode  []int
	Verify  []int
}

// Verified is the number of positions decode i verifies: Verify[i], or 1
// when Verify is nil.
func (b Batch) Verified(i int) int {
	if b.Verify == nil {
		return 1
	}
	return b.Verify[i]
}

// ExtraVerified is the number of positions the decodes verify beyond one
// each: the draft tokens of the step (0 without speculation).
func (b Batch) ExtraVerified() int {
	n := 0
	for _, v := range b.Verify {
		n += v - 1
	}
	return n
}

// Empty reports whether the batch schedules no work.
func (b Batch) Empty() bool { return len(b.Prefill) == 0 && len(b.Decode) == 0 }

// Seqs is the number of sequences scheduled in the step.
func (b Batch) Seqs() int { return len(b.Prefill) + len(b.Decode) }

// PrefillTokens is the number of prefill tokens computed in the step.
func (b Batch) PrefillTokens() int {
	n := 0
	for _, c := range b.Prefill {
		n += c.NewTokens
	}
	return n
}

// DecodeContext is the total context (tokens in KV) of the decoding sequences.
func (b Batch) DecodeContext() int {
	n := 0
	for _, c := range b.Decode {
		n += c
	}
	return n
}

// Tokens is the number of tokens computed in the step (prefill + every
// position the decodes verify).
func (b Batch) Tokens() int { return b.PrefillTokens() + len(b.Decode) + b.ExtraVerified() }

// Validate reports a batch with negative or empty entries.
func (b Batch) Validate() error {
	var errs []error
	for i, c := range b.Prefill {
		if c.NewTokens <= 0 {
			errs = append(errs, fmt.Errorf("costmodel: Batch.Prefill[%d].NewTokens must be > 0, got %d", i, c.NewTokens))
		}
		if c.Context < 0 {
			errs = append(errs, fmt.Errorf("costmodel: Batch.Prefill[%d].Context must be >= 0, got %d", i, c.Context))
		}
	}
	for i, c := range b.Decode {
		if c < 0 {
			errs = append(errs, fmt.Errorf("costmodel: Batch.Decode[%d] must be >= 0, got %d", i, c))
		}
	}
	if b.Verify != nil && len(b.Verify) != len(b.Decode) {
		errs = append(errs, fmt.Errorf("costmodel: Batch.Verify has %d entries for %d decodes (nil means 1 position each)", len(b.Verify), len(b.Decode)))
	}
	for i, v := range b.Verify {
		if v < 1 {
			errs = append(errs, fmt.Errorf("costmodel: Batch.Verify[%d] must be >= 1, got %d", i, v))
		}
	}
	return errors.Join(errs...)
}

// Model prices one engine step.
//
// StepTime must be pure and deterministic: the same batch gives the same
// duration, whatever was priced before. It is positive for every non-empty
// valid batch, zero for the empty batch, and non-decreasing when a sequence is
// added or when any sequence's tokens, context or verified positions grow. The package
// costmodeltest checks these properties for any implementation.
type Model interface {
	StepTime(b Batch) time.Duration
}

// DecodeSum is implemented by a Model that says whether its price of a
// batch that verifies no drafts (Verify empty) reads the decodes'
// contexts only through how many there are and their sum. When DecodeSum
// returns true, two such batches with as many decodes, the same sum of
// decode contexts and the same prefill chunks cost the same: Frozen and
// TableModel read no context at all (the decode step is priced by its
// batch), Linear and Roofline read the sum (the KV a step reads). An engine may then price a
// step from the sum, without listing every decode's context
// (engine.Plan.Cohort).
type DecodeSum interface {
	DecodeSum() bool
}

// ContextFree is implemented by a Model that says whether its price of a
// batch that verifies no drafts (Verify empty) reads nothing of the
// decodes' contexts: when ContextFree returns true, two such batches with
// as many decodes and the same prefill chunks cost the same. Frozen and
// TableModel read none (Linear and Roofline read the KV a step reads).
// An engine may then price a run of decode steps, whose contexts grow a
// token a step, by its first step alone.
type ContextFree interface {
	ContextFree() bool
}

// PrefillContextFree is implemented by a Model that says whether its
// price of a batch reads nothing of the prefill chunks' contexts: when
// PrefillContextFree returns true, two batches that differ only in their
// chunks' Context cost the same. Frozen reads none (a chunk costs its
// tokens). An engine may then price a run of steps whose chunks go a
// chunk deeper into their prompts each step by its first step alone,
// when the model is ContextFree too.
type PrefillContextFree interface {
	PrefillContextFree() bool
}

// Func adapts an ordinary function to a Model.
type Func func(b Batch) time.Duration

// StepTime calls f(b).
func (f Func) StepTime(b Batch) time.Duration { return f(b) }
