package kvtier

import (
	"math/bits"
	"slices"
)

// A full chained store in one function.
//
// Past a tier's fill, almost every Store is a chained tier's store that
// must evict: its held keys one run of a segment that leads it (a
// request's HBM hits) or none, every key after them new, no node pinned.
// Store took roomFor (nextEpoch, protectRuns, heldRun, putNew), makeRoom
// (evictRun, freeRow, unlabelRun) and insertStacked (insertNew, segFor,
// linkRow, addedAll, placed): fifteen calls a store for about seven new
// keys, each with its own setup and spills. storeFused does their work
// in one function, in the same order, with the same effect on the list,
// its segments, its spare nodes and the index: it guards the lead run
// (one row), counts and puts the new keys in the index (MissingPut), each
// with the node it will take (spare's first ones, else all of spare's
// and new ones past the list's slice: nextIDs), evicts from the least
// recent end a segment's row at a time up to the guarded row (DelKeys
// at the end), and links the new
// keys below the chain's key before them where it is its segment's last
// place, else as a new segment's places at the most recent end.
// Regime/Tiers past its tiers' fill (budget test, SERVESIM_BUDGET_FUNCS):
// 66,923 instructions a request through those calls, 64,553 so with
// the row's nodes put on spare by append and the new places' keys and
// nodes appended to the segment (two copies, calls that spilled the
// loops' state), 63,968 with both written in the loops (storeFused
// 13,257, where the calls took about 15,200).
//
// Every case it does not take it leaves to that path, having changed
// nothing: a first key not held or held outside a segment, a key held
// after the lead run, a node pinned, a store refused, an index that would
// grow, an epoch that would wrap, a slow twin's switch on (evictEach,
// noKnown). The test switch noFused sends every store that way
// (TestFusedStoreIsStoreSteps holds the two to the same tier, field by
// field).

// storeFused is Store's store into a full tier (l.used+len(keys) above
// the capacity) of keys, chain[x:] as one run, in the case above. It
// returns taken false, having changed nothing, in any other; else
// Store's answer and how many keys it added.
func (l *LRU) storeFused(keys, chain []uint64, x int, evicted []uint64) (_ []uint64, anon, added int, taken bool) {
	if !l.chained || l.pinned != 0 || l.evictEach || l.noKnown || l.noFused || l.epoch == ^uint32(0) {
		return evicted, 0, 0, false
	}
	nodes := l.nodes
	// The guarded row: places glo to ghi of segment gsg (none: gsg 0),
	// the lead run.
	gsg, glo, ghi, lead := int32(0), int32(0), int32(-1), 0
	if i, held := l.index.Get(keys[0]); held {
		if gsg, glo = nodes[i].seg, nodes[i].off; gsg == 0 {
			return evicted, 0, 0, false // protected by a mark
		}
		lead = l.segs[gsg-1].segRun(keys, 0, glo, true)
		ghi = glo + int32(lead) - 1
	}
	n := len(keys) - lead // the new keys
	need := l.used + n - l.capacity
	if n == 0 {
		l.epoch++ // roomFor's nextEpoch; nothing to insert, nothing evicted
		return evicted, 0, 0, true
	}
	if need > l.used-lead || l.index.Grows(l.index.Len()+len(keys)) {
		return evicted, 0, 0, false // refused (makeRoom), or no MissingPut
	}
	// The new keys' nodes (putNew): spare's first ones, read where they
	// lie, or all of spare's and those past the list's slice (nextIDs).
	fresh := keys[lead:]
	// nextIDs' common case here (spare holds n ids and room for n more):
	// Regime/Tiers past its tiers' fill (budget test), 58,406
	// instructions a request through its call, 58,338 so.
	at, took := l.spare, n
	if len(at) >= n && cap(at)-len(at) >= n {
		at = at[:n:n]
	} else {
		at, took = l.nextIDs(n)
	}
	if c := l.index.MissingPut(fresh, at); c < n { // a key held follows
		l.index.DelKeys(fresh[:c])
		return evicted, 0, 0, false
	}
	l.epoch++
	epoch := l.epoch
	l.spare = l.spare[took:]
	if took < n {
		n0 := len(nodes)
		nodes = slices.Grow(nodes, n-took)[:n0+n-took]
		l.nodes = nodes
	}

	// makeRoom's eviction, its evictRun inlined with the one guard.
	if need > 0 {
		total, from := need, len(evicted)
		keep, i := nil32, nodes[nil32].next
		sg, lo, hi := int32(0), int32(0), int32(0)
		for need > 0 {
			nd := &nodes[i]
			next := nd.next
			switch {
			case nd.anon > 0:
				keep, anon, need = l.evictAnon(i, keep, anon, need)
			case nd.mark != epoch: // none is pinned
				if nd.seg == 0 {
					evicted = append(evicted, nd.key)
					l.release(i)
					l.used--
					need--
					break
				}
				s, off := nd.seg, nd.off
				seg := &l.segs[s-1]
				// rowStart(off, lim): the first place of the row
				// that ends at off, or lim.
				a := off + 1 - int32(min(need, int(off)+1))
				if off > a {
					t := off - 1
					w := t >> 6
					b := seg.breaks[w] & (^uint64(0) >> (63 - t&63))
					for b == 0 && w<<6 > a {
						w--
						b = seg.breaks[w]
					}
					if b != 0 {
						a = max(w<<6+64-int32(bits.LeadingZeros64(b)), a)
					}
				}
				if s == gsg && ghi >= a && glo <= off {
					a = min(ghi, off) + 1
				}
				if a > off { // the store's held row
					nodes[keep].next, nd.prev, keep = i, keep, i
					break
				}
				// freeRow: the row's keys, the last place's first.
				sn := seg.nodes[a : off+1]
				k := len(evicted)
				evicted = slices.Grow(evicted, len(sn))[:k+len(sn)]
				ev := evicted[k:]
				// The row's nodes go on spare in place order,
				// copied in the loop (append's copy, a call,
				// spilled the loop's state around it).
				j := len(l.spare)
				sp := slices.Grow(l.spare, len(sn))[:j+len(sn)]
				l.spare = sp
				sp = sp[j:]
				next = nodes[sn[0]].next
				// The keys read from the segment (the row's places are
				// labelled: each place's key is its node's), not
				// through each node: Regime/Tiers past its tiers' fill
				// (budget test), 64,005 instructions a request from
				// the nodes, 63,834 so.
				sk := seg.keys[a : off+1]
				ev, sp, sk = ev[:len(sn)], sp[:len(sn)], sk[:len(sn)] // so that the loop checks no index
				for y, id := range sn {
					ev[len(ev)-1-y] = sk[y]
					sp[y] = id
				}
				l.used -= int(off-a) + 1
				need -= int(off-a) + 1
				if s == sg && off == lo-1 {
					lo = a
				} else {
					if sg != 0 {
						l.unlabelRun(sg, lo, hi)
					}
					sg, lo, hi = s, a, off
				}
			default:
				nodes[keep].next, nd.prev, keep = i, keep, i
			}
			i = next
		}
		// The last run of places evicted: unlabelRun's common case (one
		// word of breaks, the segment not freed) here, where its call
		// spilled the store's state around it: Regime/Tiers past its
		// tiers' fill (budget test), 63,834 instructions a request
		// through unlabelRun, 63,662 so.
		if sg != 0 {
			t, a := &l.segs[sg-1], max(lo-1, 0)
			if a>>6 == hi>>6 && t.live > hi-lo+1 {
				t.breaks[a>>6] |= ^uint64(0) >> (63 - (hi - a)) << (a & 63)
				t.live -= hi - lo + 1
			} else {
				l.unlabelRun(sg, lo, hi)
			}
		}
		l.index.DelKeys(evicted[from:])
		nodes[keep].next, nodes[i].prev = i, keep
		l.counters.Evictions += int64(total)
	}

	// insertStacked's known case (insertNew): below the chain's key
	// before keys where it is its segment's last place, else a new
	// segment's places at the most recent end.
	sg, above := int32(0), nil32
	if x > 0 {
		if i, ok := l.index.Get(chain[x-1]); ok {
			if nd := &nodes[i]; nd.seg != 0 && int(nd.off) == len(l.segs[nd.seg-1].keys)-1 {
				sg, above = nd.seg, i
			}
		}
	}
	if sg == 0 {
		sg = l.newSeg()
	}
	s := &l.segs[sg-1]
	if len(s.keys)+n > cap(s.keys) {
		l.segRoom(s, n)
	}
	t0 := int32(len(s.keys))
	placeRow(nodes, at[:n], fresh, s, above, sg)
	l.addedAll(fresh)
	// placed
	s.live += int32(n)
	for len(s.breaks)<<6 < len(s.keys) {
		s.breaks = append(s.breaks, 0)
	}
	// The segment's last place, t0−1, is just above the first new one.
	// Its break is set where a touch moved a run of two places or more
	// ending there (Touch's brk(o+m-1): 1,508 of TestFusedStoreIsStoreSteps'
	// stores here), never in a segment of one place (t0 1; 1,043 stores
	// in the package's tests) whose node is labelled: its place 0 is
	// broken only by its node's unlabel (which frees the segment) or a
	// place 1's, which it never had (a segment's places are dropped only
	// all at once, freed, its breaks with them). So t0 > 1 would do here
	// what t0 > 0 does; checkBreaks (the tests) asserts that a one-place
	// segment has no break, and no segment one past its last place.
	if t0 > 0 {
		s.breaks[(t0-1)>>6] &^= 1 << ((t0 - 1) & 63)
	}
	l.used += n
	return evicted, anon, n, true
}

// placeRow makes nodes at, free, the keyed entries of keys (as many),
// each just below the one before, the first just below node above and
// the last just above the node that was below it (linkRow), and the
// places after the last of segment s, number sg (which has room for
// them), writing the places' keys and nodes as it links them. Not
// inlined: in storeFused, its loop kept its state on the stack, the
// store's values taking the registers (30 instructions a key).
// Regime/Tiers past its tiers' fill (budget test): 58,338 instructions a
// request with the loop in storeFused (30 a key), 58,027 so (placeRow
// 3,085, storeFused 13,591 to 10,299).
//
//go:noinline
func placeRow(nodes []node, at []int32, keys []uint64, s *segment, above, sg int32) {
	t0, n := len(s.keys), len(at)
	s.keys, s.nodes = s.keys[:t0+n], s.nodes[:t0+n]
	sk, sn := s.keys[t0:], s.nodes[t0:]
	keys, sk, sn = keys[:n], sk[:n], sn[:n] // so that the loop checks no index
	base, last := nodes[above].prev, at[n-1]
	nodes[above].prev = at[0]
	nodes[base].next = last
	prev, id, off := above, at[0], int32(t0)
	for y := 1; y < n; y++ {
		below, k := at[y], keys[y-1]
		sk[y-1], sn[y-1] = k, id
		nd := &nodes[id] // set field by field: a node{...} is built aside and copied
		nd.key, nd.prev, nd.next, nd.seg, nd.off = k, below, prev, sg, off
		prev, id, off = id, below, off+1
	}
	sk[n-1], sn[n-1] = keys[n-1], last
	nd := &nodes[last]
	nd.key, nd.prev, nd.next, nd.seg, nd.off = keys[n-1], base, prev, sg, off
}
