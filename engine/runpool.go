package engine

// The run pool: the prefix cache kept by runs of blocks, not block by
// block (docs/scale.md, "What a prefix-cached request costs"). It holds
// the same blocks as blockPool (kv.go), in the same states and the same
// free-queue order, but names a cached block by its place in a radix tree
// over the content of sequences instead of by its chained key:
//
//   - An edge of the tree is a run of blocks after its parent edge (a
//     runLabel: blocks of consecutive prefix ids, or a request's own
//     blocks). A block is (edge, offset), and two sequences share a
//     block exactly when their contents agree up to it, that is when the
//     chained keys of blockPool are equal (a collision of those is a 2⁻⁶⁴
//     event the tree does not have).
//   - A segment is a range of an edge's blocks cached with one reference
//     count; it splits where references come to differ (a hit over part
//     of it, a release of part of it). A segment nobody holds is one
//     entry of the free queue standing for its blocks last first, as a
//     request's release frees them (vLLM frees "in reverse order"), and
//     an eviction shortens the segment at the queue's head from its end.
//   - A block whose content another block caches already is a copy
//     (blockPool.copies): a segment of one block, found only when every
//     block cached before it at its place is evicted.
//
// So a request of one run of ids costs a few edge and segment operations,
// not one a block. No key is computed. The fuzz target FuzzRunPoolTwin
// holds the run pool to blockPool, block by block, over random hits,
// caching, releases, trims, allocations and evictions.
//
// It is not wired into the engine yet: see runpool_test.go for the
// operations the engine's call sites map to.

// runContent is the content of one block: kind 1 is shared content wholly
// inside one prefix unit (the unit's id and the block's offset into it, in
// tokens), kind 2 a block of shared content straddling units (id holds
// sharedContent's hash), kind 3 a request's own content (id holds
// mix(0x0a11ce, order)). Equal contents are equal blockPool contents.
type runContent struct {
	kind    uint8
	id, off uint64
}

// value is the content as blockPool's key chain mixes it.
func (c runContent) value() uint64 {
	if c.kind == 1 {
		return mix(c.off, c.id)
	}
	return c.id
}

// runLabel is a run of n blocks: with per > 0, blocks of per to a unit
// over consecutive ids from c; with per == 0, n blocks of content c (a
// request's own blocks), or one block.
type runLabel struct {
	c   runContent
	per int
	n   int
}

// ownRun is the length of a request's own run: without end.
const ownRun = 1 << 40

// at is the content of block i of l (blocks of b tokens).
func (l *runLabel) at(i, b int) runContent {
	if l.per == 0 || i == 0 {
		return l.c
	}
	k := int(l.c.off)/b + i
	return runContent{kind: 1, id: l.c.id + uint64(k/l.per), off: uint64(k % l.per * b)}
}

// from is l without its first i blocks.
func (l *runLabel) from(i, b int) runLabel {
	return runLabel{c: l.at(i, b), per: l.per, n: l.n - i}
}

// commonRun is the number of blocks, at most most, that x from xi and y
// from yi agree on. Two runs of one shape that agree on a block agree on
// every block after it.
func commonRun(x *runLabel, xi int, y *runLabel, yi, most, b int) int {
	run := x.per == y.per && x.c.kind == y.c.kind && (x.per > 0 || x.c.kind == 3)
	for i := range most {
		if x.at(xi+i, b) != y.at(yi+i, b) {
			return i
		}
		if run {
			return most
		}
	}
	return most
}

// appendRunPath appends to dst, and returns, the content of a sequence as
// runs: its shared blocks over prefix ids of p tokens each (blocks of b
// tokens), then its own without end (own is mix(0x0a11ce, order)). When
// p is a multiple of b, a run is a run of consecutive ids; else each
// block is a run of one.
func appendRunPath(dst []runLabel, prefix []uint64, p, b, shared int, own uint64) []runLabel {
	if shared > 0 && p%b == 0 {
		per := p / b
		units := shared / per
		for u := 0; u < units; {
			v := u + 1
			for v < units && prefix[v] == prefix[v-1]+1 {
				v++
			}
			dst = append(dst, runLabel{c: runContent{kind: 1, id: prefix[u]}, per: per, n: (v - u) * per})
			u = v
		}
	} else if shared > 0 {
		r := Request{Prefix: prefix, PrefixBlockTokens: p}
		for j := range shared {
			lo := j * b
			if lo/p == (lo+b-1)/p {
				dst = append(dst, runLabel{c: runContent{kind: 1, id: prefix[lo/p], off: uint64(lo % p)}, n: 1})
			} else {
				dst = append(dst, runLabel{c: runContent{kind: 2, id: sharedContent(&r, b, j)}, n: 1})
			}
		}
	}
	return append(dst, runLabel{c: runContent{kind: 3, id: own}, n: ownRun})
}

// runEdge is an edge of the tree: lab's blocks after parent's.
type runEdge struct {
	parent int32
	lab    runLabel
	kids   []int32
	segs   []int32 // its segments, primary and copies, in no order
	live   bool
}

// childKey finds an edge by its parent and its first block.
type childKey struct {
	parent int32
	c      runContent
}

// blockAt is a block's place in the tree.
type blockAt struct {
	edge int32
	off  int
}

// runSpan is the part [lo, hi) of an edge that a sequence's blocks pos
// to pos+hi−lo lie on.
type runSpan struct {
	edge   int32
	lo, hi int
	pos    int
}

// rnode is an entry of the pool: a run of anonymous blocks in the free
// queue (run > 0), or a segment [lo, hi) of an edge's cached blocks.
type rnode struct {
	run        int32
	edge       int32
	lo, hi     int
	refs       int32
	prev, next int32
	queued     bool
	queue      uint8
	copy       bool // a copy: one block, found only once the blocks before it at its place are evicted
	pinned     bool // a copy, or one promoted: its holder names it by its id, so it stays one block
}

// runHold is what a request holds of the cache: the first held blocks of
// its sequence, those at copies' positions as those copies (segments of
// one block, which keep their id), the rest as the primary block at their
// place.
type runHold struct {
	held   int
	copies []runCopy // by position, ascending
}

type runCopy struct {
	pos int
	seg int32
}

// runPool is blockPool kept by runs (see the top of the file).
type runPool struct {
	total, b int
	nodes    []rnode
	spare    []int32
	q        [2]freeQueue
	split    bool // FreeBlocksFirst
	edges    []runEdge
	espare   []int32
	child    map[childKey]int32
	copies   map[blockAt][]int32 // copies at a place, oldest first
	ncopy    int
	cached   int // blocks carrying content
	evict    int // cached blocks in a free queue
	spans    []runSpan
}

func newRunPool(n, b int, split bool) runPool {
	p := runPool{total: n, b: b, split: split, child: map[childKey]int32{}, copies: map[blockAt][]int32{}}
	for i := range p.q {
		p.q[i] = freeQueue{head: noNode, tail: noNode}
	}
	p.edges = append(p.edges, runEdge{parent: -1, live: true}) // the root: no blocks
	if n > 0 {
		p.pushRun(n)
	}
	return p
}

func (p *runPool) free() int { return p.q[0].blocks + p.q[1].blocks }

func (p *runPool) newNode() int32 {
	if n := len(p.spare); n > 0 {
		id := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return id
	}
	p.nodes = append(p.nodes, rnode{})
	return int32(len(p.nodes) - 1)
}

func (p *runPool) freeNode(id int32) {
	p.nodes[id] = rnode{}
	p.spare = append(p.spare, id)
}

func (p *runPool) size(id int32) int {
	if r := p.nodes[id].run; r > 0 {
		return int(r)
	}
	return p.nodes[id].hi - p.nodes[id].lo
}

// linkAfter puts id into queue qi after node at (at the head for noNode).
func (p *runPool) linkAfter(id int32, qi uint8, at int32) {
	b := &p.nodes[id]
	q := &p.q[qi]
	next := q.head
	if at != noNode {
		next = p.nodes[at].next
		p.nodes[at].next = id
	} else {
		q.head = id
	}
	if next != noNode {
		p.nodes[next].prev = id
	} else {
		q.tail = id
	}
	b.prev, b.next, b.queued, b.queue = at, next, true, qi
	q.blocks += p.size(id)
	if b.run == 0 {
		p.evict += p.size(id)
	}
}

func (p *runPool) link(id int32, qi uint8) { p.linkAfter(id, qi, p.q[qi].tail) }

func (p *runPool) unlink(id int32) {
	b := &p.nodes[id]
	q := &p.q[b.queue]
	if b.prev != noNode {
		p.nodes[b.prev].next = b.next
	} else {
		q.head = b.next
	}
	if b.next != noNode {
		p.nodes[b.next].prev = b.prev
	} else {
		q.tail = b.prev
	}
	b.prev, b.next, b.queued = noNode, noNode, false
	q.blocks -= p.size(id)
	if b.run == 0 {
		p.evict -= p.size(id)
	}
}

// pushRun frees n anonymous blocks to the tail of queue 0.
func (p *runPool) pushRun(n int) {
	if n <= 0 {
		return
	}
	q := &p.q[0]
	if t := q.tail; t != noNode && p.nodes[t].run > 0 {
		p.nodes[t].run += int32(n)
		q.blocks += n
		return
	}
	id := p.newNode()
	p.nodes[id].run = int32(n)
	p.link(id, 0)
}

// take allocates n blocks from the head of the free queue (queue 0 first),
// evicting cached ones, as blockPool.take.
func (p *runPool) take(n int) {
	for n > 0 {
		qi := uint8(0)
		if p.q[0].blocks == 0 {
			qi = 1
		}
		id := p.q[qi].head
		b := &p.nodes[id]
		if b.run > 0 {
			if x := int(b.run); x <= n {
				p.unlink(id)
				p.freeNode(id)
				n -= x
				continue
			}
			b.run -= int32(n)
			p.q[qi].blocks -= n
			return
		}
		p.evictLast(id)
		n--
	}
}

// evictLast evicts the last block of queued segment id, the first of the
// blocks its queue entry stands for; the oldest copy at its place, if
// any, is found there instead.
func (p *runPool) evictLast(id int32) {
	s := &p.nodes[id]
	e, x := s.edge, s.hi-1
	if s.copy {
		p.dropCopy(blockAt{e, x}, id)
	} else if p.ncopy > 0 {
		if c := p.copies[blockAt{e, x}]; len(c) > 0 {
			p.nodes[c[0]].copy = false
			p.setCopies(blockAt{e, x}, c[1:])
		}
	}
	s = &p.nodes[id]
	s.hi--
	p.q[s.queue].blocks--
	p.evict--
	p.cached--
	if s.hi == s.lo {
		p.unlink(id)
		p.removeSeg(e, id)
		p.freeNode(id)
		p.gcEdge(e)
	}
}

func (p *runPool) setCopies(at blockAt, c []int32) {
	p.ncopy--
	if len(c) == 0 {
		delete(p.copies, at)
	} else {
		p.copies[at] = c
	}
}

// dropCopy takes copy id out of the copies at at.
func (p *runPool) dropCopy(at blockAt, id int32) {
	c := p.copies[at]
	for i, x := range c {
		if x == id {
			c = append(c[:i:i], c[i+1:]...)
			break
		}
	}
	p.setCopies(at, c)
}

func (p *runPool) removeSeg(e int32, id int32) {
	segs := p.edges[e].segs
	for i, x := range segs {
		if x == id {
			segs[i] = segs[len(segs)-1]
			p.edges[e].segs = segs[:len(segs)-1]
			return
		}
	}
}

// gcEdge drops edge e and then its ancestors while they hold no block
// and have no children.
func (p *runPool) gcEdge(e int32) {
	for e > 0 {
		ed := &p.edges[e]
		if len(ed.segs) > 0 || len(ed.kids) > 0 {
			return
		}
		par := ed.parent
		delete(p.child, childKey{par, ed.lab.c})
		kids := p.edges[par].kids
		for i, k := range kids {
			if k == e {
				kids[i] = kids[len(kids)-1]
				p.edges[par].kids = kids[:len(kids)-1]
				break
			}
		}
		p.edges[e] = runEdge{kids: ed.kids[:0], segs: ed.segs[:0]}
		p.espare = append(p.espare, e)
		e = par
	}
}

func (p *runPool) newEdge(parent int32, lab runLabel) int32 {
	var e int32
	if n := len(p.espare); n > 0 {
		e = p.espare[n-1]
		p.espare = p.espare[:n-1]
	} else {
		p.edges = append(p.edges, runEdge{})
		e = int32(len(p.edges) - 1)
	}
	ed := &p.edges[e]
	ed.parent, ed.lab, ed.live = parent, lab, true
	p.edges[parent].kids = append(p.edges[parent].kids, e)
	p.child[childKey{parent, lab.c}] = e
	return e
}

// match finds the blocks of path's first n already in the tree: it
// leaves in p.spans the edge ranges they lie on, in order, and returns
// how many there are and where the last ends (edge, offset).
func (p *runPool) match(path []runLabel, n int) (pos int, e int32, eoff int) {
	p.spans = p.spans[:0]
	li, lo := 0, 0
	for pos < n {
		ed := &p.edges[e]
		if eoff == ed.lab.n {
			c, ok := p.child[childKey{e, path[li].at(lo, p.b)}]
			if !ok {
				break
			}
			e, eoff = c, 0
			ed = &p.edges[e]
		}
		lab := &path[li]
		k := commonRun(&ed.lab, eoff, lab, lo, min(n-pos, ed.lab.n-eoff, lab.n-lo), p.b)
		if k == 0 {
			break
		}
		if m := len(p.spans) - 1; m >= 0 && p.spans[m].edge == e && p.spans[m].hi == eoff {
			p.spans[m].hi += k
		} else {
			p.spans = append(p.spans, runSpan{edge: e, lo: eoff, hi: eoff + k, pos: pos})
		}
		pos, eoff, lo = pos+k, eoff+k, lo+k
		if lo == lab.n {
			li, lo = li+1, 0
		}
	}
	return pos, e, eoff
}

// insert puts path's first n blocks in the tree, splitting the edge
// where the path leaves it.
func (p *runPool) insert(path []runLabel, n int) {
	pos, e, eoff := p.match(path, n)
	if pos == n {
		return
	}
	if eoff < p.edges[e].lab.n {
		p.splitEdge(e, eoff)
	}
	li, lo := 0, pos
	for lo >= path[li].n {
		lo -= path[li].n
		li++
	}
	for pos < n {
		lab := path[li].from(lo, p.b)
		e = p.newEdge(e, lab)
		pos += lab.n
		li, lo = li+1, 0
	}
}

// splitEdge cuts edge e at offset m: e keeps its first m blocks, a new
// child takes the rest, with e's children and the segments over them.
func (p *runPool) splitEdge(e int32, m int) {
	rest := p.edges[e].lab.from(m, p.b)
	kids := p.edges[e].kids
	for _, k := range kids {
		delete(p.child, childKey{e, p.edges[k].lab.c})
	}
	p.edges[e].kids = nil
	p.edges[e].lab.n = m
	f := p.newEdge(e, rest) // e's only child
	p.edges[f].kids = kids
	for _, k := range kids {
		p.child[childKey{f, p.edges[k].lab.c}] = k
		p.edges[k].parent = f
	}
	for _, id := range append([]int32(nil), p.edges[e].segs...) {
		if s := &p.nodes[id]; s.lo < m && m < s.hi {
			p.splitSeg(id, m)
		}
	}
	keep := p.edges[e].segs[:0]
	for _, id := range p.edges[e].segs {
		s := &p.nodes[id]
		if s.hi <= m {
			keep = append(keep, id)
			continue
		}
		if s.copy {
			old := blockAt{e, s.lo}
			if c, ok := p.copies[old]; ok {
				delete(p.copies, old)
				p.copies[blockAt{f, s.lo - m}] = c
			}
		}
		s.edge, s.lo, s.hi = f, s.lo-m, s.hi-m
		p.edges[f].segs = append(p.edges[f].segs, id)
	}
	p.edges[e].segs = keep
}

// splitSeg cuts segment id at offset m: id keeps [lo, m), a new segment
// of the same references takes [m, hi), before it in the free queue if
// it is queued (its blocks are freed first). It returns the new one.
func (p *runPool) splitSeg(id int32, m int) int32 {
	t := p.newNode()
	s := &p.nodes[id]
	p.nodes[t] = rnode{edge: s.edge, lo: m, hi: s.hi, refs: s.refs, prev: noNode, next: noNode}
	s.hi = m
	p.edges[s.edge].segs = append(p.edges[s.edge].segs, t)
	if s.queued {
		qi := s.queue
		p.q[qi].blocks -= p.nodes[t].hi - m
		p.evict -= p.nodes[t].hi - m
		p.linkAfter(t, qi, s.prev)
	}
	return t
}

// primAt is the primary segment holding block off of edge e, or noNode.
func (p *runPool) primAt(e int32, off int) int32 {
	for _, id := range p.edges[e].segs {
		if s := &p.nodes[id]; !s.copy && s.lo <= off && off < s.hi {
			return id
		}
	}
	return noNode
}

// nextPrim is the first offset past off, at most end, where a primary
// segment of e begins.
func (p *runPool) nextPrim(e int32, off, end int) int {
	for _, id := range p.edges[e].segs {
		if s := &p.nodes[id]; !s.copy && s.lo > off && s.lo < end {
			end = s.lo
		}
	}
	return end
}

// hits is walkHits for path: how many of its first limit blocks are
// found, leading, and how many of those nobody holds.
func (p *runPool) hits(path []runLabel, limit int) (h, evictable int) {
	p.match(path, limit)
	for _, sp := range p.spans {
		x := sp.lo
		for x < sp.hi {
			id := p.primAt(sp.edge, x)
			if id == noNode {
				return h, evictable
			}
			s := &p.nodes[id]
			end := min(s.hi, sp.hi)
			if s.refs == 0 {
				evictable += end - x
			}
			h += end - x
			x = end
		}
	}
	return h, evictable
}

// isolate makes blocks [lo, hi) of segment id a segment of their own and
// returns it.
func (p *runPool) isolate(id int32, lo, hi int) int32 {
	if p.nodes[id].hi > hi {
		p.splitSeg(id, hi)
	}
	if p.nodes[id].lo < lo {
		id = p.splitSeg(id, lo)
	}
	return id
}

// touch makes r, holding nothing, reference path's first h blocks, those
// hits found.
func (p *runPool) touch(r *runHold, path []runLabel, h int) {
	p.match(path, h)
	for _, sp := range p.spans {
		for x := sp.lo; x < sp.hi; {
			id := p.primAt(sp.edge, x)
			end := min(p.nodes[id].hi, sp.hi)
			id = p.isolate(id, x, end)
			s := &p.nodes[id]
			if s.refs == 0 {
				p.unlink(id)
			}
			s.refs++
			x = end
		}
	}
	r.held = h
}

// cacheThrough gives r's blocks from its held ones up to full their
// content, in order: each a primary block of the tree, or a copy where
// one caches its content already.
func (p *runPool) cacheThrough(r *runHold, path []runLabel, full int) {
	from := r.held
	if full <= from {
		return
	}
	p.insert(path, full)
	p.match(path, full)
	for _, sp := range p.spans {
		x, end := sp.lo+max(sp.pos, from)-sp.pos, sp.hi // match stopped at full
		for x < end {
			if id := p.primAt(sp.edge, x); id != noNode {
				c := p.newNode()
				p.nodes[c] = rnode{edge: sp.edge, lo: x, hi: x + 1, refs: 1, prev: noNode, next: noNode, copy: true, pinned: true}
				p.edges[sp.edge].segs = append(p.edges[sp.edge].segs, c)
				at := blockAt{sp.edge, x}
				p.copies[at] = append(p.copies[at], c)
				p.ncopy++
				r.copies = append(r.copies, runCopy{pos: sp.pos + x - sp.lo, seg: c})
				x++
				continue
			}
			y := p.nextPrim(sp.edge, x, end)
			if prev := p.primAt(sp.edge, x-1); prev != noNode && !p.nodes[prev].pinned && p.nodes[prev].refs == 1 && p.nodes[prev].hi == x {
				p.nodes[prev].hi = y // a held neighbour of the same references: one segment
			} else {
				id := p.newNode()
				p.nodes[id] = rnode{edge: sp.edge, lo: x, hi: y, refs: 1, prev: noNode, next: noNode}
				p.edges[sp.edge].segs = append(p.edges[sp.edge].segs, id)
			}
			x = y
		}
	}
	p.cached += full - from
	r.held = full
}

// release drops r's references to its blocks from position from on, last
// first, as blockPool.releaseAll: those nobody holds any more join the
// tail of the free queue (queue 1 under FreeBlocksFirst) in that order.
func (p *runPool) release(r *runHold, path []runLabel, from int) {
	p.releaseRange(r, path, from, r.held)
	for len(r.copies) > 0 && r.copies[len(r.copies)-1].pos >= from {
		r.copies = r.copies[:len(r.copies)-1]
	}
	r.held = from
}

// releaseRange drops r's references to its blocks lo to hi−1, last
// first, leaving r as it is.
func (p *runPool) releaseRange(r *runHold, path []runLabel, lo, hi int) {
	qi := uint8(0)
	if p.split {
		qi = 1
	}
	p.match(path, hi)
	ci := len(r.copies) - 1
	for ci >= 0 && r.copies[ci].pos >= hi {
		ci--
	}
	for si := len(p.spans) - 1; si >= 0; si-- {
		sp := p.spans[si]
		if sp.pos+sp.hi-sp.lo <= lo {
			break
		}
		low := sp.lo + max(0, lo-sp.pos)
		for x := sp.hi - 1; x >= low; {
			pos := sp.pos + x - sp.lo
			if ci >= 0 && r.copies[ci].pos == pos {
				p.unref(r.copies[ci].seg, qi)
				ci--
				x--
				continue
			}
			bound := low
			if ci >= 0 && r.copies[ci].pos >= sp.pos {
				bound = max(bound, sp.lo+r.copies[ci].pos-sp.pos+1)
			}
			id := p.primAt(sp.edge, x)
			b := max(p.nodes[id].lo, bound)
			p.unref(p.isolate(id, b, x+1), qi)
			x = b - 1
		}
	}
}

// unref drops one reference to segment id, queueing it at the tail of
// queue qi when nobody holds it any more.
func (p *runPool) unref(id int32, qi uint8) {
	if p.nodes[id].refs--; p.nodes[id].refs == 0 {
		p.link(id, qi)
	}
}
