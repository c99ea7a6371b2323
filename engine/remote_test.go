package engine

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// checked fails t unless e's invariants hold, blocks held + free =
// KVBlocks among them.
func checked(t *testing.T, e *Engine, after string) {
	t.Helper()
	require.NoError(t, e.Check(), "after %s", after)
}

// TestRemoteReserveLandDecode: on an idle Atlas replica (frozen costs), a
// Remote request of 2,000 prompt tokens and 10 output tokens reserves at
// t = 0 the blocks of its prompt and first token, ⌈2001/16⌉ = 126, in an
// empty step of 1 µs; nothing runs until its KV lands at 100 ms; then it
// decodes its 9 remaining tokens, one a step, each a decode step at batch
// 1 (45 ms), the first at context 2,000, none of them First: its last
// token at 100 + 9 × 45 = 505 ms.
func TestRemoteReserveLandDecode(t *testing.T) {
	e, err := New(Config{RemoteKV: true}, nil)
	require.NoError(t, err)
	total := e.FreeBlocks()
	require.NoError(t, e.Add(0, Request{Ref: 7, Input: 2000, Output: 10, Remote: true}))
	assert.Equal(t, 2000+10-1, e.Outstanding(0), "its prompt's KV and 9 tokens are still to come")
	checked(t, e, "Add")
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, []Reservation{{Ref: 7, Tokens: 2000, Cached: 0}}, p.Reserved)
	assert.Equal(t, time.Microsecond, p.StepTime, "a reserve-only step is empty")
	assert.Empty(t, p.Started)
	assert.Zero(t, p.Batch.Tokens())
	assert.Equal(t, total-126, e.FreeBlocks(), "blocksFor(2001)")
	assert.Equal(t, 1, e.Reserved())
	assert.Equal(t, 1, e.Waiting(), "a reserved request counts as waiting, as vLLM's skipped_waiting")
	checked(t, e, "the reserve step's plan")
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	assert.Empty(t, o.Emitted)
	checked(t, e, "the reserve step")

	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Nil(t, p, "nothing can run before the KV lands")
	checked(t, e, "a nil plan")

	land := 100 * time.Millisecond
	require.NoError(t, e.Land(land, 7))
	assert.Equal(t, 0, e.Reserved())
	assert.Equal(t, 9, e.Outstanding(0), "its prompt is computed: 9 tokens to decode")
	checked(t, e, "Land")
	require.ErrorIs(t, e.Land(land, 7), ErrNotReserved, "landed already")

	now, steps := land, 0
	for {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			break
		}
		require.Equal(t, 45*time.Millisecond, p.StepTime, "step %d", steps)
		require.Equal(t, []int{2000 + steps}, p.Batch.Decode, "step %d decodes its token at context 2000 + step", steps)
		require.Empty(t, p.Batch.Prefill)
		if steps == 0 {
			assert.Equal(t, []int32{7}, p.Started, "first scheduled here at its first decode")
			assert.Equal(t, []int{0}, p.Cached)
			sc, ok := e.Scheduled(nil)
			require.True(t, ok)
			assert.Equal(t, []Scheduled{{Ref: 7, Tokens: 1, Computed: 2000, Cached: 0, Decode: true, Kind: ScheduledNew}}, sc)
		} else {
			assert.Empty(t, p.Started)
		}
		assert.Equal(t, total-126, e.FreeBlocks(), "the 126 reserved blocks cover tokens up to 2,016")
		checked(t, e, "a decode's plan")
		now = p.End
		o, err := e.Complete(now)
		require.NoError(t, err)
		require.Len(t, o.Emitted, 1)
		em := o.Emitted[0]
		assert.Equal(t, Emit{Ref: 7, Tokens: 1, First: false, Done: steps == 8}, em, "step %d", steps)
		checked(t, e, "a decode")
		steps++
	}
	assert.Equal(t, 9, steps, "ServedOutput − 1 decodes")
	assert.Equal(t, land+9*45*time.Millisecond, now)
	assert.Equal(t, total, e.FreeBlocks())
	assert.True(t, e.Idle())
}

// TestRemoteGateBlocksAdmission: on a replica of 200 blocks, a request A
// of 1,200 prompt tokens runs holding 75 blocks (76 once it decodes); a
// Remote request R of 2,000 needs ⌈2001/16⌉ = 126 blocks, more than the
// 125 (then 124) free, so nothing is reserved, and C, an ordinary request
// of 16 tokens behind it that one block would serve, is not admitted
// either: admission stops at the first request that does not fit, as
// vLLM's waiting loop breaks when allocate_slots returns None. When A
// leaves (its third token at 62 + 45 + 45 = 152 ms: a 1,200-token
// prefill is 20 + 0.035 × 1,200 = 62 ms), all 200 blocks are free: the
// next plan reserves R's 126 and admits C behind it.
func TestRemoteGateBlocksAdmission(t *testing.T) {
	e, err := New(Config{RemoteKV: true, KVBlocks: 200}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 1200, Output: 3}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 2000, Output: 10, Remote: true}))
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 16, Output: 2}))
	now := time.Duration(0)
	wantEnds := []time.Duration{62 * time.Millisecond, 107 * time.Millisecond, 152 * time.Millisecond}
	for i, end := range wantEnds {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		assert.Empty(t, p.Reserved, "step %d: 126 blocks > %d free", i, e.FreeBlocks())
		if i == 0 {
			assert.Equal(t, []int32{1}, p.Started, "C waits behind R")
		} else {
			assert.Empty(t, p.Started)
		}
		assert.Equal(t, end, p.End)
		checked(t, e, "a plan")
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		checked(t, e, "a step")
		now = p.End
	}
	assert.Equal(t, 200, e.FreeBlocks(), "A left")
	p, err := e.Schedule(now)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 2, Tokens: 2000}}, p.Reserved)
	assert.Equal(t, []int32{3}, p.Started)
	assert.Equal(t, 200-126-1, e.FreeBlocks())
	assert.Equal(t, costmodel.Frozen{}.StepTime(costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: 16}}}), p.StepTime, "C's prefill, 20.56 ms: the reservation costs the step nothing")
	checked(t, e, "the plan that reserves")
}

// TestRemoteWatermark: with something running, the watermark applies to
// a reservation as to any admission; with nothing running it is waived.
func TestRemoteWatermark(t *testing.T) {
	// 100 blocks, watermark 10 %: 10 kept free while anything runs.
	e, err := New(Config{RemoteKV: true, KVBlocks: 100, Watermark: 0.1}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 16 * 20, Output: 50})) // 20 blocks
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 16*71 - 1, Output: 5, Remote: true}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	// After ref 1's 20 blocks, 80 are free: ref 2 needs 71 + 10 kept > 80.
	assert.Empty(t, p.Reserved)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Abort(p.End, 1))
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 2, Tokens: 16*71 - 1}}, p.Reserved, "71 of 100 free blocks, nothing running: no watermark")
	checked(t, e, "the reservation")
}

// TestRemoteAbort: aborting a reserved request, or a landed one waiting
// for admission, frees its blocks; Land of it is refused after.
func TestRemoteAbort(t *testing.T) {
	e, err := New(Config{RemoteKV: true, KVBlocks: 100}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 5, Remote: true}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 100, Output: 5, Remote: true}))
	require.ErrorIs(t, e.Land(0, 1), ErrNotReserved, "not reserved yet")
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.Len(t, p.Reserved, 2)
	assert.Equal(t, 100-2*7, e.FreeBlocks(), "⌈101/16⌉ = 7 blocks each")
	require.NoError(t, e.Abort(0, 1)) // with the reserve step in flight
	assert.Equal(t, 100-7, e.FreeBlocks())
	checked(t, e, "the abort of a reserved request")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.ErrorIs(t, e.Land(p.End, 1), ErrNotReserved, "aborted")
	require.NoError(t, e.Land(p.End, 2))
	require.NoError(t, e.Abort(p.End, 2))
	assert.Equal(t, 100, e.FreeBlocks())
	assert.True(t, e.Idle())
	assert.Zero(t, e.Outstanding(0))
	checked(t, e, "the abort of a landed request")
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Nil(t, p)
}

// TestRemoteRefusals: a Remote request needs Config.RemoteKV, and at
// least two output tokens served (the first came from the prefill
// replica); the error names the field.
func TestRemoteRefusals(t *testing.T) {
	off, err := New(Config{}, nil)
	require.NoError(t, err)
	require.ErrorIs(t, off.Add(0, Request{Ref: 1, Input: 10, Output: 5, Remote: true}), ErrRemoteOff)
	assert.True(t, off.Idle())
	e, err := New(Config{RemoteKV: true, KVBlocks: 10, BlockSize: 16}, nil) // MaxModelLen 160
	require.NoError(t, err)
	err = e.Add(0, Request{Ref: 1, Input: 10, Output: 1, Remote: true})
	require.ErrorIs(t, err, ErrRemoteOutput)
	assert.Contains(t, err.Error(), "request 1, Output 1 (ServedOutput 1)")
	// Output 5 cut at MaxModelLen to 1: nothing left to decode either.
	err = e.Add(0, Request{Ref: 2, Input: 159, Output: 5, Remote: true})
	require.ErrorIs(t, err, ErrRemoteOutput)
	assert.Contains(t, err.Error(), "request 2, Output 1 (ServedOutput 1)", "Output is cut at MaxModelLen first")
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 158, Output: 5, Remote: true}), "two tokens served")
	require.ErrorIs(t, e.Land(0, 99), ErrNotReserved)
	require.ErrorIs(t, e.Land(0, 3), ErrNotReserved)
	checked(t, e, "the refusals")
}

// TestRemotePrefixHits: a Remote request's prompt found in the prefix
// cache is attached, not transferred, leaving at least one token to
// arrive (vLLM's connector loads len(prompt) − num_computed_tokens > 0);
// once landed, its blocks of shared content are cached, so a second
// Remote request of the same prompt finds them.
func TestRemotePrefixHits(t *testing.T) {
	e, err := New(Config{RemoteKV: true, KVBlocks: 100}, nil)
	require.NoError(t, err)
	prefix := []uint64{11, 12, 13, 14} // 4 units of 16 tokens: the whole 64-token prompt
	n, err := e.Warm(prefix[:2], 16, 32)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	r := Request{Ref: 1, Input: 64, Output: 3, Remote: true, Prefix: prefix, PrefixBlockTokens: 16}
	require.NoError(t, e.Add(0, r))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 1, Tokens: 32, Cached: 32}}, p.Reserved, "two warmed blocks attached")
	assert.Equal(t, 100-5, e.FreeBlocks(), "⌈65/16⌉ = 5 blocks: 2 cached, 3 taken")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Land(p.End, 1))
	assert.Equal(t, 4, e.CachedBlocks(), "the landed prompt's 4 blocks of shared content are cached")
	checked(t, e, "Land")
	r.Ref = 2
	require.NoError(t, e.Add(p.End, r))
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Equal(t, []int32{1}, p.Started)
	assert.Equal(t, []int{32}, p.Cached, "what its reservation found cached")
	assert.Equal(t, []Reservation{{Ref: 2, Tokens: 16, Cached: 48}}, p.Reserved, "3 of 4 blocks: the last prompt token arrives")
	checked(t, e, "the second reservation")
}

// TestRemoteLandedPreemptedRecomputes: a landed request that is preempted
// is an ordinary request: it recomputes its prompt and the tokens it has
// (less its own blocks still cached) locally, as a prefill.
func TestRemoteLandedPreemptedRecomputes(t *testing.T) {
	// 20 blocks of 16. R: 160 prompt tokens (⌈161/16⌉ = 11 blocks), 40
	// output; A: 128 tokens (8 blocks), 40 output, admitted first.
	e, err := New(Config{RemoteKV: true, KVBlocks: 20, DisablePrefixCache: true}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 128, Output: 40}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 160, Output: 40, Remote: true}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.Equal(t, []Reservation{{Ref: 2, Tokens: 160}}, p.Reserved, "8 + 11 of 20 blocks")
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	require.Equal(t, []Emit{{Ref: 1, Tokens: 1, First: true}}, o.Emitted)
	require.NoError(t, e.Land(p.End, 2))
	now := p.End
	preempted := false
	emitted := map[int32]int{1: 1}
	for range 200 {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			break
		}
		for _, ref := range p.Preempted {
			assert.Equal(t, int32(2), ref, "R, admitted after A, is the FCFS victim")
			preempted = true
		}
		if preempted && len(p.Batch.Prefill) > 0 {
			for _, c := range p.Batch.Prefill {
				assert.Zero(t, c.Context, "R recomputes from its first token")
			}
		}
		checked(t, e, "a plan")
		now = p.End
		o, err := e.Complete(now)
		require.NoError(t, err)
		for _, em := range o.Emitted {
			emitted[em.Ref] += em.Tokens
			assert.False(t, em.First && em.Ref == 2, "R's first token came from the prefill replica")
		}
		checked(t, e, "a step")
	}
	assert.True(t, preempted, "the two outgrow 20 blocks: 8 + 3 + 11 + 3")
	assert.Equal(t, map[int32]int{1: 40, 2: 39}, emitted)
	assert.True(t, e.Idle())
	assert.Equal(t, 20, e.FreeBlocks())
}

// TestRemoteDeterministic: the same calls give the same plans and
// outcomes, reservations and all.
func TestRemoteDeterministic(t *testing.T) {
	run := func() []string {
		e, err := New(Config{RemoteKV: true, KVBlocks: 300, MaxSeqs: 4}, nil)
		require.NoError(t, err)
		var log []string
		lands := map[int32]time.Duration{}
		now := time.Duration(0)
		for i := range int32(12) {
			require.NoError(t, e.Add(now, Request{Ref: i, Input: 100 + 97*int(i), Output: 3 + int(i), Remote: i%3 != 0}))
		}
		for range 500 {
			for ref, at := range lands {
				if at <= now {
					require.NoError(t, e.Land(now, ref))
					delete(lands, ref)
				}
			}
			p, err := e.Schedule(now)
			require.NoError(t, err)
			if p == nil {
				if len(lands) == 0 {
					break
				}
				for _, at := range lands {
					now = max(now, at)
				}
				continue
			}
			for _, r := range p.Reserved {
				lands[r.Ref] = p.Start + time.Duration(r.Tokens)*time.Microsecond
			}
			log = append(log, p.Start.String(), p.End.String())
			o, err := e.Complete(p.End)
			require.NoError(t, err)
			for _, em := range o.Emitted {
				log = append(log, string(rune('a'+em.Ref)))
			}
			now = p.End
			checked(t, e, "a step")
		}
		require.True(t, e.Idle())
		return log
	}
	a, b := run(), run()
	require.NotEmpty(t, a)
	assert.Equal(t, a, b)
}

// TestRemoteOffChangesNothing: with RemoteKV on and no Remote request,
// every plan and outcome equals the engine's with it off (the fast paths
// aside, which only the batched contract reads).
func TestRemoteOffChangesNothing(t *testing.T) {
	run := func(remote bool) []time.Duration {
		e, err := New(Config{RemoteKV: remote, KVBlocks: 400, MaxSeqs: 8}, nil)
		require.NoError(t, err)
		for i := range int32(20) {
			require.NoError(t, e.Add(0, Request{Ref: i, Input: 50 + 61*int(i), Output: 5 + 3*int(i)}))
		}
		var ends []time.Duration
		now := time.Duration(0)
		for {
			p, err := e.Schedule(now)
			require.NoError(t, err)
			if p == nil {
				return ends
			}
			o, err := e.Complete(p.End)
			require.NoError(t, err)
			ends = append(ends, p.End, time.Duration(len(o.Emitted)), time.Duration(len(p.Preempted)))
			now = p.End
		}
	}
	assert.Equal(t, run(false), run(true))
}

// TestRemoteReservationOfARefusedPlan: a plan its model prices at no time
// is refused (ErrBadStepTime), and with it the reservations it made: the
// driver, told nothing of them, starts no transfer, so the request waits
// again without blocks and the next plan reserves it.
func TestRemoteReservationOfARefusedPlan(t *testing.T) {
	broken := true
	m := costmodel.Func(func(b costmodel.Batch) time.Duration {
		if broken {
			return 0
		}
		return costmodel.Frozen{}.StepTime(b)
	})
	e, err := New(Config{RemoteKV: true, KVBlocks: 100}, m)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 30, Output: 2}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 100, Output: 5, Remote: true}))
	_, err = e.Schedule(0)
	require.ErrorIs(t, err, ErrBadStepTime)
	assert.Equal(t, 0, e.Reserved())
	assert.Equal(t, 100, e.FreeBlocks(), "request 1's blocks returned, request 2's reservation undone")
	assert.Equal(t, 30+2+100+5-1, e.Outstanding(0))
	checked(t, e, "a refused plan")
	broken = false
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 2, Tokens: 100}}, p.Reserved)
	checked(t, e, "the plan again")
}

// TestRemoteRunnerRunsAsSteps: a KV consumer driven through the batched
// contract (Runner, strict) plans runs of decode steps, which a landing
// cuts as an arrival does (SyncTo, Land, Truncate at its instant), and
// emits every token at the instant a twin driven step by step (Schedule,
// Complete, a step a move, every emit listed) emits it. Continue plans
// the cohort's next run at a step end when no landed request waits (with
// omitted streaks, which the cohort needs), and a landing inside it cuts
// it as any run; a join always cuts; a plan that reserves is one step,
// and one that admits a landed request may be a run.
// Thirty-two Remote requests of 200/40 tokens, their KV landing 7 ms
// apart from 5 ms on, emit 32 × 39 tokens in each, none First; the runner
// takes fewer moves than the twin's steps. With omitted streaks the
// runner's outcomes count the same tokens.
func TestRemoteRunnerRunsAsSteps(t *testing.T) {
	for _, omit := range []bool{false, true} {
		e, err := New(Config{RemoteKV: true, KVBlocks: 2000}, nil)
		require.NoError(t, err)
		twin, err := New(Config{RemoteKV: true, KVBlocks: 2000}, nil)
		require.NoError(t, err)
		r := e.Runner()
		r.SetStrict(true)
		r.OmitStreaks(omit)
		assert.Equal(t, omit, r.Continues())
		for i := range int32(32) {
			require.NoError(t, e.Add(0, Request{Ref: i, Input: 200, Output: 40, Remote: true}))
			require.NoError(t, twin.Add(0, Request{Ref: i, Input: 200, Output: 40, Remote: true}))
		}
		landAt := func(ref int32) time.Duration { return 5*time.Millisecond + time.Duration(ref)*7*time.Millisecond }
		type token struct {
			ref int32
			at  time.Duration
		}
		// The twin, step by step: a landing due by a step's end lands
		// at its instant, weighed from the next plan.
		var want []token
		var pending []int32
		landNext := func(x *Engine) time.Duration { // the next landing, on an idle engine or inside a step
			at := landAt(pending[0])
			require.NoError(t, x.Land(at, pending[0]))
			pending = pending[1:]
			return at
		}
		now := time.Duration(0)
		for guard := 0; !twin.Idle(); guard++ {
			require.Less(t, guard, 100000)
			p, err := twin.Schedule(now)
			require.NoError(t, err)
			if p == nil {
				now = landNext(twin)
				continue
			}
			for _, res := range p.Reserved {
				pending = append(pending, res.Ref)
			}
			for len(pending) > 0 && landAt(pending[0]) <= p.End {
				landNext(twin)
			}
			o, err := twin.Complete(p.End)
			require.NoError(t, err)
			for _, em := range o.Emitted {
				want = append(want, token{em.Ref, p.End})
			}
			now = p.End
		}
		// The runner: a landing inside a run cuts it after the step in
		// flight.
		var got []token
		pending = pending[:0]
		now, moves, steps, streak, cuts, continued, admitting := 0, 0, 0, 0, 0, 0, 0
		var cont *Plan // the run Continue planned at the last move's end
		for guard := 0; !e.Idle(); guard++ {
			require.Less(t, guard, 100000)
			p := cont
			if p == nil {
				p, err = r.ScheduleUntil(now, now+time.Hour)
				require.NoError(t, err)
				if p == nil {
					now = landNext(e)
					continue
				}
			}
			moves++
			for _, res := range p.Reserved {
				pending = append(pending, res.Ref)
			}
			if len(p.Reserved) > 0 {
				require.Equal(t, 1, p.Steps, "a plan that reserves is one step")
			}
			if len(p.Started) > 0 && p.Steps > 1 {
				admitting++
			}
			end := p.End
			for len(pending) > 0 && landAt(pending[0]) <= end {
				r.SyncTo(landAt(pending[0]))
				at := landNext(e)
				if at < end && at > p.Start {
					_, end, err = r.Truncate(at)
					require.NoError(t, err)
					cuts++
				}
			}
			o, err := r.CompleteUntil(end)
			require.NoError(t, err)
			require.Equal(t, end, o.End)
			steps += o.Steps
			streak += o.Streak * o.Steps
			for _, em := range o.Emitted {
				require.False(t, em.First)
				for i := range em.Tokens {
					got = append(got, token{em.Ref, o.End - time.Duration(em.Tokens-1-i)*p.StepTime})
				}
			}
			now = end
			if cont = r.Continue(now, now+time.Hour); cont != nil {
				require.Empty(t, e.landed, "Continue plans no run a landed request waits for")
				continued++
			}
			checked(t, e, "a move")
		}
		assert.Less(t, moves, steps, "runs of several steps")
		assert.Positive(t, cuts, "landings inside runs")
		assert.Positive(t, admitting, "runs whose first step admits a landed request")
		assert.Equal(t, omit, continued > 0, "runs continued at step ends, with the cohort")
		if omit {
			assert.Equal(t, len(want), len(got)+streak, "tokens, listed and counted")
			assert.Positive(t, streak)
			continue
		}
		// The same tokens at the same instants (in emit order by instant).
		sortTokens := func(x []token) {
			slices.SortStableFunc(x, func(a, b token) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.ref, b.ref)) })
		}
		sortTokens(want)
		sortTokens(got)
		require.Len(t, want, 32*39)
		require.Equal(t, want, got)
	}
}

// TestRemoteRecordedSteps: a recorded reserve-only step is an empty step
// of 1 µs whose blocks held include the reservation (⌈101/16⌉ = 7), and
// the request waits in it; the landed request's first step is a decode
// that names it new, with the tokens its reservation found cached.
func TestRemoteRecordedSteps(t *testing.T) {
	e, err := New(Config{RemoteKV: true, KVBlocks: 50}, nil)
	require.NoError(t, err)
	e.RecordSteps(true)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 3, Remote: true}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	sh := o.Shape
	assert.Equal(t, time.Microsecond, sh.StepTime)
	assert.True(t, sh.Batch.Empty())
	assert.Equal(t, 1, sh.Waiting)
	assert.Equal(t, []int{7}, sh.Used)
	assert.Equal(t, 7, o.BlockSteps)
	assert.Empty(t, sh.Scheduled)
	require.NoError(t, e.Land(p.End, 1))
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	o, err = e.Complete(p.End)
	require.NoError(t, err)
	assert.Equal(t, []Scheduled{{Ref: 1, Tokens: 1, Computed: 100, Decode: true, Kind: ScheduledNew}}, o.Shape.Scheduled)
	assert.Equal(t, []int{100}, o.Shape.Batch.Decode)
	checked(t, e, "the recorded steps")
}

// TestRemoteFCFSPreemptedFirst: under FCFS a preempted request goes to the
// front of the waiting queue, the last preempted first, as vLLM's deque
// prepends it (scheduler.py _preempt_request: prepend_request) — not back
// at its Add order, which a landed Remote request, admitted ahead of the
// queue, can run after. KV: 10 blocks of 4 tokens, no prefix cache. X
// (ref 1) and A (ref 2), 8-token prompts, and the Remote R (ref 3), an
// 8-token prompt, all 30 output tokens, Added X, A, R.
//
//   - Step 0 prefills X and A (2 blocks each) and reserves R's
//     ⌈9/4⌉ = 3 blocks: 3 free.
//   - Steps 1–4 decode X and A, each taking its 3rd block at step 1: 1
//     free. At step 5 both need a 4th (token 13): X takes the last, and
//     A, the tail of the running list, is preempted (its 3 blocks freed:
//     3 free). A waits with 8 + 5 = 13 known tokens: 4 blocks.
//   - R lands after step 5. Step 6 admits it ahead of the queue (its
//     blocks held: a decode at context 8), and A, the queue's head, needs
//     4 of 3 free: it waits. Running: X, R.
//   - Steps 6–13 decode X and R. At step 14 R needs a 5th block (token
//     17) and none is free: R, the tail, is preempted, with 8 + 9 = 17
//     known tokens (5 blocks); X holds 6 blocks (24 tokens): 4 free.
//   - vLLM's queue is now [R, A]: at step 15 R's 5 blocks do not fit in
//     4 and admission stops there, though A's 4 would (the Add order, A
//     first, admitted A at step 15). X runs alone until its 30th token at
//     step 29.
//   - Step 30 has all 10 blocks: it resumes R (17 tokens, 5 blocks), then
//     A (13 tokens, 4 blocks), in that order; so A, the tail again, is the
//     victim when both need a block at step 34 (R at token 21, A at 17;
//     1 free).
func TestRemoteFCFSPreemptedFirst(t *testing.T) {
	e, err := New(Config{RemoteKV: true, KVBlocks: 10, BlockSize: 4, DisablePrefixCache: true, MaxSeqs: 8}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 8, Output: 30}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 8, Output: 30}))
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 8, Output: 30, Remote: true}))
	type step struct {
		refs      []int32 // scheduled, in order
		preempted []int32
		free      int // after the plan
	}
	want := map[int]step{
		0:  {[]int32{1, 2}, nil, 3},
		1:  {[]int32{1, 2}, nil, 1},
		4:  {[]int32{1, 2}, nil, 1},
		5:  {[]int32{1}, []int32{2}, 3},
		6:  {[]int32{1, 3}, nil, 3},
		13: {[]int32{1, 3}, nil, 0},
		14: {[]int32{1}, []int32{3}, 4},
		15: {[]int32{1}, nil, 4},
		29: {[]int32{1}, nil, 0},
		30: {[]int32{3, 2}, nil, 1},
		34: {[]int32{3}, []int32{2}, 4},
	}
	now := time.Duration(0)
	for i := 0; i <= 34; i++ {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		require.NotNil(t, p, "step %d", i)
		sc, ok := e.Scheduled(nil)
		require.True(t, ok)
		var refs []int32
		for _, s := range sc {
			refs = append(refs, s.Ref)
		}
		if w, ok := want[i]; ok {
			assert.Equal(t, w.refs, refs, "step %d scheduled", i)
			assert.ElementsMatch(t, w.preempted, p.Preempted, "step %d preempted", i)
			assert.Equal(t, w.free, e.FreeBlocks(), "step %d free blocks", i)
		}
		switch i {
		case 0:
			assert.Equal(t, []Reservation{{Ref: 3, Tokens: 8}}, p.Reserved)
		case 6:
			assert.Equal(t, Scheduled{Ref: 3, Tokens: 1, Computed: 8, Decode: true, Kind: ScheduledNew}, sc[1], "R's first step: a decode at context 8")
		case 15:
			assert.Equal(t, 2, e.Waiting(), "R and A wait; A's 4 blocks would fit the 4 free")
			assert.Equal(t, int32(3), e.waiting.peek().req.Ref, "R, preempted last, heads the queue")
		case 30:
			assert.Equal(t, []Scheduled{
				{Ref: 3, Tokens: 17, Kind: ScheduledResumed},
				{Ref: 2, Tokens: 13, Kind: ScheduledResumed},
			}, sc)
		}
		checked(t, e, "a plan")
		now = p.End
		_, err = e.Complete(now)
		require.NoError(t, err)
		if i == 5 {
			require.NoError(t, e.Land(now, 3))
		}
		checked(t, e, "a step")
		if i == 15 {
			// The Add order for R, the old key, breaks the invariants.
			q := &e.waiting
			require.Len(t, q.items, 1, "R, preempted behind A's run, waits in the heap")
			k := q.items[0].key
			q.items[0].key = int64(q.items[0].s.order)
			assert.ErrorContains(t, e.Check(), "engine: request 3 waits in the heap with the key 2 (Add order 2, preempted 1 times)")
			q.items[0].key = k
			checked(t, e, "the key restored")
		}
	}
}
