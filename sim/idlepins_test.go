package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/kvtier"
	"github.com/servesim/servesim/workload"
)

// TestIdlePinsArePins holds a host tier's stores that leave the loads
// not pinned yet unpinned, where the store's eviction cannot reach their
// keys (idlePins), to the same runs pinning them at every store that may
// evict (twins.pinEachEvict), byte for byte, and the host tiers'
// counters and sizes (tiersAreTheTwin).
func TestIdlePinsArePins(t *testing.T) {
	t.Parallel()
	tiersAreTheTwin(t, twins{pinEachEvict: true}, "stores that may evict left loads unpinned", func(p, q *tierPort) int {
		require.False(t, p.pinEach)
		require.True(t, q.pinEach)
		require.Zero(t, q.pinsSkipped)
		return p.pinsSkipped
	})
}

// TestQuickSettleIsSettle holds a host tier's store that skips an empty
// settle, and a settle of one note that skips coverLater (quickSettle),
// to the same runs settling always through coverLater
// (twins.settleEach), as TestIdlePinsArePins (tiersAreTheTwin).
func TestQuickSettleIsSettle(t *testing.T) {
	t.Parallel()
	tiersAreTheTwin(t, twins{settleEach: true}, "lazy host tiers filled (their stores past the fill take quickSettle)", func(p, q *tierPort) int {
		require.False(t, p.settleEach)
		require.True(t, q.settleEach)
		if p.lazy && p.host != nil && p.host.Counters().Evictions > 0 {
			return 1
		}
		return 0
	})
}

// tiersAreTheTwin runs the random scenarios (host tiers of 32 to 96
// blocks, full after a few requests), the regimes' small workloads, and
// Regime/Tiers' workload at 300 requests with host tiers of 600 to
// 20,000 blocks (full within its first hundreds of requests, every store
// past the fill evicting), as they run and with tw: the same bytes,
// every record and the summary, and each host tier's counters and size.
// took counts, of each port and its twin's, how often the path was
// taken, which some run must.
func tiersAreTheTwin(t *testing.T, tw twins, what string, took func(fast, slow *tierPort) int) {
	t.Helper()
	tiersAreTheTwinRuns(t, tw, what, func(ar, br *runner) int {
		n := 0
		for i := range ar.tiers.ports {
			n += took(&ar.tiers.ports[i], &br.tiers.ports[i])
		}
		return n
	})
}

// tiersAreTheTwinRuns is tiersAreTheTwin, took counting of each run
// with tiers and its twin's. Its Regime/Tiers runs include one over a
// host link of 200 MB/s, whose loads land inside runs (landTier).
func tiersAreTheTwinRuns(t *testing.T, tw twins, what string, took func(fast, slow *runner) int) {
	t.Helper()
	n := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		ar, br := sameAsTwin(t, tw, name, cfg, src)
		if ar.tiers == nil {
			return
		}
		for i := range ar.tiers.ports {
			p, q := &ar.tiers.ports[i], &br.tiers.ports[i]
			if p.host != nil {
				require.Equal(t, q.host.Counters(), p.host.Counters(), name)
				require.Equal(t, q.host.Len(), p.host.Len(), name)
			}
		}
		n += took(ar, br)
	}
	scenariosAndRegimes(t, check)
	for _, rg := range regimes {
		if rg.name != "Tiers" {
			continue
		}
		for _, blocks := range []int{600, 2_000, 6_000, 20_000} {
			cfg, src := rg.build(t, 300)
			cfg.Fleet.HostTier.Blocks = blocks
			check(rg.name, cfg, src)
		}
		cfg, src := rg.build(t, 300)
		cfg.Fleet.HostTier.Blocks, cfg.Fleet.HostTier.Link.Bandwidth = 6_000, 2e8
		check(rg.name+", a slow host link", cfg, src)
	}
	t.Logf("%d %s", n, what)
	require.Positive(t, n)
}

// TestIdlePinsDriven drives two ports of a host tier alone with lazy
// touches with the same random requests (chains of a few groups' shared
// keys and their own, looked up and loaded, stored in chunks and then a
// block at a time, loads landing late): one leaves a load unpinned past
// a store that cannot reach its keys (idlePins), the other pins at every
// store that may evict (twins.pinEachEvict). The tiers are a few times a
// chain's size, so that stores evict near the loads' keys, as often
// reaching them as not. Every answer, the keys each store evicts in
// order, what each tier holds, its counters, and, now and then, its pins
// stay equal.
func TestIdlePinsDriven(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(61, 0x1d1e))
	const refs = 8
	idle, pinned := 0, int64(0)
	for round := range 300 {
		capacity, ports := lazyPorts(t, rng)
		ports[1].lazy, ports[1].pinEach = true, true
		lru, err := kvtier.New(kvtier.Config{Blocks: capacity, Chained: true})
		require.NoError(t, err)
		ports[1].host = lru
		next := uint64(1 << 20)
		groups := contentGroups(rng, &next, 2, 12)
		var all []uint64
		fresh := func() []uint64 {
			var keys []uint64
			k := uint64(0)
			for _, c := range groups[rng.IntN(len(groups))] {
				k = chainKey(k, c)
				keys = append(keys, k)
			}
			for range 1 + rng.IntN(12) {
				k = chainKey(k, next)
				next++
				keys = append(keys, k)
			}
			all = append(all, keys...)
			return keys
		}
		type request struct {
			chain  []uint64
			stored int
		}
		reqs := make([]request, 4)
		for i := range reqs {
			reqs[i].chain = fresh()
		}
		var loading [refs]bool
		for step := range 400 {
			r := &reqs[rng.IntN(len(reqs))]
			switch op := rng.IntN(10); {
			case op < 3: // a lookup, and a load of what it finds
				hbm := rng.IntN(len(r.chain) + 1)
				n, busy := ports[0].Find(r.chain, hbm)
				n1, busy1 := ports[1].Find(r.chain, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find, round %d step %d", round, step)
				if ref := rng.IntN(refs); n > 0 && !busy && !loading[ref] {
					loading[ref] = true
					for _, p := range ports {
						p.Load(int32(ref), r.chain[hbm:hbm+n])
					}
				}
			case op < 7: // its next chunk, or a decode's block
				if r.stored == len(r.chain) {
					k := chainKey(r.chain[len(r.chain)-1], next)
					next++
					r.chain = append(r.chain, k)
					all = append(all, k)
				}
				to := min(len(r.chain), r.stored+1+rng.IntN(8))
				keys := r.chain[r.stored:to]
				require.Equal(t, ports[1].Store(keys, r.chain[:to]), ports[0].Store(keys, r.chain[:to]), "Store, round %d step %d", round, step)
				require.Equal(t, ports[1].evicted, ports[0].evicted, "evicted, round %d step %d", round, step)
				r.stored = to
			case op == 7: // a load lands
				if ref := rng.IntN(refs); loading[ref] {
					loading[ref] = false
					for _, p := range ports {
						p.Release(int32(ref))
					}
				}
			case op == 8: // the request leaves; another comes
				*r = request{chain: fresh()}
			default: // preempted: it stores its blocks again
				r.stored = rng.IntN(len(r.chain) + 1)
			}
			require.Equal(t, ports[1].loads, ports[0].loads)
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len(), "round %d step %d", round, step)
			require.Equal(t, ports[1].host.Counters(), ports[0].host.Counters(), "round %d step %d", round, step)
			if rng.IntN(20) == 0 {
				for _, k := range all {
					require.Equal(t, ports[1].heldOrPutOff(k), ports[0].heldOrPutOff(k), "key %d, round %d step %d", k, round, step)
					require.Equal(t, ports[1].isLoading(k), ports[0].isLoading(k), "key %d, round %d step %d", k, round, step)
				}
			}
		}
		idle += ports[0].pinsSkipped
		pinned += ports[1].host.Counters().Evictions
		require.Zero(t, ports[1].pinsSkipped)
	}
	t.Logf("%d stores that may evict left loads unpinned; %d evictions", idle, pinned)
	require.Greater(t, idle, 1000, "stores no longer leave loads unpinned")
}
