package kvtier

import (
	"math/bits"

	"github.com/servesim/servesim/internal/lcp"
)

// Segments: runs of the list a touch can move without walking them.
//
// A touch moves a chain's runs whole, but it finds where a run ends by
// walking the list from its first node, matching the keys one by one
// (match): a chain of 300 keys touched after each of its stores was
// walked whole each time, most of a tiered run's instructions. A segment
// remembers a run of nodes a touch placed, their keys in order, so that
// the next touch matches the keys it is given against that array and
// moves the run without a step down the list.
//
// A node labelled with a segment (node.seg, node.off) is the segment's
// place off: place 0 is the most recent. The segment's breaks say which
// places are no longer just above the next one: bit t clear means place
// t's node is alive and its prev is place t+1's. A list's order between
// two nodes only changes when one of them is unlinked (an insert goes at
// the most recent end, above every node), so the bits are set where a
// node leaves (unlink, a touch's run moved) and cleared only where a
// touch itself stacked one node above the next (label, join) or a Store
// put its new nodes so (insertStacked, insertOne: store.go).
type segment struct {
	keys   []uint64 // by place, place 0 the most recent
	nodes  []int32
	breaks []uint64 // bit t: place t is not just above place t+1
	live   int32    // places whose node is still labelled here
	// A touch (epoch) that moved places [lo, hi) as one run: they are
	// moved, as a node's mark says for the nodes it walked.
	epoch  uint32
	lo, hi int32
}

// segRoom makes room in s for add more places: when its arrays lack it,
// they are copied to new ones with room for half as many places again
// and 16 more (a decode's blocks, appended a place at a time), cut from
// the tier's slabs, where each array of each segment was a slice of its
// own, allocated and grown by append. Regime/Tiers (cachegrind,
// SERVESIM_BUDGET_FUNCS): 49,941 instructions a request grown by append,
// 48,004 so.
func (l *LRU) segRoom(s *segment, add int) {
	n := len(s.keys) + add
	if n <= cap(s.keys) {
		return
	}
	c := n + n/2 + 16
	w := (c + 63) >> 6 // words of breaks
	if len(l.slab64) < c+w {
		l.slab64 = make([]uint64, max(c+w, slabSize))
	}
	if len(l.slab32) < c {
		l.slab32 = make([]int32, max(c, slabSize))
	}
	keys, breaks := l.slab64[:len(s.keys):c], l.slab64[c:c+len(s.breaks):c+w]
	nodes := l.slab32[:len(s.nodes):c]
	l.slab64, l.slab32 = l.slab64[c+w:], l.slab32[c:]
	copy(keys, s.keys)
	copy(nodes, s.nodes)
	copy(breaks, s.breaks)
	s.keys, s.nodes, s.breaks = keys, nodes, breaks
}

// slabSize is the length of the slabs segRoom cuts segments' arrays
// from (32 KiB of keys and breaks, 16 KiB of nodes).
const slabSize = 4096

// newSeg returns an empty segment's number (its index + 1).
func (l *LRU) newSeg() int32 {
	if n := len(l.freeSegs); n > 0 {
		sg := l.freeSegs[n-1]
		l.freeSegs = l.freeSegs[:n-1]
		return sg
	}
	l.segs = append(l.segs, segment{})
	return int32(len(l.segs))
}

// brk notes that place t of s is not just above place t+1.
func (s *segment) brk(t int32) {
	s.breaks[t>>6] |= 1 << (t & 63)
}

// label appends the nodes from hi down to lo (prev by prev) to segment
// sg, as its new last places: each just below the place before it.
func (l *LRU) label(hi, lo, sg int32) {
	nodes := l.nodes
	s := &l.segs[sg-1]
	t0 := int32(len(s.keys))
	for i := hi; ; {
		n := &nodes[i]
		if n.seg != 0 {
			l.unlabel(i) // another segment's (it never frees sg: above holds it, or sg is new)
		}
		n.seg, n.off = sg, int32(len(s.keys))
		s.keys = append(s.keys, n.key)
		s.nodes = append(s.nodes, i)
		if i == lo {
			break
		}
		i = n.prev
	}
	s.live += int32(len(s.keys)) - t0
	for len(s.breaks)<<6 < len(s.keys) {
		s.breaks = append(s.breaks, 0) // places past the last have no break
	}
	if t0 > 0 {
		s.breaks[(t0-1)>>6] &^= 1 << ((t0 - 1) & 63)
	}
}

// unlabel takes node i out of its segment, if any: its place is broken
// from the places around it, and a segment left with no node is freed.
func (l *LRU) unlabel(i int32) {
	n := &l.nodes[i]
	if n.seg == 0 {
		return
	}
	s := &l.segs[n.seg-1]
	if n.off > 0 {
		s.brk(n.off - 1)
	}
	s.brk(n.off)
	if s.live--; s.live == 0 {
		s.keys, s.nodes, s.breaks = s.keys[:0], s.nodes[:0], s.breaks[:0]
		s.epoch = 0
		l.freeSegs = append(l.freeSegs, n.seg)
	}
	n.seg, n.off = 0, 0
}

// unlabelRun is unlabel for places lo to hi of segment sg (none if sg
// is 0), whose nodes leave the list: their places, and the place before
// lo, are broken, and the segment is freed if left with no node. The
// nodes' labels are the caller's to clear.
func (l *LRU) unlabelRun(sg, lo, hi int32) {
	if sg == 0 {
		return
	}
	s := &l.segs[sg-1]
	for a := max(lo-1, 0); a <= hi; {
		w := a >> 6
		e := min(hi, w<<6+63) // the run's last place in word w
		s.breaks[w] |= ^uint64(0) >> (63 - (e - a)) << (a & 63)
		a = e + 1
	}
	if s.live -= hi - lo + 1; s.live == 0 {
		s.keys, s.nodes, s.breaks = s.keys[:0], s.nodes[:0], s.breaks[:0]
		s.epoch = 0
		l.freeSegs = append(l.freeSegs, sg)
	}
}

// rowStart returns the first place of the row of places that lie each
// just above the next and end at place off (no break from it to off),
// or lim if that row begins before lim (lim <= off).
func (s *segment) rowStart(off, lim int32) int32 {
	if off <= lim {
		return lim
	}
	t := off - 1 // the last break that may end the row before off
	w := t >> 6
	b := s.breaks[w] & (^uint64(0) >> (63 - t&63))
	for b == 0 {
		if w<<6 <= lim {
			return lim
		}
		w--
		b = s.breaks[w]
	}
	return max(w<<6+64-int32(bits.LeadingZeros64(b)), lim)
}

// segRun matches keys[j:], whose first key is place o of s, against the
// places of s from o that lie just above one another, and returns how
// many match (at least 1). With chained keys (Config.Chained) it
// compares single keys (lcp.Chain): see chainedRuns.
func (s *segment) segRun(keys []uint64, j int, o int32, chained bool) int {
	// The first break at or after o ends the places in a row.
	end := len(s.keys) - 1
	w := int(o >> 6)
	b := s.breaks[w] >> (o & 63)
	if b != 0 {
		end = min(end, int(o)+bits.TrailingZeros64(b))
	} else {
		for w++; w < len(s.breaks) && w<<6 <= end; w++ {
			if s.breaks[w] != 0 {
				end = min(end, w<<6+bits.TrailingZeros64(s.breaks[w]))
				break
			}
		}
	}
	// keys[j] is place o's key: the run goes on from there. The keys
	// are compared as memory, whole first (lcp.Len): a chain touched
	// again mostly matches its segment to the end of one or the other.
	// Regime/Tiers (cachegrind): 94,176 instructions a request compared
	// by blocks of 32, 16, 8 and 4 keys (kvtier's commonPrefix), 88,929
	// so (and the runtime's memeqbody 15.4 million in all to 13.7).
	if chained {
		return 1 + lcp.Chain(keys[j+1:], s.keys[o+1:end+1])
	}
	return 1 + lcp.Len(keys[j+1:], s.keys[o+1:end+1])
}

// Chained runs: a segment's run matched by single keys.
//
// Places of a segment that lie just above one another (no break between)
// were placed so by a touch of one chain's held keys in its order
// (label), by a store of a chain's keys after the chain's key before
// them (insertStacked, insertOne), or mended so where a touch found them
// so (join): each place's key comes before the next one's in a chain
// that holds both. With chained keys, a key names every key before it,
// so the keys of such a row are one chain's, each deeper than the one
// above. keys[j] is place o's key; if keys[j+i] is place o+i's, both
// are the same key at the same depth, and the i−1 places between are
// the i−1 keys between them in that chain: keys[j+1:j+i]. The places
// that match are therefore a prefix of the row, found by single keys,
// the last first (a chain touched again mostly matches its segment to
// the end of one or the other), then by halving (lcp.Chain), where
// lcp.Len compared them as memory: a group's prefix of 256 keys, 2 KiB,
// at every touch and store that met it. Regime/Tiers (budget test,
// SERVESIM_BUDGET_FUNCS): 36,769 instructions a request compared as
// memory (servesim's own 34,127; the runtime's memeqbody 1,192), 35,427
// and 35,494 in two runs so (33,959, 33,964; memeqbody not among the 40
// functions that count most). The slow twin is a tier not Chained
// (sim's unchainedTiers: TestChainedTiersAreUnchained; kvtier's
// TestChainedTouchIsTouchEach).
