package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
)

// The run pool's twin is blockPool: runTwin drives both through the
// operations the engine makes on a request's blocks (prefix.go, kv.go)
// and compares them block by block after each one: every free queue's
// blocks in order (their content keys, or anonymous), every request's
// blocks (content key, references, whether a lookup finds that very
// block), every key's lookup, and the pools' counts. The engine's call
// sites map to it as follows: walkHits to hits, attach to touch,
// cacheThrough (publish, cacheOwn) to cacheThrough, drop to pushRun and
// release (from 0; headFirst: one block at a time, first to last), trim
// to pushRun and release from the blocks kept, take to take.

type twinReq struct {
	keys   []uint64 // blockPool's keys of its blocks (extendKeys)
	blocks int      // blocks of its sequence
	ids    []int32  // blockPool: its cached blocks
	held   int      // runPool: its cached blocks
	rs     runSeq   // runPool: its path and copies
	anon   int
}

type runTwin struct {
	t         testing.TB
	bp        blockPool
	rp        blockPool
	b         int
	headFirst bool
	reqs      []*twinReq
	prefixes  [][]uint64
	order     uint64
	ghost     int // anonymous blocks held by no request (allocation pressure)
	caches    int // runCache calls that cached blocks
	ops       []string
	logs      [2]eventLog // each pool's KV events (publish), blockPool's first
	events    int         // events compared
	probes    int         // walks whose first steps probed took (probedIsWalk)
	tops      int         // walks that met an id past the tree's topID (topIsLookup)
	oneFound  int         // runHitsTouch calls that found blocks
	oneFreed  int         // of those, calls that took some off a free queue
	oneSplit  int         // runHitsTouch calls that found blocks on an edge of several segments
}

func newRunTwin(t testing.TB, blocks int, split, headFirst bool) *runTwin {
	return &runTwin{t: t, bp: newBlockPool(blocks, split), rp: newRunPool(blocks, 16, split), b: 16, headFirst: headFirst}
}

// publish makes both pools publish their KV events, each to its log
// (stamped by an engine that plans nothing: every event at 0), the run
// pool's in runs when runs is set (a runLog).
func (w *runTwin) publish(runs bool) {
	e := &Engine{}
	w.bp.pub = &kvPublisher{sink: &w.logs[0], e: e}
	w.rp.pub = &kvPublisher{sink: &w.logs[1], e: e}
	if runs {
		rl := (*runLog)(&w.logs[1])
		w.rp.pub.sink, w.rp.pub.runs = rl, rl
	}
}

func (w *runTwin) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("after %v: %s", w.ops, fmt.Sprintf(format, args...))
}

// newReq makes a request over prefix ids of p tokens, its first shared
// blocks of shared content, then own blocks up to blocks in all.
func (w *runTwin) newReq(prefix []uint64, p, shared, blocks int) *twinReq {
	w.order++
	own := mix(0x0a11ce, w.order)
	r := &twinReq{blocks: blocks}
	r.rs.path = appendRunPath(nil, nil, prefix, p, w.b, shared, false, own)
	r.keys = appendShared(nil, rootKey, prefix, p, w.b, 0, shared)
	parent := rootKey
	if shared > 0 {
		parent = r.keys[shared-1]
	}
	for len(r.keys) < blocks {
		parent = mix(parent, own)
		r.keys = append(r.keys, parent)
	}
	w.reqs = append(w.reqs, r)
	return r
}

// keyAt is the key of block off of edge e, chained from the root.
func (w *runTwin) keyAt(e int32, off int) uint64 { return keyAt(w.rp.runs, e, off) }

type twinBlock struct {
	key     uint64
	refs    int32
	primary bool
	anon    int
}

func (w *runTwin) blockQueue(qi int) []twinBlock {
	var out []twinBlock
	for id := w.bp.q[qi].head; id != noNode; id = w.bp.nodes[id].next {
		b := &w.bp.nodes[id]
		if b.run > 0 {
			out = appendAnon(out, int(b.run))
			continue
		}
		cur, _ := w.bp.index.get(b.key)
		out = append(out, twinBlock{key: b.key, refs: b.refs, primary: cur == id})
	}
	return out
}

func (w *runTwin) runQueue(qi int) []twinBlock {
	var out []twinBlock
	for id := w.rp.q[qi].head; id != noNode; id = w.rp.nodes[id].next {
		s := &w.rp.nodes[id]
		if s.run > 0 {
			out = appendAnon(out, int(s.run))
			continue
		}
		g := w.rp.runs.at[id]
		if s.run != segRun || g.hi <= g.lo || !s.queued || s.queue != uint8(qi) {
			w.fail("queued segment %d: %+v at %+v", id, *s, g)
		}
		for x := g.hi - 1; x >= g.lo; x-- {
			out = append(out, twinBlock{key: w.keyAt(g.edge, int(x)), refs: s.refs, primary: !s.copy})
		}
	}
	return out
}

func appendAnon(out []twinBlock, n int) []twinBlock {
	if m := len(out) - 1; m >= 0 && out[m].anon > 0 {
		out[m].anon += n
		return out
	}
	return append(out, twinBlock{anon: n})
}

// runBlock is the segment holding r's block j, and the block's place.
func (w *runTwin) runBlock(r *twinReq, j int) (int32, blockAt) {
	w.rp.runs.match(r.rs.path, j+1)
	sp := w.rp.runs.spans[len(w.rp.runs.spans)-1]
	if sp.pos+sp.hi-sp.lo != j+1 {
		w.fail("block %d of a request is not in the tree", j)
	}
	at := blockAt{sp.edge, int32(sp.hi - 1)}
	for _, c := range r.rs.copies {
		if c.pos == j {
			if g := w.rp.runs.at[c.seg]; g.edge != at.edge || g.lo != at.off || g.hi != at.off+1 {
				w.fail("copy of block %d at %+v, not %+v", j, g, at)
			}
			return c.seg, at
		}
	}
	return w.rp.primAt(at.edge, int(at.off)), at
}

// runFinds reports whether the run pool finds r's block j (its first j
// blocks may be missing: a lookup by key).
func (w *runTwin) runFinds(r *twinReq, j int) bool {
	if pos, _, _ := w.rp.runs.match(r.rs.path, j+1); pos != j+1 {
		return false
	}
	sp := w.rp.runs.spans[len(w.rp.runs.spans)-1]
	return w.rp.primAt(sp.edge, sp.hi-1) != noNode
}

func (w *runTwin) check() {
	w.t.Helper()
	for qi := range 2 {
		a, b := w.blockQueue(qi), w.runQueue(qi)
		if !slices.Equal(a, b) {
			w.fail("queue %d:\nblockPool %v\nrunPool   %v", qi, a, b)
		}
	}
	if !slices.Equal(w.logs[0], w.logs[1]) {
		w.fail("KV events:\nblockPool %v\nrunPool   %v", w.logs[0], w.logs[1])
	}
	w.events += len(w.logs[0])
	w.logs[0], w.logs[1] = w.logs[0][:0], w.logs[1][:0]
	if a, b := [4]int{w.bp.free(), w.bp.cached, w.bp.evict, w.bp.ncopy}, [4]int{w.rp.free(), w.rp.cached, w.rp.evict, w.rp.ncopy}; a != b {
		w.fail("free, cached, evict, copies: blockPool %v, runPool %v", a, b)
	}
	t := w.rp.runs
	indexed := 0
	for ei := 1; ei < len(t.edges); ei++ { // the child index: runEdge.indexed
		ed := &t.edges[ei]
		if !ed.indexed {
			if len(ed.segs)+len(ed.kids) > 0 && (t.indexAll || len(t.edges[ed.parent].kids) != 1) {
				w.fail("edge %d is out of the child index, one of its parent's %d kids", ei, len(t.edges[ed.parent].kids))
			}
			continue
		}
		indexed++
		if got, ok := t.child.get(ed.ckey); !ok || got != int32(ei) {
			w.fail("edge %d is in the child index as %d (%v)", ei, got, ok)
		}
	}
	if indexed != t.child.len() {
		w.fail("the child index holds %d edges, %d are in it", t.child.len(), indexed)
	}
	for i, r := range w.reqs {
		if len(r.ids) != r.held {
			w.fail("request %d holds %d blocks in blockPool, %d in runPool", i, len(r.ids), r.held)
		}
		if t.chain(r.rs.cur, r.held) {
			up := slices.Clone(t.spans)
			if pos, _, _ := t.match(r.rs.path, r.held); pos != r.held || !slices.Equal(up, t.spans) {
				w.fail("request %d: %d held blocks' spans up from its cursor %+v, down from the root %+v (%d found)", i, r.held, up, t.spans, pos)
			}
		}
		w.probedIsWalk(r)
		w.topIsLookup(r)
		for j, id := range r.ids {
			b := &w.bp.nodes[id]
			cur, _ := w.bp.index.get(b.key)
			s, at := w.runBlock(r, j)
			if s == noNode {
				w.fail("request %d block %d: no segment", i, j)
			}
			sg := &w.rp.nodes[s]
			got := twinBlock{key: w.keyAt(at.edge, int(at.off)), refs: sg.refs, primary: !sg.copy}
			want := twinBlock{key: b.key, refs: b.refs, primary: cur == id}
			if b.key != r.keys[j] || got != want {
				w.fail("request %d block %d: blockPool %+v, runPool %+v (key %x)", i, j, want, got, r.keys[j])
			}
		}
		for j, k := range r.keys {
			_, ok := w.bp.lookup(k)
			if got := w.runFinds(r, j); got != ok {
				w.fail("request %d block %d: blockPool finds it %v, runPool %v", i, j, ok, got)
			}
		}
	}
}

// probedIsWalk holds walk's first steps taken from the tree's probe
// (probed) to its loop from the root (noProbe), for r's path to its held
// blocks and to all its blocks: the cursor and the spans.
func (w *runTwin) probedIsWalk(r *twinReq) {
	w.t.Helper()
	t := w.rp.runs
	for _, n := range []int{r.held, r.blocks} {
		if _, _, _, ok := t.probed(r.rs.path, n); ok {
			w.probes++
		}
		t.noProbe = true
		want := t.walk(r.rs.path, n, runCursor{})
		spans := slices.Clone(t.spans)
		t.noProbe = false
		if got := t.walk(r.rs.path, n, runCursor{}); got != want || !slices.Equal(spans, t.spans) {
			w.fail("walk to %d blocks: from the probe %+v %+v, from the root %+v %+v", n, got, t.spans, want, spans)
		}
	}
}

// topIsLookup holds walk's stop at an id past every id an edge began
// with (runTree.topID) to its lookup of a child there (noTop), for r's
// path to its held blocks and to all its blocks: the cursor and the
// spans.
func (w *runTwin) topIsLookup(r *twinReq) {
	w.t.Helper()
	t := w.rp.runs
	for _, n := range []int{r.held, r.blocks} {
		t.noTop = true
		want := t.walk(r.rs.path, n, runCursor{})
		spans := slices.Clone(t.spans)
		t.noTop = false
		if want.pos < n && want.eoff == t.edges[want.edge].lab.n {
			if c := r.rs.path[want.li].at(want.lo, t.b); c.kind == 1 && c.id > t.topID {
				w.tops++
			}
		}
		if got := t.walk(r.rs.path, n, runCursor{}); got != want || !slices.Equal(spans, t.spans) {
			w.fail("walk to %d blocks: past topID %+v %+v, looked up %+v %+v", n, got, t.spans, want, spans)
		}
	}
}

// admit finds r's hits among its first limit blocks in both pools,
// touches them and takes need more blocks, if they are free. With one,
// which the caller sets only where tryAdmit's gate for hitsTouch holds
// (every block of r fits in the free ones, whatever it finds), the run
// pool finds and touches them in one pass (runHitsTouch).
func (w *runTwin) admit(r *twinReq, limit, need int, one bool) {
	var blocks []int32
	ev := 0
	for _, k := range r.keys[:limit] {
		id, ok := w.bp.lookup(k)
		if !ok {
			break
		}
		blocks = append(blocks, id)
		if w.bp.nodes[id].refs == 0 {
			ev++
		}
	}
	if one {
		w.admitOne(r, limit, need, blocks, ev)
		return
	}
	h, ev2 := w.rp.runHits(r.rs.path, limit)
	if h != len(blocks) || ev != ev2 {
		w.fail("hits: blockPool %d (%d evictable), runPool %d (%d)", len(blocks), ev, h, ev2)
	}
	need = min(need, r.blocks-h)
	if w.bp.free()-ev < need {
		return
	}
	for _, id := range blocks {
		w.bp.touch(id)
	}
	r.ids = append(r.ids, blocks...)
	reached := w.rp.runs.walkedTo(r.rs.path, h) // runHits' walk: runTouch cuts it
	w.rp.runTouch(&r.held, &r.rs, h)
	if want := w.rp.runs.walk(r.rs.path, h, runCursor{}); r.rs.cur != want || !reached {
		w.fail("cursor after touching %d blocks: %+v (runHits' walk read: %v), a walk from the root finds %+v", h, r.rs.cur, reached, want)
	}
	w.take(r, need)
}

// admitOne is admit's way for a request the gate admits whatever it
// finds (tryAdmit's hitsTouch): blockPool's hits, blocks (ev of them
// evictable), touched one by one; the run pool's found and touched by
// runHitsTouch, which leaves r as it was when it finds none (attach
// touches nothing then).
func (w *runTwin) admitOne(r *twinReq, limit, need int, blocks []int32, ev int) {
	if w.bp.free() < r.blocks {
		w.fail("admitOne: %d blocks free, the request's %d do not fit", w.bp.free(), r.blocks)
	}
	for _, id := range blocks {
		w.bp.touch(id)
	}
	r.ids = append(r.ids, blocks...)
	held, cur := r.held, r.rs.cur
	w.rp.runs.match(r.rs.path, limit)
	split := limit // where the walk meets an edge of several segments
	for _, sp := range w.rp.runs.spans {
		if len(w.rp.runs.edges[sp.edge].segs) > 1 {
			split = sp.pos
			break
		}
	}
	h := w.rp.runHitsTouch(&r.held, &r.rs, limit)
	if split < h { // its loop over such an edge found blocks
		w.oneSplit++
	}
	if h != len(blocks) {
		w.fail("hitsTouch: blockPool %d hits, runPool %d", len(blocks), h)
	}
	if h == 0 {
		if r.held != held || r.rs.cur != cur {
			w.fail("hitsTouch found nothing but moved held %d to %d, cursor %+v to %+v", held, r.held, cur, r.rs.cur)
		}
	} else {
		w.oneFound++
		if ev > 0 {
			w.oneFreed++
		}
		if want := w.rp.runs.walk(r.rs.path, h, runCursor{}); r.held != h || r.rs.cur != want || r.rs.room != 0 {
			w.fail("after hitsTouch of %d blocks: held %d, cursor %+v room %d, a walk from the root finds %+v", h, r.held, r.rs.cur, r.rs.room, want)
		}
	}
	w.take(r, min(need, r.blocks-h))
}

func (w *runTwin) take(r *twinReq, n int) {
	if n <= 0 || w.bp.free() < n {
		return
	}
	w.bp.take(n)
	w.rp.take(n)
	r.anon += n
}

func (w *runTwin) cache(r *twinReq, full int) {
	from := len(r.ids)
	if full <= from || full > from+r.anon {
		return
	}
	r.anon -= full - from
	w.caches++
	for _, k := range r.keys[from:full] {
		r.ids = append(r.ids, w.bp.cache(k))
	}
	w.rp.runCache(&r.held, &r.rs, full)
	if want := w.rp.runs.walk(r.rs.path, full, runCursor{}); r.rs.cur != want { // insert's, or extendHeld's
		w.fail("cursor after caching %d blocks: %+v, a walk from the root finds %+v", full, r.rs.cur, want)
	}
}

func (w *runTwin) drop(r *twinReq) {
	if w.headFirst {
		for _, id := range r.ids {
			w.bp.release(id)
		}
		for j := range r.ids {
			w.rp.runReleaseRange(&r.rs, j, j+1)
		}
		r.held, r.rs.copies = 0, r.rs.copies[:0]
		w.bp.pushRun(r.anon)
		w.rp.pushRun(r.anon)
	} else {
		w.bp.pushRun(r.anon)
		w.rp.pushRun(r.anon)
		if len(r.ids) > 0 {
			w.bp.releaseAll(r.ids)
		}
		w.rp.runRelease(&r.held, &r.rs, 0)
	}
	r.ids, r.anon = r.ids[:0], 0
}

func (w *runTwin) trim(r *twinReq, extra int) {
	extra = min(extra, len(r.ids)+r.anon)
	x := min(extra, r.anon)
	w.bp.pushRun(x)
	w.rp.pushRun(x)
	r.anon -= x
	keep := len(r.ids) - (extra - x)
	for len(r.ids) > keep {
		last := len(r.ids) - 1
		w.bp.release(r.ids[last])
		r.ids = r.ids[:last]
	}
	w.rp.runRelease(&r.held, &r.rs, keep)
}

// step makes one random operation.
func (w *runTwin) step(rng *rand.Rand) {
	pick := func() *twinReq {
		if len(w.reqs) == 0 {
			return nil
		}
		return w.reqs[rng.IntN(len(w.reqs))]
	}
	switch op := rng.IntN(10); op {
	case 0, 1: // a new request, its prefix perhaps another's, cut or extended
		if len(w.reqs) >= 10 {
			return
		}
		var prefix []uint64
		if len(w.prefixes) > 0 && rng.IntN(3) > 0 {
			prefix = slices.Clone(w.prefixes[rng.IntN(len(w.prefixes))])
			prefix = prefix[:rng.IntN(len(prefix)+1)]
		}
		next := uint64(rng.IntN(4) * 100)
		if len(prefix) > 0 {
			next = prefix[len(prefix)-1] + 1
		}
		for n := rng.IntN(8); n > 0; n-- {
			if rng.IntN(4) == 0 {
				next = uint64(rng.IntN(400))
			}
			prefix = append(prefix, next)
			next++
		}
		w.prefixes = append(w.prefixes, prefix)
		p := []int{16, 32, 48, 8, 24, 40}[rng.IntN(6)]
		units := len(prefix)
		if rng.IntN(3) == 0 {
			units = rng.IntN(units + 1)
		}
		shared := units * p / w.b
		w.newReq(prefix, p, shared, shared+rng.IntN(5))
		w.ops = append(w.ops, fmt.Sprintf("new(%v,p%d,%d)", prefix, p, shared))
	case 2: // admission of a request that holds nothing
		if r := pick(); r != nil && len(r.ids) == 0 && r.anon == 0 && r.blocks > 0 {
			limit, need := rng.IntN(r.blocks), rng.IntN(r.blocks+1)
			// tryAdmit's gate for hitsTouch: all r's blocks fit.
			one := r.blocks <= w.bp.free() && rng.IntN(3) > 0
			w.ops = append(w.ops, fmt.Sprintf("admit(%d,%d,%v)", limit, need, one))
			w.admit(r, limit, need, one)
		}
	case 3: // more blocks
		if r := pick(); r != nil && (len(r.ids) > 0 || r.anon > 0) {
			n := min(rng.IntN(4), r.blocks-len(r.ids)-r.anon)
			w.ops = append(w.ops, fmt.Sprintf("take(%d)", n))
			w.take(r, n)
		}
	case 4, 5: // caching of computed blocks
		if r := pick(); r != nil && r.anon > 0 {
			full := len(r.ids) + 1 + rng.IntN(r.anon)
			w.ops = append(w.ops, fmt.Sprintf("cache(%d)", full))
			w.cache(r, full)
		}
	case 6: // the end of a request, or a preemption (its blocks cached first)
		if r := pick(); r != nil {
			if rng.IntN(2) == 0 {
				w.cache(r, len(r.ids)+r.anon)
			}
			w.ops = append(w.ops, "drop")
			w.drop(r)
			if rng.IntN(2) == 0 {
				i := slices.Index(w.reqs, r)
				w.reqs = slices.Delete(w.reqs, i, i+1)
			}
		}
	case 7: // a trim
		if r := pick(); r != nil {
			n := rng.IntN(3)
			w.ops = append(w.ops, fmt.Sprintf("trim(%d)", n))
			w.trim(r, n)
		}
	case 8: // allocation pressure from outside the cache
		if n := rng.IntN(6); w.bp.free() >= n {
			w.ops = append(w.ops, fmt.Sprintf("ghost(%d)", n))
			w.bp.take(n)
			w.rp.take(n)
			w.ghost += n
		}
	case 9:
		n := rng.IntN(w.ghost + 1)
		w.ops = append(w.ops, fmt.Sprintf("unghost(%d)", n))
		w.bp.pushRun(n)
		w.rp.pushRun(n)
		w.ghost -= n
	}
	if len(w.ops) > 40 {
		w.ops = w.ops[len(w.ops)-40:]
	}
	w.check()
}

// twinCounts are what a scenario reached: runCache calls that cached
// blocks, how many of those extendHeld and cacheNewEdge answered (and of
// extendHeld's, how many it answered from the room it had noted, with no
// scan), how many KV events the pools published alike (every other
// scenario publishes them, the run pool in runs in half of those), walks
// whose first steps the probe took, and runHitsTouch calls that found
// blocks, took some off a free queue, and found some on an edge of
// several segments.
type twinCounts struct {
	caches, inPlace, grown, newEdges, events, probes int
	oneFound, oneFreed, oneSplit, tops               int
	probeTouched                                     int // runHitsTouch calls probedTouch answered
	lone, joined                                     int // edges out of the child index after a step (runEdge.indexed); lone kids put in as a second came
}

func (c *twinCounts) add(d twinCounts) {
	c.caches += d.caches
	c.inPlace += d.inPlace
	c.grown += d.grown
	c.newEdges += d.newEdges
	c.events += d.events
	c.probes += d.probes
	c.oneFound += d.oneFound
	c.oneFreed += d.oneFreed
	c.oneSplit += d.oneSplit
	c.tops += d.tops
	c.probeTouched += d.probeTouched
	c.lone += d.lone
	c.joined += d.joined
}

// runTwinScenario runs steps random operations and returns what they
// reached.
func runTwinScenario(t testing.TB, seed uint64, steps int) twinCounts {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := newRunTwin(t, 8+rng.IntN(48), rng.IntN(2) == 0, rng.IntN(5) == 0)
	if seed%2 == 0 {
		w.publish(seed%4 == 0) // in runs, or one by one
	}
	w.rp.runs.noProbeTouch = seed%5 == 3 // probedTouch's twin: runHitsTouch's walk and loop
	w.rp.runs.indexAll = seed%6 == 1     // runEdge.indexed's twin: every edge in the child index
	lone := 0
	for range steps {
		w.step(rng)
		lone += loneEdges(w.rp.runs)
	}
	return twinCounts{w.caches, w.rp.runs.inPlace, w.rp.runs.grown, w.rp.runs.newEdges, w.events, w.probes, w.oneFound, w.oneFreed, w.oneSplit, w.tops, w.rp.runs.probeTouched, lone, w.rp.runs.joined}
}

// TestChainStartsAreKeyAt holds Check's chained keys (chainStarts, each
// edge's labels mixed once) to keyAt's chain from the root, block by
// block, on the trees of TestRunPoolTwin's scenarios, asked in a random
// order of edges (chainStarts keeps the ends it chained on the way).
func TestChainStartsAreKeyAt(t *testing.T) {
	blocks := 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
		w := newRunTwin(t, 8+rng.IntN(48), rng.IntN(2) == 0, rng.IntN(5) == 0)
		for range 400 {
			w.step(rng)
		}
		tr := w.rp.runs
		starts := chainStarts{t: tr}
		for _, e := range rng.Perm(len(tr.edges)) {
			if ed := &tr.edges[e]; e == 0 || len(ed.segs)+len(ed.kids) == 0 { // a freed edge's parents may lead nowhere
				continue
			}
			key := starts.at(int32(e))
			for off := range min(tr.edges[e].lab.n, 64) { // an edge nothing follows may run on without end
				key = mix(key, tr.edges[e].lab.at(off, tr.b).value())
				require.Equal(t, keyAt(tr, int32(e), off), key, "seed %d: edge %d, block %d", seed, e, off)
				blocks++
			}
		}
	}
	require.Greater(t, blocks, 1_000)
}

func TestRunPoolTwin(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	var c twinCounts
	for seed := range uint64(n) {
		c.add(runTwinScenario(t, seed, 400))
	}
	t.Logf("runCache calls %d, extended in place %d (%d from the room noted), on a new edge %d; %d KV events alike; %d walks' first steps probed; runHitsTouch found blocks %d times (%d of them probedTouch), took some off a free queue %d times, found some on an edge of several segments %d times; %d walks met an id past topID; %d edge-steps out of the child index, %d lone kids put in", c.caches, c.inPlace, c.grown, c.newEdges, c.events, c.probes, c.oneFound, c.probeTouched, c.oneFreed, c.oneSplit, c.tops, c.lone, c.joined)
	require.Positive(t, c.probes, "walk took its first steps from the probe (probed)")
	require.Positive(t, c.tops, "walk stopped at an id past the tree's topID")
	require.Positive(t, c.inPlace, "runCache extended a held segment in place (extendHeld)")
	require.Positive(t, c.grown, "extendHeld extended one from the room it noted, with no scan")
	require.Less(t, c.grown, c.inPlace, "extendHeld checked the blocks and scanned the segments too")
	require.Positive(t, c.newEdges, "runCache began a new edge without a walk (cacheNewEdge)")
	require.Positive(t, c.events, "the pools published KV events")
	require.GreaterOrEqual(t, c.oneFound, n, "runHitsTouch found blocks")
	require.GreaterOrEqual(t, c.oneFreed, n/2, "runHitsTouch took blocks off a free queue")
	require.Positive(t, c.oneSplit, "runHitsTouch found blocks on an edge of several segments")
	require.Positive(t, c.probeTouched, "runHitsTouch's blocks found and touched up the tree from the probe (probedTouch)")
	require.Positive(t, c.lone, "edges were left out of the child index, each its parent's only kid (runEdge.indexed)")
	require.Positive(t, c.joined, "a lone kid was put in the child index as a second came (indexKids)")
}

// loneEdges is how many of t's edges, not dropped, are out of its child
// index (runEdge.indexed).
func loneEdges(t *runTree) int {
	n := 0
	for ei := 1; ei < len(t.edges); ei++ {
		if ed := &t.edges[ei]; !ed.indexed && len(ed.segs)+len(ed.kids) > 0 {
			n++
		}
	}
	return n
}

func FuzzRunPoolTwin(f *testing.F) {
	// 13 and 40: scenarios whose runHitsTouch calls fail with its
	// queue's tail left alone, or its loop's segments left queued.
	for _, s := range []uint64{1, 2, 3, 13, 40, 42} {
		f.Add(s, uint16(300))
	}
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		runTwinScenario(t, seed, int(steps%2000))
	})
}

// TestRunsEqualBlocksThroughTheAPI drives an engine whose prefix cache
// is kept by runs and its twin kept by blocks (noRuns) through the same
// calls: requests of shared prefixes of several shapes (ids of 16, 32,
// 24 and 8 tokens; runs of consecutive ids and single ones; answers
// shared with PrefixCoversOutput), Warm, CachedPrefix and CachedKeys,
// and KV events turned on in the middle of the run (the pool stays kept
// by runs, computing the keys its events name: runTree.key). Every
// plan, outcome, answer and event must be the same, and Check must pass
// on both after every step.
func TestRunsEqualBlocksThroughTheAPI(t *testing.T) {
	published, warmed, asked, pathAsked, promisedAsked := 0, 0, 0, 0, 0
	var path PrefixPath
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 41))
		cfg := Config{MaxSeqs: 1 + rng.IntN(8), KVBlocks: 24 + rng.IntN(120), BlockSize: []int{16, 4, 12}[rng.IntN(3)], FreeBlocksFirst: rng.IntN(2) == 0}
		a, err := New(cfg, nil)
		require.NoError(t, err)
		b, _ := New(cfg, nil)
		b.noRuns = true
		a.Runner().SetStrict(true)
		b.Runner().SetStrict(true)
		prompt := func() ([]uint64, int, int) {
			p := []int{16, 32, 24, 8}[rng.IntN(4)]
			base := uint64(rng.IntN(3) * 100)
			var prefix []uint64
			for range 1 + rng.IntN(12) {
				if rng.IntN(5) == 0 {
					base = uint64(rng.IntN(300))
				}
				prefix = append(prefix, base)
				base++
			}
			return prefix, p, 1 + rng.IntN(len(prefix)*p+20)
		}
		var logs [2]eventLog
		publishAt := rng.IntN(50)
		now := time.Duration(0)
		for step := range 70 {
			for range rng.IntN(3) {
				prefix, p, input := prompt()
				r := Request{Ref: int32(step*8 + rng.IntN(8)), Input: input, Output: 1 + rng.IntN(40), Prefix: prefix, PrefixBlockTokens: p, PrefixCoversOutput: rng.IntN(3) == 0}
				if ea, eb := a.Add(now, r), b.Add(now, r); fmt.Sprint(ea) != fmt.Sprint(eb) {
					t.Fatalf("seed %d: Add: %v, twin %v", seed, ea, eb)
				}
			}
			prefix, p, input := prompt()
			if x, y := a.CachedPrefix(prefix, p, input), b.CachedPrefix(prefix, p, input); x != y {
				t.Fatalf("seed %d step %d: CachedPrefix %d, twin %d", seed, step, x, y)
			} else {
				// CachedPath answers the same, by the runs or by the
				// path's keys, at the engines' block size or another.
				path.Reset(prefix, p, input, []int{cfg.BlockSize, cfg.BlockSize, 8}[rng.IntN(3)])
				if xp, yp := a.CachedPath(&path), b.CachedPath(&path); xp != x || yp != x {
					t.Fatalf("seed %d step %d: CachedPath %d, twin %d, CachedPrefix %d (%v %d %d at %d, engines %d)", seed, step, xp, yp, x, prefix, p, input, path.blockSize, cfg.BlockSize)
				}
				pathAsked++
				// And with the promise the ids keep (ResetPromised): its
				// runs found by bisection, the same answer.
				if pr := promiseOf(prefix, rng); pr != (ascend.Promise{}) {
					path.ResetPromised(prefix, p, input, path.blockSize, pr)
					if xp, yp := a.CachedPath(&path), b.CachedPath(&path); xp != x || yp != x {
						t.Fatalf("seed %d step %d: CachedPath %d, twin %d, CachedPrefix %d, promised %+v (%v %d %d at %d, engines %d)", seed, step, xp, yp, x, pr, prefix, p, input, path.blockSize, cfg.BlockSize)
					}
					promisedAsked++
				}
			}
			if a.pool.runs != nil && rng.IntN(2) == 0 { // asked once the pool is kept by runs
				keys := PrefixKeys(nil, prefix, p, input, cfg.BlockSize)
				if x, y := a.CachedKeys(keys), b.CachedKeys(keys); x != y {
					t.Fatalf("seed %d step %d: CachedKeys %d, twin %d", seed, step, x, y)
				}
				asked++
			}
			if rng.IntN(6) == 0 {
				x, ea := a.Warm(prefix, p, input)
				y, eb := b.Warm(prefix, p, input)
				if x != y || fmt.Sprint(ea) != fmt.Sprint(eb) {
					t.Fatalf("seed %d step %d: Warm %d %v, twin %d %v", seed, step, x, ea, y, eb)
				}
				warmed += x
			}
			if step == publishAt {
				if a.pool.runs != nil {
					published++
				}
				publishTo(a, &logs[0], rng.IntN(3)) // one by one, in runs, or in runs and chains
				b.PublishKVEvents(&logs[1])
			}
			pa, ea := a.Schedule(now)
			pb, eb := b.Schedule(now)
			if fmt.Sprint(pa, ea) != fmt.Sprint(pb, eb) {
				t.Fatalf("seed %d step %d: plan %v %v, twin %v %v", seed, step, pa, ea, pb, eb)
			}
			if pa != nil {
				oa, ea := a.Complete(pa.End)
				ob, eb := b.Complete(pb.End)
				if fmt.Sprint(oa, ea) != fmt.Sprint(ob, eb) {
					t.Fatalf("seed %d step %d: outcome %v %v, twin %v %v", seed, step, oa, ea, ob, eb)
				}
				now = pa.End
			} else {
				now += time.Millisecond
			}
			require.NoError(t, a.Check(), "seed %d step %d", seed, step)
			require.NoError(t, b.Check(), "seed %d step %d", seed, step)
			if x, y := readings(a, now), readings(b, now); x != y {
				t.Fatalf("seed %d step %d: %s, twin %s", seed, step, x, y)
			}
			if !slices.Equal(logs[0], logs[1]) {
				t.Fatalf("seed %d step %d: events %v, twin %v", seed, step, logs[0], logs[1])
			}
		}
	}
	t.Logf("%d engines kept by runs published KV events, %d blocks warmed, %d CachedKeys and %d CachedPath asked (%d with a promise)", published, warmed, asked, pathAsked, promisedAsked)
	require.Greater(t, promisedAsked, 200)
	if published < 20 || warmed < 50 || asked < 200 {
		t.Errorf("%d engines kept by runs published KV events, %d blocks warmed, %d CachedKeys asked: the test no longer reaches them", published, warmed, asked)
	}
}

// promiseOf is a promise prefix keeps, of the two kinds a source makes,
// drawn when it keeps both: at most two runs of consecutive ids, or ids
// that rise; none when it keeps neither.
func promiseOf(prefix []uint64, rng *rand.Rand) ascend.Promise {
	runs, rises := 1, true
	for i := 1; i < len(prefix); i++ {
		if prefix[i] != prefix[i-1]+1 {
			runs++
		}
		rises = rises && prefix[i] > prefix[i-1]
	}
	switch {
	case runs <= 2 && (!rises || rng.IntN(2) == 0):
		return ascend.TwoRuns()
	case rises:
		return ascend.Rising()
	}
	return ascend.Promise{}
}

// TestProbedIsWalk holds walk's first steps taken from the probe
// (probed) to its loop from the root (noProbe) on trees made to fool a
// probe: a path whose labels begin as the edges up from the one found
// do but end before or after them, the edge found longer than its
// label, a path longer than the blocks asked, an edge cut since it was
// kept. Each path is walked to every length; at least one is probed.
func TestProbedIsWalk(t *testing.T) {
	path := func(order uint64, ids ...uint64) []runLabel {
		return appendRunPath(nil, nil, ids, 16, 16, len(ids), false, mix(0x0a11ce, order))
	}
	type tc struct {
		tree  [][]uint64 // inserted in order, whole
		cut   []int      // then the edge beginning with id cut[0] cut at offset cut[1]
		walk  []uint64
		split bool // walk's second label cut in two after its second block
	}
	cases := []tc{
		{tree: [][]uint64{{100, 101, 102, 103, 200, 201}}, walk: []uint64{100, 101, 200, 201, 300}},                            // an ancestor longer than its label
		{tree: [][]uint64{{100, 101, 200, 201}, {100, 101, 102, 103, 200, 201}}, walk: []uint64{100, 101, 102, 103, 200, 201}}, // a label longer than its ancestor
		{tree: [][]uint64{{100, 101, 200, 201, 202, 203}}, walk: []uint64{100, 101, 200, 201, 300}},                            // the edge found longer than its label
		{tree: [][]uint64{{100, 101, 200, 201}}, walk: []uint64{100, 101, 200, 201, 300, 301}},                                 // the conversation's way
		{tree: [][]uint64{{100, 101, 200, 201, 300}}, cut: []int{200, 1}, walk: []uint64{100, 101, 200, 201, 300, 301}},        // cut since
		{tree: [][]uint64{{7, 100, 101, 200, 201}}, walk: []uint64{100, 101, 200, 201, 300}},                                   // not from the root
	}
	cases = append(cases, tc{tree: [][]uint64{{100, 101, 200, 201, 202, 203}}, walk: []uint64{100, 101, 200, 201, 202, 203}, split: true}) // the edge found longer than its label, and the next label going on along it
	probes := 0
	for i, c := range cases {
		p := newRunPool(64, 16, false)
		tr := p.runs
		for j, ids := range c.tree {
			q := path(uint64(j+1), ids...)
			p.insert(q, len(ids), runCursor{})
		}
		if c.cut != nil {
			var e int32
			for k := range tr.edges {
				if tr.edges[k].parent >= 0 && tr.edges[k].lab.c.id == uint64(c.cut[0]) {
					e = int32(k)
				}
			}
			require.NotZero(t, e, "case %d: the edge to cut", i)
			p.splitEdge(e, c.cut[1])
		}
		w := path(99, c.walk...)
		if c.split {
			// The path's run from 200 cut in two labels (appendRunPath
			// makes none so; a walk takes them as one).
			r := w[1]
			r.n = 2
			w = append(w[:1:1], r, runLabel{c: runContent{kind: 1, id: 202}, per: 1, n: 2}, w[2])
		}
		for n := 0; n <= len(c.walk)+1; n++ {
			if _, _, _, ok := tr.probed(w, n); ok {
				probes++
			}
			tr.noProbe = true
			want := tr.walk(w, n, runCursor{})
			spans := slices.Clone(tr.spans)
			tr.noProbe = false
			got := tr.walk(w, n, runCursor{})
			require.Equal(t, want, got, "case %d, %d blocks: the cursor", i, n)
			require.Equal(t, spans, tr.spans, "case %d, %d blocks: the spans", i, n)
		}
	}
	require.Positive(t, probes, "walk took its first steps from the probe")
}

// TestProbedTouchIsTouch holds probedTouch to blockPool through runTwin,
// as TestRunPoolTwin does, on scenarios of conversations among
// runTwin.step's random operations: each turn's prompt its last turn's
// ids and a run of fresh ones (each turn's run an edge of its own under
// the last one's), admitted whatever it finds (runHitsTouch), cached and
// dropped, so that a turn finds its last turn's edges from the probe
// (probedTouch), or part of them (the step's evictions, trims and other
// requests' holds: runHitsTouch's loop). A quarter of the scenarios take
// runHitsTouch's loop throughout (noProbeTouch, the twin).
func TestProbedTouchIsTouch(t *testing.T) {
	touched, found, undone, short, top, looked, kid := 0, 0, 0, 0, 0, 0, 0
	for seed := range uint64(120) {
		rng := rand.New(rand.NewPCG(seed, 57))
		w := newRunTwin(t, 24+rng.IntN(64), rng.IntN(2) == 0, rng.IntN(5) == 0)
		if seed%2 == 0 {
			w.publish(seed%4 == 0)
		}
		w.rp.runs.noProbeTouch = seed%4 == 3
		convs := make([][]uint64, 1+rng.IntN(4))
		// Fresh ids rise from 1,000,000; a new conversation's, one in
		// six, from 1,000, below every id an edge began with since
		// (runTree.topID): its first turn's probe looks its edge's kids
		// up. A turn in eight of a conversation of one turn is sent
		// again (its group's edge has a kid beginning with its ids).
		fresh, low := uint64(1_000_000), uint64(1000)
		for range 300 {
			if rng.IntN(3) == 0 {
				w.step(rng)
				continue
			}
			c := &convs[rng.IntN(len(convs))]
			again := len(*c) > 4 && len(*c) <= 8 && rng.IntN(8) == 0
			next := &fresh
			if len(*c) == 0 || len(*c) > 24 || rng.IntN(8) == 0 { // a new conversation: its group's prefix of 4 ids
				g := uint64(rng.IntN(3)) * 100
				*c = append((*c)[:0], g, g+1, g+2, g+3)
				again = false
				if rng.IntN(6) == 0 {
					next = &low
				}
			}
			for n := 1 + rng.IntN(4); n > 0 && !again; n-- {
				*c = append(*c, *next)
				*next++
			}
			*next += 10 // the next run apart
			units := len(*c)
			r := w.newReq(slices.Clone(*c), 16, units, units+rng.IntN(3))
			w.ops = append(w.ops, fmt.Sprintf("turn(%v)", *c))
			if r.blocks <= w.bp.free() {
				was := w.oneFound
				w.admit(r, r.blocks-rng.IntN(2), r.blocks, true)
				w.check()
				if w.oneFound > was {
					found++
				}
				w.cache(r, len(r.ids)+r.anon)
				w.check()
			}
			w.drop(r)
			w.check()
			i := slices.Index(w.reqs, r)
			w.reqs = slices.Delete(w.reqs, i, i+1)
			if len(w.ops) > 40 {
				w.ops = w.ops[len(w.ops)-40:]
			}
		}
		touched += w.rp.runs.probeTouched
		undone += w.rp.runs.probeUndone
		short += w.rp.runs.probeShort
		top += w.rp.runs.probeTop
		looked += w.rp.runs.probeLooked
		kid += w.rp.runs.probeKid
	}
	t.Logf("turns that found blocks %d, %d of them by probedTouch (%d on the probe's edge's first blocks only); %d probes past an edge with kids (%d of them looked up), %d declined for a kid; %d segments taken and given back (probeUntouch)", found, touched, short, top, looked, kid, undone)
	require.Greater(t, touched, 1_000, "probedTouch answered")
	require.Greater(t, found-touched, 1_000, "runHitsTouch's loop answered")
	require.Greater(t, undone, 500, "probeUntouch gave back")
	require.Greater(t, short, 30, "probedTouch took the probe's edge's first blocks only")
	require.Greater(t, top-looked, 300, "probedTouch passed an edge with kids, the next label's first id past topID")
	require.Greater(t, looked, 100, "probedTouch passed an edge with kids, none beginning with the next label's first block (looked up)")
	require.Greater(t, kid, 30, "probedTouch declined an edge with a kid beginning with the next label's first block")
}

// TestProbedTouchLateSegment holds probedTouch to blockPool where an edge
// on a conversation's way up the tree holds one segment that begins past
// the edge's first block: its blocks released first to last (headFirst,
// each a segment of its own), the queue's head, the edge's first block,
// evicted, the rest of the edge left. Such an edge is found by nothing
// (blockPool's hits stop at the block evicted), and probedTouch must
// leave it to runHitsTouch's loop (its test of the segment's first
// block). Groups of one to three ids, runs of one to three fresh ids,
// evictions of one to a few blocks between turns.
func TestProbedTouchLateSegment(t *testing.T) {
	touched, late := 0, 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 58))
		w := newRunTwin(t, 8+rng.IntN(16), rng.IntN(2) == 0, true)
		if seed%2 == 0 {
			w.publish(seed%4 == 0)
		}
		convs := make([][]uint64, 1+rng.IntN(3))
		fresh := uint64(1000)
		for range 60 {
			if rng.IntN(3) == 0 { // evict a few blocks: a request takes them and lets them go
				r := w.newReq(nil, 16, 0, 4)
				w.take(r, 1+rng.IntN(3))
				w.drop(r)
				w.check()
				w.reqs = slices.DeleteFunc(w.reqs, func(x *twinReq) bool { return x == r })
				continue
			}
			c := &convs[rng.IntN(len(convs))]
			if len(*c) == 0 || len(*c) > 12 || rng.IntN(8) == 0 {
				g := uint64(rng.IntN(3)) * 100
				*c = (*c)[:0]
				for k := range 1 + rng.IntN(3) {
					*c = append(*c, g+uint64(k))
				}
			}
			for n := 1 + rng.IntN(3); n > 0; n-- {
				*c = append(*c, fresh)
				fresh++
			}
			fresh += 10
			units := len(*c)
			r := w.newReq(slices.Clone(*c), 16, units, units+rng.IntN(3)/2)
			w.ops = append(w.ops, fmt.Sprintf("turn(%v)", *c))
			if r.blocks <= w.bp.free() {
				for e := range w.rp.runs.edges {
					if segs := w.rp.runs.edges[e].segs; e > 0 && len(segs) == 1 && w.rp.runs.at[segs[0]].lo > 0 {
						late++ // an edge whose one segment begins past its first block, at a turn
					}
				}
				w.admit(r, r.blocks, r.blocks, true)
				w.check()
				w.cache(r, len(r.ids)+r.anon)
				w.check()
			}
			w.drop(r)
			w.check()
			w.reqs = slices.DeleteFunc(w.reqs, func(x *twinReq) bool { return x == r })
			if len(w.ops) > 40 {
				w.ops = w.ops[len(w.ops)-40:]
			}
		}
		touched += w.rp.runs.probeTouched
	}
	t.Logf("probedTouch answered %d turns; %d edges of one segment begun past their first block at a turn", touched, late)
	require.Positive(t, touched, "probedTouch answered")
	require.Positive(t, late, "an edge's one segment began past its first block")
}
