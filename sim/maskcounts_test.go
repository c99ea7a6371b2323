package sim

import (
	"math/bits"
	"testing"
	"time"

	"github.com/servesim/servesim/engine"

	"github.com/stretchr/testify/require"
)

// asMap is the replica's copies as a map, as the index kept them before
// keyCounts.
func (k *replicaKeys) asMap() map[uint64]int32 {
	m := map[uint64]int32{}
	c, i := k.t, uint8(bits.TrailingZeros64(k.bit))
	if c.zero&k.bit != 0 {
		m[0] = 1 + c.more[moreKey{0, i}]
	}
	for j, h := range c.tab.hs {
		if h != 0 && c.tab.ms[j]&k.bit != 0 {
			m[keyOfHash(h)] = 1 + c.more[moreKey{h, i}]
		}
	}
	return m
}

// check holds the shared table to its own rules: keyCounts' (no more
// copies, no key 0 in the table), its masks beside its keys, every key
// held by some replica, and more copies only of a replica's keys held.
func (c *maskCounts) check(t *testing.T) {
	t.Helper()
	ref := map[uint64]int32{}
	for j, h := range c.tab.hs {
		if h != 0 {
			ref[keyOfHash(h)] = 1
			if c.tab.ms[j] == 0 {
				t.Fatalf("hash %#x at slot %d: held by no replica", h, j)
			}
		} else if c.tab.ms[j] != 0 {
			t.Fatalf("empty slot %d: mask %#x", j, c.tab.ms[j])
		}
	}
	if len(c.tab.ms) != len(c.tab.hs) || len(c.tab.more) > 0 || c.tab.zero > 0 {
		t.Fatalf("%d masks for %d slots, %d more, %d zero", len(c.tab.ms), len(c.tab.hs), len(c.tab.more), c.tab.zero)
	}
	c.tab.check(t, ref)
	for k, m := range c.more {
		if k.h == 0 && c.zero&(1<<k.i) != 0 {
			continue
		}
		if j, ok := c.tab.find(k.h); m < 1 || !ok || c.tab.ms[j]&(1<<k.i) == 0 {
			t.Fatalf("hash %#x, replica %d: %d copies more of a key it does not hold", k.h, k.i, m)
		}
	}
}

// maskCountsOps drives a maskCounts shared by a few replicas, and one
// keyCounts a replica (the key-by-key index, its twin), with the
// operations ops spell, and holds them equal after each: each replica's
// answers (has, addOne's, remove's), its copies of every key (asMap),
// and mask against has of each. It returns how many removals emptied an
// entry another replica had held (a bit cleared, the entry deleted
// later), and the most slots.
func maskCountsOps(t *testing.T, ops []byte) (shared, slots int) {
	if len(ops) == 0 {
		return 0, 0
	}
	n := 1 + int(ops[0]%4) // replicas
	bitOf := []uint64{1, 1 << 5, 1 << 63, 1 << 2}[:n]
	c := newMaskCounts()
	if ops[0]%3 == 1 {
		c.sizeFor(4 * int(ops[0]))
		c.tab.jump = 64 << (ops[0] % 4)
	}
	twins := make([]keyCounts, n)
	pool := tableKeys()
	key := func(b byte) uint64 { return pool[int(b)%len(pool)] }
	for len(ops) >= 3 {
		op, r, arg := ops[0], int(ops[1])%n, ops[2]
		ops = ops[3:]
		b, tw := bitOf[r], &twins[r]
		switch op % 4 {
		case 0, 1: // add a batch of keys, some more than once
			m := min(int(arg%40)+1, len(ops))
			keys := make([]uint64, m)
			for i := range keys {
				keys[i] = key(ops[i])
			}
			ops = ops[m:]
			if m == 1 && arg%2 == 0 {
				if got, want := c.addOne(keys[0], b), tw.addOne(keys[0]); got != want {
					t.Fatalf("replica %d: addOne(%#x) = %v, want %v", r, keys[0], got, want)
				}
				break
			}
			c.add(keys, b)
			tw.add(keys)
		case 2: // remove one copy
			k := key(arg)
			if m := c.mask(k); m&b != 0 && m != b {
				shared++
			}
			if got, want := c.remove(k, b), tw.remove(k); got != want {
				t.Fatalf("replica %d: remove(%#x) = %v, want %v", r, k, got, want)
			}
		case 3: // a fresh random key
			k := (uint64(arg)+1)*0xbf58476d1ce4e5b9 ^ uint64(len(ops))
			if got, want := c.addOne(k, b), tw.addOne(k); got != want {
				t.Fatalf("replica %d: addOne(%#x) = %v, want %v", r, k, got, want)
			}
		}
		for _, k := range pool {
			m := uint64(0)
			for i, tw := range twins {
				if h := tw.has(k); h {
					m |= bitOf[i]
				}
				if c.has(k, bitOf[i]) != tw.has(k) {
					t.Fatalf("replica %d, key %#x: has %v, want %v", i, k, c.has(k, bitOf[i]), tw.has(k))
				}
			}
			if c.mask(k) != m {
				t.Fatalf("key %#x: mask %#x, want %#x", k, c.mask(k), m)
			}
		}
		for i := range twins {
			rk := replicaKeys{t: c, bit: bitOf[i]}
			require.Equal(t, twins[i].asMap(), rk.asMap(), "replica %d", i)
		}
		c.check(t)
	}
	return shared, len(c.tab.hs)
}

// TestMaskCountsIsKeyCounts holds maskCounts, shared by up to four
// replicas, to one keyCounts a replica over random adds, removes and
// lookups; removals must meet keys held by several replicas.
func TestMaskCountsIsKeyCounts(t *testing.T) {
	t.Parallel()
	shared, slots := 0, 0
	for seed := range uint64(40) {
		ops := tableOps(seed, 44, 2400, 1200, 3)
		s, n := maskCountsOps(t, ops)
		shared, slots = shared+s, max(slots, n)
	}
	t.Logf("%d removals of a key other replicas held; tables of up to %d slots", shared, slots)
	require.Positive(t, shared)
	require.GreaterOrEqual(t, slots, 256)
}

// FuzzMaskCounts holds maskCounts to one keyCounts a replica.
func FuzzMaskCounts(f *testing.F) {
	f.Add([]byte{1, 0, 10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 2, 1, 2, 3, 0, 1, 5, 7})
	f.Fuzz(func(t *testing.T, ops []byte) { maskCountsOps(t, ops) })
}

// TestSharedTablesAreOwn holds EventsView's indexes sharing a table a
// band of replicas (maskCounts) to each index with a table of its own
// (eventsOwnTables, as a keyCounts a replica held the keys): every
// answer at every arrival, and every record and the summary, byte for
// byte, over eventTwins' scenarios. It requires keys held by several
// replicas in one entry, and removals.
func TestSharedTablesAreOwn(t *testing.T) {
	t.Parallel()
	shared, removed := 0, 0
	runs := eventTwins(t, twins{eventsOwnTables: true}, func(r *runner) {
		s, ok := r.cache.(*eventsState)
		if !ok {
			return
		}
		for _, x := range s.reps {
			removed += x.removed
		}
		for _, c := range s.tables {
			for _, m := range c.tab.ms {
				if bits.OnesCount64(m) > 1 {
					shared++
				}
			}
		}
	})
	t.Logf("%d runs: %d keys held by several replicas at the end, %d removals", runs, shared, removed)
	require.Positive(t, shared)
	require.Positive(t, removed)
}

// TestSharedTablesInBands holds a fleet of 70 replicas, whose indexes
// share two tables (replicas 0 to 63, and 64 to 69), to indexes with a
// table each, as TestSharedTablesAreOwn: PrefixAffinity over
// EventsView on the shared-prefix workload, small pools that evict. It
// fails with every replica given the first table.
func TestSharedTablesInBands(t *testing.T) {
	t.Parallel()
	cfg := Config{Fleet: Fleet{Replicas: Copies(70, ReplicaConfig{Engine: engine.Config{KVBlocks: 600}}),
		Router: PrefixAffinity{View: EventsView{Lag: 20 * time.Millisecond}}}}
	tables, removed := 0, 0
	eventTwin(t, twins{eventsOwnTables: true}, "70 replicas", cfg, sharedPrefix(t, 70, 2, 350), func(r *runner) {
		s := r.cache.(*eventsState)
		tables = len(s.tables)
		for _, x := range s.reps[64:] {
			removed += x.removed
		}
	})
	require.Equal(t, 2, tables)
	require.Positive(t, removed, "the second band's replicas evict")
}
