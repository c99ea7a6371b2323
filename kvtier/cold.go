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
// bit is set in the chain's filter ends the chain (a key of another
// chain that shares its bit ends it too, which only costs a touch).
type cold struct {
	on   bool
	keys []uint64
	bits []uint64 // 1 << coldBits bits: each key's coldBit
}

const coldBits = 16

// coldBit is key's bit in the cold chain's filter.
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
	if c.bits == nil {
		c.bits = make([]uint64, 1<<coldBits/64)
	}
	if len(c.keys) > len(c.bits)/16 {
		clear(c.bits) // one pass over the words, where a long chain's keys took a few instructions each
	} else {
		for _, k := range c.keys {
			b := coldBit(k)
			c.bits[b>>6] &^= 1 << (b & 63)
		}
	}
	c.keys = append(c.keys[:0], keys...)
	bits := c.bits // in a register: stored through, c.bits was loaded again a key
	for _, k := range keys {
		b := coldBit(k)
		bits[b>>6] |= 1 << (b & 63)
	}
	c.on = true
}

// added notes that key was just inserted: the cold chain ends if key may
// be one of its keys.
func (l *LRU) added(key uint64) {
	if c := &l.cold; c.on {
		if b := coldBit(key); c.bits[b>>6]&(1<<(b&63)) != 0 {
			c.on = false
		}
	}
}
