package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// Issue 16's reproduction: in a 5-block cache A's 64-token prompt (four
// 16-token units) is cached; B needs 2 blocks and takes the never-used one
// and one of A's. Freed last first, that is A's fourth block, and C, which
// resends A's prompt, is served the 48 tokens of the first three (it must
// compute its last token). Freed first to last — servesim's order before —
// B took A's first block, which makes the rest unreachable: C got nothing.
func TestReleasedChainIsEvictedFromItsTail(t *testing.T) {
	for _, c := range []struct {
		headFirst bool
		cached    int
	}{{false, 48}, {true, 0}} {
		e, err := New(Config{KVBlocks: 5}, nil)
		require.NoError(t, err)
		e.headFirst = c.headFirst
		prompt := []uint64{1, 2, 3, 4}
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 64, Output: 1, Prefix: prompt, PrefixBlockTokens: 16}))
		step(t, e, 0)
		assert.Equal(t, 4, e.EvictableBlocks(), "A's four blocks stay cached")
		require.NoError(t, e.Add(0, Request{Ref: 2, Input: 20, Output: 1}))
		step(t, e, 0)
		assert.Equal(t, 3, e.EvictableBlocks(), "B evicted one of them")
		require.NoError(t, e.Add(0, Request{Ref: 3, Input: 64, Output: 1, Prefix: prompt, PrefixBlockTokens: 16}))
		p, _ := step(t, e, 0)
		assert.Equal(t, []int{c.cached}, p.Cached, "freed first to last: %v", c.headFirst)
	}
}

// A request preempted mid-decode finds its own blocks still cached when it
// is readmitted and recomputes only the tokens of the blocks that were not
// (here all 20 tokens of its 5 full blocks hit: it computes the 5 after
// them, the last of which it must compute anyway). With the prefix cache
// off it recomputes its prompt and every token it had emitted, 25.
func TestPreemptedRequestFindsItsOwnBlocks(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		chunk costmodel.Chunk
	}{
		{Config{MaxBatchedTokens: 512, MaxSeqs: 4, BlockSize: 4, KVBlocks: 12}, costmodel.Chunk{NewTokens: 5, Context: 20}},
		{Config{MaxBatchedTokens: 512, MaxSeqs: 4, BlockSize: 4, KVBlocks: 12, DisablePrefixCache: true}, costmodel.Chunk{NewTokens: 25}},
	} {
		e, err := New(c.cfg, nil)
		require.NoError(t, err)
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 16, Output: 12}))
		require.NoError(t, e.Add(0, Request{Ref: 2, Input: 16, Output: 12}))
		var resumed *Plan // the first prefill of a request that was started before
		for i := 0; resumed == nil; i++ {
			require.Less(t, i, 100, "request 2 is never preempted and resumed")
			if p, _ := step(t, e, 0); len(p.Batch.Prefill) > 0 && len(p.Started) == 0 {
				resumed = p
			}
		}
		assert.Equal(t, []costmodel.Chunk{c.chunk}, resumed.Batch.Prefill, "prefix cache off: %v", c.cfg.DisablePrefixCache)
	}
}
