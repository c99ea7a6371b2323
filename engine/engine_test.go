package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// drive runs e until it is idle, checking the invariants after every step,
// and returns the tokens emitted per Ref and the preemptions made.
func drive(t *testing.T, e *Engine, now time.Duration, maxSteps int) (map[int32]int, int) {
	t.Helper()
	emitted := map[int32]int{}
	preempts := 0
	for steps := 0; steps < maxSteps; steps++ {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			return emitted, preempts
		}
		preempts += len(p.Preempted)
		require.NoError(t, e.Check(), "after planning step %d", steps)
		now = p.End
		o, err := e.Complete(now)
		require.NoError(t, err)
		for _, em := range o.Emitted {
			emitted[em.Ref] += em.Tokens
		}
		require.NoError(t, e.Check(), "after step %d", steps)
	}
	t.Fatalf("engine not idle after %d steps", maxSteps)
	return nil, 0
}

// The chapter: a 2,000-token prompt with a 256-token chunk cap takes 8 steps
// (7 × 256 + 208); with 31 other requests decoding, each full-chunk mixed step
// lasts 45 + 20 + 0.035 × 256 = 73.96 ms, and that is the decoders' ITL; the
// last, 208-token chunk lasts 72.28 ms and emits the first token.
func TestChunkedPromptAmongDecoders(t *testing.T) {
	e, err := New(Config{MaxSeqs: 32, ChunkCap: 256}, nil)
	require.NoError(t, err)
	for i := range 31 {
		require.NoError(t, e.Add(0, Request{Ref: int32(i), Input: 64, Output: 100}))
	}
	p, err := e.Schedule(0) // the 31 short prompts, chunked under the 256 cap
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	now := p.End
	require.NoError(t, e.Add(now, Request{Ref: 99, Input: 2000, Output: 10}))
	var times []time.Duration
	for {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		assert.Len(t, p.Batch.Decode, 31, "every step decodes the 31 running requests")
		require.Len(t, p.Batch.Prefill, 1)
		times = append(times, p.StepTime)
		now = p.End
		o, err := e.Complete(now)
		require.NoError(t, err)
		require.Len(t, o.Emitted, 31+boolInt(len(times) == 8))
		if len(times) == 8 {
			assert.Equal(t, Emit{Ref: 99, Tokens: 1, First: true}, o.Emitted[31])
			break
		}
		require.Less(t, len(times), 8, "the prompt must finish in 8 steps")
	}
	want := []time.Duration{}
	for range 7 {
		want = append(want, 73960*time.Microsecond)
	}
	want = append(want, 72280*time.Microsecond)
	assert.Equal(t, want, times)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// KV starvation: long contexts and a large batch cap outgrow the cache, so
// the scheduler preempts (recompute) from the tail; every request still
// finishes with exactly its output tokens and the invariants hold after
// every step.
func TestKVStarvedPreemptsAndFinishesAll(t *testing.T) {
	e, err := New(Config{MaxSeqs: 64, MaxBatchedTokens: 4096, KVBlocks: 1500}, nil) // 24,000 tokens
	require.NoError(t, err)
	const n = 40
	for i := range n {
		require.NoError(t, e.Add(0, Request{Ref: int32(i), Input: 1500 + 37*i, Output: 400 + 11*i}))
	}
	emitted, preempts := drive(t, e, 0, 100000)
	for i := range n {
		assert.Equal(t, 400+11*i, emitted[int32(i)], "request %d", i)
	}
	assert.Greater(t, preempts, 0, "the scenario must preempt")
	assert.True(t, e.Idle())
	assert.Equal(t, 1500, e.FreeBlocks())
}

func TestAbortInFlightDiscardsTheStep(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 5}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 100, Output: 5}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.NoError(t, e.Abort(time.Millisecond, 1))
	require.NoError(t, e.Check())
	_, err = e.Schedule(0)
	assert.ErrorIs(t, err, ErrStepInFlight)
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	assert.Equal(t, []Emit{{Ref: 2, Tokens: 1, First: true}}, o.Emitted)
	require.NoError(t, e.Check())
	_, err = e.Complete(p.End)
	assert.ErrorIs(t, err, ErrNoStepInFlight)
	assert.ErrorIs(t, e.Abort(0, 1), ErrUnknownRef)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 10, Output: 1}), "an aborted Ref may be reused")
	emitted, _ := drive(t, e, p.End, 100)
	assert.Equal(t, map[int32]int{1: 1, 2: 4}, emitted)
}

func TestBadRequestsAreRejectedWithAReason(t *testing.T) {
	e, err := New(Config{DisableChunkedPrefill: true, MaxBatchedTokens: 1000}, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, e.Add(0, Request{Ref: 1, Input: 0, Output: 3}), ErrInvalidRequest)
	assert.ErrorIs(t, e.Add(0, Request{Ref: 2, Input: 3, Output: -1}), ErrInvalidRequest)
	assert.ErrorIs(t, e.Add(0, Request{Ref: 3, Input: 990, Output: 12}), ErrExceedsBudget)
	require.NoError(t, e.Add(0, Request{Ref: 4, Input: 990, Output: 11}))
	assert.ErrorIs(t, e.Add(0, Request{Ref: 4, Input: 9, Output: 1}), ErrDuplicateRef)
}

func TestValidateNamesTheField(t *testing.T) {
	cases := map[string]Config{
		"MaxBatchedTokens": {MaxBatchedTokens: -1},
		"MaxSeqs":          {MaxSeqs: -3},
		"ChunkCap":         {ChunkCap: 4096},
		"BlockSize":        {BlockSize: -16},
		"KVBlocks":         {KVBlocks: -1},
		"Watermark":        {Watermark: 1.5},
		"MaxWaiting":       {MaxWaiting: -2},
	}
	for field, c := range cases {
		err := c.Validate()
		require.Error(t, err, field)
		assert.Contains(t, err.Error(), field)
		_, err = New(c, nil)
		assert.Error(t, err)
	}
	assert.NoError(t, Config{}.Validate())
	assert.ErrorContains(t, Config{MaxSeqs: 64, MaxBatchedTokens: 32}.Validate(), "MaxSeqs")
	// One rule, whether the budget is given or left at its default.
	assert.EqualError(t, Config{MaxSeqs: 5000}.Validate(), "engine: MaxSeqs (5000) must not exceed MaxBatchedTokens (2048, the default): a step could not decode every running sequence")
	assert.ErrorContains(t, Config{MaxSeqs: 5000, MaxBatchedTokens: 2048}.Validate(), "MaxSeqs (5000) must not exceed MaxBatchedTokens (2048)")
	assert.ErrorContains(t, Config{DisableChunkedPrefill: true, ChunkCap: 128}.Validate(), "ChunkCap")
}

func TestBrokenCostModelIsAnError(t *testing.T) {
	e, err := New(Config{}, costmodel.Func(func(b costmodel.Batch) time.Duration { return 0 }))
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 10, Output: 2}))
	_, err = e.Schedule(0)
	assert.True(t, errors.Is(err, ErrBadStepTime))
	require.NoError(t, e.Check())
}

// The policies see what real schedulers order by, and each admits (and
// spares from preemption) in its own order: shortest prompt first, or the
// earliest TTFT deadline first.
func TestPoliciesOrderTheWaitingQueue(t *testing.T) {
	admitted := func(p Policy) []int32 {
		e, err := New(Config{MaxSeqs: 1, Policy: p}, nil)
		require.NoError(t, err)
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 900, Output: 1, Deadline: 3 * time.Second}))
		require.NoError(t, e.Add(0, Request{Ref: 2, Input: 100, Output: 1, Deadline: 5 * time.Second}))
		require.NoError(t, e.Add(0, Request{Ref: 3, Input: 500, Output: 1, Deadline: 1 * time.Second}))
		require.NoError(t, e.Add(0, Request{Ref: 4, Input: 300, Output: 1}))
		var order []int32
		for {
			p, err := e.Schedule(0)
			require.NoError(t, err)
			if p == nil {
				return order
			}
			order = append(order, p.Started...)
			_, err = e.Complete(p.End)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, []int32{1, 2, 3, 4}, admitted(FCFS{}))
	assert.Equal(t, []int32{2, 4, 3, 1}, admitted(ShortestPrompt{}))
	assert.Equal(t, []int32{3, 1, 2, 4}, admitted(EarliestDeadline{}), "no deadline last")
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	assert.ErrorIs(t, e.Add(time.Second, Request{Ref: 1, Arrival: time.Second, Input: 1, Output: 1, Deadline: time.Millisecond}), ErrInvalidRequest)
}

// Unstarted lists the waiting requests no step ever touched, in the order
// they were added: not the running ones, not one preempted back into the
// queue (its KV was computed once), and not one aborted.
func TestUnstarted(t *testing.T) {
	// Two seats, 12 blocks of 4 tokens: two 16-token prompts run and
	// grow until one is preempted; the others wait throughout.
	e, err := New(Config{MaxBatchedTokens: 512, MaxSeqs: 2, BlockSize: 4, KVBlocks: 12}, nil)
	require.NoError(t, err)
	for ref := range int32(6) {
		require.NoError(t, e.Add(0, Request{Ref: ref, Input: 16, Output: 12}))
	}
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5}, e.Unstarted(nil), "nothing scheduled yet: all of them, in Add order")
	require.NoError(t, e.Abort(0, 3))
	now, preempted := time.Duration(0), int32(-1)
	for i := 0; preempted < 0; i++ {
		require.Less(t, i, 100, "no preemption")
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if len(p.Preempted) > 0 {
			preempted = p.Preempted[0]
		}
		now = p.End
		_, err = e.Complete(now)
		require.NoError(t, err)
	}
	got := e.Unstarted([]int32{99})
	require.Equal(t, []int32{99, 2, 4, 5}, got, "appended after dst; request %d, preempted, computed its KV once", preempted)
}
