package kvtier

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// twins drives two LRUs with the same operations, one touching with
// Touch and the other with touchEach, decoded from the input a byte at a
// time, and holds the order, Len, the counters and every answer equal.
// Keys are 0-23 and the lists mostly runs of consecutive keys, some
// reversed or with keys dropped, repeated or out of place, so that Touch
// meets runs, broken runs, keys not held and duplicates. With soil not
// nil, the fast tier's spare nodes are soiled after each step (soilSpare).
func twins(t *testing.T, capacity int, in []byte, soil *rand.Rand) {
	fast, slow := mustNew(t, capacity), mustNew(t, capacity)
	slow.growIndex = true // reindex's twin
	slow.evictEach = true // makeRoom's twin
	next := func() byte {
		if len(in) == 0 {
			return 0
		}
		b := in[0]
		in = in[1:]
		return b
	}
	list := func() []uint64 {
		n := 1 + int(next()%12)
		k := uint64(next() % 24)
		back := next()%4 == 0
		keys := make([]uint64, 0, n)
		for range n {
			keys = append(keys, k)
			switch b := next(); {
			case b < 200:
				if back {
					k = (k + 23) % 24
				} else {
					k = (k + 1) % 24
				}
			case b < 220: // a duplicate
				k = keys[int(b)%len(keys)]
			default:
				k = uint64(b % 24)
			}
		}
		return keys
	}
	var last []uint64
	for step := 0; len(in) > 0; step++ {
		switch op := next() % 10; op {
		case 0:
			keys := list()
			fast.Touch(keys)
			slow.touchEach(keys)
		case 1, 2: // TouchHeld against Contains from from
			keys := list()
			from := int(next()) % (len(keys) + 1)
			n := 0
			for n < len(keys)-from && slow.Contains(keys[from+n]) {
				n++
			}
			require.Equal(t, n, fast.TouchHeld(keys, from), "TouchHeld(%v, %d)", keys, from)
			slow.touchEach(keys)
			last = keys
		case 8: // the last TouchHeld again, as a waiting request's lookup at the next plan
			if last == nil {
				continue
			}
			n := 0
			for n < len(last) && slow.Contains(last[n]) {
				n++
			}
			require.Equal(t, n, fast.TouchHeld(last, 0), "TouchHeld(%v, 0) again", last)
			slow.touchEach(last)
		case 3, 4:
			var insert func(l *LRU) ([]uint64, int, bool)
			if op == 3 {
				keys := list()
				insert = func(l *LRU) ([]uint64, int, bool) { return l.Insert(keys, nil) }
			} else {
				n := int(next() % 5)
				insert = func(l *LRU) ([]uint64, int, bool) { return l.InsertAnon(n, nil) }
			}
			fe, fa, fok := insert(fast)
			se, sa, sok := insert(slow)
			require.Equal(t, sok, fok)
			require.Equal(t, se, fe)
			require.Equal(t, sa, fa)
		case 9: // a store and its touch: keys within the chain, mostly, or a slice of it
			keys := list()
			var chain []uint64
			switch next() % 5 {
			case 0:
				chain = list()
			case 1:
				chain = keys
			case 4: // a slice of the chain, as the engine's store (inChain)
				chain = list()
				a := int(next()) % len(chain)
				keys = chain[a : a+1+int(next())%(len(chain)-a)]
			default:
				before, after := list(), list()
				before, after = before[:min(len(before), int(next()%4))], after[:min(len(after), int(next()%3))]
				chain = append(append(before, keys...), after...)
			}
			var fe, se []uint64
			var fa, sa int
			var fok, sok bool
			if next()%3 == 0 { // InsertChain, a touch of another list maybe, then the touch of chain
				fe, fa, fok = fast.InsertChain(keys, chain, nil)
				se, sa, sok = slow.Insert(keys, nil)
				if next()%2 == 0 {
					other := list()
					fast.Touch(other)
					slow.touchEach(other)
				}
				fast.Touch(chain)
				slow.touchEach(chain)
			} else {
				fe, fa, fok = fast.Store(keys, chain, nil)
				se, sa, sok = slow.storeStep(keys, chain)
			}
			require.Equal(t, sok, fok)
			require.Equal(t, se, fe)
			require.Equal(t, sa, fa)
		case 5:
			k := uint64(next() % 24)
			require.Equal(t, slow.Remove(k), fast.Remove(k))
		case 6:
			if next()%2 == 0 { // a load's keys: PinHeld against Pin key by key
				keys := list()
				n, pinned := 0, false // HeldPinned against Contains and Pinned key by key
				for n < len(keys) && slow.Contains(keys[n]) {
					if pinned = slow.Pinned(keys[n]); pinned {
						break
					}
					n++
				}
				gn, gp := fast.HeldPinned(keys)
				require.Equal(t, pinned, gp, "HeldPinned(%v)", keys)
				require.Equal(t, n, gn, "HeldPinned(%v)", keys)
				n = 0
				for n < len(keys) && slow.Pin(keys[n]) {
					n++
				}
				require.Equal(t, n, fast.PinHeld(keys), "PinHeld(%v)", keys)
			} else {
				k := uint64(next() % 24)
				require.Equal(t, slow.Pin(k), fast.Pin(k))
			}
		case 7:
			if next()%2 == 0 { // UnpinEach against Unpin key by key
				keys := list()
				for _, k := range keys {
					slow.Unpin(k)
				}
				fast.UnpinEach(keys)
				for _, k := range keys {
					require.Equal(t, slow.Pinned(k), fast.Pinned(k))
				}
			} else {
				k := uint64(next() % 24)
				require.Equal(t, slow.Unpin(k), fast.Unpin(k))
			}
		}
		require.Equal(t, order(slow), order(fast), "after step %d", step)
		checkSegments(t, fast)
		checkSegments(t, slow)
		require.Equal(t, slow.Len(), fast.Len())
		require.Equal(t, slow.pinned, fast.pinned)
		require.Equal(t, slow.Counters(), fast.Counters())
		if soil != nil {
			soilSpare(fast, soil)
		}
	}
}

// soilSpare writes garbage to the fields of l's spare nodes that a
// node taken from spare must have written by its taker: key, prev,
// next, seg and off; and its mark to the epoch now or left (a node
// freeRow frees is marked of an epoch before the next, nextEpoch
// clearing every node's at its wrap). It leaves pins and anon, which
// linkRow counts on being 0 as a node freeRow frees has them.
// A node Remove frees is zero, and Insert's room path takes only those
// (the room Remove makes is as many zero nodes on spare's top: an
// eviction fills the tier); soiled, they stand for freeRow's, so that a
// taker that leaves a field unwritten reads garbage.
func soilSpare(l *LRU, r *rand.Rand) {
	for _, i := range l.spare {
		n := &l.nodes[i]
		n.key = r.Uint64() % 32
		n.prev, n.next = int32(r.IntN(len(l.nodes))), int32(r.IntN(len(l.nodes)))
		n.seg = int32(r.IntN(len(l.segs) + 1))
		if r.IntN(2) == 0 {
			n.mark = l.epoch
		}
		n.off = 0
		if n.seg != 0 {
			n.off = int32(r.IntN(len(l.segs[n.seg-1].nodes) + 1))
		}
	}
}

// storeStep is Store key by key: Insert, then touchEach when the
// insert added a key.
func (l *LRU) storeStep(keys, chain []uint64) ([]uint64, int, bool) {
	used := l.used
	evicted, anon, ok := l.Insert(keys, nil)
	if ok && l.used-used+len(evicted)+anon > 0 {
		l.touchEach(chain)
	}
	return evicted, anon, ok
}

// FuzzTouch holds Touch and TouchHeld, which move runs, to touchEach,
// which moves keys one by one, TouchHeld's count to Contains's, PinHeld
// and UnpinEach to Pin and Unpin key by key, HeldPinned to Contains and
// Pinned key by key, and
// Store, which puts the new keys in as its touch leaves them, to Insert
// and touchEach.
func FuzzTouch(f *testing.F) {
	f.Add(uint8(16), []byte{3, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 3, 2, 0, 0, 0})
	f.Add(uint8(20), []byte{3, 11, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 3, 1, 4, 1, 3, 0, 205, 0, 230, 1, 0, 6, 5, 250, 0, 0, 0, 0, 0, 5})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		twins(t, int(capacity%25), ops, nil)
	})
}

// TestTouchIsTouchEach runs the twins on random inputs.
func TestTouchIsTouchEach(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 0x7e))
	for range 2000 {
		in := randomOps(r, 400)
		twins(t, 8+r.IntN(17), in, nil)
	}
}

// randomOps is a random test's input: fewer than most bytes, random.
func randomOps(r *rand.Rand, most int) []byte {
	in := make([]byte, r.IntN(most))
	for i := range in {
		in[i] = byte(r.Uint32())
	}
	return in
}

// TestSpareNodesAreNotRead runs the twins with the fast tier's spare
// nodes soiled after each step: freeRow leaves the nodes it frees as
// they were, so each taker of a spare node (Insert's room path and its
// path after an eviction, InsertAnon, linkRow) must write each field it
// reads but pins, anon and mark. Unsoiled, Insert's room path takes
// only nodes Remove zeroed, and one that wrote only the key would pass.
// The twins drive an unchained tier (Insert, InsertAnon, Remove);
// fullStores a chained one's Store into a full tier (putNew, linkRow).
func TestSpareNodesAreNotRead(t *testing.T) {
	r := rand.New(rand.NewPCG(60, 0x5a))
	soil := rand.New(rand.NewPCG(60, 0x50))
	for range 2000 {
		in := randomOps(r, 400)
		twins(t, 8+r.IntN(17), in, soil)
	}
	for range 120 {
		in := randomOps(r, 500)
		fullStores(t, 8+r.IntN(64), in, soil)
	}
}

// checkSegments holds the segments to what they claim: every labelled
// node is its segment's place, each segment counts its nodes, and a
// place whose break is clear lies just above the next. It holds the
// index to the list too: each keyed node's key maps to it, and nothing
// else is held (reindex's keys put back).
func checkSegments(t *testing.T, l *LRU) {
	t.Helper()
	live := make([]int32, len(l.segs))
	keyed := 0
	for i := l.nodes[nil32].next; i != nil32; i = l.nodes[i].next {
		n := l.nodes[i]
		if n.anon == 0 {
			keyed++
			id, ok := l.index.Get(n.key)
			require.True(t, ok, "node %d's key %d is held", i, n.key)
			require.Equal(t, i, id, "key %d maps to its node", n.key)
		}
		if n.seg == 0 {
			continue
		}
		s := l.segs[n.seg-1]
		require.Less(t, int(n.off), len(s.nodes))
		require.Equal(t, i, s.nodes[n.off], "node %d is its segment's place %d", i, n.off)
		require.Equal(t, n.key, s.keys[n.off])
		live[n.seg-1]++
	}
	require.Equal(t, keyed, l.index.Len(), "the index holds the keyed nodes' keys")
	free := map[int32]bool{}
	for _, sg := range l.freeSegs {
		free[sg] = true
	}
	for k, s := range l.segs {
		if free[int32(k+1)] {
			require.Zero(t, live[k], "a free segment holds no node")
			continue
		}
		require.Equal(t, live[k], s.live, "segment %d's count", k+1)
		checkBreaks(t, l, k)
		for p := 0; p+1 < len(s.nodes); p++ {
			if s.breaks[p>>6]&(1<<(p&63)) != 0 {
				continue
			}
			a, b := l.nodes[s.nodes[p]], l.nodes[s.nodes[p+1]]
			require.Equal(t, int32(k+1), a.seg, "segment %d place %d unbroken: its node is labelled", k+1, p)
			require.Equal(t, int32(k+1), b.seg, "segment %d place %d unbroken: the next node is labelled", k+1, p)
			require.Equal(t, s.nodes[p+1], a.prev, "segment %d place %d unbroken: just above the next", k+1, p)
		}
	}
}

// TestTouchLongChainsIsTouchEach holds Touch to touchEach, and Store to
// Insert and touchEach, on what a tiered run does: chains of up to 300
// keys behind a few shared prefixes, stored a few blocks at a time and
// touched whole after each store (so
// that segments of hundreds of places form, split where two chains share
// a prefix and break where the tier evicts), looked up with TouchHeld,
// with removals, pins and anonymous runs among them.
func TestTouchLongChainsIsTouchEach(t *testing.T) { longChains(t, false) }

// TestChainedTouchIsTouchEach is TestTouchLongChainsIsTouchEach and
// TestInsertChainIsInsert with the fast tier Chained (its runs matched
// by single keys, lcp.Chain): their keys are chained, each prefix key
// after the same one in every chain and each request's own keys in its
// chain alone, so the fast tier must answer and order as the slow one.
func TestChainedTouchIsTouchEach(t *testing.T) {
	longChains(t, true)
	insertChains(t, true)
}

// twinTiers returns two empty tiers of capacity blocks: a fast one,
// Chained if chained, and a slow one whose index grows by itself and
// whose eviction unlinks each node (reindex's and makeRoom's twins).
func twinTiers(t *testing.T, capacity int, chained bool) (fast, slow *LRU) {
	fast, slow = mustNew(t, capacity), mustNew(t, capacity)
	fast.chained = chained
	slow.growIndex = true // reindex's twin
	slow.evictEach = true // makeRoom's twin
	return fast, slow
}

// longChains is TestTouchLongChainsIsTouchEach, the fast tier Chained
// if chained.
func longChains(t *testing.T, chained bool) {
	r := rand.New(rand.NewPCG(41, 0x5e9))
	for round := range 12 {
		capacity := 200 + r.IntN(800)
		fast, slow := twinTiers(t, capacity, chained)
		prefixes := make([][]uint64, 1+r.IntN(4))
		for g := range prefixes {
			for k := range 1 + r.IntN(200) {
				prefixes[g] = append(prefixes[g], uint64(g+1)<<32|uint64(k))
			}
		}
		type req struct {
			chain  []uint64
			stored int
		}
		var reqs []*req
		var last []uint64
		own := uint64(1 << 40)
		stores := 0
		for step := range 400 {
			switch op := r.IntN(20); {
			case op < 2 || len(reqs) == 0:
				reqs = append(reqs, &req{chain: newChain(r, prefixes, &own, 100)})
			case op < 14:
				q := reqs[r.IntN(len(reqs))]
				if q.stored == len(q.chain) {
					continue
				}
				to := q.stored + 1 + r.IntN(min(len(q.chain)-q.stored, 40))
				keys := q.chain[q.stored:to]
				fresh := false
				for _, k := range keys {
					fresh = fresh || !slow.Contains(k)
				}
				chain := q.chain[:to+r.IntN(len(q.chain)-to+1)]
				var fe, se []uint64
				var fa, sa int
				var fok, sok bool
				if op < 8 { // Store, as the host tier stores
					fe, fa, fok = fast.Store(keys, chain, nil)
					se, sa, sok = slow.storeStep(keys, chain)
					stores++
				} else if op < 10 { // InsertChain and the touch of chain, as sim's lazy touches make it
					fe, fa, fok = fast.InsertChain(keys, chain, nil)
					se, sa, sok = slow.Insert(keys, nil)
					fast.Touch(chain)
					slow.touchEach(chain)
				} else {
					fe, fa, fok = fast.Insert(keys, nil)
					se, sa, sok = slow.Insert(keys, nil)
					if fok && fresh {
						fast.Touch(chain)
						slow.touchEach(chain)
					}
				}
				require.Equal(t, sok, fok)
				require.Equal(t, se, fe)
				require.Equal(t, sa, fa)
				if fok {
					q.stored = to
				}
			case op < 16:
				q := reqs[r.IntN(len(reqs))]
				keys := q.chain[:r.IntN(len(q.chain)+1)]
				from := r.IntN(len(keys) + 1)
				n := 0
				for n < len(keys)-from && slow.Contains(keys[from+n]) {
					n++
				}
				require.Equal(t, n, fast.TouchHeld(keys, from))
				slow.touchEach(keys)
				last = keys
			case op == 16 && last != nil: // the last lookup again
				n := 0
				for n < len(last) && slow.Contains(last[n]) {
					n++
				}
				require.Equal(t, n, fast.TouchHeld(last, 0))
				slow.touchEach(last)
			case op == 17:
				q := reqs[r.IntN(len(reqs))]
				k := q.chain[r.IntN(len(q.chain))]
				require.Equal(t, slow.Remove(k), fast.Remove(k))
			case op == 18:
				q := reqs[r.IntN(len(reqs))]
				k := q.chain[r.IntN(len(q.chain))]
				if r.IntN(2) == 0 {
					require.Equal(t, slow.Pin(k), fast.Pin(k))
				} else {
					require.Equal(t, slow.Unpin(k), fast.Unpin(k))
				}
			default:
				n := r.IntN(8)
				fe, fa, fok := fast.InsertAnon(n, nil)
				se, sa, sok := slow.InsertAnon(n, nil)
				requireSameStore(t, fe, fa, fok, se, sa, sok)
			}
			requireSameList(t, fast, slow, round, step)
			checkSegments(t, slow)
		}
		require.Positive(t, stores)
	}
}

// coldTier is a tier of 10 blocks holding 1 and 2, whose cold chain is
// 5, 6, 7, which a touch found none of.
func coldTier(t *testing.T) (*LRU, []uint64) {
	l := mustNew(t, 10)
	l.Insert([]uint64{1, 2}, nil)
	cold := []uint64{5, 6, 7}
	require.Zero(t, l.TouchHeld(cold, 0))
	require.True(t, l.isCold(cold))
	return l, cold
}

// TestColdChainEndsAtAnInsert: a touch that held none of its keys
// returns at once when given them again, until an Insert adds one.
func TestColdChainEndsAtAnInsert(t *testing.T) {
	l, cold := coldTier(t)
	require.Zero(t, l.TouchHeld(cold, 0))
	require.False(t, l.isCold([]uint64{5, 6}), "another list is not the cold chain")
	l.Insert([]uint64{3}, nil)
	require.True(t, l.isCold(cold), "an insert of another key leaves it (unless its bit is one of the chain's)")
	l.Insert([]uint64{6}, nil)
	require.False(t, l.isCold(cold), "an insert of one of its keys ends it")
	require.Equal(t, 1, l.TouchHeld(cold, 1))
	require.Equal(t, []uint64{1, 2, 3, 6}, order(l))
}

// TestColdScanEndsTheColdChain: a touch whose first key is not held
// marks the keys it scans with a new chain's number (coldScan), so the
// cold chain ends there, whether or not the scan then finds a held key.
func TestColdScanEndsTheColdChain(t *testing.T) {
	l, cold := coldTier(t)
	require.Equal(t, 0, l.TouchHeld([]uint64{8, 2, 1}, 0), "its first key is not held")
	require.False(t, l.isCold(cold), "the scan ended the cold chain")
	require.Zero(t, l.TouchHeld(cold, 0))
	require.True(t, l.isCold(cold))
	l.Insert([]uint64{7}, nil)
	require.False(t, l.isCold(cold), "an insert of one of its keys ends it")
	require.Equal(t, []uint64{1, 2, 7}, order(l))
}

// TestHeldAgainEndsAtAChange: TouchHeld of the keys it was last given
// answers as then while nothing changed the list (pins do not), and
// looks again after an insert, a removal or another touch.
func TestHeldAgainEndsAtAChange(t *testing.T) {
	l := mustNew(t, 10)
	l.Insert([]uint64{1, 2, 3, 4}, nil)
	keys := []uint64{1, 2, 3, 9}
	require.Equal(t, 2, l.TouchHeld(keys, 1))
	_, ok := l.heldAgain(keys, 1)
	require.True(t, ok)
	_, ok = l.heldAgain(keys, 0)
	require.False(t, ok, "another from")
	require.True(t, l.Pin(2))
	require.Equal(t, 2, l.TouchHeld(keys, 1), "a pin changes nothing")
	require.True(t, l.Unpin(2))
	require.True(t, l.Remove(3))
	require.Equal(t, 1, l.TouchHeld(keys, 1), "a removal")
	l.Insert([]uint64{3, 9}, nil)
	require.Equal(t, 3, l.TouchHeld(keys, 1), "an insert")
	l.Touch([]uint64{4})
	_, ok = l.heldAgain(keys, 1)
	require.False(t, ok, "another touch")
	require.Equal(t, 3, l.TouchHeld(keys, 1))
	require.Equal(t, []uint64{4, 9, 3, 2, 1}, order(l))
}

// TestColdChainMarksAreItsOwn: the filter marks the cold chain's keys
// alone, over more chains than its marks number (they wrap): an insert
// of a key of an earlier cold chain ends the chain only if its mark is
// one of the chain's keys'.
func TestColdChainMarksAreItsOwn(t *testing.T) {
	l := mustNew(t, 1000)
	var chains [][]uint64
	for i := range 600 {
		chain := []uint64{uint64(10_000 + 3*i), uint64(10_001 + 3*i), uint64(10_002 + 3*i)}
		chains = append(chains, chain)
		require.Zero(t, l.TouchHeld(chain, 0))
		require.True(t, l.isCold(chain))
		if i == 0 {
			continue
		}
		k := chains[i-1][i%3] // an earlier chain's key, not held: the last's, or one whose mark had this one's number
		if i >= 255 && i%2 == 0 {
			k = chains[i-255][i%3]
		}
		shared := false
		for _, c := range chain {
			shared = shared || coldBit(c) == coldBit(k)
		}
		l.Insert([]uint64{k}, nil)
		require.Equal(t, !shared, l.isCold(chain), "chain %d, key %d", i, k)
	}
}

// TestColdStoreIsStoreEach holds Store to Insert and touchEach where it
// skips the touch (coldStore): a chain looked up while the tier held
// none of it, then stored from its first key, as a tiered run admits a
// prompt of a prefix the tier never held. The chains share prefixes, so
// some lookups hold keys; some repeat a key, and some are first stored
// past their first key (where a key of the store may come before it in
// the chain, which the touch would move); the tier evicts in every
// fourth round, where Store takes its slow twin.
func TestColdStoreIsStoreEach(t *testing.T) {
	// Stored past its first key, a chain's store is touched: key 4's
	// first place in the chain is before key 3's.
	l := mustNew(t, 10)
	chain := []uint64{4, 24, 3, 4}
	require.Zero(t, l.TouchHeld(chain, 0))
	l.Store(chain[2:], chain, nil)
	require.Equal(t, []uint64{3, 4}, order(l), "4 the most recent, 3 below it")
	r := rand.New(rand.NewPCG(41, 0xc01d))
	skipped := 0
	for round := range 12 {
		capacity := 300 + r.IntN(2000)
		if round%4 == 3 {
			capacity = 100 + r.IntN(100)
		}
		fast, slow := mustNew(t, capacity), mustNew(t, capacity)
		slow.growIndex = true // reindex's twin
		slow.evictEach = true // makeRoom's twin
		prefixes := make([][]uint64, 1+r.IntN(3))
		for g := range prefixes {
			for k := range 1 + r.IntN(100) {
				prefixes[g] = append(prefixes[g], uint64(g+1)<<32|uint64(k))
			}
		}
		own := uint64(1 << 40)
		for step := range 30 {
			p := prefixes[r.IntN(len(prefixes))]
			chain := append([]uint64(nil), p[:r.IntN(len(p)+1)]...)
			for range 2 + r.IntN(60) {
				own++
				chain = append(chain, own)
			}
			if r.IntN(3) == 0 { // a key given twice
				chain[r.IntN(len(chain))] = chain[r.IntN(len(chain))]
			}
			n := 0
			for n < len(chain) && slow.Contains(chain[n]) {
				n++
			}
			require.Equal(t, n, fast.TouchHeld(chain, 0))
			slow.touchEach(chain)
			stored := 0
			if r.IntN(3) == 0 { // the first store past the chain's first key
				stored = r.IntN(len(chain) - 1)
			}
			for stored < len(chain) {
				to := stored + 2 + r.IntN(40)
				to = min(to, len(chain))
				keys := chain[stored:to]
				if stored == 0 && fast.isCold(chain) && len(keys) >= 2 &&
					len(fast.spare) == 0 && fast.used+len(keys) <= fast.capacity {
					skipped++
				}
				fe, fa, fok := fast.Store(keys, chain, nil)
				se, sa, sok := slow.storeStep(keys, chain)
				requireSameStore(t, fe, fa, fok, se, sa, sok)
				requireSameList(t, fast, slow, round, step)
				if !fok {
					break
				}
				stored = to
			}
		}
	}
	require.Positive(t, skipped, "a store skipped its touch")
}

// TestStoreOneKeyIsStoreEach holds Store to Insert and touchEach where
// it puts one key below its chain's key before it (insertOne), as a
// decode stores its blocks one at a time: two chains on a shared prefix
// grow a key a store, interleaved, past several segments' 64 places,
// with lookups of a third chain between, each store a slice of its chain
// (as the engine's).
func TestStoreOneKeyIsStoreEach(t *testing.T) {
	fast, slow := mustNew(t, 1000), mustNew(t, 1000)
	slow.growIndex = true
	var chains [3][]uint64
	for c := range chains {
		for k := range 300 {
			key := uint64(c+1)<<32 | uint64(k)
			if k < 40 {
				key = uint64(k) // the shared prefix
			}
			chains[c] = append(chains[c], key)
		}
	}
	stored := [2]int{}
	for step := range 500 {
		c := step % 2
		n := stored[c] + 1
		if stored[c] == 0 {
			n = 50 // a prompt's first chunk
		}
		chain := chains[c][:n]
		fe, fa, fok := fast.Store(chain[stored[c]:], chain, nil)
		se, sa, sok := slow.storeStep(chain[stored[c]:], chain)
		requireSameStore(t, fe, fa, fok, se, sa, sok)
		stored[c] = n
		if step%7 == 0 {
			look := chains[2][:1+step%200]
			require.Equal(t, countHeld(slow, look), fast.TouchHeld(look, 0))
			slow.touchEach(look)
		}
		requireSameList(t, fast, slow, 0, step)
	}
}

// countHeld is how many of keys, from the first, l holds.
func countHeld(l *LRU, keys []uint64) int {
	n := 0
	for n < len(keys) && l.Contains(keys[n]) {
		n++
	}
	return n
}

// requireSameStore holds two stores' answers (the keys evicted, the
// anonymous blocks evicted, ok) equal.
func requireSameStore(t *testing.T, fe []uint64, fa int, fok bool, se []uint64, sa int, sok bool) {
	t.Helper()
	require.Equal(t, sok, fok)
	require.Equal(t, se, fe)
	require.Equal(t, sa, fa)
}

// requireSameList holds fast's list and counters to slow's, and fast's
// segments to their claims.
func requireSameList(t *testing.T, fast, slow *LRU, round, step int) {
	t.Helper()
	require.Equal(t, order(slow), order(fast), "round %d step %d", round, step)
	require.Equal(t, slow.Counters(), fast.Counters())
	checkSegments(t, fast)
}

// TestInsertChainIsInsert holds InsertChain, each store's chain touched
// after it (some at once, the rest a few stores later, in order, as sim's
// lazy touches make them), to Insert and touchEach: requests that share
// prefixes store their chains a chunk or a decode's block at a time in a
// tier that does not evict (no node free: InsertChain's own ways), a
// block whose key before it lies inside another request's segment among
// them.
func TestInsertChainIsInsert(t *testing.T) { insertChains(t, false) }

// insertChains is TestInsertChainIsInsert, the fast tier Chained if
// chained.
func insertChains(t *testing.T, chained bool) {
	r := rand.New(rand.NewPCG(42, 0x1c4))
	decodes := 0
	for round := range 6 {
		fast, slow := mustNew(t, 1<<14), mustNew(t, 1<<14)
		fast.chained = chained
		prefixes := sharedPrefixes(1+r.IntN(3), func() int { return 1 + r.IntN(60) })
		own := uint64(1 << 40)
		type req struct {
			chain  []uint64
			stored int
		}
		var reqs []*req
		var pending [][]uint64 // chains whose touch is put off, in order
		flush := func() {
			for _, c := range pending {
				fast.Touch(c)
				slow.touchEach(c)
			}
			pending = pending[:0]
		}
		for step := range 300 {
			if len(reqs) == 0 || r.IntN(8) == 0 {
				reqs = append(reqs, &req{chain: newChain(r, prefixes, &own, 20)})
			}
			q := reqs[r.IntN(len(reqs))]
			if q.stored == len(q.chain) { // a decode's block
				own++
				q.chain = append(q.chain, own)
			}
			to := q.stored + 1
			if r.IntN(3) == 0 {
				to = q.stored + 1 + r.IntN(len(q.chain)-q.stored)
			}
			keys, chain := q.chain[q.stored:to], q.chain[:to]
			if len(keys) == 1 && q.stored > 0 {
				decodes++
			}
			fe, fa, fok := fast.InsertChain(keys, chain, nil)
			se, sa, sok := slow.Insert(keys, nil)
			requireSameStore(t, fe, fa, fok, se, sa, sok)
			checkSegments(t, fast) // its claims before the touch mends any
			q.stored = to
			pending = append(pending, chain)
			if r.IntN(8) == 0 {
				flush()
				requireSameList(t, fast, slow, round, step) // and checkSegments
			}
		}
		flush()
		requireSameList(t, fast, slow, round, 300)
	}
	require.Greater(t, decodes, 900)
}

// newChain is a request's chain: a random prefix's first keys, then 1
// to most keys of its own, numbered on from *own.
func newChain(r *rand.Rand, prefixes [][]uint64, own *uint64, most int) []uint64 {
	p := prefixes[r.IntN(len(prefixes))]
	c := append([]uint64(nil), p[:r.IntN(len(p)+1)]...)
	for range 1 + r.IntN(most) {
		*own++
		c = append(c, *own)
	}
	return c
}

// TestFullStoreProtectsHeldRuns holds a chained tier's Store into a
// full tier (roomFor's protectRuns: the held keys found a segment's run
// at a time, the others counted by the index) to Insert and touchEach
// where the store's held keys lie at the least recent end, untouched
// since they were stored: chains on shared prefixes stored again from
// their first key, with no lookup's touch before, into small tiers, so
// that the eviction meets the store's held runs first and must skip
// every key of them. It requires stores that evicted past held keys.
// A third tier stores as the fast one, its new keys looked up again
// after the eviction (noKnown: insertFreed, insertNew's twin).
func TestFullStoreProtectsHeldRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 0x9a7d))
	skippedHeld := 0
	for round := range 40 {
		capacity := 20 + r.IntN(100)
		fast, slow := twinTiers(t, capacity, true)
		// Store with its new keys looked up again after the eviction
		// (insertFreed, not insertNew).
		again := mustNew(t, capacity)
		again.chained, again.noKnown = true, true
		prefixes := make([][]uint64, 1+r.IntN(3))
		for g := range prefixes {
			for k := range 1 + r.IntN(capacity/2) {
				prefixes[g] = append(prefixes[g], uint64(g+1)<<32|uint64(k))
			}
		}
		own := uint64(1 << 40)
		for step := range 40 {
			p := prefixes[r.IntN(len(prefixes))]
			chain := append([]uint64(nil), p[:r.IntN(len(p)+1)]...)
			for range 1 + r.IntN(capacity/3) {
				own++
				chain = append(chain, own)
			}
			for stored := 0; stored < len(chain); {
				to := min(stored+1+r.IntN(capacity/2), len(chain))
				keys := chain[stored:to]
				lru := slow.nodes[slow.nodes[nil32].next].key
				held := slices.Contains(keys, lru) && slow.Contains(lru)
				fe, fa, fok := fast.Store(keys, chain, nil)
				se, sa, sok := slow.storeStep(keys, chain)
				requireSameStore(t, fe, fa, fok, se, sa, sok)
				requireSameList(t, fast, slow, round, step)
				ae, aa, aok := again.Store(keys, chain, nil)
				requireSameStore(t, fe, fa, fok, ae, aa, aok)
				requireSameList(t, fast, again, round, step)
				if held && len(se) > 0 {
					skippedHeld++
				}
				if !fok {
					break
				}
				stored = to
			}
		}
	}
	require.Greater(t, skippedHeld, 50, "stores that evicted past their held keys at the least recent end")
}

// fullStores holds a chained tier's Store into a full tier to Insert
// and touchEach on a slow tier (evictEach: held keys protected by a mark
// a node, never by rows), as TestFullStoreProtectsHeldRuns does, on
// operations read from in: chains on shared prefixes (a prefix cut
// anywhere, keys of their own after it) stored a chunk at a time from
// their first key or from where they left off, stored again whole, so
// that their held runs lie anywhere in the list (at its least recent
// end most often, untouched since), touched (Touch), a key removed
// (Remove: a segment broken), and a key pinned for a while (Pin: the
// rows off, the marks taken). Both tiers' answers, lists and counters
// after every operation. It returns how many stores evicted past keys
// they held. With soil not nil, the fast tier's spare nodes are soiled
// after each operation (soilSpare).
func fullStores(t *testing.T, capacity int, in []byte, soil *rand.Rand) (skippedHeld int) {
	next := func() int {
		if len(in) == 0 {
			return 0
		}
		b := in[0]
		in = in[1:]
		return int(b)
	}
	fast, slow := twinTiers(t, capacity, true)
	prefixes := sharedPrefixes(1+next()%3, func() int { return 1 + next()%(capacity/2+1) })
	own := uint64(1 << 40)
	var reqs []*chainReq
	var pinned []uint64
	for step := 0; len(in) > 0; step++ {
		switch op := next() % 10; {
		case op < 6 || len(reqs) == 0: // a store, of a new chain or one's next chunk or all of it again
			if len(reqs) == 0 || op == 0 || len(reqs) < 8 && op == 1 {
				p := prefixes[next()%len(prefixes)]
				c := slices.Clone(p[:next()%(len(p)+1)])
				for range 1 + next()%(capacity/3+1) {
					own++
					c = append(c, own)
				}
				reqs = append(reqs, &chainReq{chain: c})
			}
			q := reqs[next()%len(reqs)]
			if q.stored == len(q.chain) {
				if next()%2 == 0 { // stored again from its first key
					q.stored = 0
				} else { // a decode's block
					own++
					q.chain = append(q.chain, own)
				}
			}
			to := min(q.stored+1+next()%(capacity/2+1), len(q.chain))
			keys, chain := q.chain[q.stored:to], q.chain[:to]
			lru := slow.nodes[slow.nodes[nil32].next].key
			held := slices.Contains(keys, lru) && slow.Contains(lru)
			fe, fa, fok := fast.Store(keys, chain, nil)
			se, sa, sok := slow.storeStep(keys, chain)
			requireSameStore(t, fe, fa, fok, se, sa, sok)
			if held && len(se) > 0 {
				skippedHeld++
			}
			if fok {
				q.stored = to
			}
		case op == 6: // a chain touched
			q := reqs[next()%len(reqs)]
			fast.Touch(q.chain[:q.stored])
			slow.touchEach(q.chain[:q.stored])
		case op == 7: // a key removed
			q := reqs[next()%len(reqs)]
			if q.stored > 0 {
				k := q.chain[next()%q.stored]
				require.Equal(t, slow.Remove(k), fast.Remove(k))
			}
		case op == 8: // a key pinned
			q := reqs[next()%len(reqs)]
			if q.stored > 0 && len(pinned) < 2 {
				k := q.chain[next()%q.stored]
				if ok := slow.Pin(k); ok {
					pinned = append(pinned, k)
					require.True(t, fast.Pin(k))
				} else {
					require.False(t, fast.Pin(k))
				}
			}
		default: // the pins let go
			for _, k := range pinned {
				require.Equal(t, slow.Unpin(k), fast.Unpin(k))
			}
			pinned = pinned[:0]
		}
		requireLinked(t, fast, step)
		requireSameList(t, fast, slow, 0, step)
		if soil != nil {
			soilSpare(fast, soil)
		}
	}
	return skippedHeld
}

// chainReq is a request of the randomized full stores: its chain, and
// how many of its keys it stored.
type chainReq struct {
	chain  []uint64
	stored int
}

// requireLinked holds l's list to a ring from its head: each node's
// next's prev is the node, and the walk comes back within len(l.nodes)
// steps (a node left out of place would make order walk for ever).
func requireLinked(t *testing.T, l *LRU, step int) {
	t.Helper()
	i := nil32
	for range len(l.nodes) + 1 {
		n := l.nodes[i].next
		require.Equal(t, i, l.nodes[n].prev, "step %d: node %d's next %d's prev", step, i, n)
		if i = n; i == nil32 {
			return
		}
	}
	t.Fatalf("step %d: the list does not come back to its head", step)
}

// FuzzFullStore is fullStores on the fuzzer's operations.
func FuzzFullStore(f *testing.F) {
	f.Add(uint8(24), []byte{2, 30, 40, 0, 1, 0, 9, 0, 0, 9, 0, 0, 0, 9, 0, 0, 30, 20, 3, 1, 0, 9, 5, 0, 1, 0, 0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		fullStores(t, 8+int(capacity%64), ops, nil)
	})
}

// TestFullStoreRowsAreMarks runs fullStores on random operations (the
// guards of LRU.protectRuns against the slow tier's marks) and requires
// stores that evicted past held keys at the least recent end.
func TestFullStoreRowsAreMarks(t *testing.T) {
	r := rand.New(rand.NewPCG(58, 0x6a4d))
	skipped := 0
	for range 120 {
		in := randomOps(r, 500)
		skipped += fullStores(t, 8+r.IntN(64), in, nil)
	}
	t.Logf("%d stores evicted past held keys", skipped)
	require.Greater(t, skipped, 50)
}

// sharedPrefixes is groups chains of shared keys, group g's keys
// (g+1)<<32 | k for k below its length, each drawn by length in group
// order: the shared prompts of the randomized touch and store tests.
func sharedPrefixes(groups int, length func() int) [][]uint64 {
	prefixes := make([][]uint64, groups)
	for g := range prefixes {
		for k := range length() {
			prefixes[g] = append(prefixes[g], uint64(g+1)<<32|uint64(k))
		}
	}
	return prefixes
}

// TestRefusedStorePutsNothing holds a chained tier's Store that is
// refused (a full tier whose pinned keys and the store's held ones
// leave too few to evict) to Insert and touchEach on a slow tier: the
// new keys its count put in the index (putNew) are taken out again and
// their nodes given back, so that the index holds the keyed nodes'
// keys alone (checkSegments) and later stores answer as the slow
// tier's. Chains on shared prefixes are stored a chunk at a time, and
// a tenth of the keys stored are pinned until a fifth of the steps let
// every pin go.
func TestRefusedStorePutsNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(59, 0x7ef))
	refused := 0
	for round := range 100 {
		refused += refusedStores(t, r, round, 8+r.IntN(40))
	}
	require.Greater(t, refused, 100, "stores refused")
}

// refusedStores is a round of TestRefusedStorePutsNothing in tiers of
// capacity blocks; it returns how many stores were refused.
func refusedStores(t *testing.T, r *rand.Rand, round, capacity int) (refused int) {
	fast, slow := twinTiers(t, capacity, true)
	prefixes := sharedPrefixes(1+r.IntN(3), func() int { return 1 + r.IntN(capacity) })
	own := uint64(1 << 40)
	var pinned []uint64
	for step := range 60 {
		chain := newChain(r, prefixes, &own, capacity)
		for stored := 0; stored < len(chain); {
			to := min(stored+1+r.IntN(capacity), len(chain))
			keys := chain[stored:to]
			fe, fa, fok := fast.Store(keys, chain[:to], nil)
			se, sa, sok := slow.storeStep(keys, chain[:to])
			requireSameStore(t, fe, fa, fok, se, sa, sok)
			requireSameList(t, fast, slow, round, step)
			requireNodesKept(t, fast, round, step)
			if !fok {
				refused++
				break
			}
			for _, k := range keys {
				if r.IntN(10) == 0 && slow.Pin(k) {
					require.True(t, fast.Pin(k))
					pinned = append(pinned, k)
				}
			}
			stored = to
		}
		if r.IntN(5) == 0 { // every pin let go
			for _, k := range pinned {
				require.Equal(t, slow.Unpin(k), fast.Unpin(k))
			}
			pinned = pinned[:0]
		}
	}
	return refused
}

// requireNodesKept asserts that each of l's nodes but the sentinel is
// in its list or on spare, once: a refused store gives back the nodes
// it took (roomFor), those past the list's slice too.
func requireNodesKept(t *testing.T, l *LRU, round, step int) {
	t.Helper()
	seen := make([]bool, len(l.nodes))
	for i := l.nodes[nil32].next; i != nil32; i = l.nodes[i].next {
		require.False(t, seen[i], "round %d step %d: node %d twice", round, step, i)
		seen[i] = true
	}
	for _, i := range l.spare {
		require.False(t, seen[i], "round %d step %d: node %d twice", round, step, i)
		seen[i] = true
	}
	for i := 1; i < len(seen); i++ {
		require.True(t, seen[i], "round %d step %d: node %d lost", round, step, i)
	}
}

// checkBreaks asserts two invariants of segment k's breaks that Store's
// appends under a segment's last place rely on (storeFused, label,
// insertStacked: they append words of no break and clear the last
// place's bit alone): no place past the last has a break, and a segment
// of one labelled place has none (its place 0 is broken only by its
// node's unlabel, which frees it, or by a place 1's, which it never
// had; a touch breaks below a moved run of two places or more).
func checkBreaks(t *testing.T, l *LRU, k int) {
	t.Helper()
	s := &l.segs[k]
	for p := len(s.keys); p < len(s.breaks)<<6; p++ {
		require.Zero(t, s.breaks[p>>6]&(1<<(p&63)), "segment %d of %d places: a break at place %d", k+1, len(s.keys), p)
	}
	if len(s.keys) == 1 && s.live == 1 {
		require.Zero(t, s.breaks[0]&1, "segment %d: its one place, labelled, broken", k+1)
	}
}
