package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// MaxModelLen defaults to the KV capacity, KVBlocks × BlockSize: the Atlas
// replica's 28,672 blocks of 16 are 458,752 tokens.
func TestMaxModelLenDefaultsToTheKVCapacity(t *testing.T) {
	assert.Equal(t, 458_752, Config{}.WithDefaults().MaxModelLen)
	assert.Equal(t, 1600, Config{KVBlocks: 100}.WithDefaults().MaxModelLen)
	assert.Equal(t, 1200, Config{KVBlocks: 100, BlockSize: 12}.WithDefaults().MaxModelLen)
	assert.Equal(t, 1000, Config{KVBlocks: 100, MaxModelLen: 1000}.WithDefaults().MaxModelLen)
	e, err := New(Config{KVBlocks: 100}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1600, e.Config().MaxModelLen)
}

// Validate refuses a MaxModelLen above the KV capacity (vLLM will not
// start with a max_model_len its cache cannot hold one sequence of),
// negative, or above MaxTokens, naming the field.
func TestValidateBoundsMaxModelLen(t *testing.T) {
	require.NoError(t, Config{KVBlocks: 100, MaxModelLen: 1600}.Validate())
	assert.EqualError(t, Config{KVBlocks: 100, MaxModelLen: 1601}.Validate(),
		"engine: MaxModelLen must be <= 1600, the KV capacity (KVBlocks 100 × BlockSize 16), as vLLM refuses a max_model_len its KV cache cannot hold, got 1601")
	assert.EqualError(t, Config{MaxModelLen: 458_753}.Validate(),
		"engine: MaxModelLen must be <= 458752, the KV capacity (KVBlocks 28672 × BlockSize 16), as vLLM refuses a max_model_len its KV cache cannot hold, got 458753")
	assert.EqualError(t, Config{MaxModelLen: -1}.Validate(),
		"engine: MaxModelLen must be >= 0 (0 means the default), got -1")
	assert.EqualError(t, Config{KVBlocks: MaxKVBlocks, MaxModelLen: MaxTokens + 1}.Validate(),
		"engine: MaxModelLen must be <= 2147483647 (MaxTokens: token counts beyond it would overflow the engine's sums), got 2147483648")
	_, err := New(Config{KVBlocks: 10, MaxModelLen: 161}, nil)
	assert.ErrorContains(t, err, "MaxModelLen must be <= 160")
}

// A prompt of MaxModelLen tokens or more is refused, naming the bound, as
// vLLM's front end refuses it (InputProcessor._validate_prompt_len); one
// token shorter leaves room for exactly one output token.
func TestPromptAtMaxModelLenIsRefused(t *testing.T) {
	e, err := New(Config{KVBlocks: 100, MaxModelLen: 1000}, nil)
	require.NoError(t, err)
	for i, in := range []int{1000, 1001, 5000} {
		err := e.Add(0, Request{Ref: int32(i), Input: in, Output: 1})
		assert.ErrorIs(t, err, ErrPromptTooLong)
		assert.ErrorContains(t, err, "MaxModelLen 1000")
	}
	assert.Zero(t, e.Waiting())
	require.NoError(t, e.Add(0, Request{Ref: 9, Input: 999, Output: 50}))
	emitted, _ := drive(t, e, 0, 100)
	assert.Equal(t, map[int32]int{9: 1}, emitted, "999 + 1 tokens reach MaxModelLen")
	assert.Equal(t, 100, e.FreeBlocks())
}

// A request whose prompt + output exceeds MaxModelLen is served and stops
// when its tokens reach MaxModelLen: vLLM's check_stop finishes it once
// request.num_tokens >= max_model_len after the token is appended, so a
// prompt of P tokens gets MaxModelLen − P. With the default MaxModelLen,
// the 100 blocks' 1,600 tokens: 1,590 + 12 and 1,590 + 11 both get 10
// (the second used to get its 11, its peak of 1,600 stored tokens fitting
// the pool; vLLM stops it at 1,600 tokens, after 10).
func TestOutputIsCutAtMaxModelLen(t *testing.T) {
	cfg := Config{KVBlocks: 100}
	e, err := New(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 500, Output: 10}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 1590, Output: 12}))
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 1590, Output: 11}))
	require.NoError(t, e.Add(0, Request{Ref: 4, Input: 1590, Output: 10})) // exactly 1,600: not cut
	assert.Equal(t, 10, cfg.ServedOutput(1590, 12))
	assert.Equal(t, 10, cfg.ServedOutput(1590, 10))
	assert.Equal(t, 0, cfg.ServedOutput(1600, 10))
	emitted, _ := drive(t, e, 0, 1000)
	assert.Equal(t, map[int32]int{1: 10, 2: 10, 3: 10, 4: 10}, emitted)
	assert.True(t, e.Idle())
	assert.Equal(t, 100, e.FreeBlocks(), "every block freed")

	// A MaxModelLen below the capacity cuts there: 900 + 500 asked, 100
	// served under MaxModelLen 1,000.
	e, err = New(Config{KVBlocks: 100, MaxModelLen: 1000}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 900, Output: 500}))
	assert.Equal(t, 100, e.Outstanding(0)-900, "its work is its prompt and the output it will emit")
	emitted, _ = drive(t, e, 0, 1000)
	assert.Equal(t, map[int32]int{1: 100}, emitted)
}

// Nothing is refused for its KV: a request whose cut sequence needs the
// whole pool (1,500 + 100 tokens of MaxModelLen 1,600, its peak 1,599
// stored tokens in all 100 blocks) is served beside two small ones, which
// it preempts as it grows; all three finish, and the blocks come back.
func TestWholePoolRequestIsServed(t *testing.T) {
	e, err := New(Config{KVBlocks: 100}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 1500, Output: 500}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 40, Output: 200}))
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 40, Output: 200}))
	emitted, preempts := drive(t, e, 0, 10_000)
	assert.Equal(t, map[int32]int{1: 100, 2: 200, 3: 200}, emitted)
	assert.Positive(t, preempts, "the long request takes the whole pool")
	assert.Equal(t, 100, e.FreeBlocks())
}
