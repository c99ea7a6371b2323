package kvtier

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// anonKey stands for one anonymous block in order's answer.
const anonKey = ^uint64(0)

// order lists the blocks held, least recent first, an anonymous block as
// anonKey.
func order(l *LRU) []uint64 {
	out := []uint64{}
	for i := l.nodes[nil32].next; i != nil32; i = l.nodes[i].next {
		n := l.nodes[i]
		if n.anon > 0 {
			for range n.anon {
				out = append(out, anonKey)
			}
			continue
		}
		out = append(out, n.key)
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, Config{}.Validate(), "the zero value is no tier")
	err := Config{Blocks: -1}.Validate()
	require.ErrorContains(t, err, "Config.Blocks")
	_, err = New(Config{Blocks: -3})
	require.ErrorContains(t, err, "Config.Blocks is -3")
}

// Capacity 0 is no tier: every Insert is refused and counted as dropped,
// every Lookup misses, nothing is held.
func TestZeroCapacityIsNoTier(t *testing.T) {
	l := mustNew(t, 0)
	ev, anon, ok := l.Insert([]uint64{1, 2, 3}, nil)
	assert.False(t, ok)
	assert.Empty(t, ev)
	assert.Zero(t, anon)
	_, _, ok = l.InsertAnon(4, nil)
	assert.False(t, ok)
	assert.False(t, l.Lookup(1))
	assert.False(t, l.Pin(1))
	assert.Zero(t, l.Len())
	assert.Equal(t, Counters{Misses: 1, Dropped: 7}, l.Counters())
}

// Touch leaves a chain's first block the most recent (vLLM's reversed
// touch) and skips keys not held; Lookup changes no recency.
func TestTouchChainHeadMostRecent(t *testing.T) {
	l := mustNew(t, 8)
	_, _, ok := l.Insert([]uint64{1, 2, 3, 4}, nil)
	require.True(t, ok)
	assert.Equal(t, []uint64{1, 2, 3, 4}, order(l), "new keys enter most recent last, in order")
	assert.True(t, l.Lookup(1))
	assert.Equal(t, []uint64{1, 2, 3, 4}, order(l), "Lookup changes no recency")
	l.Touch([]uint64{2, 9, 3})
	assert.Equal(t, []uint64{1, 4, 3, 2}, order(l))
	l.Touch([]uint64{1, 2, 3, 4})
	assert.Equal(t, []uint64{4, 3, 2, 1}, order(l))
}

// A pinned entry is never evicted: an Insert into a tier full of pinned
// entries is refused whole (ok false, its blocks counted as Dropped, the
// tier unchanged), and once unpinned the entry is evicted least recent
// first. Remove refuses a pinned entry too.
func TestLRUPinnedNeverEvicted(t *testing.T) {
	l := mustNew(t, 3)
	_, _, ok := l.Insert([]uint64{1, 2, 3}, nil)
	require.True(t, ok)
	for _, k := range []uint64{1, 2, 3} {
		require.True(t, l.Pin(k))
	}
	require.True(t, l.Pin(1)) // two loads of block 1
	ev, _, ok := l.Insert([]uint64{4}, nil)
	assert.False(t, ok)
	assert.Empty(t, ev)
	assert.Equal(t, []uint64{1, 2, 3}, order(l))
	assert.False(t, l.Remove(2))
	assert.Equal(t, int64(1), l.Counters().Dropped)

	require.True(t, l.Unpin(2))
	ev, _, ok = l.Insert([]uint64{4, 5}, nil)
	assert.False(t, ok, "one evictable block cannot make room for two: refused whole")
	assert.Empty(t, ev)
	ev, _, ok = l.Insert([]uint64{4}, nil)
	assert.True(t, ok)
	assert.Equal(t, []uint64{2}, ev, "only the unpinned block goes")

	require.True(t, l.Unpin(1))
	assert.Equal(t, []uint64{1, 3, 4}, order(l))
	ev, _, ok = l.Insert([]uint64{5, 6}, nil)
	assert.False(t, ok, "block 1 has a second pin: only block 4 can go")
	assert.Empty(t, ev)
	require.True(t, l.Unpin(1))
	assert.False(t, l.Unpin(1), "no pin left")
	ev, _, ok = l.Insert([]uint64{5, 6}, nil)
	assert.True(t, ok)
	assert.Equal(t, []uint64{1, 4}, ev, "least recent first, pinned block 3 skipped")
	assert.Equal(t, []uint64{3, 5, 6}, order(l))
	assert.True(t, l.Pinned(3))
	assert.Equal(t, Counters{Evictions: 3, Dropped: 1 + 2 + 2}, l.Counters())
}

// The keys an Insert already holds are protected, as vLLM's
// prepare_store: the store does not evict its own chain.
func TestInsertProtectsHeldKeys(t *testing.T) {
	l := mustNew(t, 3)
	_, _, ok := l.Insert([]uint64{1, 2, 3}, nil)
	require.True(t, ok)
	ev, _, ok := l.Insert([]uint64{1, 9}, nil)
	require.True(t, ok)
	assert.Equal(t, []uint64{2}, ev, "1 is least recent but in the store")
	assert.Equal(t, []uint64{1, 3, 9}, order(l), "a held key is not touched")
	_, _, ok = l.Insert([]uint64{1, 3, 9, 10}, nil)
	assert.False(t, ok, "all held blocks protected: no room")
	ev, _, ok = l.Insert([]uint64{7, 7, 7}, nil)
	require.True(t, ok, "duplicates count once")
	assert.Equal(t, []uint64{1}, ev)
}

// Anonymous runs hold capacity, are never hit, and are evicted block by
// block in insertion order with the keyed entries.
func TestAnonRunsEvictInOrder(t *testing.T) {
	l := mustNew(t, 6)
	_, _, ok := l.InsertAnon(2, nil)
	require.True(t, ok)
	_, _, ok = l.Insert([]uint64{1}, nil)
	require.True(t, ok)
	_, _, ok = l.InsertAnon(3, nil)
	require.True(t, ok)
	assert.Equal(t, 6, l.Len())
	assert.Equal(t, []uint64{anonKey, anonKey, 1, anonKey, anonKey, anonKey}, order(l))

	ev, anon, ok := l.Insert([]uint64{2}, nil)
	require.True(t, ok)
	assert.Empty(t, ev)
	assert.Equal(t, 1, anon, "the oldest run loses its oldest block")
	ev, anon, ok = l.InsertAnon(3, nil)
	require.True(t, ok)
	assert.Equal(t, []uint64{1}, ev)
	assert.Equal(t, 2, anon, "the rest of the first run, then key 1, then one of the second run")
	assert.Equal(t, []uint64{anonKey, anonKey, 2, anonKey, anonKey, anonKey}, order(l))
	assert.Equal(t, int64(1+3), l.Counters().Evictions)

	_, _, ok = l.InsertAnon(7, nil)
	assert.False(t, ok, "a run larger than the tier is refused")
	assert.Equal(t, 6, l.Len())
}

// Once warm, no operation allocates: the nodes and the map are reused.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	l := mustNew(t, 64)
	reqs := stream(1, 200)
	buf := make([]uint64, 0, 64)
	run := func() {
		for _, chain := range reqs {
			for _, k := range chain {
				l.Lookup(k)
			}
			buf, _, _ = l.Insert(chain, buf[:0])
			l.Touch(chain)
			if len(chain) > 0 {
				l.Pin(chain[0])
				l.Unpin(chain[0])
			}
			buf, _, _ = l.InsertAnon(3, buf[:0])
		}
	}
	run()
	run()
	assert.Zero(t, testing.AllocsPerRun(5, run))
}
