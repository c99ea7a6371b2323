package kvtier

import (
	"slices"

	"github.com/servesim/servesim/internal/lcp"
)

// Store: a write-through store and the touch after it, the new keys put
// in as the touch leaves them.
//
// A tier's store inserts a request's new blocks, each at the most recent
// end in the order given (Insert), and then touches the request's chain
// (Touch), which moves the chain's held keys, the new ones among them, to
// the most recent end, the chain's first on top. Inserted, the new keys
// lay in reverse of the touch's order: the touch walked them key by key
// and put them in a segment, after a lookup and a call to the index a
// key in the insert. Where every new key is in the chain, the touch
// moves all of them, so where the insert put them changes nothing the
// touch leaves. Store then adds them to the index in one call
// (keyindex's AddNew) and puts them in as the touch will stack them, the
// first on top, each just below the one before, as the places after the
// last of the segment that holds the chain's key before them (or of a
// new one): the touch matches them there, moves them as one run, and
// mends the break between that key and them (join), so that the next
// touch matches the chain in one run. Regime/Tiers (cachegrind): 139,517
// instructions a request with Insert and Touch, 123,966 with Store. The
// new nodes are consecutive, so each one's neighbours are known without
// a load: insertStacked took 8,388 a request linking each below the one
// before, 5,475 so.
//
// Nor does it matter where in the list the insert puts them: the touch
// moves every one, and the keys it leaves in place keep their order. So
// where the chain's key before them is its segment's last place, they go
// in just below that key, already where its places' next ones lie: the
// touch matches the chain's run and them as one run, one lookup and one
// move fewer. A decode's store, its one new block the chain's last key
// (len(keys) 1, once taken key by key by Insert), is put there with one
// probe (insertOne). Regime/Tiers (cachegrind): 84,317 instructions a
// request with the new keys at the most recent end and a decode's block
// inserted, 82,125 so.

// Store stores keys and, when it stored a key not held before, touches
// chain: Insert(keys, evicted), then Touch(chain), as vLLM's connector
// stores a request's new blocks and touches its keys after
// (offloading/scheduler.py:677-684). It answers as Insert. The list it
// leaves is storeEach's (FuzzTouch).
func (l *LRU) Store(keys, chain, evicted []uint64) (_ []uint64, anon int, ok bool) {
	l.ver++
	if len(keys) == 0 {
		return l.storeEach(keys, chain, evicted)
	}
	x, in := inChain(keys, chain)
	if !in {
		return l.storeEach(keys, chain, evicted)
	}
	// A chain's first store after a touch that held none of it (the cold
	// chain, cold.go) holds its keys alone: the touch would leave the
	// list as the insert leaves it (coldStore). An eviction holds it
	// still: it takes keys out, none in.
	// Otherwise the insert of a key of chain ended the cold chain if it
	// was chain (added: each of its keys has its mark), so the touch
	// skips that test (moveRuns).
	cold := x == 0 && l.isCold(chain)
	if l.used+len(keys) > l.capacity {
		// The common case in one function (storeFused), else Insert's
		// eviction first (storeFull), then the new keys stacked as with
		// room for every key.
		if evicted, anon, added, taken := l.storeFused(keys, chain, x, evicted); taken {
			if added > 0 && !cold && (x > 0 || added < len(chain)) {
				l.moveRuns(chain, len(chain))
			}
			return evicted, anon, true
		}
		var add int
		if evicted, anon, add, ok = l.roomFor(keys, evicted, l.chained); !ok || add == 0 {
			return evicted, anon, ok
		}
	}
	if added := l.insertStacked(keys, chain[:x]); added > 0 && !cold && (x > 0 || added < len(chain)) {
		l.moveRuns(chain, len(chain))
	}
	return evicted, anon, true
}

// storeFull: a store into a full tier.
//
// Past a tier's fill, no store finds room for every key and a node is
// free after each eviction: Store took Insert's way (storeEach), which
// makes room, puts the new keys at the most recent end key by key in
// the order given, and the touch walked them there and labelled them a
// segment. Insert evicts before it puts a key in, and no eviction reads
// where the new keys go: where the touch leaves them is all that
// matters, and the touch moves every one of them (keys lie in chain).
// So a store that must make room evicts as Insert does (roomFor: the
// store's held keys protected, the least recent others evicted), and
// then puts the new keys in stacked, as with room for every key
// (insertStacked; its nodes taken from the spare ones: insertFreed,
// insertNew), so that its segments survive the fill.

// coldStore: the touch a Store may skip.
//
// When none of chain is held (isCold, or keys are the whole chain and
// the insert added every one of them, each given once) and keys are
// chain's first ones,
// the keys chain holds after the insert are keys, which insertStacked
// put at the most recent end each once, in the order of its first place
// in keys, the first on top. The touch moves the held keys of chain to
// the most recent end in the order of their first places in chain,
// which, keys being its first ones, is the same: it would move each
// where it lies. (Stored past chain's first key, a key of the store may
// have a place before it in chain, and the touch would move it.) Only the segment's marks it would set differ (the break
// after the segment's last place, which nothing reads: a segment's run
// ends at its last place, and a place appended after it sets the bit
// as it is appended). A tiered run's prompt of 287 blocks admitted
// after a lookup that found none of it stores its first chunk of 128
// so: the touch looked up the 159 keys after them, one by one, none
// held. Regime/Tiers (cachegrind): 99,853 instructions a request with
// the touch, 98,334 without (and isCold comparing the last keys first).
// A store of a whole chain that adds every key (sim's lazy touches
// store a prompt's chunk so, its chain's touch noted) skips it too:
// 45,371 instructions a request with the touch, 44,748 without.

// storeEach is Store's slow twin: Insert, then Touch when the insert
// added a key.
func (l *LRU) storeEach(keys, chain, evicted []uint64) (_ []uint64, anon int, ok bool) {
	used, n := l.used, len(evicted)
	evicted, anon, ok = l.Insert(keys, evicted)
	// It added keys if it holds more than it held less what it evicted.
	if ok && l.used-used+len(evicted)-n+anon > 0 {
		l.Touch(chain)
	}
	return evicted, anon, ok
}

// inChain reports whether keys lie in chain as one run, and where it
// begins: where keys are a slice of chain's array (the engine's store
// is a slice of its chain, the request's keys), their place in it;
// else found from the chain's end (a request's new blocks are its
// chain's last, or end where the blocks it computed end). Any place
// keys lie at serves: the touch moves every key of the store, so the
// list Store leaves is the same, and a run that begins chain lies at
// place 0 (coldStore). Regime/Tiers (cachegrind): 86,430 instructions
// a request found from the chain's end, 85,392 so.
func inChain(keys, chain []uint64) (int, bool) {
	if x := cap(chain) - cap(keys); x >= 0 && x <= len(chain)-len(keys) && &chain[x] == &keys[0] {
		return x, true
	}
	last := keys[len(keys)-1]
	for i := len(chain) - 1; i >= len(keys)-1; i-- {
		if x := i + 1 - len(keys); chain[i] == last && lcp.Len(keys, chain[x:i+1]) == len(keys) {
			return x, true
		}
	}
	return 0, false
}

// insertStacked is Insert's first case (room for every key, and no node
// free, as in a tier that has not evicted) for keys that the caller
// touches next, after the keys before: the keys not held go in, the
// first on top and each just below the one before, as a segment's places
// in order. Where the last of before is its segment's last place, they
// are that segment's next places, just below it in the list; else they
// are a new segment's, at the most recent end. It returns how many keys
// it added.
func (l *LRU) insertStacked(keys, before []uint64) int {
	known := l.known // roomFor's, for these keys, if it just made room for them
	l.known = 0
	sg, above := int32(0), nil32
	if len(before) > 0 {
		if i, ok := l.index.Get(before[len(before)-1]); ok {
			if n := &l.nodes[i]; n.seg != 0 && int(n.off) == len(l.segs[n.seg-1].keys)-1 {
				sg, above = n.seg, i
			}
		}
	}
	if known > 0 { // in the index already (protectRuns)
		return l.insertNew(keys[known-1:], sg, above)
	}
	l.reserve(len(keys))
	if len(l.spare) > 0 {
		return l.insertFreed(keys, sg, above)
	}
	if len(keys) == 1 && sg != 0 {
		return l.insertOne(keys[0], sg, above)
	}
	fresh := sg == 0
	sg, s, t0 := l.segFor(sg, len(keys))
	// The new keys are added to the index in one call, their nodes the
	// next ones after the last (no node is free), appended to the
	// segment's keys; node n0+x, the x-th new key, lies just below
	// n0+x−1 and just above n0+x+1, the first just below what was above
	// the most recent entry (the sentinel), the last just above it.
	n0 := int32(len(l.nodes))
	sk := l.index.AddNew(keys[l.heldLead(keys):], n0, s.keys)
	s.keys = sk
	added := len(sk) - int(t0)
	if added == 0 {
		if fresh { // the new segment unused
			l.freeSegs = append(l.freeSegs, sg)
		}
		return 0
	}
	l.nodes = slices.Grow(l.nodes, added)[:int(n0)+added]
	s.nodes = slices.Grow(s.nodes, added)[:int(t0)+added]
	stack(l.nodes[n0:], s.nodes[t0:], sk[t0:], n0, sg, t0)
	first, last := n0, n0+int32(added)-1
	base := l.nodes[above].prev // the node below above: with no above, the most recent entry
	l.nodes[first].next, l.nodes[above].prev = above, first
	l.nodes[last].prev, l.nodes[base].next = base, last
	l.addedAll(sk[t0:])
	l.placed(s, t0, added)
	return added
}

// insertFreed is insertStacked with a node free (a tier that has
// evicted): the keys not held go in as the places after the last of
// segment sg (a new segment's if sg is 0), the first just below node
// above (the most recent end if above is nil32), their nodes the spare
// ones, the last first (as Insert's allocs would take them), and then
// the next past the list's slice, added to the index in one call (AddIDs). It
// returns how many keys it added.
func (l *LRU) insertFreed(keys []uint64, sg, above int32) int {
	keys = keys[l.heldLead(keys):]
	fresh := sg == 0
	sg, s, t0 := l.segFor(sg, len(keys))
	ids := l.freeIDs(len(keys))
	sk := l.index.AddIDs(keys, ids, s.keys)
	s.keys = sk
	added := len(sk) - int(t0)
	if added == 0 {
		if fresh {
			l.freeSegs = append(l.freeSegs, sg)
		}
		return 0
	}
	// The nodes taken: the spare ones, the last first, and those past
	// the list's slice, which are zero (alloc's append).
	ids = ids[:added]
	if k := min(added, len(l.spare)); k < added {
		l.spare = l.spare[:0]
		l.nodes = slices.Grow(l.nodes, added-k)[:len(l.nodes)+added-k]
	} else {
		l.spare = l.spare[:len(l.spare)-k]
	}
	s.nodes = append(s.nodes, ids...) // segFor made room
	linkRow(l.nodes, s.nodes[t0:], sk[t0:], above, l.nodes[above].prev, sg, t0)
	l.addedAll(sk[t0:])
	l.placed(s, t0, added)
	return added
}

// insertNew is insertFreed for keys none of which is held, each given
// once, as roomFor's eviction found them (known: protectRuns), and put
// in the index already with the nodes they take (putNew, l.at): the
// nodes are linked (linkRow) without a lookup, where AddIDs compared
// each slot's key and copied the keys it added. It returns how many
// keys it added: all.
// Regime/Tiers past its tiers' fill (budget test): 76,008 instructions
// a request through insertFreed (heldLead 524, freeIDs 1,799,
// linkStacked 2,894, AddIDs and addSome 4,211), 74,330 taking the
// nodes off a free list through the nodes' next as it linked them
// (takeStacked 4,405, PutIDs 2,621); 72,348 so, 71,742 with spare a
// stack of ids (evictRun 4,830 to 5,157, takeStacked 4,405 to linkRow
// 2,566, insertNew 2,195 to 2,577, memmove 1,478 to 1,961).
func (l *LRU) insertNew(keys []uint64, sg, above int32) int {
	sg, s, t0 := l.segFor(sg, len(keys))
	added := len(keys)
	s.keys = append(s.keys, keys...) // segFor made room
	s.nodes = append(s.nodes, l.at...)
	l.at = nil // spare's, maybe (nextIDs)
	sn := s.nodes[t0:]
	linkRow(l.nodes, sn, keys, above, l.nodes[above].prev, sg, t0)
	l.addedAll(keys)
	l.placed(s, t0, added)
	return added
}

// linkRow makes nodes sn, free (zero), the keyed entries of keys, each
// just below the one before, the first just below node above and the
// last just above node base, and places off, off+1, ... of segment sg.
// Regime/Tiers past its tiers' fill (budget test): 69,783 instructions
// a request with the row's ends linked after the loop, each next id
// loaded twice (linkRow 2,566), 69,408 so (2,201).
func linkRow(nodes []node, sn []int32, keys []uint64, above, base, sg, off int32) {
	keys = keys[:len(sn)] // so that the loop checks no index
	// The row's ends linked first: then above is not kept across the
	// loop, nor each next id loaded twice.
	last := sn[len(sn)-1]
	nodes[above].prev = sn[0]
	nodes[base].next = last
	prev, id := above, sn[0]
	for x := 1; x < len(sn); x++ {
		below := sn[x]
		n := &nodes[id] // set field by field: a node{...} is built aside and copied
		n.key, n.prev, n.next, n.seg, n.off = keys[x-1], below, prev, sg, off
		prev, id, off = id, below, off+1
	}
	n := &nodes[last]
	n.key, n.prev, n.next, n.seg, n.off = keys[len(sn)-1], base, prev, sg, off
}

// placed counts added places new in s, from place t0, each just above
// the next, the first just below place t0−1 (if any).
func (l *LRU) placed(s *segment, t0 int32, added int) {
	s.live += int32(added)
	for len(s.breaks)<<6 < len(s.keys) {
		s.breaks = append(s.breaks, 0) // each new place just above the next
	}
	if t0 > 0 { // place t0−1 is just above the new places now
		s.breaks[(t0-1)>>6] &^= 1 << ((t0 - 1) & 63)
	}
	l.used += added
}

// freeIDs returns the ids of the first n nodes free: the spare ones,
// the last first, then the next ones past the list's slice. It takes
// none (l.ids is its scratch).
func (l *LRU) freeIDs(n int) []int32 {
	ids := slices.Grow(l.ids[:0], n)[:n]
	x := 0
	for k := len(l.spare) - 1; k >= 0 && x < n; k-- {
		ids[x] = l.spare[k]
		x++
	}
	for i := int32(len(l.nodes)); x < n; i++ {
		ids[x] = i
		x++
	}
	l.ids = ids
	return ids
}

// segFor returns segment sg, or a new one if sg is 0, its number, and
// its length, with room for add more places.
func (l *LRU) segFor(sg int32, add int) (int32, *segment, int32) {
	if sg == 0 {
		sg = l.newSeg()
	}
	s := &l.segs[sg-1]
	l.segRoom(s, add)
	return sg, s, int32(len(s.keys))
}

// heldLead returns how many of keys, from the first, it finds held as
// one run of a segment (segRun): keys AddNew may skip, as it skips each
// key held. A store's held keys mostly lead it (a request's HBM hits,
// stored from its first block), where AddNew probed the index a key.
// Regime/Tiers (cachegrind): 64,533 instructions a request with every
// key to AddNew, 63,619 so (AddNew 4,990 to 3,948).
func (l *LRU) heldLead(keys []uint64) int {
	i, ok := l.index.Get(keys[0])
	if !ok {
		return 0
	}
	n := &l.nodes[i]
	if n.seg == 0 {
		return 1
	}
	return l.segs[n.seg-1].segRun(keys, 0, n.off, l.chained)
}

// stack makes nodes, nodes i, i+1, ... of the list, the keyed entries
// of keys, each just below the one before (prev i+1, next i−1), and
// places off, off+1, ... of segment sg, whose nodes by place from off
// are sn. The nodes are new, past the list's slice as it was, which
// never shrinks (alloc, insertOne and insertStacked append to it): they
// were never written, so their other fields are zero already, as a
// keyed entry's (Regime/Tiers, cachegrind: 2,881 instructions a request
// setting them too, 2,282 so). Not inlined: in insertStacked, its loop
// loaded values of the code after it again from the stack at each node
// (24 instructions a node, 20 here). Regime/Tiers (cachegrind): 65,811 instructions a
// request with the loop in insertStacked, 65,991 with stack inlined,
// 65,268 so.
//
//go:noinline
func stack(nodes []node, sn []int32, keys []uint64, i, sg, off int32) {
	nodes, sn = nodes[:len(keys)], sn[:len(keys)] // so that the loop checks no index
	for x, k := range keys {
		n := &nodes[x] // set field by field: a node{...} is built aside and copied
		n.key, n.prev, n.next, n.seg, n.off = k, i+1, i-1, sg, off
		sn[x] = i
		i, off = i+1, off+1
	}
}

// insertOne is insertStacked for one key, a decode's block, below node
// above, the last place of segment sg: its node is the segment's next
// place, just below above. One probe adds it to the index, where
// AddNew's setup and insertStacked's loops cost more than the key.
func (l *LRU) insertOne(k uint64, sg, above int32) int {
	i := int32(len(l.nodes))
	if _, added := l.index.Add(k, i); !added {
		return 0
	}
	l.added(k)
	s := &l.segs[sg-1]
	l.segRoom(s, 1)
	t := int32(len(s.keys))
	base := l.nodes[above].prev
	l.nodes = append(l.nodes, node{key: k, prev: base, next: above, seg: sg, off: t})
	l.nodes[base].next, l.nodes[above].prev = i, i
	s.keys = append(s.keys, k)
	s.nodes = append(s.nodes, i)
	s.live++
	if len(s.breaks)<<6 < len(s.keys) {
		s.breaks = append(s.breaks, 0)
	}
	s.breaks[(t-1)>>6] &^= 1 << ((t - 1) & 63) // above, place t−1, is just above the new place
	l.used++
	return 1
}

// InsertChain is Insert(keys, evicted) for a caller that touches chain,
// which holds keys as one run, before the tier next evicts or is read
// in order: it answers as Insert, and holds what Insert holds, but it
// may put the new keys elsewhere in the list, where Store puts them for
// its touch (insertStacked: below the chain's key before them when that
// key is its segment's last place, else a new segment's places). The
// touch after it leaves the list as it leaves Insert's, and so does any
// sequence of touches that touches chain, or a chain holding every new
// key, after the others: the new keys' places are read by no touch, only
// moved (sim's lazy touches, whose touch of chain is noted and made
// before a store that may evict). With no room for every key, a node
// free or keys not in chain, it is Insert.
//
// sim's host tier stored a decode's block by Insert, at the most recent
// end, where each one was a run of its own for the noted touch, walked
// and labelled: Regime/Tiers (cachegrind, SERVESIM_BUDGET_FUNCS), 56,141
// instructions a request so, 52,372 this way (moveRuns 3,841 to 564).
func (l *LRU) InsertChain(keys, chain, evicted []uint64) (_ []uint64, anon int, ok bool) {
	if len(keys) == 0 {
		return l.Insert(keys, evicted)
	}
	full := l.used+len(keys) > l.capacity
	if x := cap(chain) - cap(keys); !full && len(l.spare) == 0 && len(keys) == 1 && x > 0 && x < len(chain) && &chain[x] == &keys[0] {
		// A decode's block, chain's key after x−1: insertStacked's
		// way for it (insertOne, below that key when it is its
		// segment's last place) without its calls and inChain's.
		// Regime/Tiers (cachegrind): 48,041 instructions a request
		// through insertStacked, 47,294 so.
		l.reserve(1)
		if i, ok := l.index.Get(chain[x-1]); ok {
			if n := &l.nodes[i]; n.seg != 0 && int(n.off) == len(l.segs[n.seg-1].keys)-1 {
				l.ver++
				l.insertOne(keys[0], n.seg, i)
				return evicted, 0, true
			}
		}
	}
	x, in := inChain(keys, chain)
	if !in {
		return l.Insert(keys, evicted)
	}
	l.ver++
	if full { // Insert's eviction first, as Store's (storeFull)
		var add int
		if evicted, anon, add, ok = l.roomFor(keys, evicted, l.chained); !ok || add == 0 {
			return evicted, anon, ok
		}
	}
	l.insertStacked(keys, chain[:x])
	return evicted, anon, true
}
