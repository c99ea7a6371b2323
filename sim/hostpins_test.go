package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/tierdone"
	"github.com/servesim/servesim/kvtier"
	"github.com/servesim/servesim/workload"
)

// TestHostPinsAnswerAsCounts drives two ports of a host tier alone with
// the same random stores, lookups, loads and releases: one asks the
// tier's pins whether a lookup waits (Find's HeldPinned, the fast path),
// the other counts its loads by key (counted, as countLoads makes every
// port: the slow twin). Every lookup's answer, and which keys each tier
// holds and pins, stay equal. TestHostPinsCountLoads's fleets wait only
// at the first key past the HBM hits (asking HeldPinned of that key
// alone passes it); here a lookup also meets held keys before the one
// being loaded, loads of the same key by two requests, and a request's
// HBM hits ending inside another's load.
func TestHostPinsAnswerAsCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 0xb1))
	const universe, refs = 24, 6
	list := func() []uint64 { // mostly a run of consecutive keys, as a chain's
		n := 1 + rng.IntN(10)
		k := uint64(rng.IntN(universe))
		keys := make([]uint64, 0, n)
		for range n {
			keys = append(keys, k)
			if rng.IntN(8) == 0 {
				k = uint64(rng.IntN(universe))
			} else {
				k = (k + 1) % universe
			}
		}
		return keys
	}
	waits, deep, loads := 0, 0, 0
	for range 400 {
		var ports [2]*tierPort
		capacity := 4 + rng.IntN(universe)
		for i := range ports {
			lru, err := kvtier.New(kvtier.Config{Blocks: capacity})
			require.NoError(t, err)
			r := &runner{}
			r.slots = make([]slot, refs)
			ports[i] = &tierPort{t: &tiers{r: r, landing: -1}, host: lru, loading: map[uint64]int32{}, counted: i == 1}
		}
		var loading [refs]bool
		for step := range 80 {
			switch op := rng.IntN(5); {
			case op == 0: // a request's computed blocks written through
				keys := list()
				require.Equal(t, ports[1].Store(keys, keys), ports[0].Store(keys, keys))
			case op <= 2: // a lookup, and its load when it finds held keys
				keys := list()
				hbm := rng.IntN(len(keys) + 1)
				at := -1 // the first key past the HBM hits that a load holds, in the twin's walk
				for j := hbm; j < len(keys) && ports[1].host.Contains(keys[j]); j++ {
					if ports[1].isLoading(keys[j]) {
						at = j
						break
					}
				}
				n, busy := ports[0].Find(keys, hbm)
				n1, busy1 := ports[1].Find(keys, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find(%v, %d), step %d", keys, hbm, step)
				if busy {
					waits++
					if at > hbm {
						deep++
					}
					continue
				}
				if ref := rng.IntN(refs); n > 0 && !loading[ref] {
					loading[ref] = true
					loads++
					for _, p := range ports {
						p.Load(int32(ref), keys[hbm:hbm+n])
					}
				}
			default: // a load lands, or is cancelled
				if ref := rng.IntN(refs); loading[ref] {
					loading[ref] = false
					for _, p := range ports {
						p.Release(int32(ref))
					}
				}
			}
			require.Equal(t, ports[1].loads, ports[0].loads)
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len())
			for k := range uint64(universe) {
				require.Equal(t, ports[1].host.Contains(k), ports[0].host.Contains(k), "key %d, step %d", k, step)
				require.Equal(t, ports[1].isLoading(k), ports[0].isLoading(k), "key %d, step %d", k, step)
			}
		}
	}
	t.Logf("%d loads, %d lookups waited, %d of them at a key past the first not in HBM", loads, waits, deep)
	require.Greater(t, deep, 100, "the lookups no longer wait past the first key")
}

// TestLazyPinsAreEager drives two ports of a host tier alone with the
// same random stores, lookups, loads and releases: one pins a load's
// keys when a reader needs the pins (lazy pins: pinPending, the fast
// path), the other at Load (eager, the slow twin). The tiers are small,
// so that stores evict while loads are in flight, and the pins are read
// (isLoading) only now and then, so that loads land unpinned and stores
// evict with pins pending. Every answer, which keys each tier holds, its
// counters (evictions among them) and, when read, its pins stay equal.
func TestLazyPinsAreEager(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 0xa7))
	const universe, refs = 24, 6
	pressed, cancelled := 0, 0
	for range 400 {
		ports := hostPorts(t, 4+rng.IntN(universe), refs)
		ports[1].eager = true
		var loading [refs]bool
		for step := range 80 {
			switch op := rng.IntN(5); {
			case op == 0: // a request's computed blocks written through
				keys := keyRun(rng, universe)
				pending, ev := len(ports[0].unpinned) > 0, ports[0].host.Counters().Evictions
				require.Equal(t, ports[1].Store(keys, keys), ports[0].Store(keys, keys), "Store(%v), step %d", keys, step)
				if pending && ports[0].host.Counters().Evictions > ev {
					pressed++
				}
			case op <= 2: // a lookup, and its load when it finds held keys
				keys := keyRun(rng, universe)
				hbm := rng.IntN(len(keys) + 1)
				n, busy := ports[0].Find(keys, hbm)
				n1, busy1 := ports[1].Find(keys, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find(%v, %d), step %d", keys, hbm, step)
				if ref := rng.IntN(refs); n > 0 && !busy && !loading[ref] {
					loading[ref] = true
					for _, p := range ports {
						p.Load(int32(ref), keys[hbm:hbm+n])
					}
				}
			default: // a load lands, or is cancelled
				if ref := rng.IntN(refs); loading[ref] {
					loading[ref] = false
					if slices.Contains(ports[0].unpinned, int32(ref)) {
						cancelled++
					}
					for _, p := range ports {
						p.Release(int32(ref))
					}
				}
			}
			require.Equal(t, ports[1].loads, ports[0].loads)
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len())
			require.Equal(t, ports[1].host.Counters(), ports[0].host.Counters(), "step %d", step)
			for k := range uint64(universe) {
				require.Equal(t, ports[1].host.Contains(k), ports[0].host.Contains(k), "key %d, step %d", k, step)
			}
			if rng.IntN(10) == 0 {
				for k := range uint64(universe) {
					require.Equal(t, ports[1].isLoading(k), ports[0].isLoading(k), "key %d, step %d", k, step)
				}
			}
		}
	}
	t.Logf("%d stores evicted with pins pending, %d loads released unpinned", pressed, cancelled)
	require.Greater(t, pressed, 100, "the stores no longer evict with pins pending")
	require.Greater(t, cancelled, 100, "the loads no longer land unpinned")
}

// TestLazyTouchesAreEager drives two ports of a host tier alone with the
// same random requests, whose keys are chained as the engine's are: one notes its touches and makes them only before
// a store that may evict (lazy touches: noteTouch, settle, the fast
// path), the other touches at once (the slow twin). A request's chain
// is a group's shared keys then its own; it is looked up again and
// again, stored in chunks and then a block at a time, and loaded. The
// tiers are small enough that some stores evict, and the log is bounded
// low, so that it is settled. Every answer, what each
// tier holds, its counters and the keys each store evicts, in order (the
// tier's order, least recent first), stay equal; at the end both are
// drained by a store of new keys, which evicts all they hold in order.
func TestLazyTouchesAreEager(t *testing.T) {
	defer func(n, m, k int) { touchLogKeys, touchSlots, pendNotes = n, m, k }(touchLogKeys, touchSlots, pendNotes)
	touchLogKeys, touchSlots, pendNotes = 64, 8, 2 // notes found by a slot they share; put-off notes past 2 inserted
	checkPutOffChild = true
	defer func() { checkPutOffChild = false }()
	rng := rand.New(rand.NewPCG(41, 0x70c))
	dropped, settled, remembered, deferred, found, idle := 0, 0, 0, 0, 0, 0
	for round := range 300 {
		capacity, ports := lazyPorts(t, rng)
		next := uint64(1006)
		groups := contentGroups(rng, &next, 2, 10)
		type request struct {
			chain  []uint64
			stored int
		}
		// Keys are chained, as the engine's content keys: a block's key
		// mixes its parent's and its content, so that a key names every
		// key before it.
		var all []uint64
		seen := map[uint64]bool{}
		chained := func(contents []uint64) []uint64 {
			keys, k := make([]uint64, 0, len(contents)), uint64(0)
			for _, c := range contents {
				k = chainKey(k, c)
				keys = append(keys, k)
				if !seen[k] {
					seen[k] = true
					all = append(all, k)
				}
			}
			return keys
		}
		fresh := func() *request {
			if rng.IntN(2) == 0 { // contents of a few: chains that share their first keys and part
				var c []uint64
				for range 1 + rng.IntN(8) {
					c = append(c, 1000+uint64(rng.IntN(6)))
				}
				return &request{chain: chained(c)}
			}
			c := append([]uint64(nil), groups[rng.IntN(len(groups))]...)
			for range 1 + rng.IntN(8) {
				c = append(c, next)
				next++
			}
			return &request{chain: chained(c)}
		}
		reqs := []*request{fresh(), fresh(), fresh(), fresh()}
		var loading [8]bool
		var last []uint64 // the last lookup's keys and hbm
		lastHBM := 0
		check := func(step int, what string) {
			require.Equal(t, ports[1].loads, ports[0].loads)
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len()+ports[0].pend.keys, "%s, round %d step %d", what, round, step)
			require.Equal(t, ports[1].host.Counters(), ports[0].host.Counters(), "%s, round %d step %d", what, round, step)
			require.Equal(t, ports[1].evicted, ports[0].evicted, "%s: evicted, round %d step %d", what, round, step)
			for _, k := range all {
				require.Equal(t, ports[1].host.Contains(k), ports[0].heldOrPutOff(k), "key %d, %s, round %d step %d", k, what, round, step)
			}
			// clearLast clears every slot set: each is in set.
			g := &ports[0].touches
			for x, i := range g.last {
				if i != 0 {
					require.Contains(t, g.set, int32(x), "a slot set to note %d and not noted, %s, round %d step %d", i, what, round, step)
				}
			}
		}
		for step := range 120 {
			r := reqs[rng.IntN(len(reqs))]
			notes := ports[0].touches.nlive
			live := ports[0].touches.live
			putOff := ports[0].pend.keys
			switch op := rng.IntN(10); {
			case op < 3: // a lookup of the request's chain (again, or as far as it knows), and a load when it finds held keys
				keys := r.chain
				if rng.IntN(2) == 0 {
					keys = keys[:1+rng.IntN(len(keys))]
				}
				hbm := rng.IntN(len(keys) + 1)
				if last != nil && rng.IntN(2) == 0 { // the last lookup again, as a waiting head's at the next plan
					keys, hbm = last, lastHBM
				}
				last, lastHBM = keys, hbm
				if p := ports[0]; p.loads == 0 && hbm < len(keys) && p.host.Contains(keys[hbm]) && p.found.held(p.host, keys, hbm) >= 0 {
					remembered++
				}
				n, busy := ports[0].Find(keys, hbm)
				n1, busy1 := ports[1].Find(keys, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find, round %d step %d", round, step)
				if ports[0].pend.keys < putOff && ports[0].touches.nlive > 0 {
					found++ // a lookup of a chain holding decode blocks put off inserted them
				}
				if ref := rng.IntN(len(loading)); n > 0 && !busy && !loading[ref] && rng.IntN(3) == 0 {
					loading[ref] = true
					for _, p := range ports {
						p.Load(int32(ref), keys[hbm:hbm+n])
					}
				}
			case op < 5: // its next chunk stored
				if r.stored < len(r.chain) {
					to := min(len(r.chain), r.stored+1+rng.IntN(6))
					keys := r.chain[r.stored:to]
					require.Equal(t, ports[1].Store(keys, r.chain), ports[0].Store(keys, r.chain), "Store, round %d step %d", round, step)
					check(step, "chunk")
					r.stored = to
				}
			case op < 8: // a decode's block stored, the chain one longer
				if r.stored == len(r.chain) {
					k := chainKey(r.chain[len(r.chain)-1], next)
					next++
					r.chain = append(r.chain, k)
					if !seen[k] {
						seen[k] = true
						all = append(all, k)
					}
					keys := r.chain[len(r.chain)-1:]
					require.Equal(t, ports[1].Store(keys, r.chain), ports[0].Store(keys, r.chain), "Store, round %d step %d", round, step)
					if ports[0].pend.keys > putOff {
						deferred++
					}
					check(step, "decode")
					r.stored = len(r.chain)
				}
			case op == 8: // a load lands
				if ref := rng.IntN(len(loading)); loading[ref] {
					loading[ref] = false
					for _, p := range ports {
						p.Release(int32(ref))
					}
				}
			default:
				if rng.IntN(2) == 0 { // preempted: it stores its blocks again as it recomputes them
					r.stored = rng.IntN(len(r.chain) + 1)
					break
				}
				reqs[rng.IntN(len(reqs))] = fresh() // the request finishes; another comes
			}
			check(step, "step")
			g := &ports[0].touches
			switch {
			case g.nlive == notes && g.live >= live && notes > 0:
				dropped++
			case g.nlive <= 1 && notes >= 3:
				settled++
			}
		}
		// Drain: every load lands, and a store of new keys evicts all.
		for ref, l := range loading {
			if l {
				for _, p := range ports {
					p.Release(int32(ref))
				}
			}
		}
		var contents []uint64
		for range capacity {
			contents = append(contents, next)
			next++
		}
		drain := chained(contents)
		require.Equal(t, ports[1].Store(drain, drain), ports[0].Store(drain, drain))
		check(-1, "drain")
		idle += ports[0].pinsSkipped
	}
	t.Logf("%d notes dropped, %d logs settled with 3 notes or more, %d lookups remembered, %d decode blocks put off, %d inserted by a lookup, %d stores that may evict left loads unpinned", dropped, settled, remembered, deferred, found, idle)
	require.Greater(t, deferred, 1000, "decode blocks are no longer put off (pendingDecodes)")
	require.Greater(t, found, 20, "no lookup finds decode blocks put off")
	require.Greater(t, remembered, 200, "the lookups are no longer remembered (foundMemo)")
	require.Greater(t, dropped, 1000, "the touches no longer cover the ones before")
	require.Greater(t, settled, 100, "the logs are no longer settled with notes left")
}

// lazyPorts is hostPorts of 8 to 127 blocks (how many, first), the
// first with lazy touches and, for keys chained (chainKey), a tier that
// matches its runs by single keys (kvtier's Config.Chained, as
// newTiers makes it), the second's compared as memory.
func lazyPorts(t *testing.T, rng *rand.Rand) (int, [2]*tierPort) {
	capacity := 8 + rng.IntN(120)
	ports := hostPorts(t, capacity, 8)
	ports[0].lazy = true
	lru, err := kvtier.New(kvtier.Config{Blocks: capacity, Chained: true})
	require.NoError(t, err)
	ports[0].host = lru
	return capacity, ports
}

// contentGroups is three groups' contents, each of least to least+n−1
// fresh ones from next on.
func contentGroups(rng *rand.Rand, next *uint64, least, n int) [][]uint64 {
	var groups [][]uint64
	for range 3 {
		var g []uint64
		for range least + rng.IntN(n) {
			g = append(g, *next)
			*next++
		}
		groups = append(groups, g)
	}
	return groups
}

// heldOrPutOff reports whether p holds key, in its tier or as a decode
// block put off (pendingDecodes).
func (p *tierPort) heldOrPutOff(key uint64) bool {
	if p.host.Contains(key) {
		return true
	}
	for _, i := range p.pend.notes {
		nt := &p.touches.notes[i]
		if slices.Contains(nt.keys[len(nt.keys)-int(nt.pend):], key) {
			return true
		}
	}
	return false
}

// hostPorts is two ports of a host tier alone of capacity blocks each,
// for requests 0 to refs−1, loads not counted.
func hostPorts(t *testing.T, capacity, refs int) [2]*tierPort {
	var ports [2]*tierPort
	for i := range ports {
		lru, err := kvtier.New(kvtier.Config{Blocks: capacity})
		require.NoError(t, err)
		r := &runner{}
		r.slots = make([]slot, refs)
		ports[i] = &tierPort{t: &tiers{r: r, landing: -1}, host: lru, loading: map[uint64]int32{}}
	}
	return ports
}

// keyRun is a run of consecutive keys below universe from a random one,
// broken now and then (a chain's, mostly).
func keyRun(rng *rand.Rand, universe int) []uint64 {
	keys := make([]uint64, 1+rng.IntN(10))
	k := rng.IntN(universe)
	for i := range keys {
		keys[i] = uint64(k)
		if k = (k + 1) % universe; rng.IntN(8) == 0 {
			k = rng.IntN(universe)
		}
	}
	return keys
}

// chainKey is the key of a block of content c after the block keyed
// parent: a chain's keys, as the engine's content keys are chained.
func chainKey(parent, c uint64) uint64 {
	h := parent*0x9e3779b97f4a7c15 ^ c
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// A host tier's decode blocks put off (pendingDecodes) run as each
// inserted at its store (eagerDecodes), byte for byte: Regime/Tiers at
// its small size, and fleets whose small host tiers evict (their stores
// insert what was put off first) and whose pools preempt, behind two
// routers. Each must put blocks off. So do a finished request's own
// blocks put off, inserted as anonymous blocks (Finished) or by key
// (eagerAnon), and the tier asked of every decode's block (eagerContains)
// or not after one put off (checkPutOffChild on: none is held).
func TestDecodesPutOffAreInsertedAtTheirStores(t *testing.T) {
	checkPutOffChild = true
	defer func() { checkPutOffChild = false }()
	var evictions int64
	var anon, skipped int
	run := func(cfg Config, src func() workload.Source) {
		t.Helper()
		decodesPutOff.Store(0)
		anonBlocks.Store(0)
		touchesSkipped.Store(0)
		want, _, sum := recordsOf(t, cfg, src())
		require.NotNil(t, sum.Tiers)
		require.Positive(t, decodesPutOff.Load(), "decode blocks put off")
		evictions += sum.Tiers.HostEvictions
		anon += int(anonBlocks.Load())
		skipped += int(touchesSkipped.Load())
		// Every note touched whole at a settle (coverLater's slow twin).
		touchWhole = true
		defer func() { touchWhole = false }()
		whole, _, _ := recordsOf(t, cfg, src())
		touchWhole = false
		sameBytes(t, want, whole)
		// Every slot of the notes' table cleared at a settle
		// (clearLast's slow twin).
		clearWhole = true
		defer func() { clearWhole = false }()
		cleared, _, _ := recordsOf(t, cfg, src())
		clearWhole = false
		sameBytes(t, want, cleared)
		// A finished request's own blocks put off inserted by key, not
		// as anonymous blocks (Finished's slow twin).
		eagerAnon = true
		defer func() { eagerAnon = false }()
		keyed, _, _ := recordsOf(t, cfg, src())
		eagerAnon = false
		sameBytes(t, want, keyed)
		eagerDecodes = true
		defer func() { eagerDecodes = false }()
		got, _, _ := recordsOf(t, cfg, src())
		eagerDecodes = false
		sameBytes(t, want, got)
		// Every decode's block asked of the tier (deferDecode's slow
		// twin).
		eagerContains = true
		defer func() { eagerContains = false }()
		asked, _, _ := recordsOf(t, cfg, src())
		eagerContains = false
		sameBytes(t, want, asked)
	}
	for _, rg := range regimes {
		if rg.name == "Tiers" {
			cfg, src := rg.build(t, rg.small)
			run(cfg, src)
		}
	}
	for _, router := range []Router{RoundRobin{}, PrefixAffinity{}} {
		for _, host := range []int{300, 4000} {
			cfg := tiered(3, 900, router, host, -1)
			run(cfg, func() workload.Source {
				src, err := sharedWorkload(5, 3)
				require.NoError(t, err)
				return src
			})
		}
	}
	require.Positive(t, evictions, "the host tiers evict")
	require.Positive(t, anon, "finished requests' blocks put off go in as anonymous blocks")
	require.Positive(t, skipped, "settles no longer skip keys touched again later")
}

// TestFinishedBlocksGoInAnonymous drives two ports of a host tier alone
// with the same random requests, each a group's shared keys then keys
// of its own, chained: one with lazy touches that is told when a
// request leaves (Finished), so that its own blocks put off go in as
// anonymous blocks, the other touching at once and keeping every block
// by key (the slow twin). The tiers are small, so that stores evict,
// and the log is bounded low, so that it is settled with finished
// requests' notes in it. Every answer, the blocks each holds, its
// counters, the keys each store evicts in order (the slow twin's less
// finished requests' own, which the other evicts as anonymous blocks)
// and what each holds of every other key stay equal; at the end both
// are drained by a store of new keys.
func TestFinishedBlocksGoInAnonymous(t *testing.T) {
	defer func(n, m int) { touchLogKeys, touchSlots = n, m }(touchLogKeys, touchSlots)
	touchLogKeys, touchSlots = 64, 8
	checkPutOffChild = true
	defer func() { checkPutOffChild = false }()
	type request struct {
		chain          []uint64
		shared, stored int
	}
	rng := rand.New(rand.NewPCG(45, 0xa707))
	anon := 0
	for round := range 300 {
		capacity, ports := lazyPorts(t, rng)
		next := uint64(5000)
		groups := contentGroups(rng, &next, 1, 8)
		gone := map[uint64]bool{} // finished requests' own keys put off
		var evicted0, evicted1 []uint64
		fresh := func() *request {
			g := groups[rng.IntN(len(groups))]
			r := &request{shared: len(g)}
			k := uint64(0)
			for _, c := range g {
				k = chainKey(k, c)
				r.chain = append(r.chain, k)
			}
			for range rng.IntN(4) {
				k = chainKey(k, next)
				next++
				r.chain = append(r.chain, k)
			}
			return r
		}
		reqs := []*request{fresh(), fresh(), fresh(), fresh()}
		before := anonBlocks.Load()
		check := func(step int, what string) {
			t.Helper()
			evicted0 = append(evicted0, ports[0].evicted...)
			for _, k := range ports[1].evicted {
				if !gone[k] {
					evicted1 = append(evicted1, k)
				}
			}
			require.Equal(t, evicted1, evicted0, "%s: evicted, round %d step %d", what, round, step)
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len()+ports[0].pend.keys, "%s, round %d step %d", what, round, step)
			require.Equal(t, ports[1].host.Counters(), ports[0].host.Counters(), "%s, round %d step %d", what, round, step)
			for _, r := range reqs {
				for _, k := range r.chain {
					require.Equal(t, ports[1].host.Contains(k), ports[0].heldOrPutOff(k), "key %d, %s, round %d step %d", k, what, round, step)
				}
			}
		}
		for step := range 150 {
			i := rng.IntN(len(reqs))
			r := reqs[i]
			for _, p := range ports {
				p.evicted = p.evicted[:0]
			}
			switch op := rng.IntN(10); {
			case op < 2: // a lookup of the request's chain
				hbm := rng.IntN(len(r.chain) + 1)
				n, busy := ports[0].Find(r.chain, hbm)
				n1, busy1 := ports[1].Find(r.chain, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find, round %d step %d", round, step)
			case op < 4: // its next chunk stored
				if r.stored < len(r.chain) {
					to := min(len(r.chain), r.stored+1+rng.IntN(4))
					keys := r.chain[r.stored:to]
					require.Equal(t, ports[1].Store(keys, r.chain[:to]), ports[0].Store(keys, r.chain[:to]), "Store, round %d step %d", round, step)
					r.stored = to
				}
			case op < 8: // a decode's block stored
				if r.stored == len(r.chain) {
					r.chain = append(r.chain, chainKey(r.chain[len(r.chain)-1], next))
					next++
					keys := r.chain[len(r.chain)-1:]
					require.Equal(t, ports[1].Store(keys, r.chain), ports[0].Store(keys, r.chain), "Store, round %d step %d", round, step)
					r.stored = len(r.chain)
				}
			default: // the request finishes; another comes
				if own := r.stored - r.shared; own > 0 {
					chain := r.chain[:r.stored]
					ports[0].Finished(tierdone.Mark{}, chain, own)
					g := &ports[0].touches
					if g.last != nil {
						if nt := &g.notes[g.covered(chain, len(chain)-1)]; nt.done {
							for _, k := range nt.keys[len(nt.keys)-int(nt.pend):] {
								gone[k] = true // to go in as an anonymous block
							}
						}
					}
				}
				reqs[i] = fresh()
			}
			check(step, "step")
		}
		for _, p := range ports {
			p.evicted = p.evicted[:0]
		}
		var drain []uint64
		k := uint64(1)
		for range capacity {
			k = chainKey(k, next)
			next++
			drain = append(drain, k)
		}
		require.Equal(t, ports[1].Store(drain, drain), ports[0].Store(drain, drain))
		check(-1, "drain")
		anon += int(anonBlocks.Load() - before)
	}
	t.Logf("%d blocks went in as anonymous blocks", anon)
	require.Greater(t, anon, 500, "finished requests' blocks no longer go in as anonymous blocks")
}

// TestDecodeAfterPutOffIsNotHeld drives two ports of a host tier alone
// with the same random requests, as TestLazyTouchesAreEager, in the
// engine's way of storing: each store a run of the request's chain from
// its first block not stored, with the chain up to its end (a decode's
// block alone is its chain's last key); requests preempted now and then
// store their blocks again, one block a store at times, from an earlier
// one, and finish. One port has lazy touches and asks the tier nothing
// of a decode's block after one put off while it never lost a key
// (deferDecode), checking it anyway (checkPutOffChild: a held one
// panics); the other touches at once. Every answer, what each holds and
// its counters stay equal. Half the tiers are large (they never evict,
// where deferDecode asks nothing), half small (they evict).
func TestDecodeAfterPutOffIsNotHeld(t *testing.T) {
	defer func(n, m, k int) { touchLogKeys, touchSlots, pendNotes = n, m, k }(touchLogKeys, touchSlots, pendNotes)
	touchLogKeys, touchSlots, pendNotes = 256, 16, 4
	checkPutOffChild = true
	defer func() { checkPutOffChild = false }()
	type request struct {
		chain  []uint64
		stored int
	}
	rng := rand.New(rand.NewPCG(46, 0xdec0))
	skipped, again := 0, 0
	for round := range 300 {
		capacity := 8 + rng.IntN(60)
		if round%2 == 0 {
			capacity = 4096
		}
		ports := hostPorts(t, capacity, 8)
		ports[0].lazy = true
		next := uint64(7000)
		groups := contentGroups(rng, &next, 1, 6)
		var all []uint64
		fresh := func() *request {
			r := &request{}
			k := uint64(0)
			for _, c := range groups[rng.IntN(len(groups))] {
				k = chainKey(k, c)
				r.chain = append(r.chain, k)
			}
			for range rng.IntN(5) {
				k = chainKey(k, next)
				next++
				r.chain = append(r.chain, k)
			}
			all = append(all, r.chain...)
			return r
		}
		reqs := []*request{fresh(), fresh(), fresh()}
		var loading [8]bool
		check := func(step int, what string) {
			t.Helper()
			require.Equal(t, ports[1].host.Len(), ports[0].host.Len()+ports[0].pend.keys, "%s, round %d step %d", what, round, step)
			require.Equal(t, ports[1].host.Counters(), ports[0].host.Counters(), "%s, round %d step %d", what, round, step)
			for _, k := range all {
				require.Equal(t, ports[1].host.Contains(k), ports[0].heldOrPutOff(k), "key %d, %s, round %d step %d", k, what, round, step)
			}
			// clearLast clears every slot set: each is in set.
			g := &ports[0].touches
			for x, i := range g.last {
				if i != 0 {
					require.Contains(t, g.set, int32(x), "a slot set to note %d and not noted, %s, round %d step %d", i, what, round, step)
				}
			}
		}
		store := func(r *request, to int, step int) {
			t.Helper()
			keys, chain := r.chain[r.stored:to], r.chain[:to]
			p := ports[0]
			if len(keys) == 1 && to >= 2 && !p.lost() && !p.host.Contains(chain[to-2]) && p.heldOrPutOff(chain[to-2]) {
				skipped++ // the block before put off: deferDecode may not ask
				if p.host.Contains(keys[0]) {
					again++
				}
			}
			require.Equal(t, ports[1].Store(keys, chain), p.Store(keys, chain), "Store, round %d step %d", round, step)
			r.stored = to
		}
		for step := range 150 {
			i := rng.IntN(len(reqs))
			r := reqs[i]
			switch op := rng.IntN(13); {
			case op < 2: // a lookup of its chain
				hbm := rng.IntN(len(r.chain) + 1)
				n, busy := ports[0].Find(r.chain, hbm)
				n1, busy1 := ports[1].Find(r.chain, hbm)
				require.Equal(t, []any{n1, busy1}, []any{n, busy}, "Find, round %d step %d", round, step)
				if ref := rng.IntN(len(loading)); n > 0 && !busy && !loading[ref] { // its held keys loaded: pinned, kept from eviction
					loading[ref] = true
					for _, p := range ports {
						p.Load(int32(ref), r.chain[hbm:hbm+n])
					}
				}
			case op == 2: // a load lands
				if ref := rng.IntN(len(loading)); loading[ref] {
					loading[ref] = false
					for _, p := range ports {
						p.Release(int32(ref))
					}
				}
			case op < 4: // its next blocks stored: a chunk, or one block
				if r.stored < len(r.chain) {
					w := 1
					if rng.IntN(2) == 0 {
						w += rng.IntN(4)
					}
					store(r, min(len(r.chain), r.stored+w), step)
				}
			case op < 9: // a decode's block stored
				if r.stored == len(r.chain) {
					k := chainKey(r.chain[len(r.chain)-1], next)
					next++
					r.chain = append(r.chain, k)
					all = append(all, k)
					store(r, len(r.chain), step)
				}
			case op < 12: // preempted: it stores its blocks again from an earlier one
				r.stored = rng.IntN(r.stored + 1)
			default: // it finishes; another comes
				reqs[i] = fresh()
			}
			check(step, "step")
		}
	}
	t.Logf("%d decode blocks after one put off in a tier that never lost a key (%d of them held, stored again)", skipped, again)
	require.Greater(t, skipped, 150, "no decode's block follows one put off")
	require.Zero(t, again, "a decode's block after one put off is held")
}

// Tiers that match their runs by single keys (kvtier's Config.Chained,
// the engines' keys being chained) run as tiers that compare them as
// memory (unchainedTiers), byte for byte: Regime/Tiers at its small
// size, and fleets of host tiers that evict and of none, of a shared
// store and of both, behind two routers, whose pools preempt.
func TestChainedTiersAreUnchained(t *testing.T) {
	run := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		want, _, sum := recordsOf(t, cfg, src())
		require.NotNil(t, sum.Tiers, name)
		unchainedTiers = true
		defer func() { unchainedTiers = false }()
		got, _, _ := recordsOf(t, cfg, src())
		unchainedTiers = false
		sameBytes(t, want, got)
		t.Logf("%s: %v", name, sum.Tiers)
	}
	for _, rg := range regimes {
		if rg.name == "Tiers" {
			cfg, src := rg.build(t, rg.small)
			run(rg.name, cfg, src)
		}
	}
	shared := func() workload.Source {
		src, err := sharedWorkload(5, 3)
		require.NoError(t, err)
		return src
	}
	for _, router := range []Router{RoundRobin{}, PrefixAffinity{}} {
		for _, c := range []struct{ host, shared int }{{300, -1}, {4000, -1}, {-1, 20000}, {2000, 8000}, {300, 1000}} {
			run(fmt.Sprintf("%T host %d shared %d", router, c.host, c.shared), tiered(3, 900, router, c.host, c.shared), shared)
		}
	}
}
