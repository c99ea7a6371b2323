package engine

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every count of a Config has an upper bound that Validate names with its
// reason: 2³¹ KV blocks used to panic ("invariant progress broken") on
// the first step, its block runs being int32, and a MaxSeqs of 2³¹
// allocated 16 GB.
func TestValidateBoundsEveryCount(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{KVBlocks: 1 << 31},
			"engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 2147483648"},
		{Config{KVBlocks: math.MaxInt64},
			"engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 9223372036854775807"},
		{Config{MaxBatchedTokens: 1 << 31},
			"engine: MaxBatchedTokens must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 2147483648"},
		{Config{BlockSize: math.MaxInt64},
			"engine: BlockSize must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 9223372036854775807"},
		{Config{MaxSeqs: MaxSeqsLimit + 1, MaxBatchedTokens: 1 << 20},
			"engine: MaxSeqs must be <= 16384 (MaxSeqsLimit: the engine keeps a buffer of MaxSeqs decodes and LargestStep's search is quadratic in it), got 16385"},
		{Config{ChunkCap: 1 << 40, MaxBatchedTokens: 1 << 40},
			"engine: MaxBatchedTokens must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 1099511627776\n" +
				"engine: ChunkCap must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 1099511627776"},
		{Config{SpeculativeTokens: 1 << 31, MaxBatchedTokens: MaxTokens},
			"engine: SpeculativeTokens must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 2147483648\n" +
				"engine: SpeculativeTokens (2147483648) must be below MaxBatchedTokens (2147483647): one decode could not verify its drafts in a step"},
	}
	for _, c := range cases {
		assert.EqualError(t, c.cfg.Validate(), c.want)
		_, err := New(c.cfg, nil)
		assert.EqualError(t, err, c.want)
	}
	// MaxWaiting is only compared with the queue's length: no bound.
	assert.NoError(t, Config{MaxWaiting: math.MaxInt64}.Validate())
}

// At its bound each count is accepted and the engine serves a request
// with it, as far as the bound's reason goes: the pool of MaxKVBlocks
// blocks, a block of MaxTokens tokens, the widest budget and batch.
func TestBoundsThemselvesRun(t *testing.T) {
	for name, cfg := range map[string]Config{
		"KVBlocks":         {KVBlocks: MaxKVBlocks},
		"BlockSize":        {BlockSize: MaxTokens, KVBlocks: 1},
		"both":             {BlockSize: MaxTokens, KVBlocks: MaxKVBlocks},
		"MaxBatchedTokens": {MaxBatchedTokens: MaxTokens, ChunkCap: MaxTokens},
		"MaxSeqs":          {MaxSeqs: MaxSeqsLimit, MaxBatchedTokens: MaxSeqsLimit},
	} {
		e, err := New(cfg, nil)
		require.NoError(t, err, name)
		for i := range 40 {
			require.NoError(t, e.Add(0, Request{Ref: int32(i), Input: 3000 + i, Output: 20}), name)
		}
		emitted, _ := drive(t, e, 0, 10_000)
		require.Len(t, emitted, 40, name)
		for i := range 40 {
			assert.Equal(t, 20, emitted[int32(i)], "%s: request %d", name, i)
		}
		assert.Equal(t, cfg.WithDefaults().KVBlocks, e.FreeBlocks(), name)
	}
}

// No request length overflows: a prompt of 2⁶³ − 1 tokens used to
// overflow the never-fits test, be admitted and panic on the first step.
// With the largest pool, MaxModelLen is MaxTokens: a prompt at or above it
// is refused (ErrPromptTooLong), and any output is cut at it.
func TestTooLongRequestIsRefused(t *testing.T) {
	cfg := Config{KVBlocks: MaxKVBlocks, BlockSize: MaxTokens}
	e, err := New(cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, MaxTokens, e.Config().MaxModelLen, "KVBlocks × BlockSize, capped at MaxTokens")
	for i, r := range []Request{
		{Input: math.MaxInt64, Output: 1},
		{Input: math.MaxInt64, Output: math.MaxInt64},
		{Input: 1 << 62, Output: 1 << 62},
		{Input: MaxTokens, Output: 1},
	} {
		r.Ref = int32(i)
		err := e.Add(0, r)
		assert.ErrorIs(t, err, ErrPromptTooLong)
		assert.EqualError(t, err, "engine: prompt too long (Input >= MaxModelLen leaves no room for an output token): MaxModelLen 2147483647")
	}
	assert.Equal(t, 0, e.Waiting())
	// Outputs past MaxModelLen are accepted, cut there.
	for i, r := range []Request{
		{Input: 1 << 30, Output: 1<<30 + 1},
		{Input: 1, Output: MaxTokens + 1},
		{Input: 1, Output: math.MaxInt64},
	} {
		r.Ref = int32(20 + i)
		require.NoError(t, e.Add(0, r))
		assert.Equal(t, MaxTokens-r.Input, cfg.ServedOutput(r.Input, r.Output))
	}
	e, err = New(cfg, nil)
	require.NoError(t, err)
	// At the bound it is accepted, and served.
	require.NoError(t, e.Add(0, Request{Ref: 10, Input: 1 << 30, Output: 1 << 30}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, 2048, p.Batch.Prefill[0].NewTokens)
	assert.Greater(t, p.End, time.Duration(0))
}
