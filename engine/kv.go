package engine

import "math/bits"

// KV blocks, as vLLM V1's block pool keeps them (vllm/v1/core/block_pool.py
// and kv_cache_utils.py, checked against vLLM 0.19): every block is held by
// the requests that reference it or sits in the free queue, in the order it
// was freed. A block may carry a content key (it is cached): the prefix
// cache maps the key to it, held or free, and a request whose sequence
// begins with that content references it instead of computing it again.
// Allocation takes the head of the free queue and, if the block was cached,
// evicts its key; a request that ends returns its blocks to the tail, last
// block first, so that a chain of cached blocks is evicted from its tail
// and its head stays usable longest. So
//
//	Σ blocks held + free queue = KVBlocks
//
// where a block shared by several requests is held once. With
// Config.FreeBlocksFirst the never-cached free blocks are used before any
// cached one is evicted (servesim's policy before it mirrored vLLM).
//
// A block without content is like any other, so servesim does not keep it
// by identity: a request holds its leading blocks that carry content (ids,
// nodes of the pool) and a count of anonymous blocks after them, and the
// free queue holds cached blocks and runs of anonymous blocks. A request
// whose blocks never carry content (no shared prefix, never preempted)
// costs O(1) to allocate for and to free, however long it is.

// kvState is the engine's KV blocks, its prefix cache and what it
// derives once from the block size.
type kvState struct {
	// shift and blockSize come first: the Engine's first fields after
	// its Config, they are addressed with one-byte offsets in the hot
	// code (blocksFor).
	shift     int // log2(BlockSize) when it is a power of two, else -1
	blockSize int // Config.BlockSize
	wmBlocks  int // blocks admission keeps free
	pool      blockPool
	scratch   []int32  // hits found for the waiting head (prefix.go)
	memo      *keyMemo // the chains of recent prompts (keymemo.go), perhaps a fleet's
	cacheOn   bool     // the prefix cache is on (not DisablePrefixCache); beside the two below, not in its own 8 bytes: the Engine's setup stays in its size class (sim's TestFleetSetupAllocatesEachReplicaOnce)
	// runsDecided: the pool was set to be kept by runs or by blocks, at
	// the first content cached (decideRuns); keysRead: CachedKeys was
	// asked before, so keep it by blocks.
	runsDecided, keysRead bool
}

func newKVState(cfg Config) kvState {
	kv := kvState{
		pool:      newBlockPool(cfg.KVBlocks, cfg.FreeBlocksFirst),
		wmBlocks:  int(cfg.Watermark * float64(cfg.KVBlocks)),
		blockSize: cfg.BlockSize,
		shift:     -1,
		cacheOn:   !cfg.DisablePrefixCache,
		memo:      &keyMemo{},
	}
	if b := cfg.BlockSize; b&(b-1) == 0 {
		kv.shift = bits.TrailingZeros(uint(b))
	}
	return kv
}

// sh is log2(BlockSize) as a shift count, for code that runs only with a
// power-of-two block size (shift >= 0). Masked to 0–63, a shift by it is
// one instruction: by the int shift, Go also checks for a negative count
// and saturates counts of 64 or more.
func (kv *kvState) sh() uint { return uint(kv.shift) & 63 }

// blocksFor is the number of blocks tokens tokens fill.
func (kv *kvState) blocksFor(tokens int) int {
	if kv.shift >= 0 { // a power-of-two block size: no division in the hot loop
		return (tokens + kv.blockSize - 1) >> kv.sh()
	}
	return (tokens + kv.blockSize - 1) / kv.blockSize
}

// quoRem is tokens / BlockSize and tokens % BlockSize, for tokens >= 0:
// a shift and a mask when the block size is a power of two.
func (kv *kvState) quoRem(tokens int) (q, r int) {
	if kv.shift >= 0 {
		return tokens >> kv.sh(), tokens & (kv.blockSize - 1)
	}
	return tokens / kv.blockSize, tokens % kv.blockSize
}

// testKnobs turn off two of vLLM's behaviours, to measure what they are
// worth (see the KV pressure experiment in the tests): release a
// request's blocks first to last (headFirst), and never cache a
// preempted request's own blocks (noOwnHits). Only tests set them.
type testKnobs struct {
	headFirst, noOwnHits bool
	noRuns               bool // keep the pool by blocks where it would be kept by runs (runpool.go): the twin
}

// noNode is the nil link of the free queue.
const noNode int32 = -1

// node is a block with content, or a run of anonymous blocks in the free
// queue, or, in a pool kept by runs (runpool.go), a segment of cached
// blocks, whose place in the tree is runTree.at's (32 bytes a node: an
// index into nodes is a shift).
type node struct {
	key        uint64 // content key (cached blocks, per block)
	refs       int32  // requests holding it (cached blocks, segments)
	run        int32  // anonymous blocks in the run; 0 for a cached block; segRun for a segment
	prev, next int32  // free queue links while in a queue
	queued     bool   // in a free queue
	queue      uint8  // which free queue (1: cached blocks under FreeBlocksFirst)
	copy       bool   // a segment that is a copy (runpool.go)
	pinned     bool   // a segment its holder names by id (runpool.go)
	checkGen   uint32 // Check's scratch: the generation that last walked it
}

// freeQueue is a doubly linked list of nodes through node.prev/next.
type freeQueue struct {
	head, tail int32
	blocks     int // blocks in it (a run counts its length)
}

type blockPool struct {
	total int
	nodes []node
	spare []int32      // unused node indices
	q     [2]freeQueue // q[0]: every free block, or the never-cached ones under FreeBlocksFirst; q[1]: cached ones then
	split bool         // FreeBlocksFirst
	index blockIndex
	// copies holds, by key, the second and later blocks caching a key
	// the index maps to another, oldest first (nil while there are none):
	// vLLM keeps every block it computed with its hash, a key mapping to
	// a dict of blocks when several hold it (block_pool.py,
	// BlockHashToBlockMap.insert), finds the first of them
	// (get_one_block), and drops only the evicted one (pop).
	copies map[uint64][]int32
	ncopy  int          // blocks in copies
	cached int          // blocks carrying a key (= len(index) + ncopy)
	evict  int          // cached blocks in a free queue
	pub    *kvPublisher // KV events (Engine.PublishKVEvents); nil: none
	runs   *runTree     // the tree of a pool kept by runs (runpool.go); nil: by blocks
}

func newBlockPool(n int, split bool) blockPool {
	p := blockPool{total: n, split: split}
	for i := range p.q {
		p.q[i] = freeQueue{head: noNode, tail: noNode}
	}
	if n > 0 {
		p.pushRun(n) // all blocks free, in id order as vLLM's queue starts
	}
	return p
}

// free is the number of blocks an allocation may draw on: every block no
// request holds, cached or not.
func (p *blockPool) free() int { return p.q[0].blocks + p.q[1].blocks }

// held is the number of blocks some request holds.
func (p *blockPool) held() int { return p.total - p.free() }

func (p *blockPool) newNode() int32 {
	if n := len(p.spare); n > 0 {
		id := p.spare[n-1]
		p.spare = p.spare[:n-1]
		return id
	}
	p.nodes = append(p.nodes, node{})
	return int32(len(p.nodes) - 1)
}

func (p *blockPool) freeNode(id int32) {
	p.nodes[id] = node{}
	p.spare = append(p.spare, id)
}

// size is the number of blocks a node stands for.
func (p *blockPool) size(id int32) int {
	if r := p.nodes[id].run; r > 0 {
		return int(r)
	} else if r == 0 {
		return 1
	}
	return p.runs.at[id].size()
}

func (p *blockPool) link(id int32, qi uint8) {
	n := p.size(id)
	if p.nodes[id].run <= 0 {
		p.evict += n
	}
	p.enqueue(id, qi, n)
}

// linkSeg is link for a segment (runpool.go): its blocks are cached,
// as many as its place holds, without size's test of the node's kind.
// With unlinkSeg: 18,287 then 18,186 instructions a request in
// Regime/Conversations (cachegrind's marginal count), 12,987 then
// 12,958 in Regime/Fleet8LeastLoaded.
func (p *blockPool) linkSeg(id int32, qi uint8) {
	n := p.runs.at[id].size()
	p.evict += n
	p.enqueue(id, qi, n)
}

// enqueue puts node id, of n blocks, at the tail of queue qi.
func (p *blockPool) enqueue(id int32, qi uint8, n int) {
	p.queueTail(&p.nodes[id], id, &p.q[qi], qi, n)
}

// queueTail is enqueue of node b (id), queue q (qi) at hand. Small
// enough to inline where its callers have them (runReleaseRange,
// releaseOnes: enqueue's call inlined there, indexing both again, cost
// Regime/Conversations 34 instructions a request more, cachegrind's
// marginal count).
func (p *blockPool) queueTail(b *node, id int32, q *freeQueue, qi uint8, n int) {
	b.prev, b.next, b.queued, b.queue = q.tail, noNode, true, qi
	if q.tail != noNode {
		p.nodes[q.tail].next = id
	} else {
		q.head = id
	}
	q.tail = id
	q.blocks += n
}

func (p *blockPool) unlink(id int32) {
	n := p.size(id)
	if p.nodes[id].run <= 0 {
		p.evict -= n
	}
	p.dequeue(id, n)
}

// unlinkSeg is unlink for a segment, as linkSeg is link.
func (p *blockPool) unlinkSeg(id int32) {
	n := p.runs.at[id].size()
	p.evict -= n
	p.dequeue(id, n)
}

// dequeue takes node id, of n blocks, out of its queue.
func (p *blockPool) dequeue(id int32, n int) { p.unqueue(&p.nodes[id], n) }

// unqueue is dequeue of node b, at hand. Small enough to inline where
// its callers have b (runHitsTouch, probedTouch: unlinkSeg's call, too
// complex to inline, cost Regime/Conversations 38 instructions a
// request more, cachegrind's marginal count).
// It leaves b's links as they were: nothing reads them until b is
// queued again (queueTail and insertBefore set both), but probeUntouch,
// which puts b back between them.
func (p *blockPool) unqueue(b *node, n int) {
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
	b.queued = false
	q.blocks -= n
}

// requeue is unqueue undone: node b (id), of n blocks, put back in its
// queue between the links unqueue left in it. Nodes taken off one after
// another are put back last first (probeUntouch): each then finds its
// neighbours as they were when it was taken.
func (p *blockPool) requeue(b *node, id int32, n int) {
	q := &p.q[b.queue]
	before, after := &q.head, &q.tail
	if b.prev != noNode {
		before = &p.nodes[b.prev].next
	}
	if b.next != noNode {
		after = &p.nodes[b.next].prev
	}
	*before, *after = id, id
	b.queued = true
	q.blocks += n
}

// pushRun frees n anonymous blocks to the tail of the queue, joining the
// run already there.
func (p *blockPool) pushRun(n int) {
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
	// Its n blocks, not evictable, enqueued without link's tests of the
	// node's kind (and takeEach's whole run dequeued without unlink's):
	// 12,460 then 12,379 instructions a request in Regime/
	// Fleet8LeastLoaded (cachegrind's marginal count).
	p.enqueue(id, 0, n)
}

// take allocates n blocks from the head of the free queue (the never-cached
// queue first under FreeBlocksFirst), evicting the content of cached ones.
// They become anonymous blocks of their new holder. The caller has checked
// that n blocks are free. Most takes are part of the run of blocks never
// cached at the head of the free queue; takeEach is the rest.
func (p *blockPool) take(n int) {
	if n <= 0 {
		return
	}
	if q := &p.q[0]; q.blocks > 0 {
		b := &p.nodes[q.head]
		if int(b.run) > n {
			b.run -= int32(n)
			q.blocks -= n
			return
		}
		// A segment at the head with more than n blocks, no copies or
		// publisher to settle: takeEach's eviction of n of them from its
		// end, without its loop (a prompt's and an answer's blocks taken
		// from the cached own blocks of an older request, on a workload
		// of shared prefixes): 13,120 then 13,023 instructions a request in
		// Regime/Fleet8LeastLoaded (cachegrind's marginal count).
		if b.run == segRun && p.ncopy == 0 && p.pub == nil {
			if g := &p.runs.at[q.head]; g.size() > n {
				g.hi -= int32(n)
				q.blocks -= n
				p.evict -= n
				p.cached -= n
				return
			}
		}
	}
	p.takeEach(n)
}

// headRun is the blocks of the run never cached at the head of the free
// queue (the never-cached queue under FreeBlocksFirst), 0 when its head
// is a cached block or a segment, or it is empty: take(n) for any n
// below it takes them from that run, evicting nothing (take's first
// case), and so does a sequence of takes of fewer in all.
func (p *blockPool) headRun() int {
	if q := &p.q[0]; q.blocks > 0 {
		if r := p.nodes[q.head].run; r > 0 {
			return int(r)
		}
	}
	return 0
}

// takeEach takes n blocks one node at a time from the head of the free
// queue (the never-cached queue first): whole runs, part of one, cached
// blocks.
func (p *blockPool) takeEach(n int) {
	for n > 0 {
		qi := uint8(0)
		if p.q[0].blocks == 0 {
			qi = 1
		}
		id := p.q[qi].head
		b := &p.nodes[id]
		if b.run > 0 {
			if x := int(b.run); x <= n { // the whole run (of blocks not evictable: dequeue, not unlink, as pushRun)
				p.dequeue(id, x)
				p.freeNode(id)
				n -= x
				continue
			}
			b.run -= int32(n)
			p.q[qi].blocks -= n
			return
		}
		if b.run == segRun { // evict up to n of the segment's blocks from its end (evictSegmentAside)
			g := &p.runs.at[id]
			k := min(n, g.size())
			if p.ncopy > 0 || p.pub != nil {
				k = p.evictSegmentAside(id, k)
			}
			g.hi -= int32(k)
			p.q[qi].blocks -= k
			p.evict -= k
			p.cached -= k
			if g.hi == g.lo {
				p.dropHeadSegment(qi, id, g.edge)
			}
			n -= k
			continue
		}
		p.evictHead(qi, id)
		n--
	}
}

// evictHead takes the cached block id at the head of free queue qi out
// of the queue (unlink's case of the head), evicts its content and
// recycles its node.
func (p *blockPool) evictHead(qi uint8, id int32) {
	q := &p.q[qi]
	p.popHead(q, id)
	q.blocks--
	p.evict--
	p.uncache(id)
	p.freeNode(id)
}

// popHead takes node id, the head of free queue q, out of it, its blocks
// still counted there (unqueue's case of the head).
func (p *blockPool) popHead(q *freeQueue, id int32) {
	next := p.nodes[id].next
	q.head = next
	if next != noNode {
		p.nodes[next].prev = noNode
	} else {
		q.tail = noNode
	}
}

// touch adds a reference to a cached block a request found, taking it out
// of the free queue if nobody held it.
func (p *blockPool) touch(id int32) {
	b := &p.nodes[id]
	if b.refs == 0 {
		p.unlink(id)
	}
	b.refs++
}

// release drops one reference to a cached block; a block nobody holds
// joins the free queue's tail.
func (p *blockPool) release(id int32) {
	b := &p.nodes[id]
	if b.refs--; b.refs == 0 {
		qi := uint8(0)
		if p.split {
			qi = 1
		}
		p.link(id, qi)
	}
}

// releaseAll releases the cached blocks ids, last first, as release
// does one at a time: those nobody holds any more join the free queue's
// tail in that order, linked in one pass.
func (p *blockPool) releaseAll(ids []int32) {
	qi := uint8(0)
	if p.split {
		qi = 1
	}
	q := &p.q[qi]
	tail, n := q.tail, 0
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		b := &p.nodes[id]
		if b.refs--; b.refs != 0 {
			continue
		}
		b.prev, b.next, b.queued, b.queue = tail, noNode, true, qi
		if tail != noNode {
			p.nodes[tail].next = id
		} else {
			q.head = id
		}
		tail = id
		n++
	}
	q.tail = tail
	q.blocks += n
	p.evict += n // cached blocks, one block a node
}

// cache gives one anonymous block of its holder the content key: it
// returns the new cached block. If another block caches key already, the
// new one is a second copy, found only once every block cached before it
// under key is evicted (see copies).
func (p *blockPool) cache(key uint64) int32 {
	id := p.newNode()
	b := &p.nodes[id]
	b.key, b.refs = key, 1
	if _, added := p.index.add(key, id); !added {
		if p.copies == nil {
			p.copies = map[uint64][]int32{}
		}
		p.copies[key] = append(p.copies[key], id)
		p.ncopy++
	}
	p.cached++
	if p.pub != nil {
		p.pub.emit(key, false)
	}
	return id
}

// uncache evicts the content of cached block id: the index forgets it,
// or, if it was a copy, the copies do; when the block the index found is
// evicted, the oldest copy is found instead.
func (p *blockPool) uncache(id int32) {
	key := p.nodes[id].key
	p.cached--
	if p.pub != nil {
		p.pub.emit(key, true)
	}
	if p.ncopy == 0 { // the usual case: one block a key
		p.index.del(key)
		return
	}
	c := p.copies[key]
	if cur, _ := p.index.get(key); cur == id {
		p.index.del(key)
		if len(c) == 0 {
			return
		}
		p.index.put(key, c[0])
		c = c[1:]
	} else {
		for i, x := range c {
			if x == id {
				c = append(c[:i:i], c[i+1:]...)
				break
			}
		}
	}
	p.ncopy--
	if len(c) == 0 {
		delete(p.copies, key)
	} else {
		p.copies[key] = c
	}
}

// lookup returns the block caching key.
func (p *blockPool) lookup(key uint64) (int32, bool) {
	return p.index.get(key)
}

// blockSum is Σ_{x=1..n} ceil(x/size): the blocks a sequence holds, summed
// over its lengths 1 … n.
func blockSum(n, size int) int {
	if n <= 0 {
		return 0
	}
	q, r := n/size, n%size
	return size*q*(q+1)/2 + r*(q+1)
}

// blockSum is the package's blockSum with this engine's block size, by
// shifts when it is a power of two.
func (e *Engine) blockSum(n int) int {
	if e.shift < 0 {
		return blockSum(n, e.cfg.BlockSize)
	}
	if n <= 0 {
		return 0
	}
	q, r := n>>e.sh(), n&(e.cfg.BlockSize-1)
	return (q*(q+1)/2)<<e.sh() + r*(q+1)
}

// blocks is the number of blocks s holds: its cached ones, then its
// anonymous ones.
func (s *seq) blocks() int { return s.held + s.anon }

// need is the number of blocks s lacks to hold tokens.
func (e *Engine) need(s *seq, tokens int) int {
	return e.blocksFor(tokens) - s.blocks()
}

// keepFree is the blocks an admission leaves free: the watermark, waived
// with nothing running, since nothing else could free a block.
func (e *Engine) keepFree() int {
	if e.nrunning() == 0 {
		return 0
	}
	return e.wmBlocks
}

// available is what an allocation may draw on: free blocks, cached or not.
func (e *Engine) available() int { return e.pool.free() }

// take gives s n more blocks from the head of the free queue. The caller
// has checked n <= available().
func (e *Engine) take(s *seq, n int) {
	if n > 0 {
		e.pool.take(n)
		s.anon += n
	}
}

// drop returns every block s holds, last first (vLLM frees "in reverse
// order so that the tail blocks are evicted first").
func (e *Engine) drop(s *seq) {
	if s.shared < s.keyed { // its answer's blocks cached late (prefix.go)
		e.lateCache(s, s.computed)
	}
	if e.headFirst { // tests only: the order servesim used before
		if e.pool.runs != nil {
			for j := range s.held {
				e.pool.runReleaseRange(s.runs, j, j+1)
			}
			if s.held > 0 {
				s.runs.copies = s.runs.copies[:0]
			}
		}
		for _, id := range s.ids {
			e.pool.release(id)
		}
		e.pool.pushRun(s.anon)
	} else {
		e.pool.pushRun(s.anon)
		if s.held > 0 { // a request without content (the Atlas default) skips the call
			if e.tier != nil && s.emitted >= s.req.Output {
				e.tierFinished(s) // it finished: released next (tier.go)
			}
			if e.thruSkip && len(e.thru.held) > 0 { // a finisher inside a run through finishes (through.go)
				e.dropThrough(s)
			} else if e.pool.runs != nil {
				e.pool.runRelease(&s.held, s.runs, 0)
			} else {
				e.pool.releaseAll(s.ids)
			}
		}
	}
	s.ids, s.anon, s.held = s.ids[:0], 0, 0
}

// releaseHeld releases s's blocks of content, last first: drop's own
// lines, which it keeps inline (Regime/Conversations paid 10
// instructions a request for the call).
func (e *Engine) releaseHeld(s *seq) {
	if e.pool.runs != nil {
		e.pool.runRelease(&s.held, s.runs, 0)
	} else {
		e.pool.releaseAll(s.ids)
	}
}

// trim returns the blocks s holds beyond what its computed tokens need (the
// allocation of a step that did not run), last first.
func (e *Engine) trim(s *seq) {
	s.look = 0
	extra := s.blocks() - e.blocksFor(s.computed)
	x := min(extra, s.anon)
	e.pool.pushRun(x)
	s.anon -= x
	if extra > x && e.pool.runs != nil {
		e.pool.runRelease(&s.held, s.runs, s.held-(extra-x))
		return
	}
	for ; extra > x; extra-- {
		last := s.held - 1
		e.pool.release(s.ids[last])
		s.ids = s.ids[:last]
		s.held = last
	}
}
