package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// keysChecker routes as PrefixAffinity and, at every arrival, holds the
// view's answer for every replica (the request's keys computed once per
// arrival and block size, View.prefixKeys) to the replica's own
// engine.CachedPrefix, which computes the keys afresh; it counts the
// answers by kind, and the allocations of asking every replica.
type keysChecker struct {
	t                           *testing.T
	prefixTokens                int // of the shared prompts
	whole, partial, none, calls int
	allocs                      float64
}

func (c *keysChecker) Route(r *workload.Request, v *View) int {
	for i := range v.Replicas() {
		rep := &v.r.reps[i]
		got := v.CachedPrefix(i)
		rep.run().SyncTo(v.r.now)
		want := rep.eng.CachedPrefix(r.PrefixHashes, r.PrefixBlockTokens, r.InputTokens)
		if got != want {
			c.t.Fatalf("request %d, replica %d (block size %d): the view says %d tokens cached, the replica %d", r.ID, i, rep.eng.Config().BlockSize, got, want)
		}
		switch {
		case got == 0:
			c.none++
		case got == c.prefixTokens: // the whole shared prompt (its suffix is the request's own)
			c.whole++
		default:
			c.partial++
		}
	}
	if c.calls++; c.calls%50 == 0 { // asking every replica again allocates nothing
		c.allocs = max(c.allocs, testing.AllocsPerRun(2, func() {
			for i := range v.Replicas() {
				v.CachedPrefix(i)
			}
		}))
	}
	return PrefixAffinity{}.Route(r, v)
}

// The view asks a fleet's caches with each arrival's keys computed once
// per block size, and answers exactly as each replica's cache: over a
// fleet of replicas of 16- and 32-token blocks, one with its prefix cache
// off, small enough KV pools that prefixes are evicted, behind a router
// that asks every replica at every arrival, fast and step by step (where
// the caches are read in the middle of runs, and at step ends). Asking
// allocates nothing once the key buffers are grown.
func TestViewCachedPrefixIsEachReplicasCache(t *testing.T) {
	small := func(blockSize int, off bool) ReplicaConfig {
		return ReplicaConfig{Engine: engine.Config{BlockSize: blockSize, KVBlocks: 16384 / blockSize, DisablePrefixCache: off}}
	}
	fleet := []ReplicaConfig{small(16, false), small(32, false), small(16, false), small(16, true), small(32, false)}
	prefix := workload.PrefixReuse{Groups: 24, PrefixTokens: 2048, Probability: 0.8, BlockTokens: 16, Zipf: 0.8}
	for _, stepwise := range []bool{false, true} {
		c := &keysChecker{t: t, prefixTokens: prefix.PrefixTokens}
		src, err := workload.NewSynthetic(workload.Synthetic{Seed: 37, Count: 600, Arrival: workload.Arrival{Rate: 6},
			Lengths: workload.Fixed(300, 100), Prefix: prefix})
		require.NoError(t, err)
		sum, err := Run(Config{Fleet: Fleet{Replicas: fleet, Router: c}, Stepwise: stepwise, Window: Window{Horizon: 10 * time.Minute}}, src, nil)
		require.NoError(t, err)
		t.Logf("stepwise %v: %d answers of the whole shared prompt, %d of part of it, %d of none; prefix hit rate %.2f", stepwise, c.whole, c.partial, c.none, float64(sum.Cached)/float64(sum.InputTokens))
		assert.Equal(t, 600*len(fleet), c.whole+c.partial+c.none, "every replica asked at every arrival")
		assert.Greater(t, c.whole, 100)
		assert.Greater(t, c.partial, 10, "evictions cut some prompts short")
		assert.Greater(t, c.none, 600, "one replica has no cache")
		assert.Zero(t, c.allocs, "allocations of asking every replica")
	}
}
