package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/lcp"
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

// TestAscOfIsLen holds prefixChains.ascOf, how far an arrival's ids run
// on from the first found through its memo slot's prompt and, for a
// request that promises at most two runs, by bisection, to ascend.Len's
// scan: prompts of a few groups' shared ids, then their own (at most two
// runs, promised), some with a promise broken (a third run, which Two's
// check catches or not: then promised falsely, skipped) or not made,
// each through a slot holding the prompt before it.
func TestAscOfIsLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	var k prefixChains
	var prev []uint64
	prevAsc, fresh := 0, uint64(1<<40)
	for range 20_000 {
		g := uint64(rng.IntN(4))
		shared := rng.IntN(40)
		ids := make([]uint64, 0, 64)
		for i := range shared {
			ids = append(ids, g*1000+uint64(i))
		}
		own := rng.IntN(30)
		if shared+own == 0 {
			own = 1
		}
		for range own {
			ids = append(ids, fresh)
			fresh++
		}
		two := rng.IntN(4) > 0
		if rng.IntN(8) == 0 && len(ids) > 2 { // a third run: the promise broken
			j := 1 + rng.IntN(len(ids)-1)
			ids[j] += 1 << 20
			for i := j + 1; i < len(ids); i++ {
				ids[i] = ids[i-1] + 1
			}
			if _, ok := ascend.Two(ids, 0); ok && ascend.Len(ids) != mustTwo(ids) {
				two = false // a break Two's check misses: no module source promises so
			}
		}
		if rng.IntN(5) == 0 { // a cut prompt (InputTokens/p)
			ids = ids[:1+rng.IntN(len(ids))]
		}
		same := lcp.Len(prev, ids)
		want := ascend.Len(ids)
		got := k.ascOf(ids, prevAsc, same, two)
		require.Equal(t, want, got, "ids %v, slot's %v (run %d), promised %v", ids, prev, prevAsc, two)
		prev, prevAsc = ids, got
	}
}

func mustTwo(ids []uint64) int {
	n, _ := ascend.Two(ids, 0)
	return n
}
