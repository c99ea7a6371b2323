package kvtier

import "github.com/servesim/servesim/internal/lcp"

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
	mark *[1 << coldBits]uint8 // each key's coldBit: gen where the chain's keys are
}

const coldBits = 16

// coldBit is key's place in the cold chain's filter.
func coldBit(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> (64 - coldBits) }

// isCold reports whether keys are the cold chain's: none of them is held.
// The last keys are compared first: two chains of one length that share
// a group's prefix differ at their ends, which a compare from the front
// reaches only after the whole prefix.
func (l *LRU) isCold(keys []uint64) bool {
	c := &l.cold
	n := len(keys)
	return c.on && n == len(c.keys) && (n == 0 || keys[n-1] == c.keys[n-1]) && lcp.Len(keys, c.keys) == n
}

// noteCold makes keys, none of which is held, the cold chain.
func (l *LRU) noteCold(keys []uint64) {
	c := &l.cold
	if c.mark == nil {
		c.mark = new([1 << coldBits]uint8)
	}
	if c.gen++; c.gen == 0 { // wrapped: no mark may be taken for this chain's
		clear(c.mark[:])
		c.gen = 1
	}
	c.keys = append(c.keys[:0], keys...)
	mark, gen := c.mark, c.gen
	for _, k := range keys {
		mark[coldBit(k)] = gen
	}
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
