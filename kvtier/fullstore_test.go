package kvtier

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFusedStoreIsStoreSteps holds storeFused to its slow twin, a tier
// whose Store never takes it (noFused: roomFor, makeRoom, insertStacked)
// field by field after every operation (requireSameTier): the nodes, by
// id, their links, marks and labels, the spare ones among them; the
// segments, the free ones, the index's keys and ids, the counts, the
// epoch and the cold chain. Chains on shared prefixes are stored into
// small full chained tiers a chunk at a time, from where they left off,
// from a key they hold (a held lead run, new keys after it) or from their
// first, decodes' blocks, with touches, anonymous runs, removals and
// pins among them. It requires stores storeFused took (with and without
// an anonymous run or a keyed node outside a segment evicted) and stores
// it left to the twin.
func TestFusedStoreIsStoreSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 0xf05e))
	var c fusedCounts
	for round := range 150 {
		fusedStores(t, r, round, 8+r.IntN(64), 300, &c)
	}
	t.Logf("stores fused %d (evicting %d, past an anonymous run %d), left %d", c.fused, c.evicting, c.anon, c.left)
	require.Greater(t, c.fused, 2000)
	require.Greater(t, c.evicting, 1000)
	require.Greater(t, c.anon, 20)
	require.Greater(t, c.left, 500)
}

type fusedCounts struct{ fused, evicting, anon, left int }

// fusedStores is a round of TestFusedStoreIsStoreSteps: steps operations
// on a fused tier and its twin of capacity blocks.
func fusedStores(t *testing.T, r *rand.Rand, round, capacity, steps int, c *fusedCounts) {
	fast, slow := mustNew(t, capacity), mustNew(t, capacity)
	fast.chained, slow.chained = true, true
	slow.noFused = true
	prefixes := sharedPrefixes(1+r.IntN(3), func() int { return 1 + r.IntN(capacity/2+1) })
	own := uint64(1 << 40)
	var reqs []*chainReq
	var pinned []uint64
	for step := range steps {
		switch op := r.IntN(20); {
		case op < 13 || len(reqs) == 0: // a store
			if len(reqs) == 0 || op == 0 || len(reqs) < 8 && op == 1 {
				reqs = append(reqs, &chainReq{chain: newChain(r, prefixes, &own, capacity/3+1)})
			}
			q := reqs[r.IntN(len(reqs))]
			if q.stored == len(q.chain) {
				own++
				q.chain = append(q.chain, own) // a decode's block
			}
			from := q.stored
			switch r.IntN(4) {
			case 0: // from its first key
				from = 0
			case 1: // from a key it holds: a held lead run
				from = r.IntN(q.stored + 1)
			}
			to := min(q.stored+1+r.IntN(capacity/2+1), len(q.chain))
			keys, chain := q.chain[from:to], q.chain[:to]
			sg0, fg0 := slow.guardEpoch, fast.guardEpoch
			fe, fa, fok := fast.Store(keys, chain, nil)
			se, sa, sok := slow.Store(keys, chain, nil)
			requireSameStore(t, fe, fa, fok, se, sa, sok)
			switch {
			case slow.guardEpoch == sg0: // room for every key, or a node pinned
			case fast.guardEpoch == fg0: // protectRuns' guards not taken
				c.fused++
				if len(se) > 0 || sa > 0 {
					c.evicting++
				}
				if sa > 0 {
					c.anon++
				}
			default: // protectRuns' guards taken: left to the twin
				c.left++
			}
			if fok {
				q.stored = max(q.stored, to)
			}
		case op < 15: // a chain touched
			q := reqs[r.IntN(len(reqs))]
			fast.Touch(q.chain[:q.stored])
			slow.Touch(q.chain[:q.stored])
		case op == 15: // an anonymous run
			n := 1 + r.IntN(4)
			fe, fa, fok := fast.InsertAnon(n, nil)
			se, sa, sok := slow.InsertAnon(n, nil)
			requireSameStore(t, fe, fa, fok, se, sa, sok)
		case op == 16: // a key removed
			q := reqs[r.IntN(len(reqs))]
			if q.stored > 0 {
				k := q.chain[r.IntN(q.stored)]
				require.Equal(t, slow.Remove(k), fast.Remove(k))
			}
		case op == 17: // a key pinned
			q := reqs[r.IntN(len(reqs))]
			if q.stored > 0 && len(pinned) < 2 {
				k := q.chain[r.IntN(q.stored)]
				ok := slow.Pin(k)
				require.Equal(t, ok, fast.Pin(k))
				if ok {
					pinned = append(pinned, k)
				}
			}
		default: // the pins let go
			for _, k := range pinned {
				require.Equal(t, slow.Unpin(k), fast.Unpin(k))
			}
			pinned = pinned[:0]
		}
		requireSameTier(t, fast, slow, round, step)
	}
	checkSegments(t, fast)
}

// requireSameTier holds fast's state to slow's, field by field, but the
// guards (storeFused guards its one row in its own registers) and the
// stores' scratch.
func requireSameTier(t *testing.T, fast, slow *LRU, round, step int) {
	t.Helper()
	require.Equal(t, slow.used, fast.used, "round %d step %d: used", round, step)
	require.Equal(t, slow.pinned, fast.pinned, "round %d step %d: pinned", round, step)
	require.Equal(t, slow.epoch, fast.epoch, "round %d step %d: epoch", round, step)
	require.Equal(t, slow.ver, fast.ver, "round %d step %d: ver", round, step)
	require.Equal(t, slow.counters, fast.counters, "round %d step %d: counters", round, step)
	// nil and empty alike: a refused store gives spare back as it was
	// after nextIDs, which may have moved it (spareRoom).
	require.Equal(t, append([]int32{}, slow.spare...), append([]int32{}, fast.spare...), "round %d step %d: spare", round, step)
	require.Equal(t, slow.nodes, fast.nodes, "round %d step %d: nodes", round, step)
	require.Equal(t, slow.freeSegs, fast.freeSegs, "round %d step %d: free segments", round, step)
	require.Equal(t, len(slow.segs), len(fast.segs), "round %d step %d: segments", round, step)
	for k := range slow.segs {
		a, b := &slow.segs[k], &fast.segs[k]
		require.Equal(t, a.keys, b.keys, "round %d step %d: segment %d's keys", round, step, k+1)
		require.Equal(t, a.nodes, b.nodes, "round %d step %d: segment %d's nodes", round, step, k+1)
		require.Equal(t, a.breaks, b.breaks, "round %d step %d: segment %d's breaks", round, step, k+1)
		require.Equal(t, [4]int32{a.live, int32(a.epoch), a.lo, a.hi}, [4]int32{b.live, int32(b.epoch), b.lo, b.hi},
			"round %d step %d: segment %d's count and touch", round, step, k+1)
	}
	require.Equal(t, slow.cold.on, fast.cold.on, "round %d step %d: cold chain", round, step)
	require.Equal(t, slow.cold.keys, fast.cold.keys, "round %d step %d: cold chain's keys", round, step)
	require.Equal(t, indexOf(slow), indexOf(fast), "round %d step %d: index", round, step)
	for k := range fast.segs {
		checkBreaks(t, fast, k) // a free segment's breaks are empty
	}
}

// indexOf is l's index as key and id pairs, by key.
func indexOf(l *LRU) [][2]uint64 {
	var kv [][2]uint64
	l.index.Each(func(key uint64, id int32) { kv = append(kv, [2]uint64{key, uint64(id)}) })
	slices.SortFunc(kv, func(a, b [2]uint64) int {
		if a[0] < b[0] {
			return -1
		}
		if a[0] > b[0] {
			return 1
		}
		return 0
	})
	return kv
}
