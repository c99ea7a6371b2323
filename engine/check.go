package engine

import (
	"errors"
	"fmt"
)

// Check verifies the engine's invariants and returns every violation:
//   - every request is in exactly one place (waiting queue or running list)
//     and the lookup table holds exactly those;
//   - KV blocks held + free = total, and each request holds
//     ceil(tokens / BlockSize) blocks for the tokens computed or scheduled;
//   - token accounting: known = Input + emitted, computed <= known,
//     emitted < Output for every request still held, waiting requests hold
//     no blocks, the running list respects MaxSeqs.
//
// It is O(requests); tests call it after every step.
func (e *Engine) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: "+format, a...)) }
	seen := make(map[*seq]string, len(e.reqs))
	held := 0
	for i, s := range e.running {
		if where, dup := seen[s]; dup {
			bad("request %d in the running list twice (also %s)", s.req.Ref, where)
		}
		seen[s] = "running"
		if s.phase != phaseRunning {
			bad("request %d in the running list at index %d is not marked running", s.req.Ref, i)
		}
		held += s.blocks
		errs = append(errs, e.checkSeq(s)...)
	}
	for i, s := range e.waiting.items {
		if where, dup := seen[s]; dup {
			bad("request %d in the waiting queue and %s", s.req.Ref, where)
		}
		seen[s] = "waiting"
		if s.phase != phaseWaiting || s.heapIdx != i {
			bad("request %d in the waiting queue at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
		if s.blocks != 0 || s.computed != 0 {
			bad("waiting request %d holds %d blocks and %d computed tokens", s.req.Ref, s.blocks, s.computed)
		}
		errs = append(errs, e.checkSeq(s)...)
	}
	if len(seen) != len(e.reqs) {
		bad("%d requests in queues but %d in the lookup table", len(seen), len(e.reqs))
	}
	for ref, s := range e.reqs {
		if s.req.Ref != ref {
			bad("lookup table maps %d to request %d", ref, s.req.Ref)
		}
		if _, ok := seen[s]; !ok {
			bad("request %d is in no queue", ref)
		}
	}
	if held+e.free != e.cfg.KVBlocks {
		bad("KV blocks used %d + free %d != total %d", held, e.free, e.cfg.KVBlocks)
	}
	if len(e.running) > e.cfg.MaxSeqs {
		bad("running list %d exceeds MaxSeqs %d", len(e.running), e.cfg.MaxSeqs)
	}
	return errors.Join(errs...)
}

func (e *Engine) checkSeq(s *seq) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("engine: request %d: "+format, append([]any{s.req.Ref}, a...)...))
	}
	if s.known != s.req.Input+s.emitted {
		bad("known tokens %d != input %d + emitted %d", s.known, s.req.Input, s.emitted)
	}
	if s.computed+s.sched > s.known || s.computed < 0 {
		bad("computed %d + scheduled %d outside [0, known %d]", s.computed, s.sched, s.known)
	}
	if s.emitted >= s.req.Output {
		bad("emitted %d of %d tokens but still held", s.emitted, s.req.Output)
	}
	if want := e.blocksFor(s.computed + s.sched); s.blocks != want {
		bad("holds %d blocks for %d tokens, want %d", s.blocks, s.computed+s.sched, want)
	}
	return errs
}
