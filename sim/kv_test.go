package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// Under heavy preemption with shared prefixes, advancing runs of decode
// steps in one move still gives the same bytes as planning every step
// (issue 16's check): a KV-starved Atlas replica, a few long system
// prompts almost always shared, past its saturation.
func TestFastForwardIsExactUnderKVPressureWithSharing(t *testing.T) {
	t.Parallel()
	for _, gate := range []bool{true, false} {
		cfg := Config{Engine: engine.Config{KVBlocks: 3000, AdmitOnFirstChunk: !gate}, KeepTokens: true,
			Timeout: 60 * time.Second, Window: Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}}
		src := func() workload.Source {
			g, err := workload.NewSynthetic(workload.Synthetic{Seed: 3, Count: 2000, Arrival: workload.Arrival{Rate: 2.6},
				Lengths: workload.Fixed(1000, 200), Prefix: workload.HighReuse})
			require.NoError(t, err)
			return g
		}
		var fast, slow []byte
		var sum Summary
		for _, stepwise := range []bool{false, true} {
			c := cfg
			c.Stepwise = stepwise
			s := src()
			reqs := list{}
			for {
				r, err := s.Next()
				if err != nil {
					break
				}
				reqs = append(reqs, r)
			}
			run, err := runScenario(c, reqs)
			require.NoError(t, err)
			if stepwise {
				slow = run.text
			} else {
				fast, sum = run.text, run.sum
			}
		}
		sameBytes(t, slow, fast)
		assert.Greater(t, sum.Preempt, 20, "the scenario must preempt (gate %v)", gate)
		assert.Greater(t, sum.Cached, sum.InputTokens/2, "and share prefixes (gate %v)", gate)
	}
}

// A request preempted after its first token keeps that first token's
// instant: its TTFT is its original one, and the recompute shows as one
// long inter-token gap. Finding its own blocks cached, it recomputes less
// than with the prefix cache off, so that gap is shorter.
func TestPreemptedRequestKeepsItsTTFT(t *testing.T) {
	reqs := list{
		{ID: 1, InputTokens: 16, OutputTokens: 12},
		{ID: 2, InputTokens: 16, OutputTokens: 12},
	}
	var gaps [2]time.Duration
	for i, off := range []bool{false, true} {
		cfg := Config{KeepTokens: true, Engine: engine.Config{MaxBatchedTokens: 512, MaxSeqs: 4, BlockSize: 4, KVBlocks: 12, DisablePrefixCache: off}}
		recs := map[uint64]Record{}
		src := append(list(nil), reqs...)
		_, err := Run(cfg, &src, ObserverFunc(func(r *Record) { recs[r.ID] = *r }))
		require.NoError(t, err)
		r := recs[2]
		require.Equal(t, 1, r.Preemptions)
		require.Equal(t, StatusOK, r.Status)
		assert.Equal(t, r.Tokens[0], r.FirstToken)
		// Both prompts in one 21.12 ms step (20 ms + 32 × 35 µs).
		assert.Equal(t, 21120*time.Microsecond, r.TTFT(), "prefix cache off: %v", off)
		gaps[i] = r.MaxITL
	}
	// The stall is the wait for request 1 plus the recompute step: 20 ms
	// + 5 tokens × 35 µs with its 5 own blocks found, 25 tokens without.
	assert.Equal(t, 20*35*time.Microsecond, gaps[1]-gaps[0])
}
