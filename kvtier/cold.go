package kvtier

import (
	"github.com/servesim/servesim/internal/keyindex"
	"github.com/servesim/servesim/internal/lcp"
)

// The cold chain: the keys of the last touch that held none of them.
//
// A host tier's lookup touches a waiting request's keys at every plan
// until the request is admitted, and a request whose shared prefix the
// tier never held (its group's first on the replica) is looked up key by
// key, every key a miss, plan after plan: most of a tiered run's lookups.
// Keys become held only by an Insert, so a touch given the same keys
// again, with none of them inserted since, holds none of them still and
// changes nothing: it returns at once. An Insert that adds a key whose
// mark is the chain's in the filter ends the chain (a key of another
// chain that shares its mark ends it too, which only costs a touch).
//
// The filter is a byte a hash of a key (coldBit), and a chain marks its
// keys with its number (gen): a new chain's marks are its own without a
// pass that clears the last one's. Regime/Tiers (cachegrind): noteCold
// took 2,184 instructions a request with a bit a key, cleared chain by
// chain (15 a key), 1,311 so (9 a key).
type cold struct {
	on   bool
	gen  uint8
	keys []uint64
	mark *keyindex.Filter // each key's coldBit: gen where the chain's keys are
}

const coldBits = keyindex.FilterBits

// coldBit is key's place in the cold chain's filter: the index's
// FilterSlot, so that a touch's scan of keys not held marks them as it
// probes them (coldScan).
func coldBit(key uint64) uint64 { return keyindex.FilterSlot(key) }

// isCold reports whether keys are the cold chain's: none of them is held.
// The last keys are compared first: two chains of one length that share
// a group's prefix differ at their ends, which a compare from the front
// reaches only after the whole prefix.
func (l *LRU) isCold(keys []uint64) bool {
	c := &l.cold
	n := len(keys)
	return c.on && n == len(c.keys) && (n == 0 || keys[n-1] == c.keys[n-1]) && lcp.Len(keys, c.keys) == n
}

// nextGen ends the cold chain and returns the next chain's number, its
// marks none yet.
func (c *cold) nextGen() uint8 {
	c.on = false
	if c.mark == nil {
		c.mark = new(keyindex.Filter)
	}
	if c.gen++; c.gen == 0 { // wrapped: no mark may be taken for this chain's
		clear(c.mark[:])
		c.gen = 1
	}
	return c.gen
}

// coldScan is the index's Missing of keys[1:] for a touch whose first
// key is not held, with the keys it finds not held marked as the next
// cold chain's (a new number: the cold chain ends). It reports whether
// it marked every key: then none is held, nothing moves, and noteCold
// need not mark them again. A scan that finds a held key leaves its
// number to no chain. A touch of a chain the tier never held scans it
// whole and then marked it key by key: Regime/Tiers (cachegrind),
// Missing 3,829 and noteCold's marks 1,311 instructions a request;
// MissingMark and Missing 4,407 so (62,399 in all to 62,013).
func (l *LRU) coldScan(keys []uint64) (int, bool) {
	c := &l.cold
	gen := c.nextGen()
	c.mark[coldBit(keys[0])] = gen
	n := l.index.MissingMark(keys[1:], c.mark, gen)
	return n, n == len(keys)-1
}

// noteCold makes keys, none of which is held, the cold chain; marked:
// coldScan marked them.
func (l *LRU) noteCold(keys []uint64, marked bool) {
	c := &l.cold
	if !marked {
		gen := c.nextGen()
		mark := c.mark
		for _, k := range keys {
			mark[coldBit(k)] = gen
		}
	}
	c.keys = append(c.keys[:0], keys...)
	c.on = true
}

// added notes that key was just inserted: the cold chain ends if key may
// be one of its keys.
func (l *LRU) added(key uint64) {
	if c := &l.cold; c.on && c.mark[coldBit(key)] == c.gen {
		c.on = false
	}
}

// addedAll notes that keys were just inserted, as added does key by key:
// the keys after the first that ends the chain change nothing.
func (l *LRU) addedAll(keys []uint64) {
	c := &l.cold
	if !c.on {
		return
	}
	mark, gen := c.mark, c.gen
	for _, k := range keys {
		if mark[coldBit(k)] == gen {
			c.on = false
			return
		}
	}
}

// The last lookup: a waiting request's keys looked up again.
//
// A host tier's lookup (TouchHeld) of a waiting request is made again at
// the next plan, and at times nothing changed the tier in between: no
// store, no touch, no insert, eviction or removal. The touch would then
// move the keys' held runs to where they lie, the most recent end in
// the same order, and find as many held: TouchHeld answers as the last
// time. ver counts the calls that may change the list (Insert,
// InsertAnon, Store, Remove, a touch's moveRuns); pins change neither
// the list nor what is held. Regime/Tiers: 625 of 2,620 lookups past
// the cold chain's are such repeats; (cachegrind) 60,177 instructions a
// request with the touch, 59,615 so (and the runtime's memmove 4.44
// million in all to 4.96, the keys noted).
type lastHeld struct {
	keys []uint64
	from int
	n    int
	ver  uint64 // the tier's ver after the touch; 0: none
}

// heldAgain reports whether TouchHeld(keys, from) repeats the last one
// with the list unchanged since, and what that one answered.
func (l *LRU) heldAgain(keys []uint64, from int) (int, bool) {
	h := &l.last
	if h.ver != l.ver || h.from != from || len(keys) != len(h.keys) || lcp.Len(keys, h.keys) != len(keys) {
		return 0, false
	}
	return h.n, true
}

// noteHeld notes TouchHeld(keys, from)'s answer n, just made.
func (l *LRU) noteHeld(keys []uint64, from, n int) {
	h := &l.last
	h.keys = append(h.keys[:0], keys...)
	h.from, h.n, h.ver = from, n, l.ver
}
