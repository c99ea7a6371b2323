package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On random scenarios driven step by step (the slow twin, no cohort),
// Scheduled says on every step exactly what e.sched holds, each request
// once and running, and its tokens sum to those of the step.
func TestScheduledMatchesSched(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 35))
	steps := 0
	for range 200 {
		cfg := Config{
			MaxSeqs:          1 + rng.IntN(16),
			MaxBatchedTokens: 64 + 8*rng.IntN(256),
			ChunkCap:         32 * rng.IntN(4),
			KVBlocks:         8 + rng.IntN(200),
			BlockSize:        []int{4, 16, 12}[rng.IntN(3)],
		}
		if rng.IntN(2) == 1 {
			cfg.Policy = Priority{}
		}
		e, err := New(cfg, nil)
		require.NoError(t, err)
		walkRuns(e)
		var now time.Duration
		var buf []Scheduled
		for i := range 1 + rng.IntN(40) {
			arg := rng.IntN(256)
			_ = e.Add(now, Request{Ref: int32(i), Input: 1 + 3*arg, Output: 1 + arg%40, Priority: arg % 3,
				Prefix: []uint64{uint64(arg % 3), uint64(arg % 5)}, PrefixBlockTokens: 16})
		}
		for {
			plan, err := e.Schedule(now)
			require.NoError(t, err)
			if plan == nil {
				break
			}
			steps++
			var ok bool
			buf, ok = e.Scheduled(buf[:0])
			require.True(t, ok)
			require.Len(t, buf, len(e.sched))
			sum, want := 0, 0
			seen := map[int32]bool{}
			for j, s := range buf {
				r := e.sched[j]
				require.Equal(t, Scheduled{Ref: r.req.Ref, Tokens: r.sched, Computed: r.computed, Decode: r.decoding}, s)
				require.False(t, seen[s.Ref], "request %d twice", s.Ref)
				seen[s.Ref] = true
				require.Equal(t, phaseRunning, r.phase, "request %d scheduled but not running", s.Ref)
				sum += s.Tokens
			}
			want = plan.Batch.PrefillTokens() + len(plan.Batch.Decode)
			require.Equal(t, want, sum, "tokens of the step")
			_, err = e.Complete(plan.End)
			require.NoError(t, err)
			now = plan.End
		}
	}
	require.Greater(t, steps, 1000)
}
