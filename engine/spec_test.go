package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixedAcceptor accepts every draft (all) or none.
type fixedAcceptor struct{ all bool }

func (a fixedAcceptor) Accept(_ int32, drafted int) int {
	if a.all {
		return drafted
	}
	return 0
}

// driveSpec runs one request to its end, step by step, checking the engine
// after every step, and returns each step's emission and batch shape.
func driveSpec(t *testing.T, cfg Config, a Acceptor, input, output int) (emits []Emit, drafts []Draft, verify [][]int, times []time.Duration) {
	t.Helper()
	e, err := New(cfg, nil)
	require.NoError(t, err)
	e.SetAcceptor(a)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: input, Output: output}))
	var now time.Duration
	for !e.Idle() {
		p, err := e.Runner().ScheduleUntil(now, now+time.Hour)
		require.NoError(t, err)
		require.Equal(t, 1, p.Steps, "speculative steps are planned one at a time")
		verify = append(verify, append([]int(nil), p.Batch.Verify...))
		times = append(times, p.StepTime)
		require.NoError(t, e.Check())
		out, err := e.Complete(p.End)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		now = p.End
		emits = append(emits, out.Emitted...)
		require.Len(t, out.Drafts, len(out.Emitted), "one Draft per Emit")
		drafts = append(drafts, out.Drafts...)
	}
	return emits, drafts, verify, times
}

// With K = 4 and every draft accepted, an 11-token answer comes as 1 token
// (the prefill's), then 5 and 5: each decode step verifies 5 positions and
// emits them all, and costs 45 + 4 × 0.035 = 45.14 ms under Frozen.
func TestSpeculativeAllAccepted(t *testing.T) {
	emits, drafts, verify, times := driveSpec(t, Config{SpeculativeTokens: 4}, fixedAcceptor{true}, 100, 11)
	require.Len(t, emits, 3)
	assert.Equal(t, Emit{Ref: 1, Tokens: 1, First: true}, emits[0])
	assert.Equal(t, Emit{Ref: 1, Tokens: 5}, emits[1])
	assert.Equal(t, Emit{Ref: 1, Tokens: 5, Done: true}, emits[2])
	assert.Equal(t, []Draft{{}, {Drafted: 4, Accepted: 4}, {Drafted: 4, Accepted: 4}}, drafts)
	assert.Equal(t, [][]int{nil, {5}, {5}}, verify)
	assert.Equal(t, []time.Duration{23500 * time.Microsecond, 45140 * time.Microsecond, 45140 * time.Microsecond}, times)
}

// With every draft rejected a decode emits one token a step, pays for its
// drafts all the same, and drafts no more than it has tokens left: the
// last decode of a 6-token answer drafts nothing.
func TestSpeculativeNoneAccepted(t *testing.T) {
	emits, drafts, verify, _ := driveSpec(t, Config{SpeculativeTokens: 2}, fixedAcceptor{false}, 100, 6)
	require.Len(t, emits, 6)
	for i, em := range emits[1:] {
		assert.Equal(t, 1, em.Tokens)
		assert.Equal(t, 0, drafts[i+1].Accepted)
	}
	assert.Equal(t, [][]int{nil, {3}, {3}, {3}, {2}, {1}}, verify)
	assert.Equal(t, []int{0, 2, 2, 2, 1, 0}, []int{drafts[0].Drafted, drafts[1].Drafted, drafts[2].Drafted, drafts[3].Drafted, drafts[4].Drafted, drafts[5].Drafted})
}

// Drafts take KV for their positions while verified (lookahead slots):
// a 15-token prompt in blocks of 4 decoding with 4 drafts holds the blocks
// for 15 + 5 = 20 tokens; after every draft is rejected it keeps them for
// its next step, as vLLM keeps a request's blocks (Check holds the count).
func TestSpeculativeLookaheadBlocks(t *testing.T) {
	e, err := New(Config{SpeculativeTokens: 4, BlockSize: 4, KVBlocks: 8, MaxBatchedTokens: 64, MaxSeqs: 4}, nil)
	require.NoError(t, err)
	e.SetAcceptor(fixedAcceptor{false})
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 15, Output: 9}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, 4, 8-e.FreeBlocks(), "the prompt's 15 tokens")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Equal(t, []int{5}, p.Batch.Verify)
	assert.Equal(t, 5, 8-e.FreeBlocks(), "15 computed + 5 verified positions = 20 tokens")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Check())
	assert.Equal(t, 5, 8-e.FreeBlocks(), "the rejected drafts' blocks stay with the request")
}

// The step's budget trims the drafts, as vLLM's running loop caps each
// request's tokens (spec ones included) by the budget left: with a
// 40-token budget, 8 decodes of K = 8 ask 9 each; the first four get 9,
// the fifth the 4 left (3 drafts), the last three nothing this step.
func TestSpeculativeDraftsFitTheBudget(t *testing.T) {
	e, err := New(Config{SpeculativeTokens: 8, MaxBatchedTokens: 40, MaxSeqs: 8}, nil)
	require.NoError(t, err)
	for i := range int32(8) {
		require.NoError(t, e.Add(0, Request{Ref: i, Input: 4, Output: 50}))
	}
	var now time.Duration
	for range 2 { // the prompts, then the first decodes
		p, err := e.Schedule(now)
		require.NoError(t, err)
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		now = p.End
	}
	p, err := e.Schedule(now)
	require.NoError(t, err)
	assert.Equal(t, []int{9, 9, 9, 9, 4}, p.Batch.Verify)
}

func TestSpeculativeValidate(t *testing.T) {
	assert.ErrorContains(t, Config{SpeculativeTokens: -1}.Validate(), "SpeculativeTokens")
	assert.ErrorContains(t, Config{SpeculativeTokens: 2048}.Validate(), "below MaxBatchedTokens")
}
