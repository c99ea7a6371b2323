package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PrefixKeys are the keys the engine files a request's blocks under: for
// each block size and id span, the chain equals the keys the engine
// computes for the request once added (key), block for block, over the
// blocks of shared content a lookup may match, all but the block of the
// last token: 100 tokens of 32-token ids with 16-token blocks are
// min(3 × 32 / 16, 99 / 16) = 6 blocks; 96 tokens are 5 (the sixth holds
// the last token).
func TestPrefixKeysAreTheEnginesKeys(t *testing.T) {
	prefix := []uint64{7, 8, 9, 10}
	assert.Len(t, PrefixKeys(nil, prefix, 32, 100, 16), 6)
	assert.Len(t, PrefixKeys(nil, prefix, 32, 96, 16), 5)
	assert.Len(t, PrefixKeys(nil, prefix, 32, 20, 16), 0, "no full 32-token unit")
	assert.Len(t, PrefixKeys(nil, nil, 32, 100, 16), 0, "no ids")
	assert.Len(t, PrefixKeys(nil, prefix, 0, 100, 16), 0, "no id span")
	assert.Len(t, PrefixKeys(nil, prefix, 32, 100, 0), 0, "no block size")
	dst := []uint64{42}
	assert.Equal(t, 42, int(PrefixKeys(dst, prefix, 32, 100, 16)[0]), "it appends")

	rng := rand.New(rand.NewPCG(37, 4))
	for _, b := range []int{4, 12, 16, 32} {
		e, err := New(Config{BlockSize: b}, nil)
		require.NoError(t, err)
		for _, p := range []int{8, 16, 24, 512} {
			for range 50 {
				ids := make([]uint64, 1+rng.IntN(12))
				for i := range ids {
					ids[i] = rng.Uint64N(4)
				}
				r := Request{Input: 1 + rng.IntN(len(ids)*p+p), Prefix: ids, PrefixBlockTokens: p}
				s := seq{req: r, order: 99}
				e.setShared(&s)
				keys := PrefixKeys(nil, ids, p, r.Input, b)
				require.Len(t, keys, min(s.shared, (r.Input-1)/b), "block size %d, ids of %d tokens, %d-token prompt", b, p, r.Input)
				for j, k := range keys {
					require.Equal(t, e.key(&s, j), k, "block size %d, ids of %d tokens, block %d", b, p, j)
				}
			}
		}
	}
}

// CachedKeys over keys computed once answers exactly as CachedPrefix, on
// an engine whose cache fills, shares, evicts and preempts: a small KV
// pool (40 blocks of 4 or 16 tokens) serving prompts drawn from a few
// overlapping id chains, probed between steps and in the middle of runs
// with the prompts of every kind (whole hits, partial hits, misses).
func TestCachedKeysAnswersAsCachedPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 5))
	var whole, partial, none int
	for _, cfg := range []Config{{BlockSize: 4, KVBlocks: 40, MaxSeqs: 4}, {BlockSize: 16, KVBlocks: 40, MaxSeqs: 4}, {BlockSize: 16, KVBlocks: 40, DisablePrefixCache: true}} {
		e, err := New(cfg, nil)
		require.NoError(t, err)
		prompt := func() Request {
			ids := make([]uint64, 1+rng.IntN(6))
			for i := range ids {
				ids[i] = uint64(i)*10 + rng.Uint64N(2) // two variants of each unit: chains share leading runs
			}
			return Request{Input: 1 + rng.IntN(len(ids)*16+8), Output: 1 + rng.IntN(30), Prefix: ids, PrefixBlockTokens: 16}
		}
		probe := func(at time.Duration) {
			e.Runner().SyncTo(at)
			for range 8 {
				r := prompt()
				want := e.CachedPrefix(r.Prefix, r.PrefixBlockTokens, r.Input)
				keys := PrefixKeys(nil, r.Prefix, r.PrefixBlockTokens, r.Input, e.Config().BlockSize)
				require.Equal(t, want, e.CachedKeys(keys), "%+v: prompt %+v", cfg, r)
				switch {
				case want == 0:
					none++
				case want == len(keys)*cfg.BlockSize:
					whole++
				default:
					partial++
				}
				if cfg.DisablePrefixCache {
					require.Zero(t, want)
				}
			}
		}
		var now time.Duration
		for ref := range int32(300) {
			r := prompt()
			r.Ref = ref
			require.NoError(t, e.Add(now, r))
			p, err := e.Runner().ScheduleUntil(now, now+time.Second)
			require.NoError(t, err)
			if p == nil {
				continue
			}
			probe(p.Start + p.StepTime/2)
			_, err = e.Complete(p.End)
			require.NoError(t, err)
			require.NoError(t, e.Check())
			now = p.End
			probe(now)
		}
	}
	t.Logf("%d whole hits, %d partial, %d misses", whole, partial, none)
	assert.Greater(t, whole, 100)
	assert.Greater(t, partial, 100)
	assert.Greater(t, none, 100)
}

// The chapter-style count: after a request computed a 100-token prompt of
// three 32-token ids, the same prompt finds 96 tokens (6 blocks of 16)
// cached, one sharing only the first id 32, another none; with the cache
// off, none.
func TestCachedKeysCountsTokens(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	prefix := []uint64{7, 8, 9, 10}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 1, Prefix: prefix, PrefixBlockTokens: 32}))
	step(t, e, 0)
	b := e.Config().BlockSize
	assert.Equal(t, 96, e.CachedKeys(PrefixKeys(nil, prefix, 32, 100, b)))
	assert.Equal(t, 32, e.CachedKeys(PrefixKeys(nil, []uint64{7, 99, 98}, 32, 100, b)))
	assert.Equal(t, 0, e.CachedKeys(PrefixKeys(nil, []uint64{8, 9, 10}, 32, 100, b)))
	off, err := New(Config{DisablePrefixCache: true}, nil)
	require.NoError(t, err)
	assert.Equal(t, 0, off.CachedKeys(PrefixKeys(nil, prefix, 32, 100, b)))
}
