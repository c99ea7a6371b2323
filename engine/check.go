package engine

import (
	"errors"
	"fmt"
)

// Check verifies the engine's invariants and returns every violation:
//   - every request is in exactly one place (waiting queue or running list)
//     and the lookup table holds exactly those;
//   - KV blocks: each request holds ceil(tokens / BlockSize) blocks for the
//     tokens computed or scheduled, waiting requests hold none, every
//     block's reference count is the number of requests holding it, the
//     free queue holds exactly the blocks nobody holds, and
//     blocks held + free = KVBlocks;
//   - the prefix cache maps each key to a block carrying that key, and
//     counts its cached and evictable blocks right;
//   - token accounting: known = Input + emitted, computed <= known,
//     emitted < Output for every request still held, the running list
//     respects MaxSeqs.
//
// It is O(requests + blocks); tests call it after every step.
func (e *Engine) Check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: "+format, a...)) }
	// Each request is marked with this check's generation when visited
	// (no map: tests call Check after every step).
	e.checkGen++
	gen := e.checkGen
	where := [...]string{1: "running", 2: "waiting"}
	seen := 0
	for i, s := range e.co.members {
		if s == nil {
			continue
		}
		if s.checkGen == gen {
			bad("member %d of the decode cohort twice", s.req.Ref)
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 1
		if s.phase != phaseRunning || !s.member {
			bad("request %d in the decode cohort at index %d is marked phase %d, member %v", s.req.Ref, i, s.phase, s.member)
		}
		v := e.memberView(s)
		errs = append(errs, e.checkSeq(&v)...)
	}
	errs = append(errs, e.checkCohort()...)
	for i, s := range e.running {
		if s.checkGen == gen {
			bad("request %d in the running list twice (also %s)", s.req.Ref, where[s.checkIn])
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 1
		if s.phase != phaseRunning {
			bad("request %d in the running list at index %d is not marked running", s.req.Ref, i)
		}
		errs = append(errs, e.checkSeq(s)...)
	}
	if !e.waiting.fcfs && len(e.waiting.keys) != len(e.waiting.items) {
		bad("the waiting queue holds %d requests and %d keys", len(e.waiting.items), len(e.waiting.keys))
	}
	for i, it := range e.waiting.items {
		s := it.s
		if k := e.waiting.key(i); it.seq != s.order || !e.waiting.fcfs && k != s.queued() {
			bad("request %d waits with the key %+v (Add order %d), not its own %+v", s.req.Ref, k, it.seq, s.queued())
		}
		if i > 0 && e.waiting.less(i, (i-1)/2) {
			bad("request %d in the waiting queue at %d comes before its parent", s.req.Ref, i)
		}
		if s.checkGen == gen {
			bad("request %d in the waiting queue and %s", s.req.Ref, where[s.checkIn])
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 2
		if s.phase != phaseWaiting || s.heapIdx != i {
			bad("request %d in the waiting queue at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
		if s.blocks() != 0 || s.computed != 0 {
			bad("waiting request %d holds %d blocks and %d computed tokens", s.req.Ref, s.blocks(), s.computed)
		}
		errs = append(errs, e.checkSeq(s)...)
	}
	q := &e.waiting
	if !q.fcfs && len(q.run) > 0 {
		bad("the waiting queue keeps a run of %d under a policy other than FCFS", len(q.run))
	}
	if q.head < len(q.run) && q.run[q.head].s == nil {
		bad("the waiting queue's run has a hole at its head %d", q.head)
	}
	live := 0
	for i := q.head; i < len(q.run); i++ {
		it := q.run[i]
		if i > q.head && it.seq <= q.run[i-1].seq {
			bad("the waiting queue's run is out of Add order at %d (%d after %d)", i, it.seq, q.run[i-1].seq)
		}
		s := it.s
		if s == nil {
			continue
		}
		live++
		if it.seq != s.order {
			bad("request %d waits in the run with the Add order %d, not its own %d", s.req.Ref, it.seq, s.order)
		}
		if s.checkGen == gen {
			bad("request %d in the waiting queue and %s", s.req.Ref, where[s.checkIn])
		} else {
			seen++
		}
		s.checkGen, s.checkIn = gen, 2
		if s.phase != phaseWaiting || s.heapIdx != runIdx(i) {
			bad("request %d in the waiting queue's run at %d is marked phase %d, index %d", s.req.Ref, i, s.phase, s.heapIdx)
		}
		if s.blocks() != 0 || s.computed != 0 {
			bad("waiting request %d holds %d blocks and %d computed tokens", s.req.Ref, s.blocks(), s.computed)
		}
		errs = append(errs, e.checkSeq(s)...)
	}
	if live != q.live {
		bad("the waiting queue's run counts %d requests and holds %d", q.live, live)
	}
	if seen != e.reqs.len() {
		bad("%d requests in queues but %d in the lookup table", seen, e.reqs.len())
	}
	for ref, s := range e.reqs.all() {
		if s.req.Ref != ref {
			bad("lookup table maps %d to request %d", ref, s.req.Ref)
		}
		if s.checkGen != gen {
			bad("request %d is in no queue", ref)
		}
	}
	left := 0
	for _, s := range e.reqs.all() {
		if s.member {
			v := e.memberView(s)
			left += v.left()
			continue
		}
		left += s.left()
	}
	if left != e.outstanding {
		bad("outstanding tokens counted %d, requests hold %d", e.outstanding, left)
	}
	errs = append(errs, e.checkBlocks()...)
	if e.nrunning() > e.cfg.MaxSeqs {
		bad("running list %d exceeds MaxSeqs %d", e.nrunning(), e.cfg.MaxSeqs)
	}
	return errors.Join(errs...)
}

// memberView is a member as its fields would read were they written now
// (syncMember), without writing them.
func (e *Engine) memberView(s *seq) seq {
	v := *s
	d := e.co.tick - s.t0
	v.computed += d
	v.known += d
	v.emitted += d
	v.anon = e.blocksFor(v.computed+e.co.ahead) - len(v.ids)
	v.sched, v.decoding = 0, false
	if e.inFlight && e.plan.Cohort > 0 {
		v.sched, v.decoding = 1, true
	}
	return v
}

// checkCohort verifies the cohort's counts, heap and order against its
// members.
func (e *Engine) checkCohort() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: decode cohort: "+format, a...)) }
	co := &e.co
	if len(co.members) == 0 && co.count == nil {
		return nil
	}
	if co.n > 0 && !e.co.on && e.inFlight {
		bad("%d members while the engine keeps no cohort", co.n)
	}
	live := 0
	var last *seq
	for i, s := range co.members {
		if s == nil {
			continue
		}
		live++
		if s.cidx != i {
			bad("member %d at %d says it is at %d", s.req.Ref, i, s.cidx)
		}
		if last != nil && s.rank <= last.rank {
			bad("member %d ranks %d after %d", s.req.Ref, s.rank, last.rank)
		}
		last = s
	}
	if live != co.n {
		bad("%d members, counted %d", live, co.n)
	}
	q, csum := 0, 0
	count := make([]int32, len(co.count))
	for _, s := range co.members {
		if s == nil {
			continue
		}
		c := s.computed - s.t0
		count[c&(e.cfg.BlockSize-1)]++
		q += c >> e.shift
		csum += c
		if want := s.t0 + s.req.Output - s.emitted; s.finTick != want {
			bad("member %d finishes at tick %d, its tokens say %d", s.req.Ref, s.finTick, want)
		}

	}
	if csum != co.csum {
		bad("contexts counted %d, members give %d", co.csum, csum)
	}
	if q != co.q || fmt.Sprint(count) != fmt.Sprint(co.count) {
		bad("counts %v (Σq %d), members give %v (Σq %d)", co.count, co.q, count, q)
	}
	for k, n := len(co.count), int32(0); k >= 0; k-- {
		if k < len(co.count) {
			n += co.count[k]
		}
		if co.suf[k] != n {
			bad("suffix sum %d is %d, the counts give %d", k, co.suf[k], n)
		}
	}
	if n := len(co.count); co.suf[n+1] != -co.count[0] {
		bad("suffix sums' last entry is %d, not the members at residue 0 negated (%d)", co.suf[n+1], -co.count[0])
	}
	live = 0
	for _, x := range co.fin.all() {
		if x.live() {
			live++
			if x.tick != x.s.finTick {
				bad("finish queue has member %d at tick %d, it finishes at %d", x.s.req.Ref, x.tick, x.s.finTick)
			}
		}
	}
	for i, x := range co.fin.run[co.fin.head:] {
		if i > 0 && co.fin.run[co.fin.head+i-1].tick > x.tick {
			bad("finish queue's run out of order at %d", i)
		}
	}
	for i, x := range co.fin.heap {
		if i > 0 && co.fin.heap[(i-1)/2].tick > x.tick {
			bad("finish heap out of order at %d", i)
		}
	}
	if live != co.n {
		bad("finish queue holds %d members, the cohort %d", live, co.n)
	}
	if !e.inFlight && co.ahead != 0 {
		bad("%d steps ahead with nothing in flight", co.ahead)
	}
	return errs
}

func (e *Engine) checkSeq(s *seq) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("engine: request %d: "+format, append([]any{s.req.Ref}, a...)...))
	}
	if s.known != s.req.Input+s.emitted {
		bad("known tokens %d != input %d + emitted %d", s.known, s.req.Input, s.emitted)
	}
	switch {
	case s.computed < 0:
		bad("computed %d tokens", s.computed)
	case s.decoding && s.sched > 0:
		// A run of decode steps computes one token and samples the next
		// per step: only the first of its tokens exists yet.
		if s.computed+1 != s.known {
			bad("decodes %d steps with %d of %d known tokens computed", s.sched, s.computed, s.known)
		}
	case s.computed+s.sched > s.known:
		bad("computed %d + scheduled %d exceed known %d", s.computed, s.sched, s.known)
	}
	if s.emitted >= s.req.Output {
		bad("emitted %d of %d tokens but still held", s.emitted, s.req.Output)
	}
	ahead := max(s.sched, s.look) // tokens whose blocks are taken beyond those computed
	if e.lazy && s.sched > 0 {
		ahead = e.runAlloc // a run takes its blocks step by step
	}
	if anon, want := e.anonOf(s), e.blocksFor(s.computed+ahead); len(s.ids)+anon != want || anon < 0 {
		bad("holds %d cached + %d anonymous blocks for %d tokens, want %d", len(s.ids), anon, s.computed+ahead, want)
	}
	return errs
}

// checkBlocks verifies reference counts, the free queues, the block sum and
// the prefix cache's index. A node's holders are counted in checkRefs.
func (e *Engine) checkBlocks() []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("engine: KV blocks: "+format, a...)) }
	p := &e.pool
	gen := e.checkGen
	if cap(e.checkRefs) < len(p.nodes) {
		e.checkRefs = make([]int32, len(p.nodes))
	}
	refs := e.checkRefs[:len(p.nodes)]
	clear(refs)
	anon := 0
	for _, s := range e.co.members {
		if s == nil {
			continue
		}
		v := e.memberView(s)
		anon += v.anon
		for _, id := range s.ids {
			refs[id]++
		}
	}
	for _, s := range e.running {
		anon += e.anonOf(s)
		for _, id := range s.ids {
			refs[id]++
		}
	}
	held, free, evict := anon, 0, 0
	for qi := range p.q {
		q := &p.q[qi]
		n, prev := 0, noNode
		for id := q.head; id != noNode; id = p.nodes[id].next {
			b := &p.nodes[id]
			if b.checkGen == gen {
				bad("free queue %d has a cycle at node %d", qi, id)
				break
			}
			b.checkGen = gen
			if !b.queued || b.refs != 0 || b.prev != prev || int(b.queue) != qi || b.run < 0 {
				bad("node %d in free queue %d: queued %v, %d references, prev %d (want %d), queue %d, run %d", id, qi, b.queued, b.refs, b.prev, prev, b.queue, b.run)
			}
			if b.run == 0 {
				evict++
				if qi == 0 && p.split {
					bad("cached block %d in the never-cached queue", id)
				}
			} else if p.split && qi == 1 {
				bad("anonymous run %d in the cached queue", id)
			}
			n += p.size(id)
			prev = id
		}
		if q.tail != prev || q.blocks != n {
			bad("free queue %d counts %d blocks, tail %d; walked %d, last %d", qi, q.blocks, q.tail, n, prev)
		}
		free += n
	}
	p.index.each(func(key uint64, id int32) {
		if got, ok := p.index.get(key); !ok || got != id {
			bad("index holds %#x at node %d but finds node %d (%v)", key, id, got, ok)
		}
		b := &p.nodes[id]
		if b.key != key || b.run != 0 {
			bad("index maps %#x to node %d holding %#x (run %d)", key, id, b.key, b.run)
		}
		if b.refs != refs[id] {
			bad("block %d counts %d references, %d requests hold it", id, b.refs, refs[id])
		}
		if (b.refs == 0) != b.queued {
			bad("block %d with %d references is queued: %v", id, b.refs, b.queued)
		}
		if b.refs > 0 {
			held++
		}
	})
	if held+free != p.total || free != p.free() {
		bad("blocks held %d + free %d != total %d (free counted %d)", held, free, p.total, p.free())
	}
	if p.index.len() != p.cached || evict != p.evict {
		bad("counts %d cached (%d evictable), index holds %d, queues %d", p.cached, p.evict, p.index.len(), evict)
	}
	return errs
}
