// Package engine is one LLM serving replica's scheduler as a pure state
// machine, mirroring vLLM's V1 scheduler: it owns no clock, no randomness, no
// goroutine and no I/O, so a design reviewer can drive it by hand in a test.
//
// Reading guide:
//   - config.go: Config, every field's zero value documented; Validate.
//   - request.go: Request (what a driver hands in) and the rejection reasons.
//   - engine.go: New, Add, Abort, and the Plan/Emit/Outcome the engine
//     answers with.
//   - schedule.go: Schedule (plan a step) and Complete (end it); the
//     scheduling rules below live here.
//   - policy.go: the waiting-queue order (FCFS, Priority, PolicyFunc).
//   - kv.go, prefix.go: block accounting and the prefix cache.
//   - run.go: advancing a run of identical decode steps in one move.
//   - check.go: Check, the invariants tests run after every step.
//   - testdata/*.txt: scripted interactions with their expected decisions.
//
// # The driver's loop
//
//	e, _ := engine.New(engine.Config{}, costmodel.Frozen{})
//	e.Add(now, engine.Request{Ref: 1, Input: 2000, Output: 200}) // or a rejection
//	plan, _ := e.Schedule(now)       // nil when nothing can run
//	out, _ := e.Complete(plan.End)   // tokens emitted, requests done
//
// # Scheduling (chunked prefill, the default)
//
// One step is one forward pass with a token budget (MaxBatchedTokens) and a
// sequence cap (MaxSeqs). Running requests go first, in order: a decoding
// request asks for one token, a request still in prefill for
// min(remaining, ChunkCap, budget left). KV blocks are allocated for the
// tokens scheduled; when they run out the engine preempts from the tail of
// the running list (the request the policy would admit last) by recompute:
// its blocks are freed and it returns to the waiting queue, and when resumed
// it recomputes its prompt and every token it had emitted, so the stall
// shows in its next inter-token gap. Only if nothing was preempted does the
// engine admit waiting requests, in policy order, while the budget, the
// sequence cap and the free blocks (less the watermark) allow; it stops at
// the first that does not fit. At the end of the step every request whose
// existing tokens are all computed samples one token; a request leaves when
// it has emitted its output.
//
// With DisableChunkedPrefill a step that can admit waiting prompts runs only
// those whole prefills (decoders stall, as in vLLM V0); otherwise it decodes.
//
// The prefix cache (prefix.go, on by default as in vLLM V1) keys on the hash
// ids requests carry, one per PrefixBlockTokens prompt tokens: at admission
// a request references the leading units already cached and skips their
// tokens (at least its last prompt token is always computed); the full
// units it computes are cached for others; unreferenced units stay until
// their blocks are needed, evicted least recently released first, before
// anyone is preempted. Plan.Cached reports what each new request found.
//
// Differences from vLLM, on purpose: under the Priority policy the victim is
// chosen among requests not yet scheduled in the step (vLLM may also evict
// one already scheduled); the prefix cache works in the workload's units
// (512 tokens for Mooncake's traces), not per 16-token block, and a unit
// computed twice concurrently is kept once; a request's peak KV is prompt +
// output - 1 tokens (the last token is sampled, never stored), and one
// whose peak exceeds the cache is rejected at Add with ErrNeverFits instead
// of waiting forever.
package engine
