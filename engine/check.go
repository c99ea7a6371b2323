package engine

import (
	"errors"
	"fmt"
)

// Check verifies the engine's invariants and returns every violation:
//   - every request is in exactly one place (waiting queue or running list)
//     and the lookup table holds exactly those;
//   - KV blocks owned + cached + free = total, and each request holds
//     ceil(tokens / BlockSize) blocks (own plus shared through the prefix
//     cache) for the tokens computed or scheduled;
//   - every cache unit's reference count is the number of requests
//     referencing it, and exactly the unreferenced ones are evictable;
//   - token accounting: known = Input + emitted, computed <= known,
//     emitted < Output for every request still held, waiting requests hold
//     no blocks, the running list respects MaxSeqs.
//
// It is O(requests); tests call it after every step.
func (e *Engine) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: "+format, a...)) }
	// Each request and cache unit is marked with this check's generation
	// when visited (no map: tests call Check after every step).
	e.checkGen++
	gen := e.checkGen
	where := [...]string{1: "running", 2: "waiting"}
	seen := 0
	held := 0
	for i, s := range e.running {
		if s.checkGen == gen {
			bad("request %d in the running list twice (also %s)", s.req.Ref, where[s.checkIn])
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 1
		if s.phase != phaseRunning {
			bad("request %d in the running list at index %d is not marked running", s.req.Ref, i)
		}
		held += s.blocks
		errs = append(errs, e.checkSeq(s)...)
	}
	for i, s := range e.waiting.items {
		if s.checkGen == gen {
			bad("request %d in the waiting queue and %s", s.req.Ref, where[s.checkIn])
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 2
		if s.phase != phaseWaiting || s.heapIdx != i {
			bad("request %d in the waiting queue at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
		if s.blocks != 0 || s.computed != 0 || len(s.units) != 0 {
			bad("waiting request %d holds %d blocks, %d cache units and %d computed tokens", s.req.Ref, s.blocks, len(s.units), s.computed)
		}
		errs = append(errs, e.checkSeq(s)...)
	}
	if seen != len(e.reqs) {
		bad("%d requests in queues but %d in the lookup table", seen, len(e.reqs))
	}
	for ref, s := range e.reqs {
		if s.req.Ref != ref {
			bad("lookup table maps %d to request %d", ref, s.req.Ref)
		}
		if s.checkGen != gen {
			bad("request %d is in no queue", ref)
		}
	}
	if held+e.cache.blocks+e.free != e.cfg.KVBlocks {
		bad("KV blocks owned %d + cached %d + free %d != total %d", held, e.cache.blocks, e.free, e.cfg.KVBlocks)
	}
	errs = append(errs, e.checkCache(gen)...)
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
	switch {
	case s.computed < 0:
		bad("computed %d tokens", s.computed)
	case s.decoding && s.sched > 0:
		// A run of decode steps computes one token and samples the next
		// per step: only the first of its tokens exists yet.
		if s.computed+1 != s.known {
			bad("decodes %d steps with %d of %d known tokens computed", s.sched, s.computed, s.known)
		}
	case s.computed+s.sched > s.known:
		bad("computed %d + scheduled %d exceed known %d", s.computed, s.sched, s.known)
	}
	if s.emitted >= s.req.Output {
		bad("emitted %d of %d tokens but still held", s.emitted, s.req.Output)
	}
	if want := e.blocksFor(s.computed + s.sched); s.blocks+s.shared != want {
		bad("holds %d own + %d shared blocks for %d tokens, want %d", s.blocks, s.shared, s.computed+s.sched, want)
	}
	shared := 0
	for _, u := range s.units {
		shared += u.blocks
	}
	if shared != s.shared {
		bad("references %d cached blocks but counts %d", shared, s.shared)
	}
	return errs
}

// checkCache verifies reference counts, the eviction list and the block sums
// of the prefix cache.
func (e *Engine) checkCache(gen uint32) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: prefix cache: "+format, a...)) }
	// Count each unit's holders in its check fields, reset on first visit.
	visit := func(u *unit) {
		if u.checkGen != gen {
			u.checkGen, u.checkRefs, u.checkListed = gen, 0, false
		}
	}
	for _, s := range e.running {
		for _, u := range s.units {
			visit(u)
			u.checkRefs++
		}
	}
	listed, evictable := 0, 0
	for u := e.cache.head; u != nil; u = u.next {
		visit(u)
		if u.checkListed {
			bad("eviction list has a cycle")
			break
		}
		u.checkListed = true
		listed++
		evictable += u.blocks
	}
	blocks := 0
	for h, u := range e.cache.units {
		visit(u)
		blocks += u.blocks
		if u.hash != h {
			bad("unit %d filed under %d", u.hash, h)
		}
		if u.refs != u.checkRefs {
			bad("unit %d counts %d references, %d requests hold it", h, u.refs, u.checkRefs)
		}
		if (u.refs == 0) != u.checkListed {
			bad("unit %d with %d references is evictable: %v", h, u.refs, u.checkListed)
		}
	}
	if blocks != e.cache.blocks || evictable != e.cache.evictable || listed > len(e.cache.units) {
		bad("counts %d blocks (%d evictable), units hold %d (%d evictable)", e.cache.blocks, e.cache.evictable, blocks, evictable)
	}
	return errs
}
