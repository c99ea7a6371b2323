// Package tierdone is the engine's word to a KV tier of its own
// driver's (sim's host port) that a request left for good: a tier that
// satisfies Finisher, which only a package of this module can (its
// method takes a Mark), is told, so that it may stop keeping the
// request's own blocks by key (no later request computes their keys).
// It is no part of the engine's API: engine.Tier implementations
// elsewhere are not told.
package tierdone

// Mark is Finished's first argument, a type only this module can name.
type Mark struct{}

// Finisher is a tier the engine tells that a request left (finished or
// aborted, released), after every store it offered for it.
type Finisher interface {
	// Finished: chain is the request's keys of the blocks it stored,
	// from its first, and its last own of them its own content (keys no
	// other request computes: a preempted request's are looked up again
	// by itself only, and it will not come back). The slice is the
	// engine's, valid during the call.
	Finished(m Mark, chain []uint64, own int)
}
