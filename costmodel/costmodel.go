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
// next token in the step; Decode holds, for each sequence that computes
// exactly one token, the number of tokens already in its KV cache before the
// step (its context length). A step may mix both.
//
// The zero Batch is empty; models return 0 for it. Callers that price many
// steps reuse the slices: a Model must not retain them.
type Batch struct {
	Prefill []Chunk
	Decode  []int
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

// Tokens is the number of tokens computed in the step (prefill + decode).
func (b Batch) Tokens() int { return b.PrefillTokens() + len(b.Decode) }

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
	return errors.Join(errs...)
}

// Model prices one engine step.
//
// StepTime must be pure and deterministic: the same batch gives the same
// duration, whatever was priced before. It is positive for every non-empty
// valid batch, zero for the empty batch, and non-decreasing when a sequence is
// added or when any sequence's tokens or context grow. The package
// costmodeltest checks these properties for any implementation.
type Model interface {
	StepTime(b Batch) time.Duration
}

// Func adapts an ordinary function to a Model.
type Func func(b Batch) time.Duration

// StepTime calls f(b).
func (f Func) StepTime(b Batch) time.Duration { return f(b) }
