package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/kvchain"
)

// step plans and completes one step, checking the invariants.
func step(t *testing.T, e *Engine, now time.Duration) (*Plan, *Outcome) {
	t.Helper()
	p, err := e.Schedule(now)
	require.NoError(t, err)
	require.NotNil(t, p)
	require.NoError(t, e.Check())
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Check())
	return p, o
}

// A prompt whose leading units another request computed is served from the
// cache: 96 of its 100 tokens (three 32-token units), so its prefill
// computes 4 tokens on a context of 96 and costs 20 + 0.035 × 4 ms.
func TestPrefixCacheServesAFinishedRequestsPrompt(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	prefix := []uint64{7, 8, 9, 10}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	p, _ := step(t, e, 0)
	assert.Equal(t, []int{0}, p.Cached)
	assert.True(t, e.Idle())
	assert.Equal(t, 6, e.CachedBlocks(), "three 32-token units of 2 blocks stay cached")
	assert.Equal(t, 6, e.EvictableBlocks())
	assert.Equal(t, DefaultKVBlocks, e.FreeBlocks(), "cached blocks nobody holds are free")

	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 100, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	p, _ = step(t, e, 0)
	assert.Equal(t, []int{96}, p.Cached)
	assert.Equal(t, []costmodel.Chunk{{NewTokens: 4, Context: 96}}, p.Batch.Prefill)
	assert.Equal(t, 20*time.Millisecond+4*35*time.Microsecond, p.StepTime)

	// Another prompt sharing only the first unit gets 32 tokens.
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 100, Output: 1, Prefix: []uint64{7, 99, 98}, PrefixBlockTokens: 32}))
	p, _ = step(t, e, 0)
	assert.Equal(t, []int{32}, p.Cached)
}

// At least the last prompt token is always computed: a prompt made of
// exactly three cached units (six blocks of 16) takes the five blocks
// before the one holding its last token from the cache.
func TestPrefixCacheLeavesTheLastTokenToCompute(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	prefix := []uint64{1, 2, 3}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 96, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	step(t, e, 0)
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 96, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	p, _ := step(t, e, 0)
	assert.Equal(t, []int{80}, p.Cached)
	assert.Equal(t, []costmodel.Chunk{{NewTokens: 16, Context: 80}}, p.Batch.Prefill)
}

// Running requests share cached units: the second reference pins them, and
// when both finish they become evictable, least recently released first.
func TestPrefixCacheSharesAndEvicts(t *testing.T) {
	e, err := New(Config{KVBlocks: 20}, nil) // 320 tokens
	require.NoError(t, err)
	a := []uint64{1, 2}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 70, Output: 5, Prefix: a, PrefixBlockTokens: 32}))
	step(t, e, 0)
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 70, Output: 5, Prefix: a, PrefixBlockTokens: 32}))
	p, _ := step(t, e, 0)
	assert.Equal(t, []int{64}, p.Cached)
	assert.Equal(t, 4, e.CachedBlocks())
	assert.Equal(t, 0, e.EvictableBlocks(), "both requests reference the units")
	emitted, _ := drive(t, e, p.End, 100)
	assert.Equal(t, map[int32]int{1: 3, 2: 4}, emitted, "request 1 had emitted 2 of its 5 tokens")
	assert.Equal(t, 4, e.EvictableBlocks())

	// A request with another prefix that needs every block evicts them.
	require.NoError(t, e.Add(0, Request{Ref: 3, Input: 300, Output: 20, Prefix: []uint64{5, 6, 7, 8, 9, 10, 11, 12, 13}, PrefixBlockTokens: 32}))
	emitted, _ = drive(t, e, p.End, 100)
	assert.Equal(t, 20, emitted[3])
	assert.Equal(t, 20, e.FreeBlocks(), "blocks are conserved")
	require.NoError(t, e.Add(0, Request{Ref: 4, Input: 70, Output: 1, Prefix: a, PrefixBlockTokens: 32}))
	p, _ = step(t, e, p.End)
	assert.Equal(t, []int{0}, p.Cached, "prefix a was evicted to make room")
}

// KV starvation with a prefix cache: many requests over a few shared
// prefixes in a small cache preempt, evict and still finish, with the
// invariants checked after every step.
func TestPrefixCacheUnderKVPressure(t *testing.T) {
	e, err := New(Config{MaxSeqs: 32, KVBlocks: 400}, nil) // 6,400 tokens
	require.NoError(t, err)
	const n = 60
	for i := range n {
		g := uint64(i % 4)
		prefix := []uint64{100 * g, 100*g + 1, 100*g + 2, uint64(1000 + i)}
		require.NoError(t, e.Add(0, Request{Ref: int32(i), Input: 500 + 7*i, Output: 50 + i, Prefix: prefix, PrefixBlockTokens: 128}))
	}
	emitted, preempts := drive(t, e, 0, 100000)
	for i := range n {
		assert.Equal(t, 50+i, emitted[int32(i)])
	}
	assert.Greater(t, preempts, 0)
	assert.Equal(t, 400, e.FreeBlocks())
}

func TestPrefixCacheCanBeDisabled(t *testing.T) {
	e, err := New(Config{DisablePrefixCache: true}, nil)
	require.NoError(t, err)
	for ref := range int32(2) {
		require.NoError(t, e.Add(0, Request{Ref: ref, Input: 100, Output: 1, Prefix: []uint64{1, 2, 3}, PrefixBlockTokens: 32}))
		p, _ := step(t, e, 0)
		assert.Equal(t, []int{0}, p.Cached)
	}
	assert.Equal(t, 0, e.CachedBlocks())
}

// As in vLLM, whose allocate_slots caches the blocks it allocates, a block
// is cached when the step that computes it is scheduled: a request admitted
// later in the same step references it instead of computing it again.
func TestPrefixCacheServesTheSameStep(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	prompt := []uint64{1, 2, 3, 4}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 64, Output: 2, Prefix: prompt, PrefixBlockTokens: 16}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 64, Output: 2, Prefix: prompt, PrefixBlockTokens: 16}))
	p, _ := step(t, e, 0)
	assert.Equal(t, []int32{1, 2}, p.Started)
	assert.Equal(t, []int{0, 48}, p.Cached)
	assert.Equal(t, []costmodel.Chunk{{NewTokens: 64}, {NewTokens: 16, Context: 48}}, p.Batch.Prefill)
	// Request 2 computes its fourth block again (its last token is in it)
	// and keeps its own copy, cached as a second one, as vLLM keeps both
	// (block_pool.py does not de-duplicate): 3 shared + 2 copies of the
	// fourth = 5 blocks held, all 5 cached.
	assert.Equal(t, 5, DefaultKVBlocks-e.FreeBlocks())
	assert.Equal(t, 5, e.CachedBlocks())
}

// A warmed cache serves a prompt as if a request had computed it before:
// the blocks are cached and free, and the next request with that prefix
// finds them; a prompt whose shared blocks exceed the cache is refused.
func TestWarmInstallsAPrefix(t *testing.T) {
	e, err := New(Config{KVBlocks: 20}, nil)
	require.NoError(t, err)
	prefix := []uint64{7, 8, 9, 10}
	added, err := e.Warm(prefix, 32, 128) // 4 units of 32 tokens: 8 blocks
	require.NoError(t, err)
	assert.Equal(t, 8, added)
	assert.Equal(t, 8, e.EvictableBlocks())
	assert.Equal(t, 20, e.FreeBlocks())
	require.NoError(t, e.Check())
	again, err := e.Warm(prefix, 32, 128)
	require.NoError(t, err)
	assert.Zero(t, again, "already cached")
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 128, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	p, _ := step(t, e, 0)
	assert.Equal(t, []int{112}, p.Cached, "all but the block of its last token")
	// A prompt Add would refuse (Input >= MaxModelLen, the 20 blocks'
	// 448 tokens) is refused by Warm too.
	_, err = e.Warm(make([]uint64, 40), 16, 640)
	assert.ErrorIs(t, err, ErrPromptTooLong)
	assert.EqualError(t, err, "engine: prompt too long (Input >= MaxModelLen leaves no room for an output token): MaxModelLen 320")
}

// appendShared is the chain of mix(key, sharedContent) a block at a
// time, from any block on, whether units hold whole blocks (its fast
// walk of the ids) or blocks straddle units (sharedContent itself).
func TestAppendSharedIsSharedContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	for range 2_000 {
		b := []int{1, 3, 16, 32, 48}[rng.IntN(5)]
		p := []int{1, 16, 64, 100, 512}[rng.IntN(5)]
		units := 1 + rng.IntN(12)
		prefix := make([]uint64, units)
		for i := range prefix {
			prefix[i] = rng.Uint64N(4) // few ids: repeated units too
		}
		blocks := units * p / b
		r := Request{Prefix: prefix, PrefixBlockTokens: p}
		want := make([]uint64, blocks)
		key := rootKey
		for j := range blocks {
			key = mix(key, sharedContent(&r, b, j))
			want[j] = key
		}
		from := rng.IntN(blocks + 1)
		to := from + rng.IntN(blocks-from+1)
		parent := rootKey
		if from > 0 {
			parent = want[from-1]
		}
		got := appendShared([]uint64{7}, parent, prefix, p, b, from, to)
		require.Equal(t, uint64(7), got[0], "dst kept")
		require.Equal(t, want[from:to], got[1:], "b %d, p %d, %d units, blocks [%d, %d)", b, p, units, from, to)
	}
}

// TestMix0IsMix holds mix0 to mix with a parent of 0, over random
// contents and the small ones ids are.
func TestMix0IsMix(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 4))
	for i := range 10_000 {
		c := uint64(i)
		if i%2 == 1 {
			c = rng.Uint64()
		}
		require.Equal(t, mix(0, c), mix0(c), "content %d", c)
	}
}

// TestChainRunIsMix holds kvchain.Fill, which chains keys with
// mix's constants held in registers (kvchain's splitMix), to mix block by
// block: block i's content is the unit id+(r+i)/per at offset
// ((r+i)%per)·b (mix(0, c) being mix0(c) at offset 0), over runs of a
// block a unit and of several, from random units, offsets and parents.
func TestChainRunIsMix(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 5))
	for range 2_000 {
		per := 1 + rng.IntN(4)
		if rng.IntN(2) == 0 {
			per = 1
		}
		b := 1 << rng.IntN(6)
		r, id, k := rng.IntN(per), rng.Uint64N(1<<40), rng.Uint64()
		n := rng.IntN(40)
		want := make([]uint64, n)
		w := k
		for i := range want {
			w = mix(w, mix(uint64(((r+i)%per)*b), id+uint64((r+i)/per)))
			want[i] = w
		}
		got := make([]uint64, n)
		last := kvchain.Fill(got, k, id, r, per, b)
		require.Equal(t, want, got, "per %d, b %d, r %d", per, b, r)
		if n > 0 {
			require.Equal(t, want[n-1], last)
		}
	}
}
