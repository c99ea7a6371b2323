package engine

import (
	"errors"
	"fmt"
	"time"
)

// Remote requests: the decode side of prefill/decode disaggregation.
//
// Another replica prefilled the request: it computed the prompt's KV and
// sampled the first output token. This replica reserves blocks for the
// prompt, the driver moves the KV into them and says when it landed
// (Land), and the request then decodes its remaining output here. It
// mirrors vLLM V1's KV-connector flow on the consumer side (kv_role
// "kv_consumer"), checked against the vLLM snapshot of 24 May 2026
// (local-inference-lab/vllm, commit 28be48fa; line numbers are that
// commit's):
//
//   - The waiting loop reaches the request (vllm/v1/core/sched/
//     scheduler.py, schedule(), the waiting loop from line 548; it stops
//     at the sequence cap, line 549). Its local prefix-cache hits come
//     first (get_computed_blocks, which leaves at least one prompt token:
//     max_cache_hit_length = num_tokens − 1, kv_cache_manager.py:219),
//     then the connector reports the rest of the prompt as held remotely
//     and loaded asynchronously (vllm/distributed/kv_transfer/
//     kv_connector/v1/nixl/scheduler.py:356-388,
//     get_num_new_matched_tokens: count = len(prompt) −
//     num_computed_tokens, returned with load_kv_async = True when
//     count > 0).
//   - With load_kv_async, num_new_tokens = 0 (scheduler.py:645-648): the
//     request asks no token budget, and allocate_slots (line 721)
//     reserves its blocks under the usual gate (full_sequence_must_fit),
//     caching none of them yet (delay_cache_blocks). If they do not fit,
//     admission stops there ("if new_blocks is None: ... break", line
//     733). If they do, the request leaves the waiting queue in
//     RequestStatus.WAITING_FOR_REMOTE_KVS, into skipped_waiting, holding
//     its blocks, and the loop goes on ("continue" before
//     self.running.append, lines 763-781): it takes no sequence slot.
//   - When the connector reports the load finished (finished_recving,
//     _update_from_kv_xfer_finished, line 2133), the request is promoted
//     at its next turn (_try_promote_blocked_waiting_request, line 2100):
//     _update_waiting_for_remote_kv (line 2066) caches the loaded blocks
//     (kv_cache_manager.cache_blocks, line 2091), and the request is
//     scheduled with those tokens computed, as a new request.
//   - A step that schedules no token but starts loads still runs: the GPU
//     model runner calls kv_connector_no_forward
//     (vllm/v1/worker/gpu_model_runner.py:4153;
//     kv_connector_model_runner_mixin.py:38), no forward pass. servesim
//     prices it emptyStep.
//
// servesim's differences (listed in doc.go as well): the reservation holds
// the blocks of the prompt and of the first output token (the whole known
// sequence the gate counts), so that the request, once landed, needs no
// block to be admitted; the landed request's first step here is a decode
// of its first output token at context Input, where vLLM recomputes the
// last prompt token as a one-token prefill (num_computed_tokens −= 1 on a
// full hit, line 2096); landed requests are admitted before the waiting
// queue under every policy, where vLLM takes skipped_waiting before
// waiting under FCFS and compares the two heads under priority
// (_select_waiting_queue_for_scheduling, line 1625, the comparison at
// 1633): a landed request needs no block to run, so the blocks that
// reservations hold never stall a replica with nothing running, as
// vLLM's rule can when a waiting head that outranks them does not fit
// (the break at line 733); and Abort of a request whose KV is in transfer
// frees its blocks at once, where vLLM's finish_requests delays the free
// (delay_free_blocks, line 1837) until the connector reports the transfer
// finished (_update_from_kv_xfer_finished, line 2156), because the
// driver reuses a request's Ref once it ends. A differential run against
// vLLM's scheduler with a fake KV connector (upstream fef56c18, whose
// lines are 1580, 757, 1807 and 2134 for these; nine regimes of 2,654 to
// 14,786 steps) found every step's schedule and free blocks identical
// but for these two rules (under priority; in the steps between an
// aborted transfer's Abort and its end) and for prompts whose every block
// the prefix cache held, where the run's mapping, not vLLM itself,
// differs.
//
// A landed request admitted ahead of the queue runs after requests Added
// before it, so under FCFS a request preempted then can be one Added
// after a request that waits preempted: the waiting queue then orders
// them as vLLM's deque does, the last preempted first (waiting.go,
// pushFront), not by Add order.

// ErrRemoteOff is returned by Add for a Remote request when
// Config.RemoteKV is off.
var ErrRemoteOff = errors.New("engine: Remote request with Config.RemoteKV off (the replica is no KV consumer)")

// ErrRemoteOutput is returned by Add for a Remote request that serves
// fewer than 2 output tokens (Config.ServedOutput): the prefill replica
// emitted the first, nothing is left to decode, and the driver finishes
// the request there.
var ErrRemoteOutput = errors.New("engine: Remote request serves fewer than 2 output tokens: nothing is left to decode after the first")

// ErrNotReserved is returned by Land for a request that is not reserved
// (not yet reached by the waiting loop, not Remote, unknown) or has
// landed already.
var ErrNotReserved = errors.New("engine: Land of a request whose blocks are not reserved, or that landed already")

// Reservation is a Remote request whose blocks a plan reserved: the
// driver starts its transfer at Plan.Start and calls Land when it arrives.
type Reservation struct {
	Ref int32
	// Tokens is the prompt tokens whose KV must arrive: Input less Cached
	// (at least 1, as vLLM's connector loads at least one token).
	Tokens int
	// Cached is the prompt tokens this replica's prefix cache held: their
	// blocks are attached, not transferred.
	Cached int
	// Tier reports a load from the engine's Tier (SetTier, tier.go), not
	// a Remote request's transfer: Tokens are the tokens the tier
	// restores, after the Cached ones, and the request prefills the rest
	// of its prompt once it landed.
	Tier bool
}

// The stages of a Remote request (seq.rstate); 0 is an ordinary request,
// which a Remote request becomes once admitted after landing.
const (
	remoteNone     uint8 = iota
	remoteWaiting        // in the waiting queue, no blocks reserved yet
	remoteReserved       // blocks reserved, its KV in transfer (vLLM's WAITING_FOR_REMOTE_KVS)
	remoteLanded         // its KV landed: waits for admission, holding its blocks
)

// remoteState is the engine's Remote requests that left the waiting
// queue: those whose KV is in transfer, in the order they were reserved,
// and those whose KV landed, in policy order.
type remoteState struct {
	reserved []*seq
	landed   []*seq
	async    bool // Config.RemoteKV or a Tier: requests may wait for their KV outside the queue (decideFast sets it)
}

// addRemote is the rest of Add for a Remote request r, its Output cut at
// MaxModelLen: Add's steps (out of its line, so that an ordinary request
// tests Remote once), but that its first output token exists (sampled at
// the prefill replica) and none of its tokens is computed here.
//
//go:noinline
func (e *Engine) addRemote(r *Request) error {
	if !e.cfg.RemoteKV {
		return ErrRemoteOff
	}
	if r.Output < 2 {
		return fmt.Errorf("%w: request %d, Output %d (ServedOutput %d)", ErrRemoteOutput, r.Ref, r.Output, e.cfg.ServedOutput(r.Input, r.Output))
	}
	if e.cfg.DisableChunkedPrefill && r.Input+r.Output-1 > e.cfg.MaxBatchedTokens {
		return ErrExceedsBudget // it may be preempted and recompute here
	}
	if e.cfg.MaxWaiting > 0 && e.waiting.len() >= e.cfg.MaxWaiting {
		return ErrQueueFull
	}
	s := e.newSeq()
	s.req = *r
	e.queueRemote(s)
	return nil
}

// queueRemote is the rest of addRemote for s, a spare seq holding the
// Remote request, its Output cut: its first output token exists (sampled
// at the prefill replica) and none of its tokens is computed here; it
// waits in the queue. (commitRemote's too, in place.)
func (e *Engine) queueRemote(s *seq) {
	s.order = e.nextSeq
	s.known, s.emitted, s.rstate = s.req.Input+1, 1, remoteWaiting
	e.setShared(s)
	e.outstanding += s.left()
	e.nextSeq++
	e.reqs.put(s.req.Ref, s)
	e.waiting.push(s)
}

// reserve is the waiting loop's step for s, the Remote request at the
// head of the waiting queue with no blocks yet: it reserves the blocks of
// its known sequence (prompt and first output token) less its prefix-cache
// hits if they fit under the gate, and reports false when they do not
// (admission stops there). It schedules no token.
func (e *Engine) reserve(s *seq) bool {
	// Its hits leave at least its last prompt token to transfer: hits
	// leaves the last of s.known, read here as the prompt's.
	s.known = s.req.Input
	hit, pinned := e.hits(s)
	s.known = s.req.Input + 1
	keep := e.keepFree()
	if e.blocksFor(s.known)-hit+pinned+keep > e.available() {
		return false
	}
	e.waiting.pop()
	e.attach(s, hit)
	e.take(s, e.need(s, s.known))
	cached := hit * e.cfg.BlockSize
	s.cached = int32(cached)
	s.phase, s.rstate = phaseReserved, remoteReserved
	e.reserved = append(e.reserved, s)
	e.plan.Reserved = append(e.plan.Reserved, Reservation{Ref: s.req.Ref, Tokens: s.req.Input - cached, Cached: cached})
	return true
}

// Land says the KV of Remote request ref arrived at now: its prompt is
// computed, its blocks of shared content are cached (vLLM's
// _update_waiting_for_remote_kv), and it waits for admission holding its
// blocks, ahead of the waiting queue. It is allowed with a step in flight
// (the request is considered from the next plan); inside a run of decode
// steps (Runner.ScheduleUntil), a driver that moves as step by step
// brings the run to now first (Runner.SyncTo: the landing caches blocks)
// and cuts it after (Runner.Truncate), as at an arrival. Land of a request that
// is not reserved, or landed already, is refused (ErrNotReserved). The
// instant is accepted for symmetry with the other calls.
func (e *Engine) Land(now time.Duration, ref int32) error {
	s, ok := e.reqs.get(ref)
	if !ok || s.rstate != remoteReserved && s.rstate != tierReserved {
		return fmt.Errorf("%w: %d", ErrNotReserved, ref)
	}
	e.reserved = removeSeq(e.reserved, s)
	if s.rstate == tierReserved {
		e.landTier(s)
		e.insertLanded(s)
		return nil
	}
	e.outstanding -= s.left()
	s.computed = s.req.Input
	e.outstanding += s.left()
	e.publish(s, s.req.Input)
	s.phase, s.rstate = phaseLanded, remoteLanded
	e.insertLanded(s)
	return nil
}

// insertLanded puts s, landed, in policy order among the landed (Add
// order under FCFS).
func (e *Engine) insertLanded(s *seq) {
	i := len(e.landed)
	if i > 0 {
		q := s.queued()
		for i > 0 && e.landedBefore(q, s, e.landed[i-1]) {
			i--
		}
	}
	e.landed = append(e.landed, s)
	if i < len(e.landed)-1 {
		copy(e.landed[i+1:], e.landed[i:])
		e.landed[i] = s
	}
}

// landedBefore reports whether s, with key q, is admitted before t.
func (e *Engine) landedBefore(q Queued, s, t *seq) bool {
	if e.fcfs {
		return s.order < t.order
	}
	tq := t.queued()
	if e.cfg.Policy.Less(q, tq) {
		return true
	}
	return !e.cfg.Policy.Less(tq, q) && s.order < t.order
}

// admitAsync is planChunked's waiting loop when requests may wait for
// their KV outside the queue (Config.RemoteKV, or a Tier), with what is
// left of the step's budget: the landed requests first (admitLanded),
// then the waiting queue in policy order, as planChunked's own loop
// admits it, but that a Remote request at its head has its blocks
// reserved (reserve), and a request the tier holds blocks of has them
// reserved for loading (reserveTier), each asking no budget and no
// sequence slot, and the loop goes on behind it. A request the tier asks
// to skip is passed over and waits at the queue's front again after the
// loop, as vLLM's step_skipped_waiting. Admission stops, as there, at the
// first request that does not fit.
//
//go:noinline
func (e *Engine) admitAsync(budget int) {
	if len(e.landed) > 0 {
		var ok bool
		if budget, ok = e.admitLanded(budget); !ok {
			return
		}
	}
	e.skipped = e.skipped[:0]
	for e.waiting.len() > 0 && budget > 0 && e.nrunning() < e.cfg.MaxSeqs {
		s := e.waiting.peek()
		if s.rstate != remoteNone {
			if !e.reserve(s) {
				break
			}
			continue
		}
		if e.tier != nil {
			reserved, skip, stop := e.reserveTier(s)
			if stop {
				e.refusedHead = s
				break
			}
			if skip {
				e.skipped = append(e.skipped, e.waiting.pop())
				continue
			}
			if reserved {
				continue
			}
		}
		n, ok := e.tryAdmit(budget, e.cfg.DisableChunkedPrefill)
		if !ok {
			e.refusedHead = s
			break
		}
		budget -= n
	}
	// Every request still waiting was behind the skipped ones, so each
	// goes back to its place: keyed by its Add order, or, preempted (its
	// key below every Add order), at the front again, the last skipped
	// pushed first.
	for i := len(e.skipped) - 1; i >= 0; i-- {
		if s := e.skipped[i]; s.preempts > 0 {
			e.waiting.pushFront(s)
		} else {
			e.waiting.push(s)
		}
		e.skipped[i] = nil
	}
}

// admitLanded admits the landed requests, in order, while the budget
// and the sequence cap allow: a Remote request if its blocks (all held
// since the reservation) and the watermark fit, asking one token, the
// decode of its first output token at context Input; a tier load as
// admitTierLanded admits it. It returns the budget left and false when
// admission must stop (the blocks or the watermark did not fit).
func (e *Engine) admitLanded(budget int) (int, bool) {
	for len(e.landed) > 0 && budget > 0 && e.nrunning() < e.cfg.MaxSeqs {
		s := e.landed[0]
		if s.rstate == tierLanded {
			n, ok := e.admitTierLanded(s, budget)
			if !ok {
				return budget, false
			}
			budget -= n
			continue
		}
		keep := e.keepFree()
		if e.need(s, s.known)+keep > e.available() {
			return budget, false
		}
		// s is the head: removeSeq without its search (12,062 then
		// 12,030 instructions a request in BenchmarkRegime/Disagg).
		n := len(e.landed) - 1
		if n > 0 { // mostly it is alone: a copy of none still called the runtime's typedslicecopy
			copy(e.landed, e.landed[1:])
		}
		e.landed[n] = nil
		e.landed = e.landed[:n]
		s.phase, s.rstate = phaseRunning, remoteNone
		s.admitted = e.move + 1
		e.running = append(e.running, s)
		e.start(s, int(s.cached))
		e.schedule(s, 1)
		budget--
	}
	return budget, true
}

// unreserve undoes the reservations of a plan that cannot run (its price
// was nonsense: abandonPlan): the driver, refused the plan, starts no
// transfer, so each request it reserved returns to the waiting queue
// without its blocks, to be reserved again by a later plan.
func (e *Engine) unreserve() {
	for _, r := range e.plan.Reserved {
		s, _ := e.reqs.get(r.Ref)
		e.reserved = removeSeq(e.reserved, s)
		if r.Tier {
			e.unreserveTier(s)
			continue
		}
		e.drop(s)
		e.outstanding -= s.left()
		s.computed, s.cached = 0, 0
		e.outstanding += s.left()
		s.phase, s.rstate, s.admitted = phaseWaiting, remoteWaiting, 0
		e.waiting.push(s)
	}
	e.plan.Reserved = e.plan.Reserved[:0]
}

// abortRemote frees the blocks of s, reserved or landed, and takes it out
// of its list.
func (e *Engine) abortRemote(s *seq) {
	if s.rstate == remoteReserved || s.rstate == tierReserved {
		e.reserved = removeSeq(e.reserved, s)
		if s.rstate == tierReserved {
			e.tier.Release(s.req.Ref)
		}
	} else {
		e.landed = removeSeq(e.landed, s)
	}
	e.drop(s)
}

// removeSeq removes s from list, keeping the order.
func removeSeq(list []*seq, s *seq) []*seq {
	for i, x := range list {
		if x == s {
			if i < len(list)-1 { // mostly the last: a copy of none still called the runtime's typedslicecopy
				copy(list[i:], list[i+1:])
			}
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	panic("engine: invariant remote-membership broken: a Remote request is not in its list")
}

// Reserved is the number of Remote requests whose blocks are reserved and
// whose KV has not landed yet.
func (e *Engine) Reserved() int { return len(e.reserved) }

// waitingKV reports whether some request waits for its KV to land: the
// engine may then hold requests and have no step to plan.
func (e *Engine) waitingKV() bool { return len(e.reserved) > 0 }
