package engine

// KV blocks, as vLLM V1's block pool keeps them (vllm/v1/core/block_pool.py
// and kv_cache_utils.py, checked against vLLM 0.19): every block is held by
// the requests that reference it (refs > 0) or sits in the free queue, in
// LRU order. A block may carry a content key (it is cached): the prefix
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

// noBlock is the nil link of the free queue.
const noBlock int32 = -1

type block struct {
	key        uint64 // content key, valid when cached
	refs       int32  // requests holding the block
	prev, next int32  // free queue links while refs == 0
	cached     bool   // the prefix cache maps key to this block
	queue      uint8  // which free queue holds it (0, or 1 for cached blocks under FreeBlocksFirst)
	checkGen   uint32 // Check's scratch: the generation that last walked it in a queue
}

// freeQueue is a doubly linked list of block ids through block.prev/next.
type freeQueue struct {
	head, tail int32
	n          int
}

type blockPool struct {
	blocks []block
	q      [2]freeQueue // q[0]: every free block, or the never-cached ones under FreeBlocksFirst; q[1]: cached ones then
	split  bool         // FreeBlocksFirst
	index  map[uint64]int32
	cached int // blocks carrying a key
	evict  int // cached blocks in a free queue
}

func newBlockPool(n int, split bool) blockPool {
	p := blockPool{blocks: make([]block, n), split: split, index: make(map[uint64]int32)}
	for i := range p.q {
		p.q[i] = freeQueue{head: noBlock, tail: noBlock}
	}
	for id := range p.blocks { // in id order, as vLLM's queue starts
		p.blocks[id] = block{prev: noBlock, next: noBlock}
		p.push(int32(id))
	}
	return p
}

// free is the number of blocks an allocation may draw on: every block no
// request holds, cached or not.
func (p *blockPool) free() int { return p.q[0].n + p.q[1].n }

func (p *blockPool) push(id int32) {
	b := &p.blocks[id]
	if p.split && b.cached {
		b.queue = 1
	} else {
		b.queue = 0
	}
	q := &p.q[b.queue]
	b.prev, b.next = q.tail, noBlock
	if q.tail != noBlock {
		p.blocks[q.tail].next = id
	} else {
		q.head = id
	}
	q.tail = id
	q.n++
	if b.cached {
		p.evict++
	}
}

func (p *blockPool) unlink(id int32) {
	b := &p.blocks[id]
	q := &p.q[b.queue]
	if b.prev != noBlock {
		p.blocks[b.prev].next = b.next
	} else {
		q.head = b.next
	}
	if b.next != noBlock {
		p.blocks[b.next].prev = b.prev
	} else {
		q.tail = b.prev
	}
	b.prev, b.next = noBlock, noBlock
	q.n--
	if b.cached {
		p.evict--
	}
}

// take allocates the head of the free queue (the never-cached queue first
// under FreeBlocksFirst), evicting its content if it was cached. The caller
// has checked that a block is free.
func (p *blockPool) take() int32 {
	q := &p.q[0]
	if q.n == 0 {
		q = &p.q[1]
	}
	id := q.head
	p.unlink(id)
	b := &p.blocks[id]
	if b.cached {
		delete(p.index, b.key)
		b.cached = false
		p.cached--
	}
	b.refs = 1
	return id
}

// touch adds a reference to a cached block a request found, taking it out
// of the free queue if nobody held it.
func (p *blockPool) touch(id int32) {
	b := &p.blocks[id]
	if b.refs == 0 {
		p.unlink(id)
	}
	b.refs++
}

// release drops one reference; a block nobody holds joins the free queue's
// tail.
func (p *blockPool) release(id int32) {
	b := &p.blocks[id]
	if b.refs--; b.refs == 0 {
		p.push(id)
	}
}

// register caches the held block id under key, unless another block
// already holds that content (two requests computed it at once: vLLM keeps
// both under the key, servesim keeps the first; the copy stays uncached).
func (p *blockPool) register(id int32, key uint64) {
	if _, dup := p.index[key]; dup {
		return
	}
	b := &p.blocks[id]
	b.key, b.cached = key, true
	p.index[key] = id
	p.cached++
}

// lookup returns the block caching key.
func (p *blockPool) lookup(key uint64) (int32, bool) {
	id, ok := p.index[key]
	return id, ok
}

// held is the number of blocks some request holds.
func (p *blockPool) held() int { return len(p.blocks) - p.free() }

// blockSum is Σ_{x=1..n} ceil(x/size): the blocks a sequence holds, summed
// over its lengths 1 … n.
func blockSum(n, size int) int {
	if n <= 0 {
		return 0
	}
	q, r := n/size, n%size
	return size*q*(q+1)/2 + r*(q+1)
}

// need is the number of blocks s lacks to hold tokens.
func (e *Engine) need(s *seq, tokens int) int {
	return e.blocksFor(tokens) - len(s.blocks)
}

// available is what an allocation may draw on: free blocks, cached or not.
func (e *Engine) available() int { return e.pool.free() }

// take gives s n more blocks from the head of the free queue. The caller
// has checked n <= available().
func (e *Engine) take(s *seq, n int) {
	for range n {
		s.blocks = append(s.blocks, e.pool.take())
	}
}

// drop returns every block s holds, last first (vLLM frees "in reverse
// order so that the tail blocks are evicted first").
func (e *Engine) drop(s *seq) {
	if e.headFirst { // tests only: the order servesim used before
		for _, id := range s.blocks {
			e.pool.release(id)
		}
	} else {
		for i := len(s.blocks) - 1; i >= 0; i-- {
			e.pool.release(s.blocks[i])
		}
	}
	s.blocks = s.blocks[:0]
	s.published = 0
}

// trim returns the blocks s holds beyond what its computed tokens need (the
// allocation of a step that did not run), last first.
func (e *Engine) trim(s *seq) {
	keep := e.blocksFor(s.computed)
	for i := len(s.blocks) - 1; i >= keep; i-- {
		e.pool.release(s.blocks[i])
	}
	s.blocks = s.blocks[:keep]
	s.published = min(s.published, keep)
}
