package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On random scenarios driven step by step (the slow twin, no cohort),
// Scheduled says on every step exactly what e.sched holds, each request
// once and running, and its tokens sum to those of the step; a request
// is new when it is in Plan.Started, resumed when it was in an earlier
// Plan.Preempted and not scheduled since, else continuing.
func TestScheduledMatchesSched(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 35))
	steps := 0
	var kinds [3]int
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
		preempted := map[int32]bool{}
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
			started := map[int32]bool{}
			for _, ref := range plan.Started {
				started[ref] = true
			}
			for j, s := range buf {
				r := e.sched[j]
				kind := ScheduledContinuing
				if started[s.Ref] {
					kind = ScheduledNew
				} else if preempted[s.Ref] {
					kind = ScheduledResumed
				}
				delete(preempted, s.Ref)
				kinds[kind]++
				require.Equal(t, Scheduled{Ref: r.req.Ref, Tokens: r.sched, Computed: r.computed, Decode: r.decoding, Kind: kind}, s)
				require.False(t, seen[s.Ref], "request %d twice", s.Ref)
				seen[s.Ref] = true
				require.Equal(t, phaseRunning, r.phase, "request %d scheduled but not running", s.Ref)
				sum += s.Tokens
			}
			for _, ref := range plan.Preempted {
				preempted[ref] = true
			}
			want = plan.Batch.PrefillTokens() + len(plan.Batch.Decode)
			require.Equal(t, want, sum, "tokens of the step")
			_, err = e.Complete(plan.End)
			require.NoError(t, err)
			now = plan.End
		}
	}
	require.Greater(t, steps, 1000)
	require.Positive(t, kinds[ScheduledResumed], "resumed requests: %v", kinds)
	require.Positive(t, kinds[ScheduledNew], "new requests: %v", kinds)
}

// With a decode cohort (streaks omitted, a DecodeSum model), Scheduled
// names the cohort's members too: on random scenarios it names on every
// step what its twin without a cohort (walkRuns) names, in the same
// order, and its tokens sum to the step's, cohort included.
func TestScheduledNamesTheCohort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 55))
	steps, cohort := 0, 0
	for range 200 {
		cfg := Config{
			MaxSeqs:          1 + rng.IntN(16),
			MaxBatchedTokens: 64 + 8*rng.IntN(256),
			ChunkCap:         32 * rng.IntN(4),
			KVBlocks:         8 + rng.IntN(200),
			BlockSize:        4,
		}
		e, err := New(cfg, nil)
		require.NoError(t, err)
		e.Runner().OmitStreaks(true)
		twin, err := New(cfg, nil)
		require.NoError(t, err)
		walkRuns(twin)
		twin.Runner().OmitStreaks(true)
		var now time.Duration
		var buf, buf2 []Scheduled
		for i := range 1 + rng.IntN(40) {
			arg := rng.IntN(256)
			r := Request{Ref: int32(i), Input: 1 + 3*arg, Output: 1 + arg%40, Priority: arg % 3,
				Prefix: []uint64{uint64(arg % 3), uint64(arg % 5)}, PrefixBlockTokens: 16}
			_ = e.Add(now, r)
			_ = twin.Add(now, r)
		}
		for {
			plan, err := e.Schedule(now)
			require.NoError(t, err)
			plan2, _ := twin.Schedule(now)
			if plan == nil {
				require.Nil(t, plan2)
				break
			}
			steps++
			if plan.Cohort > 0 {
				cohort++
			}
			var ok bool
			buf, ok = e.Scheduled(buf[:0])
			require.True(t, ok)
			buf2, _ = twin.Scheduled(buf2[:0])
			require.Equal(t, buf2, buf)
			sum := 0
			for _, s := range buf {
				sum += s.Tokens
			}
			require.Equal(t, plan.Batch.PrefillTokens()+len(plan.Batch.Decode)+plan.Cohort, sum, "tokens of the step")
			_, err = e.Complete(plan.End)
			require.NoError(t, err)
			_, err = twin.Complete(plan.End)
			require.NoError(t, err)
			now = plan.End
		}
	}
	require.Greater(t, steps, 1000)
	require.Greater(t, cohort, steps/4, "steps with a cohort")
}
