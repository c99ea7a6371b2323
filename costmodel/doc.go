// Package costmodel prices one engine step: a batch shape in, a
// time.Duration out.
//
// Reading guide:
//   - Batch and Chunk describe a step's shape: per prefill chunk its new tokens
//     and the context before it, per decoding sequence its context length.
//   - Model is the seam (one method, StepTime); Func adapts a function.
//   - Frozen is the default: the reference chapter's Atlas TP4 frozen costs.
//
// The package is a leaf: it knows nothing of requests, queues or engines, and
// every model is pure and deterministic.
package costmodel
