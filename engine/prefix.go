package engine

// The prefix cache, in the spirit of vLLM's automatic prefix caching, at the
// granularity the workload states prefixes in: a request's Prefix holds one
// hash id per PrefixBlockTokens prompt tokens (Mooncake's 512), equal ids
// meaning identical content. A full unit a request has computed is cached
// under its id; a later request whose prompt begins with cached units
// references them instead of computing them (always recomputing at least its
// last prompt token, as vLLM does). A unit no running request references
// stays cached until its blocks are needed, least recently released first.
// Requests whose PrefixBlockTokens is not a multiple of BlockSize, or that
// carry no Prefix, are not cached.

type unit struct {
	hash       uint64
	blocks     int
	refs       int
	prev, next *unit // in the eviction list while refs == 0

	checkGen    uint32 // Check's scratch: the generation that last visited
	checkRefs   int    // holders counted by that Check
	checkListed bool   // seen in the eviction list by that Check
}

type prefixCache struct {
	on        bool
	units     map[uint64]*unit
	head      *unit // least recently released evictable unit
	tail      *unit
	evictable int // blocks in units with refs == 0
	blocks    int // blocks in all units
	scratch   []*unit
}

func (c *prefixCache) unlink(u *unit) {
	if u.prev != nil {
		u.prev.next = u.next
	} else {
		c.head = u.next
	}
	if u.next != nil {
		u.next.prev = u.prev
	} else {
		c.tail = u.prev
	}
	u.prev, u.next = nil, nil
	c.evictable -= u.blocks
}

func (c *prefixCache) pushTail(u *unit) {
	u.prev, u.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = u
	} else {
		c.head = u
	}
	c.tail = u
	c.evictable += u.blocks
}

// ref adds a reference to u, taking it off the eviction list.
func (c *prefixCache) ref(u *unit) {
	if u.refs == 0 {
		c.unlink(u)
	}
	u.refs++
}

// evict drops the least recently released unit and returns its blocks.
func (c *prefixCache) evict() int {
	u := c.head
	if u == nil {
		panic("engine: invariant evictable-blocks broken: nothing to evict")
	}
	c.unlink(u)
	delete(c.units, u.hash)
	c.blocks -= u.blocks
	return u.blocks
}

// release drops s's references; units left unreferenced become evictable.
func (c *prefixCache) release(s *seq) {
	for _, u := range s.units {
		u.refs--
		if u.refs == 0 {
			c.pushTail(u)
		}
	}
	clear(s.units)
	s.units = s.units[:0]
	s.shared = 0
}

// unitTokens is the tokens per unit of s, or 0 when s is not cacheable.
func (e *Engine) unitTokens(s *seq) int {
	p := s.req.PrefixBlockTokens
	if !e.cache.on || p <= 0 || p%e.cfg.BlockSize != 0 || len(s.req.Prefix) == 0 {
		return 0
	}
	return p
}

// hits finds the cached units the waiting request s may reference: the
// leading run of its full prompt units found in the cache, leaving at least
// its last known token to compute. It returns them in c.scratch with the
// tokens they cover, their blocks, and how many of those blocks are now
// evictable (referencing them takes them out of the allocatable pool).
func (e *Engine) hits(s *seq) (units []*unit, tokens, blocks, evictable int) {
	p := e.unitTokens(s)
	units = e.cache.scratch[:0]
	if p == 0 {
		return units, 0, 0, 0
	}
	full := min(len(s.req.Prefix), s.req.Input/p)
	for j := 0; j < full && (j+1)*p <= s.known-1; j++ {
		u, ok := e.cache.units[s.req.Prefix[j]]
		if !ok || u.blocks != p/e.cfg.BlockSize {
			break
		}
		units = append(units, u)
		tokens += p
		blocks += u.blocks
		if u.refs == 0 {
			evictable += u.blocks
		}
	}
	e.cache.scratch = units
	return units, tokens, blocks, evictable
}

// attach makes s reference units and skip the tokens they cover.
func (e *Engine) attach(s *seq, units []*unit, tokens, blocks int) {
	for _, u := range units {
		e.cache.ref(u)
	}
	s.units = append(s.units, units...)
	s.shared += blocks
	s.computed += tokens
}

// publish caches the full prompt units s has computed beyond those it
// references: its own blocks for each become the unit's. A unit another
// request cached meanwhile is referenced instead, and s's copy freed.
func (e *Engine) publish(s *seq) {
	p := e.unitTokens(s)
	if p == 0 {
		return
	}
	full := min(len(s.req.Prefix), s.req.Input/p)
	for j := len(s.units); j < full && (j+1)*p <= s.computed; j++ {
		k := p / e.cfg.BlockSize
		h := s.req.Prefix[j]
		u, ok := e.cache.units[h]
		if ok && u.blocks != k {
			return // cached under another unit size: leave it alone
		}
		if ok {
			e.cache.ref(u)
			e.free += k
		} else {
			u = &unit{hash: h, blocks: k, refs: 1}
			e.cache.units[h] = u
			e.cache.blocks += k
		}
		s.blocks -= k
		s.shared += k
		s.units = append(s.units, u)
	}
}
