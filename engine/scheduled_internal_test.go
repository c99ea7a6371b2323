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
	var kinds, hits [3]int
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
			started := map[int32]int{} // the prompt tokens each found cached
			for i, ref := range plan.Started {
				started[ref] = plan.Cached[i]
			}
			for j, s := range buf {
				r := e.sched[j]
				kind, cached := ScheduledContinuing, 0
				if c, ok := started[s.Ref]; ok {
					kind, cached = ScheduledNew, c
				} else if preempted[s.Ref] {
					// Preemption left nothing computed: what it has
					// now it found cached, whole blocks.
					kind, cached = ScheduledResumed, r.computed
					require.Zero(t, cached%cfg.BlockSize, "request %d resumed with a partial block", s.Ref)
				}
				delete(preempted, s.Ref)
				kinds[kind]++
				if cached > 0 {
					hits[kind]++
				}
				require.Equal(t, Scheduled{Ref: r.req.Ref, Tokens: r.sched, Computed: r.computed, Cached: cached,
					Decode: r.decoding, Kind: kind}, s)
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
	require.Positive(t, hits[ScheduledNew], "new requests with hits: %v", hits)
	require.Positive(t, hits[ScheduledResumed], "resumed requests with hits: %v", hits)
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

// With RecordSteps, each Outcome's Shape.Scheduled names its steps'
// requests: driven step by step it is exactly what Scheduled said while
// the step was in flight; driven in runs of identical decode steps
// (Runner.ScheduleUntil, collected in parts by CompleteUntil), each run
// expanded step by step (same tokens, Computed Tokens more per step,
// every later step continuing with nothing cached) names the same
// requests on every step as the step-by-step twin.
func TestRecordedStepsNameTheirRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	steps, runs := 0, 0
	for range 150 {
		cfg := Config{
			MaxSeqs:          1 + rng.IntN(16),
			MaxBatchedTokens: 64 + 8*rng.IntN(256),
			ChunkCap:         32 * rng.IntN(4),
			KVBlocks:         8 + rng.IntN(200),
			BlockSize:        []int{4, 16}[rng.IntN(2)],
		}
		// Validate refuses a chunk cap above the budget (a draw of 96 on
		// 64 came once requests longer than the pool were served).
		cfg.ChunkCap = min(cfg.ChunkCap, cfg.MaxBatchedTokens)
		var reqs []Request
		for i := range 1 + rng.IntN(30) {
			arg := rng.IntN(256)
			reqs = append(reqs, Request{Ref: int32(i), Input: 1 + 3*arg, Output: 1 + arg%40,
				Prefix: []uint64{uint64(arg % 3), uint64(arg % 5)}, PrefixBlockTokens: 16})
		}
		// Step by step.
		slow, err := New(cfg, nil)
		require.NoError(t, err)
		slow.RecordSteps(true)
		for _, r := range reqs {
			_ = slow.Add(0, r)
		}
		var want [][]Scheduled
		var now time.Duration
		var buf []Scheduled
		for {
			plan, err := slow.Schedule(now)
			require.NoError(t, err)
			if plan == nil {
				break
			}
			buf, _ = slow.Scheduled(buf[:0])
			out, err := slow.Complete(plan.End)
			require.NoError(t, err)
			require.Equal(t, buf, out.Shape.Scheduled, "step %d: the record names what Scheduled named", len(want))
			cached := 0
			for _, q := range out.Shape.Scheduled {
				if q.Kind == ScheduledNew {
					cached += q.Cached
				}
			}
			require.Equal(t, out.Shape.CachedTokens, cached, "the new requests' hits")
			want = append(want, append([]Scheduled(nil), out.Shape.Scheduled...))
			now = plan.End
		}
		// In runs, collected in parts.
		fast, err := New(cfg, nil)
		require.NoError(t, err)
		fast.RecordSteps(true)
		for _, r := range reqs {
			_ = fast.Add(0, r)
		}
		var got [][]Scheduled
		expand := func(out *Outcome) {
			for i := range out.Shape.Steps {
				var one []Scheduled
				for _, q := range out.Shape.Scheduled {
					if i > 0 {
						q.Computed += i * q.Tokens
						q.Cached, q.Kind = 0, ScheduledContinuing
					}
					one = append(one, q)
				}
				got = append(got, one)
			}
		}
		now = 0
		for {
			plan, err := fast.Runner().ScheduleUntil(now, now+time.Hour)
			require.NoError(t, err)
			if plan == nil {
				break
			}
			if plan.Steps > 2 {
				runs++
				mid := plan.Start + time.Duration(1+rng.IntN(plan.Steps-1))*plan.StepTime
				out, err := fast.Runner().CompleteUntil(mid)
				require.NoError(t, err)
				expand(out)
			}
			out, err := fast.Complete(plan.End)
			require.NoError(t, err)
			expand(out)
			now = plan.End
		}
		require.Equal(t, want, got)
		steps += len(want)
	}
	require.Greater(t, steps, 1000)
	require.Greater(t, runs, 50, "runs collected in parts")
}
