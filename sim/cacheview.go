package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/kvchain"
	"github.com/servesim/servesim/internal/lcp"
	"github.com/servesim/servesim/workload"
)

// CacheView is what a prefix-aware router knows of each replica's prefix
// cache (View.CachedPrefix answers through it): the replica's cache
// itself (ExactView, the ideal, and the zero value of every router that
// takes a view), the router's own tree of what it routed (ApproxView, as
// SGLang's cache-aware router keeps it) or the cache as the replica's KV
// events told it, late (EventsView, as llm-d's precise prefix-cache
// scorer reads vLLM's). A view is configuration, a value safe to share
// between runs; what it remembers during a run is the run's.
type CacheView interface {
	Validate() error
	// state is the view's memory during one run (nil: read the replica's
	// cache itself).
	state(r *runner) (cacheState, error)
}

// PrefixAware is a router that reads the replicas' caches
// (View.CachedPrefix) through a CacheView of its choosing: the run keeps
// that view's memory for it. A router that reads View.CachedPrefix
// without saying so reads the replica's own cache (ExactView).
type PrefixAware interface {
	Router
	// CacheView is the view the router reads; nil means ExactView{}.
	CacheView() CacheView
}

// cacheState is a view's memory during a run.
type cacheState interface {
	// cached is how many of req's leading prompt tokens the router
	// believes replica i holds, at the runner's instant.
	cached(r *runner, i int, req *workload.Request) int
	// routed notes that req was sent to replica i.
	routed(r *runner, i int, req *workload.Request)
	// added makes room for replica i, which has just joined the fleet
	// (Fleet.Autoscale), with nothing cached.
	added(r *runner, i int)
}

// newCacheState is the memory of the view the run's router reads.
func newCacheState(r *runner) (cacheState, error) {
	pa, ok := r.router.(PrefixAware)
	if !ok || pa.CacheView() == nil {
		return nil, nil
	}
	return pa.CacheView().state(r)
}

// ExactView reads each replica's prefix cache as it is at the arrival:
// the ideal that no real router has (servesim's only view before issue
// 37). Reading it changes nothing. It has no fields.
type ExactView struct{}

// Validate accepts ExactView: it has nothing to check.
func (ExactView) Validate() error { return nil }

func (ExactView) state(*runner) (cacheState, error) { return nil, nil }

// ApproxView is SGLang's approximate tree (sgl-model-gateway, formerly
// sgl-router: src/policies/cache_aware.rs and tree.rs, read at sglang
// commit b93974f1 and 24ce7f6c of 2026): the router remembers, for each
// worker, the prompts it routed there, never asking the worker what it
// holds, and prunes that memory on a timer. Each router instance keeps
// its own (Fleet.Frontends: arrivals are dealt to the instances in turn,
// and each learns only of the requests it routed), so it believes a
// prefix is cached where the replica has long evicted it, and does not
// know what another instance sent.
//
// What servesim keeps of it:
//   - The tree is keyed by the request's prefix ids (workload.Request's
//     PrefixHashes, each standing for PrefixBlockTokens prompt tokens),
//     chained from the root, not by characters: a node is one id, equal
//     chains are equal text. Only the units of the prompt its ids wholly
//     cover are inserted; the rest of a prompt is the request's own,
//     which no other request can match, and is not kept (SGLang inserts
//     it too, and counts it in the size).
//   - insert (tree.rs Tree::insert): on every routing decision, balanced
//     or not, the request's chain is inserted for the chosen replica, and
//     every node of it is stamped with the instant (its last access).
//   - prefix_match: CachedPrefix(i) is the leading run of the request's
//     chain in replica i's tree, in tokens, rounded down to replica i's
//     KV blocks and capped at all but the block of the last token, as the
//     engine would count a hit; the router's own choice among replicas
//     (PrefixAffinity: the longest, ties to the less loaded) stands for
//     SGLang's pick of a tenant at the deepest node. A match does not
//     stamp the path (SGLang's prefix_match stamps the tenant it picked).
//   - evict_tenant_by_size: every EvictionInterval from the start of the
//     run, each replica's tree larger than MaxTreeSize tokens loses its
//     least recently used leaves (a parent left childless becomes a leaf
//     and may follow) until it is no larger; ties go to the node stamped
//     first.
//
// The zero value is SGLang's defaults: MaxTreeSize 2^26 (67,108,864:
// characters there, tokens here), EvictionInterval 120 s.
type ApproxView struct {
	// MaxTreeSize is the tokens each replica's tree may hold after an
	// eviction (sgl max_tree_size); 0 means DefaultMaxTreeSize.
	MaxTreeSize int
	// EvictionInterval is the time between evictions (sgl
	// eviction_interval_secs); 0 means DefaultEvictionInterval.
	EvictionInterval time.Duration
}

// SGLang's defaults for its approximate tree (CacheAwareConfig:
// max_tree_size 2^26, eviction_interval_secs 120; sgl-model-gateway of
// 2026 logs 60 s).
const (
	DefaultMaxTreeSize      = 1 << 26
	DefaultEvictionInterval = 120 * time.Second
)

// WithDefaults fills the zero fields with SGLang's defaults.
func (a ApproxView) WithDefaults() ApproxView {
	if a.MaxTreeSize == 0 {
		a.MaxTreeSize = DefaultMaxTreeSize
	}
	if a.EvictionInterval == 0 {
		a.EvictionInterval = DefaultEvictionInterval
	}
	return a
}

// Validate refuses a negative size or interval, naming the field.
func (a ApproxView) Validate() error {
	var errs []error
	if a.MaxTreeSize < 0 {
		errs = append(errs, fmt.Errorf("ApproxView.MaxTreeSize must be >= 0 tokens (0 means %d), got %d", DefaultMaxTreeSize, a.MaxTreeSize))
	}
	if a.EvictionInterval < 0 {
		errs = append(errs, fmt.Errorf("ApproxView.EvictionInterval must be >= 0 (0 means %v), got %v", DefaultEvictionInterval, a.EvictionInterval))
	}
	return errors.Join(errs...)
}

func (a ApproxView) state(r *runner) (cacheState, error) {
	a = a.WithDefaults()
	n := len(r.reps)
	s := &approxState{cfg: a, trees: make([][]tree, len(r.signals)), block: make([]int, n), at: make([]treeAt, n)}
	for f := range s.trees {
		s.trees[f] = make([]tree, n)
		for i := range s.trees[f] {
			s.trees[f][i] = newTree()
		}
	}
	if n <= maxRootBits {
		s.roots = make([]*idTable[uint64], len(s.trees))
		for f := range s.roots {
			s.roots[f] = newIDTable[uint64](0)
		}
	}
	s.next = a.EvictionInterval
	return s, nil
}

// added gives every router instance an empty tree for the new replica.
func (s *approxState) added(_ *runner, i int) {
	for f := range s.trees {
		s.trees[f] = append(s.trees[f], newTree())
	}
	s.block = append(s.block, 0)
	s.at = append(s.at, treeAt{})
	s.arrival = 0 // its row may have moved
	if len(s.block) > maxRootBits {
		s.roots = nil // a replica past the bits: every tree is matched
	}
}

// maxRootBits is the most replicas whose trees' first units
// approxState.roots keeps, a bit each.
const maxRootBits = 64

// approxState is each router instance's tree of each replica.
type approxState struct {
	cfg   ApproxView
	trees [][]tree // by frontend, then replica
	block []int    // each replica's block size, -1 with its cache off; 0 until first asked (replicaBlock)
	next  time.Duration
	seq   uint64
	// Evicted counts the tokens evictions removed, over every tree.
	evicted int
	// The arrival asked about (routed + 1; 0 before the first, and after
	// a replica joins), its router instance's trees and the chain of its
	// prompt's units (chainOf), set at its first question: a router asks of every
	// replica in turn, and the arrival, the instance and the evictions
	// due stay the same meanwhile.
	arrival int
	req     *workload.Request // the request asked about (the runner's one, reused)
	row     []tree
	c       chain
	two     ascend.Guess // where the last chain of two runs parted them (chainOf's)
	// roots holds, by router instance, each unit that begins an edge
	// from a tree's root, with the replicas whose trees hold one (bit i:
	// replica i); nil in a fleet of more than maxRootBits replicas.
	// longestEach matches only the trees of the arrival's first unit: a
	// tree without it matches none of the units (TestCachedPrefixesAreEach
	// holds it to cached of each replica, which matches every tree).
	roots   []*idTable[uint64]
	rowRoot *idTable[uint64] // the arrival's instance's roots
	// at holds, by replica, where cachedAt's walk of the arrival's chain
	// stopped in the replica's tree (matchAt), for routed's insertAt;
	// it stands while its arrival is the one asked about and the tree is
	// unchanged: routed's insert voids it, and no eviction comes between
	// (arrive's evictDue runs before the first walk, routed's at the
	// same instant finds none due).
	at []treeAt
}

// treeAt is where a walk of arrival's chain stopped in a tree:
// matchAt's d and e.
type treeAt struct {
	arrival int
	d       int
	e       int32
}

// noInsertAt turns routed's insertAt off (a test's switch): every
// arrival's units are inserted by a walk from the root (insert), its
// twin.
var noInsertAt bool

// tree is one router instance's memory of one replica: SGLang's radix
// tree of prefix ids, a node an id, kept as edges (runs of nodes, each
// but the last the only child of the one before, all stamped by the same
// insert) in one slice, so that a walk compares ids along a run instead
// of looking each node up, and an insert allocates an edge's ids, not a
// node and a map a unit. It holds the same nodes, stamps and size as a
// tree of one node an id (the tests' refTree).
type tree struct {
	edges []edge  // edges[0] is the root: no ids, never evicted
	free  []int32 // edges released by evictions, to reuse
	size  int     // tokens of its nodes
	// top is above no id the tree was given (add): no edge begins with
	// an id past it, so match and insert look no kid up for one (a
	// synthetic prompt's own ids, fresh from the workload's counter,
	// after its group's prefix): Regime/Fleet8PrefixApprox 13,007 then
	// 12,866 instructions a request (SERVESIM_BUDGET_FUNCS; mapaccess1_fast64 367
	// then 217). TestTreeEqualsRefTree holds match and insert to
	// refTree's, which looks every id up.
	top uint64
	// slab is where add cuts its edges' ids from (edgeIDs).
	slab []uint64
}

// edge is a run of the tree's nodes: node j stands for its id j (ids[j],
// or first+j), holds tokens tokens and was last stamped at last, with
// seq+j.
//
// An edge whose n ids are one run of consecutive ids keeps first and n
// alone, ids nil (unless noRunEdges): an arrival's own units (a
// synthetic prompt's fresh ids, after its group's shared ones) hang
// below its group's edge as such a run at every insert, and were cut
// from the slab and copied there (edgeIDs, memmove). A run's ids are
// never read: chain.common compares it by its length (run is n), and
// split and evict cut it into runs. Regime/Fleet8PrefixApprox 10,574 →
// 10,466 instructions a request (the budget test; tree.add 157 → 115,
// memmove 369 → 317). TestTreeEqualsRefTree holds trees of run edges
// and without them to refTree, TestRunEdgesAreIDs whole runs to their
// twin's bytes.
type edge struct {
	ids    []uint64 // nil: first, first+1, …, first+n−1
	first  uint64   // ids[0]
	n      int32    // its ids
	kids   kids     // the edges below its last node, by their first id
	parent int32
	run    int32 // ids' leading run of consecutive ids (ascend.Len), for chain.common
	tokens int
	last   time.Duration
	seq    uint64
}

func newTree() tree { return tree{edges: []edge{{}}} }

// noRunEdges turns run edges off (a test's switch): every edge keeps
// its ids in the slab, as before them, the twin.
var noRunEdges bool

// id is the edge's id j.
func (x *edge) id(j int) uint64 {
	if x.ids == nil {
		return x.first + uint64(j)
	}
	return x.ids[j]
}

// runCommon is lcp.Len of the run of n ids from first and u.
func runCommon(first uint64, n int, u []uint64) int {
	n = min(n, len(u))
	k := 0
	for k < n && u[k] == first+uint64(k) {
		k++
	}
	return k
}

// chain is the units a tree is matched against or given (an arrival's,
// units) and, when they promise at most two runs of consecutive ids
// (workload.Request.PrefixTwoRuns) and pass ascend.Two's check, where
// the first ends: an edge's ids are then compared with them by the runs
// of both (common), not id by id.
type chain struct {
	u   []uint64
	two int // u's first run's length; -1: no promise
}

// anyChain is u with no promise of its runs.
func anyChain(u []uint64) chain { return chain{u: u, two: -1} }

// chainOf is the chain of req's units.
func (s *approxState) chainOf(req *workload.Request) chain {
	u := units(req)
	return chain{u: u, two: s.twoOf(req, u)}
}

// twoOf is the two of chainOf's chain of req's units u.
func (s *approxState) twoOf(req *workload.Request, u []uint64) int {
	if len(u) > 0 && req.PrefixTwoRuns.Two() {
		if k, ok := s.two.Two(u); ok {
			return k
		}
	}
	return -1
}

// runAt is the length of u[d:]'s leading run of consecutive ids; -1
// when the chain promises nothing.
func (c chain) runAt(d int) int {
	switch {
	case c.two < 0:
		return -1
	case d < c.two:
		return c.two - d
	default:
		return len(c.u) - d // the second run goes on to the end
	}
}

// common is lcp.Len(x.ids, c.u[d:]) for an edge x whose first id is
// u[d], from the runs both begin with: they agree as far as the shorter
// run goes, and part there if the other goes on (one id is the run's next
// and the other is not); where both runs end at once, the rest is
// compared. A shared prefix's edge and an arrival of its group are
// compared so in a few instructions, where lcp.Len read 256 ids
// (memeqbody: 1,016 of Regime/Fleet8PrefixApprox's 14,766 a request).
// TestTreeEqualsRefTree holds trees matched and grown so to refTree's,
// TestChainCommonIsLCP holds it to lcp.Len.
func (c chain) common(x *edge, d int) int {
	q := c.runAt(d)
	if q < 0 {
		if x.ids == nil {
			return runCommon(x.first, int(x.n), c.u[d:])
		}
		return lcp.Len(x.ids, c.u[d:])
	}
	// A run edge's run is its n: m ≥ n, or the runs part at m.
	n, m := min(int(x.n), len(c.u)-d), min(int(x.run), q)
	switch {
	case m >= n:
		return n
	case int(x.run) != q:
		return m
	}
	return m + lcp.Len(x.ids[m:], c.u[d+m:])
}

// match is how many leading units of c the tree holds, as a chain from
// the root.
func (t *tree) match(c chain) int {
	d, _ := t.matchAt(c)
	return d
}

// matchAt is match, d, and the edge e at whose end the walk stopped
// (the root: 0), where insert would hang c's units past d or end; -1
// when it stopped inside an edge, which insert would split.
func (t *tree) matchAt(c chain) (d int, e int32) {
	u := c.u
	for d < len(u) && u[d] <= t.top { // past top, no kid begins with it
		k := t.edges[e].kids.get(u[d])
		if k == 0 {
			break
		}
		x := &t.edges[k]
		// An edge the chain's run covers whole (a shared prefix's edge
		// and an arrival of its group: the usual case) is common's
		// first answer, n, without its call (common does not inline):
		// Regime/Fleet8PrefixApprox's chain.common 29 then 0
		// instructions a request, matchAt 78 then 96 (callgrind's
		// marginal count).
		n := min(int(x.n), len(u)-d)
		if q := c.runAt(d); q < 0 || min(int(x.run), q) < n {
			n = c.common(x, d)
		}
		d += n
		if n < int(x.n) {
			return d, -1
		}
		e = k
	}
	return d, e
}

// insert adds the chain u, each of its nodes tokens tokens, and stamps
// every node of it with now, node d (from the root) with seq+d+1
// (tree.rs Tree::insert). It reports whether it hung a new edge from the
// root (on u[0]).
func (t *tree) insert(ch chain, tokens int, now time.Duration, seq uint64) (root bool) {
	u := ch.u
	d, e := 0, int32(0)
	for d < len(u) {
		c := int32(0)
		if u[d] <= t.top { // past top, no kid begins with it
			c = t.edges[e].kids.get(u[d])
		}
		if c == 0 {
			t.add(e, u[d:], ch.runAt(d), tokens, now, seq+uint64(d)+1)
			return e == 0
		}
		j := ch.common(&t.edges[c], d)
		if j < int(t.edges[c].n) {
			c = t.split(c, j)
		}
		x := &t.edges[c]
		x.last, x.seq = now, seq+uint64(d)+1
		d += j
		e = c
	}
	return false
}

// insertAt is insert of the chain ch whose walk from the root, the tree
// unchanged since, matchAt found to stop at the end of edge e, d units
// down: it stamps the edges from e up to the root as insert's walk
// down would, and hangs ch's units past d below e, without walking
// down again (the kids looked up, the runs compared: approxState.routed
// after the router matched the tree it routed to; TestInsertAtIsInsert,
// TestTreeEqualsRefTree).
func (t *tree) insertAt(ch chain, e int32, d int, tokens int, now time.Duration, seq uint64) (root bool) {
	for x, end := e, d; x != 0; {
		p := &t.edges[x]
		end -= int(p.n)
		p.last, p.seq = now, seq+uint64(end)+1
		x = p.parent
	}
	if d < len(ch.u) {
		t.add(e, ch.u[d:], ch.runAt(d), tokens, now, seq+uint64(d)+1)
		return e == 0
	}
	return false
}

// alloc is an edge to fill: a released one, or a new one, a zero edge
// copied in, not reuse's made slice cleared in place: an edge is 104
// bytes, whose clear by the runtime (memclrHasPointers, its write
// barrier's bulk test and memclrNoHeapPointers) took 59 instructions a
// request in Regime/Fleet8PrefixApprox, whose trees grow an edge an
// arrival (cachegrind's marginal count; 9,719 then 9,649, the budget test).
func (t *tree) alloc() int32 {
	if len(t.free) > 0 {
		return reuse(&t.edges, &t.free)
	}
	t.edges = append(t.edges, edge{})
	return int32(len(t.edges) - 1)
}

// add hangs a new edge of ids below edge e; run is their leading run's
// length (-1: unknown, counted).
func (t *tree) add(e int32, ids []uint64, run int, tokens int, now time.Duration, seq uint64) {
	c := t.alloc()
	x := &t.edges[c]
	hi := ids[len(ids)-1]
	if run < 0 {
		run, hi = ascend.Len(ids), slices.Max(ids)
	} else { // a run, and perhaps a second one to the end (chain.runAt)
		hi = max(hi, ids[run-1])
	}
	if run < len(ids) || noRunEdges {
		x.ids = t.edgeIDs(len(ids))
		copy(x.ids, ids)
	}
	x.first, x.n = ids[0], int32(len(ids))
	t.top = max(t.top, hi)
	x.run = int32(run)
	x.parent, x.tokens, x.last, x.seq = e, tokens, now, seq
	t.adopt(e, c)
	t.size += len(ids) * tokens
}

// edgeIDs is room for an edge's n ids, cut from the tree's slab of
// slabIDs ids (or an array of their own, when n is more than half of
// one), its capacity exactly n: an edge's ids are only cut shorter
// (split, evict), never appended to. An allocation an edge (make: not
// slices.Clone, whose growslice cost 71 more) cost
// Regime/Fleet8PrefixApprox 12,866 then 12,700 instructions a request
// (SERVESIM_BUDGET_FUNCS; mallocgc and mallocgcSmallNoscan 235 then 94).
func (t *tree) edgeIDs(n int) []uint64 {
	if n > cap(t.slab)-len(t.slab) {
		if n > slabIDs/2 {
			return make([]uint64, n)
		}
		t.slab = make([]uint64, 0, slabIDs)
	}
	k := len(t.slab)
	t.slab = t.slab[:k+n]
	return t.slab[k : k+n : k+n]
}

// slabIDs is how many ids a tree's slab holds: 4 KiB. A slab is kept
// while an edge cut from it is (an edge evicted or cut shorter leaves
// its ids there): a tree's live edges keep at most 4 KiB each.
const slabIDs = 512

// adopt makes edge c a kid of edge e.
func (t *tree) adopt(e, c int32) {
	t.edges[e].kids.put(t.edges[c].first, c)
}

// split cuts edge c after its first j nodes, which become a new edge in
// its place, and returns that edge; c keeps the rest below it.
func (t *tree) split(c int32, j int) int32 {
	u := t.alloc()
	lo, up := &t.edges[c], &t.edges[u]
	up.parent, up.tokens, up.last, up.seq = lo.parent, lo.tokens, lo.last, lo.seq
	up.first, up.n, up.run = lo.first, int32(j), min(lo.run, int32(j))
	lo.parent, lo.seq, lo.n = u, lo.seq+uint64(j), lo.n-int32(j)
	if lo.ids == nil { // a run: both parts are
		up.ids, lo.first = nil, lo.first+uint64(j)
		lo.run -= int32(j)
	} else {
		up.ids, lo.ids = lo.ids[:j:j], lo.ids[j:]
		lo.first = lo.ids[0]
		if lo.run -= int32(j); lo.run <= 0 { // the run ended within the upper part
			lo.run = int32(ascend.Len(lo.ids))
		}
	}
	t.adopt(up.parent, u) // in c's place: the same first id
	t.adopt(u, c)
	return u
}

// bottom compares the stamps of the last nodes of edges a and b: the
// older first, ties to the one stamped first.
func (t *tree) bottom(a, b int32) int {
	x, y := &t.edges[a], &t.edges[b]
	return cmp.Or(cmp.Compare(x.last, y.last), cmp.Compare(x.seq+uint64(x.n), y.seq+uint64(y.n)))
}

// evictDue runs the evictions due by now. Between arrivals the trees do
// not change, so the evictions of several intervals since the last
// arrival are one.
func (s *approxState) evictDue(now time.Duration) {
	if now >= s.next { // the test alone inlines at every arrival
		s.evict(now)
	}
}

// evict runs evictDue's evictions.
func (s *approxState) evict(now time.Duration) {
	for f := range s.trees {
		for i := range s.trees[f] {
			removed := s.trees[f][i].evict(s.cfg.MaxTreeSize)
			s.evicted += removed
			if removed > 0 && s.roots != nil {
				s.rootsOf(f, i)
			}
		}
	}
	s.next = (now/s.cfg.EvictionInterval + 1) * s.cfg.EvictionInterval
}

// rootsOf sets replica i's bit of router instance f's roots anew, from
// its tree's edges from the root, after an eviction.
func (s *approxState) rootsOf(f, i int) {
	m, bit := s.roots[f], uint64(1)<<i
	var gone []uint64
	for j := range m.slots {
		if x := &m.slots[j]; x.v&bit != 0 {
			if x.v == bit {
				gone = append(gone, x.id)
			} else {
				x.v &^= bit
			}
		}
	}
	for _, k := range gone {
		m.del(k)
	}
	s.trees[f][i].edges[0].kids.each(func(k uint64, _ int32) { m.put(k, m.get(k)|bit) })
}

// units is the prefix ids of req's prompt that its ids wholly cover.
func units(req *workload.Request) []uint64 {
	p := req.PrefixBlockTokens
	if p <= 0 {
		return nil
	}
	return req.PrefixHashes[:min(len(req.PrefixHashes), req.InputTokens/p)]
}

func (s *approxState) cached(r *runner, i int, req *workload.Request) int {
	s.arrive(r, req)
	return s.cachedAt(r, i, req)
}

// cachedAt is cached past the arrival's first question.
func (s *approxState) cachedAt(r *runner, i int, req *workload.Request) int {
	m, e := s.row[i].matchAt(s.c)
	s.at[i] = treeAt{s.arrival, m, e}
	if m > 0 {
		return hitTokens(s.replicaBlock(r, i), m*req.PrefixBlockTokens, req.InputTokens)
	}
	return 0 // a tree that holds none of the units: hitTokens of none
}

// longestEach is View.longestCached of v's replicas (v.r's cache being
// s). In a fleet whose roots s keeps, it matches, of the view's block of
// replicas, only the trees whose root holds the arrival's first unit, in
// order: another tree holds none of the units, and a replica that holds
// none is never longer (a length of 0 beats nothing). Else it matches
// every tree, as longestOfEach asks CachedPrefix of each.
func (s *approxState) longestEach(v *View, least int) (best, longest int) {
	r, req := v.r, v.req
	s.arrive(r, req)
	best = least
	if s.rowRoot == nil || v.idx != nil {
		for k := range v.n {
			if c := s.cachedAt(r, v.at(k), req); c > longest || (c == longest && c > 0 && v.held(k) < v.held(best)) {
				best, longest = k, c
			}
		}
		return best, longest
	}
	if len(s.c.u) == 0 {
		return best, longest
	}
	// The shifts by uints: by ints, each carried Go's test for a
	// negative count (longestEach 99 then 94 instructions a request in
	// Regime/Fleet8PrefixApprox, callgrind's marginal count).
	may := s.rowRoot.get(s.c.u[0]) >> uint(v.lo) & (1<<uint(v.n) - 1) // by position: replica v.lo+k
	for may != 0 {
		k := bits.TrailingZeros64(may)
		may &= may - 1
		if c := s.cachedAt(r, v.lo+k, req); c > longest || (c == longest && c > 0 && v.held(k) < v.held(best)) {
			best, longest = k, c
		}
	}
	return best, longest
}

// arrive sets the arrival asked about to r's, at its first question.
// Its stores are each made once (rowRoot was set nil, then set again),
// the chain's fields in place (chainOf's returned chain was copied in),
// and a lone router instance skips the division: together
// Regime/Fleet8PrefixApprox 9,458 then 9,438 instructions a request
// (the budget test). It writes the chain's two itself, as twoOf would:
// with matchAt's covered edges (matchAt), 9,437 then 9,402.
func (s *approxState) arrive(r *runner, req *workload.Request) {
	if s.arrival != r.routed+1 {
		s.evictDue(r.now)
		f := 0
		if len(s.trees) > 1 { // a lone router instance's is 0: no division
			f = r.routed % len(s.trees)
		}
		var root *idTable[uint64]
		if s.roots != nil {
			root = s.roots[f]
		}
		u := units(req)
		s.arrival, s.req, s.row, s.rowRoot = r.routed+1, req, s.trees[f], root
		s.c.u, s.c.two = u, -1 // twoOf's lines, without its call: twoOf 24 then 0 a request, arrive 83 then 82 (callgrind)
		if len(u) > 0 && req.PrefixTwoRuns.Two() {
			if k, ok := s.two.Two(u); ok {
				s.c.two = k
			}
		}
	}
}

// replicaBlock is replica i's block size, -1 with its prefix cache off,
// read from its configuration once.
func (s *approxState) replicaBlock(r *runner, i int) int {
	if s.block[i] == 0 {
		c := r.reps[i].eng.Config()
		s.block[i] = c.BlockSize
		if c.DisablePrefixCache {
			s.block[i] = -1
		}
	}
	return s.block[i]
}

// hitTokens is what a replica of block size b (-1: its prefix cache off)
// finds of a prompt of input tokens whose first have tokens are cached:
// whole blocks, all but the block of its last token, none with the cache
// off.
func hitTokens(b, have, input int) int {
	if b < 0 || input <= 0 {
		return 0
	}
	return min(have/b, (input-1)/b) * b
}

func (s *approxState) routed(r *runner, i int, req *workload.Request) {
	s.evictDue(r.now)
	if s.arrival != r.routed+1 || req != s.req {
		s.routedUnasked(r, i, req)
		return
	}
	// The chain, the instance's trees and roots arrive kept, when the
	// router asked about this very request (ascend.Two and chainOf 229
	// then 135 instructions a request in
	// BenchmarkRegime/Fleet8PrefixApprox; the request, not its units,
	// compared, and the row and roots kept, not found again: 10,466 then
	// 10,396, the budget test). Where the router matched this tree, the
	// insert goes on from where that walk stopped, not from the root:
	// Regime/Fleet8PrefixApprox 10,760 then 10,666 instructions a request
	// (SERVESIM_BUDGET_FUNCS; insert's walk, kids.get and chain.common).
	t, at, root := &s.row[i], &s.at[i], false
	if at.arrival == s.arrival && at.e >= 0 && !noInsertAt {
		root = t.insertAt(s.c, at.e, at.d, req.PrefixBlockTokens, r.now, s.seq)
	} else {
		root = t.insert(s.c, req.PrefixBlockTokens, r.now, s.seq)
	}
	at.arrival = 0 // the tree changed
	if root && s.rowRoot != nil {
		m, u0 := s.rowRoot, s.c.u[0]
		m.put(u0, m.get(u0)|1<<i)
	}
	s.seq += uint64(len(s.c.u))
}

// routedUnasked is routed of a request the router did not ask about:
// its units inserted from the root of its instance's tree.
func (s *approxState) routedUnasked(r *runner, i int, req *workload.Request) {
	c, f := s.chainOf(req), r.routed%len(s.trees)
	if s.trees[f][i].insert(c, req.PrefixBlockTokens, r.now, s.seq) && s.roots != nil {
		m := s.roots[f]
		m.put(c.u[0], m.get(c.u[0])|1<<i)
	}
	s.at[i].arrival = 0 // the tree changed
	s.seq += uint64(len(c.u))
}

// evict removes the least recently used leaves until the tree holds at
// most max tokens, and returns the tokens it removed. A leaf is the last
// node of an edge without kids; once it is removed, the node above it is
// older than every other leaf (the same instant, stamped just before it),
// so an edge goes bottom up until the tree is small enough or the edge is
// gone, and then its parent edge, left without kids, joins the leaves.
func (t *tree) evict(max int) int {
	if t.size <= max {
		return 0
	}
	var leaves []int32
	for c := 1; c < len(t.edges); c++ {
		if x := &t.edges[c]; x.n > 0 && x.kids.len() == 0 {
			leaves = append(leaves, int32(c))
		}
	}
	slices.SortFunc(leaves, t.bottom)
	removed := 0
	for t.size > max && len(leaves) > 0 {
		c := leaves[0]
		leaves = leaves[1:]
		x := &t.edges[c]
		n := min(int(x.n), (t.size-max+x.tokens-1)/x.tokens)
		t.size -= n * x.tokens
		removed += n * x.tokens
		if n < int(x.n) {
			if x.n -= int32(n); x.ids != nil {
				x.ids = x.ids[:x.n]
			}
			x.run = min(x.run, x.n)
			break
		}
		p := x.parent
		t.edges[p].kids.del(x.first)
		kids := x.kids // empty: its room kept for the edge's next use
		kids.reset()
		*x = edge{kids: kids}
		t.free = append(t.free, c)
		if p != 0 && t.edges[p].kids.len() == 0 {
			i, _ := slices.BinarySearchFunc(leaves, p, t.bottom)
			leaves = slices.Insert(leaves, i, p)
		}
	}
	return removed
}

// EventsView is the cache as the replica's KV events told the router
// (engine.KVEvent: a block stored, a block removed), each arriving Lag
// after it happened, plus a delay drawn uniformly in [0, Jitter) from the
// run's stream "sim/kvevents/<replica index>", in the order they happened (one stream per
// replica, as over vLLM's ZMQ publisher: an event is seen no earlier than
// the one before it). It is llm-d's precise prefix-cache scorer
// (llm-d-kv-cache-manager pkg/kvcache/kvevents/pool.go, read at commit
// 3f720e81: a ZMQ subscriber decodes vLLM's KVEventBatch, and one worker
// a pod, in order, adds the keys of each BlockStored to the index
// (kvblock.Index.Add) and evicts those of each BlockRemoved; the llm-d
// inference scheduler's precise-prefix-cache-scorer reads the index per
// request), with every router instance reading the one index. Where
// llm-d's index keeps a set of pods a key, servesim's counts the copies
// of a key (vLLM caches a second copy of a block computed twice, and the
// key stays cached until its last copy is removed; llm-d forgets it at
// the first removal), so that with no lag it answers as the cache.
//
// A block stored at t is seen from t + Lag on (at t + Lag itself), a
// block removed likewise; an arrival at that instant sees it.
//
// The zero value is events without delay: the cache as it is.
type EventsView struct {
	Lag    time.Duration // every event's delay; 0: none
	Jitter time.Duration // a further delay, uniform in [0, Jitter); 0: none
}

// Validate refuses negative delays, naming the field.
func (e EventsView) Validate() error {
	var errs []error
	if e.Lag < 0 {
		errs = append(errs, fmt.Errorf("EventsView.Lag must be >= 0, got %v", e.Lag))
	}
	if e.Jitter < 0 {
		errs = append(errs, fmt.Errorf("EventsView.Jitter must be >= 0, got %v", e.Jitter))
	}
	return errors.Join(errs...)
}

func (e EventsView) state(r *runner) (cacheState, error) {
	s := &eventsState{cfg: e, reps: make([]*eventIndex, 0, len(r.reps))}
	for i := range r.reps {
		s.added(r, i)
	}
	return s, nil
}

// added gives replica i its index, and its engine the index to publish
// to.
func (s *eventsState) added(r *runner, i int) {
	x := &eventIndex{s: s, noBuckets: r.tw.noForgetBuckets, keepAll: r.tw.keepRemovalWakes, forgetAll: r.tw.forgetUnseen,
		dropEach: r.tw.dropEach || r.tw.forgetUnseen, byName: r.tw.chainsByName}
	switch {
	case r.tw.eventsOwnTables: // a table of its own (tests): no band's
		x.held = ownKeys()
	case i/64 == len(s.tables): // a band of 64 replicas shares a table (maskCounts)
		s.tables = append(s.tables, newMaskCounts())
		fallthrough
	default:
		x.held = replicaKeys{t: s.tables[i/64], bit: 1 << (i % 64)}
	}
	x.held.t.sizeFor(r.reps[i].eng.Config().KVBlocks)
	if s.cfg.Jitter > 0 { // a stream a replica: its events come in its own order, however the run is cut into moves
		x.rand = workload.NewStream(r.cfg.Seed, fmt.Sprintf("sim/kvevents/%d", i))
	}
	s.reps = append(s.reps, x)
	if r.tw.eventsByKeys {
		r.reps[i].eng.PublishKVEvents(keysOnly{x})
		return
	}
	if r.tw.removedReversed {
		r.reps[i].eng.PublishKVEvents(removedReversed{x})
		return
	}
	r.reps[i].eng.PublishKVEvents(x)
}

type eventsState struct {
	cfg    EventsView
	reps   []*eventIndex // pointers: each engine publishes to its own
	tables []*maskCounts // the indexes' copies of each key: replicas 64b to 64b+63 in table b (none with eventsOwnTables)
}

// eventIndex is one replica's index, and the events on their way to it.
type eventIndex struct {
	s         *eventsState
	noBuckets bool        // twins.noForgetBuckets: forgotAt never made
	keepAll   bool        // twins.keepRemovalWakes: a removal's wakes kept too
	forgetAll bool        // twins.forgetUnseen: every key dropped counted forgotten
	dropEach  bool        // twins.dropEach (or forgetUnseen): every key dropped by drop
	byName    bool        // twins.chainsByName: stored runs by name past the first removal too
	rand      *rand.Rand  // its Jitter draws; nil without
	held      replicaKeys // copies of each key the index believes cached
	// The events on their way, in order: their keys, and the runs of
	// them seen at one instant, all stored or all removed (an engine
	// call publishes a step's blocks together), from head on.
	keys    []uint64
	runs    []eventRun
	head    int
	last    time.Duration // when the last event queued is seen
	open    int8          // the kind of the last run, while more may join it: 1 stored, 2 removed; 0: none
	removed int           // removals published (tests)
	forgot  uint64        // keys the index has dropped (held to 0), ever
	// forgotAt is, by bucket of keys (forgetBucket), forgot just after
	// the index last dropped a key of the bucket; nil until it drops one.
	forgotAt *[1 << forgetBits]uint64
	memo     []runMemo // by the memo slot of the chains asked about (prefixChains.cur)
	// The move in flight when longestEach last brought the replica's
	// engine to an instant (its start, replica.moveAt), and a bound on
	// the start of its first step whose blocks were not taken then
	// (mustSync).
	syncMove, syncNext time.Duration
	quiet              func() bool                       // the engine's probe: its plan in flight publishes no event at the steps not taken (KVQuietProbe)
	next               func(time.Duration) time.Duration // the engine's probe: the start of its plan's first step at or after an instant (KVQuietProbe)
	// The stored runs of many keys (a prefix's blocks, an engine's call)
	// queued (segs, their starts in keys, from segHead on) and applied
	// (starts, by their first key, their keys in arena): walk compares
	// a chain with one as memory instead of looking its keys up.
	segs    []storedSeg
	segHead int
	arena   []uint64
	starts  runStarts
	// The stored runs by name queued (KVStoredChain), from chainHead on,
	// and applied without their keys (eventchains.go).
	qchains   []queuedChain
	chainHead int
	lazy      lazyRuns
	chained   int    // blocks stored by name (tests)
	stale     [2]int // walks past a kept run kept before a drop, and those that stamped it again (tests)
	woken     [3]int // runs by name woken by a walk, a kept run, a removal (tests)
	eager     int    // runs by name applied woken (tests)
	unkept    int    // runs by name a removal woke, of minStored keys or more, not kept (tests)
	dropped   int    // times the arena was dropped whole (tests)
	unseen    int    // keys dropped that no walk, memo or kept run took as held, not counted forgotten (tests)
	unseenRun int    // of them, those dropped in one loop (maskCounts.dropUnseen) (tests)
	lastFirst int    // removals queued from a run last first, reversed here (KVRemovedLastFirst) (tests)
	keyed     int    // blocks of runs along consecutive ids taken by their keys (KVStoredChainKeys) (tests)
}

// storedSeg is a run of keys an engine stored in one call, of minStored
// or more: keys[start:start+n] of the index's queue.
type storedSeg struct{ start, n int32 }

// storedRun is an applied storedSeg: its keys arena[off:off+n], all
// held while the index has forgotten forgot keys (none since: a key
// leaves the index only when forgotten).
type storedRun struct {
	off, n int32
	forgot uint64
}

// minStored is the fewest keys of an engine's call that walk compares as
// memory (a prefix's tens or hundreds of blocks); fewer are looked up.
const minStored = 16

// maxArena bounds the keys of applied runs an index keeps (256 KiB);
// past it, they are dropped and walk looks keys up until more are kept.
const maxArena = 1 << 15

// jumpArena is the most keys of the arena grown by doubling (32 KiB);
// past it, the arena is made whole (maxArena).
const jumpArena = 1 << 12

// runStarts is an index's kept runs by their first key, as a
// map[uint64]storedRun whose only deletion is of every entry (clear): in
// a table of its own, by linear probing from the key's hash (key ×
// keyMul, as keyCounts'), at most half full, doubled from 64 slots
// (1.5 KiB) as runs come up to 256 (6 KiB), then made whole at once
// (startSlots). It holds at most maxArena/minStored runs (each of
// minStored keys or more in an arena of maxArena), so whole it is
// 4,096 slots (96 KiB). A run whose first key is 0 (hash 0 marks
// an empty slot) is not kept: walk looks its keys up. The Go map's
// inserts (one for each request's own blocks) and growth cost
// Regime/Fleet8PrefixEvents 665 instructions a request:
// TestInstructionBudget, 19,552 then 18,887. TestRunStartsIsAMap holds it
// to the map.
type runStarts struct {
	slots   []startSlot // by slot; h 0: empty
	n       int         // the runs held
	shift   uint        // 64 − log2(len(slots))
	doubles bool        // doubled past 256 slots too, not made whole (lazyRuns', which may hold more runs)
}

type startSlot struct {
	h   uint64 // the first key's hash
	run storedRun
}

// startSlots is a whole runStarts' slots: twice the runs it may hold.
const startSlots = 2 * maxArena / minStored

// slot is the slot of the run whose first key has hash h, or the empty
// one where it would go.
func (t *runStarts) slot(h uint64) *startSlot {
	mask := uint(len(t.slots) - 1)
	for i := uint(h >> (t.shift & 63)); ; i++ {
		if s := &t.slots[i&mask]; s.h == h || s.h == 0 {
			return s
		}
	}
}

// put keeps run as the one whose first key is key (0: none).
func (t *runStarts) put(key uint64, run storedRun) {
	h := key * keyMul
	if h == 0 {
		return
	}
	if 2*(t.n+1) > len(t.slots) { // the next run may be new: room for it
		t.grow()
	}
	s := t.slot(h)
	if s.h == 0 {
		s.h = h
		t.n++
	}
	s.run = run
}

// grow doubles the table (from 64 slots), or past 256 makes it whole
// (startSlots) unless it doubles, and puts every run in it again.
func (t *runStarts) grow() {
	old := t.slots
	size := max(64, 2*len(old))
	if size > 256 && !t.doubles {
		size = startSlots
	}
	t.slots = make([]startSlot, size)
	t.shift = uint(64 - bits.TrailingZeros(uint(len(t.slots))))
	for _, s := range old {
		if s.h != 0 {
			*t.slot(s.h) = s
		}
	}
}

// get is the run whose first key is key, ok false if none.
func (t *runStarts) get(key uint64) (storedRun, bool) {
	h := key * keyMul
	if t.n == 0 || h == 0 {
		return storedRun{}, false
	}
	s := t.slot(h)
	return s.run, s.h == h
}

// restamp notes that the run whose first key is key (held) has every
// key held while the index has forgotten forgot keys.
func (t *runStarts) restamp(key, forgot uint64) {
	if s := t.slot(key * keyMul); s.h != 0 {
		s.run.forgot = forgot
	}
}

// clear drops every run.
func (t *runStarts) clear() {
	if t.n > 0 {
		clear(t.slots)
		t.n = 0
	}
}

// runMemo is the leading run of an arrival's chain that the index held
// when it was last asked about a chain of the arrival keys' memo slot
// (prefixChains.memo): the slot's chain at generation gen. Until the
// index forgets a key, it holds all it held: the slot's next chain, which
// shares its known leading keys with this one, holds them as far as the
// run goes, and only the rest is looked up.
type runMemo struct {
	chain  *chainMemo
	gen    uint64
	run    int
	forgot uint64 // the index's forgot then
}

// eventRun is a run of queued events seen at one instant, all stored or
// all removed: eventIndex.keys from start to the next run's start (or
// the end).
type eventRun struct {
	seen  time.Duration
	start int
	gone  bool
}

// KVEvent queues an event of the replica's engine (engine.KVEventSink).
func (x *eventIndex) KVEvent(ev engine.KVEvent) {
	seen := ev.At + x.s.cfg.Lag
	if x.rand != nil {
		seen += time.Duration(x.rand.Int64N(int64(x.s.cfg.Jitter)))
	}
	x.enqueue(seen, ev.Removed, 1)
	x.keys = append(x.keys, ev.Key)
}

// KVEvents queues a run of events of the replica's engine, made at one
// instant (engine.KVEventRunSink): without jitter, seen at one instant,
// their keys queued at once; with it, each event with its own draw.
func (x *eventIndex) KVEvents(at time.Duration, keys []uint64, removed bool) {
	if x.rand != nil || len(keys) == 0 { // no run at all for none: it would move last
		for _, k := range keys {
			x.KVEvent(engine.KVEvent{At: at, Key: k, Removed: removed})
		}
		return
	}
	x.enqueue(at+x.s.cfg.Lag, removed, len(keys))
	if !removed && len(keys) >= minStored && len(keys) <= maxArena {
		x.segs = append(x.segs, storedSeg{start: int32(len(x.keys)), n: int32(len(keys))})
	}
	x.keys = append(x.keys, keys...)
}

// KVRemovedLastFirst queues an eviction's run of removals, made at one
// instant, of keys last first (the engine's kvRemovedSink): KVEvents of
// keys reversed, reversed as they are queued, not by the engine into a
// buffer first. TestRemovedLastFirstIsKVEvents holds the queue to
// KVEvents'; twins.removedReversed turns it off (removedReversed):
// TestRemovalsLastFirstAreReversed.
func (x *eventIndex) KVRemovedLastFirst(at time.Duration, keys []uint64) {
	if x.rand != nil || len(keys) == 0 {
		for i := len(keys) - 1; i >= 0; i-- {
			x.KVEvent(engine.KVEvent{At: at, Key: keys[i], Removed: true})
		}
		return
	}
	x.enqueue(at+x.s.cfg.Lag, true, len(keys))
	x.lastFirst += len(keys)
	// Copied in reverse into their room, not appended and then
	// reversed (memmove's call, then a swap a pair: slices.Reverse) for
	// an eviction's 4.7 keys a call: Regime/Fleet8PrefixEvents past its
	// pools' fill, TestInstructionBudget's marginal count, 18,757 then
	// 18,653 instructions a request (KVRemovedLastFirst 461 and its
	// memmove about 157, then 472).
	n := len(x.keys)
	if n+len(keys) > cap(x.keys) {
		x.keys = slices.Grow(x.keys, len(keys))
	}
	x.keys = x.keys[:n+len(keys)]
	dst := x.keys[n:]
	for i, j := 0, len(keys)-1; j >= 0; i, j = i+1, j-1 {
		dst[i] = keys[j]
	}
}

// removedReversed is an index whose engine reverses an eviction's
// removals before it publishes them (twins.removedReversed): it takes
// everything but KVRemovedLastFirst.
type removedReversed struct{ x *eventIndex }

func (r removedReversed) KVEvent(ev engine.KVEvent) { r.x.KVEvent(ev) }

func (r removedReversed) KVEvents(at time.Duration, keys []uint64, removed bool) {
	r.x.KVEvents(at, keys, removed)
}

func (r removedReversed) KVStoredChain(at time.Duration, c kvchain.Run) { r.x.KVStoredChain(at, c) }

func (r removedReversed) ChainKeys() bool { return r.x.ChainKeys() }

func (r removedReversed) KVStoredChainKeys(at time.Duration, keys []uint64) {
	r.x.KVStoredChainKeys(at, keys)
}

func (r removedReversed) KVQuietProbe(quiet func() bool, next func(time.Duration) time.Duration) {
	r.x.KVQuietProbe(quiet, next)
}

// enqueue readies the queue for n > 0 events seen from seen on (or from
// the last one queued, if later), all stored or all removed: their keys
// join the run of the events before them when it is seen at the same
// instant, is of the same kind and is not yet applied, else a new run.
func (x *eventIndex) enqueue(seen time.Duration, removed bool, n int) {
	if seen > x.last {
		x.last, x.open = seen, 0
	}
	kind := int8(1)
	if removed {
		x.removed += n
		kind = 2
	}
	if x.open != kind {
		x.runs = append(x.runs, eventRun{seen: x.last, start: len(x.keys), gone: removed})
		x.open = kind
	}
}

// catchUp applies the events seen by now, a run at a time; once all are
// applied, the queue starts again from its beginning.
func (x *eventIndex) catchUp(now time.Duration) {
	if x.head < len(x.runs) && x.runs[x.head].seen <= now { // the test alone inlines at every question
		x.apply(now)
	}
}

// apply is catchUp past its first test.
func (x *eventIndex) apply(now time.Duration) {
	for x.head < len(x.runs) && x.runs[x.head].seen <= now {
		run, end := x.runs[x.head], len(x.keys)
		if x.head++; x.head < len(x.runs) {
			end = x.runs[x.head].start
		}
		if !run.gone {
			// A run of runs by name alone has no keys (a request's own
			// blocks, the most of the runs stored): store would add none
			// and keep none, its call and add's left out
			// (Regime/Fleet8PrefixEvents: store, add and addSome's entry,
			// about 90 instructions a request).
			if run.start < end {
				x.store(run.start, end)
			}
			if x.chainHead < len(x.qchains) {
				x.storeChains(x.head - 1)
			}
			continue
		}
		if x.lazy.live > 0 { // the removals name keys: every one computed first
			x.wakeAll()
		}
		for keys := x.keys[run.start:end]; len(keys) > 0; {
			if !x.dropEach { // its last copies unseen, in one loop
				n := x.held.dropUnseen(keys)
				x.unseen += n
				x.unseenRun += n
				if keys = keys[n:]; len(keys) == 0 {
					break
				}
			}
			k := keys[0]
			keys = keys[1:]
			if gone, seen := x.held.drop(k); gone && (seen || x.forgetAll) {
				x.forgot++
				x.noteForgot(k)
			} else if gone {
				x.unseen++
			}
		}
	}
	if x.head > 0 && x.head == len(x.runs) { // the last run too: none is open
		x.keys, x.runs, x.head, x.open = x.keys[:0], x.runs[:0], 0, 0
		x.segs, x.segHead = x.segs[:0], 0
		x.qchains, x.chainHead = x.qchains[:0], 0
	}
}

// store applies the stored run of keys[start:end], and keeps its
// engine calls of many keys for walk.
func (x *eventIndex) store(start, end int) {
	seg := x.segHead
	for x.segHead < len(x.segs) && int(x.segs[x.segHead].start) < end { // kept first: no key is forgotten meanwhile
		sg := x.segs[x.segHead]
		x.keep(x.keys[sg.start : sg.start+sg.n])
		x.segHead++
	}
	again := x.held.t.repeats
	// TestEventQueueIsEventByEvent holds the copies to an event-by-event
	// twin. A key held already may begin a lazy run (wakeIn).
	x.held.add(x.keys[start:end])
	for _, sg := range x.segs[seg:x.segHead] { // kept: held while none is forgotten (drop)
		x.held.see(x.keys[sg.start : sg.start+sg.n])
	}
	if x.held.t.repeats != again && x.lazy.live > 0 {
		for _, sg := range x.segs[seg:x.segHead] {
			x.wakeIn(x.keys[sg.start : sg.start+sg.n])
		}
	}
	// The lazy runs a kept run's keys begin, woken once all are held.
	if len(x.lazy.woken) > 0 {
		x.drain()
	}
}

// keep keeps an applied stored run of keys, by its first key, for walk.
func (x *eventIndex) keep(keys []uint64) {
	if n := len(x.arena) + len(keys); n > cap(x.arena) && n > jumpArena && n <= maxArena {
		// Past jumpArena keys, whole at once, as it fills in a long run
		// (256 KiB): Regime/Fleet8PrefixEvents, TestInstructionBudget,
		// 18,396 then 18,192 instructions a request, its doublings gone.
		x.arena = append(make([]uint64, 0, maxArena), x.arena...)
	}
	if len(x.arena)+len(keys) > maxArena {
		x.arena = x.arena[:0]
		x.starts.clear()
		x.dropped++
	}
	x.starts.put(keys[0], storedRun{off: int32(len(x.arena)), n: int32(len(keys)), forgot: x.forgot})
	x.arena = append(x.arena, keys...)
}

// wakeIn notes the lazy runs that keys of a kept run begin, to be woken
// (drain): walk compares a kept run as memory (eventchains.go). A lazy
// run's first key is held while it is lazy (storeChain holds it, and a
// removal wakes every run first), so only a key the index held already
// when the run's keys were added may begin one: its callers scan the
// keys only when adding them met such a key (maskCounts.repeats), not at
// every keep: Regime/Fleet8PrefixEvents, TestInstructionBudget, 15,017
// then 14,751 instructions a request (SERVESIM_BUDGET_FUNCS: keep 223,
// then below the 40 largest), the runs woken the same (the counts of
// TestWalkIsEachOverChains and TestChainsAreKeys).
func (x *eventIndex) wakeIn(keys []uint64) {
	l := &x.lazy
	for _, k := range keys {
		if l.maybe(k) {
			x.queueWake(k, 1)
		}
	}
}

func (s *eventsState) cached(r *runner, i int, _ *workload.Request) int {
	return s.cachedOf(r, i)
}

// longestEach is View.longestCached of v's replicas (v.r's cache being
// s): cachedOf each replica in turn, in one loop, without asking
// CachedPrefix of each through the view and the cacheState (its twin,
// longestOfEach: TestCachedPrefixesAreEach).
//
// What is the arrival's, not the replica's, is found once: its chains
// (chainOf, computed before the first replica's SyncTo rather than
// after: they read the request and the fleet's key memo, whose keys are
// the same whenever computed) and their memo slot. A replica whose
// index does not hold the chain's first key (most of a fleet's, under
// PrefixAffinity) holds a run of none: runIn's answer, found by its
// walk's first lookup, without the call and the upkeep of the memo (a
// memo left unwritten is one runIn does not use, runMemo.gen). Every
// replica is brought to now first; then, with one chain, the replicas
// that hold its first key are read from the table their indexes share
// in one lookup (maskCounts.mask), and only those walk: a replica
// changes only its own bit and its own index, so that the answers are
// those of each replica in turn. Regime/Fleet8PrefixEvents,
// TestInstructionBudget, 15,376 then 15,017 instructions a request
// (SERVESIM_BUDGET_FUNCS: longestEach 869 then 572 against the tables
// a replica, addSome 380 then 427).
func (s *eventsState) longestEach(v *View, least int) (best, longest int) {
	best = least
	if v.n == 0 {
		return best, longest
	}
	r, k := v.r, &v.r.keys
	r.view.chainOf(v.at(0)) // the arrival's chains
	var cm *chainMemo
	if k.cur >= 0 {
		cm = &k.memo[k.cur]
	}
	// The fleet's one chain's first key, when it has one chain (one
	// block size) and the key is known: looked up at each replica
	// without finding the chain again (Regime/Fleet8PrefixEvents,
	// cachegrind: longestEach 623 instructions a request so, 672 with
	// the chain found at each replica).
	one, key0 := cm != nil && k.chainOf == nil && len(k.chains[0].keys) > 0, uint64(0)
	if one {
		key0 = k.chains[0].keys[0]
	}
	// A replica's SyncTo is left out while none of the events it would
	// publish is seen by now (mustSync): Regime/Fleet8PrefixEvents,
	// TestInstructionBudget, 17,229 then 17,036 instructions a request
	// (engine's syncTo 253 then 119, the steps' takes done in fewer
	// calls; longestEach 623 then 752), six syncs in ten left out.
	by := r.now - s.cfg.Lag // a step's events are seen by now if it started by then
	// A block of the fleet (no routable list) ranges over its indexes
	// and replicas, not looking each up by position (v.at) with its
	// bounds checks: Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's
	// marginal count, servesim's own 12,778 then 12,722 instructions a
	// request (longestEach 468 then 412).
	if v.idx == nil {
		xs := s.reps[v.lo : v.lo+v.n]
		reps := r.reps[v.lo : v.lo+v.n]
		reps = reps[:len(xs)]
		for i, x := range xs {
			if rep := &reps[i]; x.mustSync(rep, by) && x.loud(rep, by) {
				rep.run().SyncTo(r.now)
				x.synced(rep, r.now)
			}
			x.catchUp(r.now)
		}
	} else {
		for i := range v.n {
			j := v.at(i)
			x := s.reps[j]
			if rep := &r.reps[j]; x.mustSync(rep, by) && x.loud(rep, by) {
				rep.run().SyncTo(r.now)
				x.synced(rep, r.now)
			}
			x.catchUp(r.now)
		}
	}
	if cm == nil {
		return best, longest // no unit, no key: every replica holds none
	}
	// The replicas holding the chain's first key, in one lookup of the
	// table their indexes share (maskCounts), when the view's replicas
	// lie in one table's band; the others hold a run of none.
	if lo := v.lo % 64; one && v.idx == nil && lo+v.n <= 64 && s.tables != nil {
		may := s.tables[v.lo/64].mask(key0) >> lo & (1<<v.n - 1)
		for may != 0 {
			i := bits.TrailingZeros64(may)
			may &= may - 1
			c := s.reps[v.lo+i].runIn(k, 0, cm) * k.chains[0].blockSize
			if c > longest || (c == longest && c > 0 && v.held(i) < v.held(best)) {
				best, longest = i, c
			}
		}
		return best, longest
	}
	for i := range v.n {
		j := v.at(i)
		x, ch := s.reps[j], 0
		if k.chainOf != nil {
			ch = int(k.chainOf[j])
		}
		if keys := k.chains[ch].keys; len(keys) > 0 && !x.held.has(keys[0]) {
			continue // runIn's answer, 0 (walk's first lookup), without its memo's upkeep
		}
		c := x.runIn(k, ch, cm) * k.chains[ch].blockSize
		if c > longest || (c == longest && c > 0 && v.held(i) < v.held(best)) {
			best, longest = i, c
		}
	}
	return best, longest
}

// mustSync reports whether replica rep's engine may hold events, not
// yet published, that its index would see now, by being now − Lag: those
// of the steps of its move in flight that started before now and whose
// blocks it has not taken (SyncTo takes them, publishing their events).
// An event made by a step is stamped with its start and seen Lag after
// it at the earliest (seen no earlier than the one before, plus
// Jitter's draw), so while the first step not taken starts after by,
// none of them is seen by now, and the SyncTo is left to a later
// question or to the engine's next call, which publishes the same
// events in the same order (they are queued in the order made, each
// with its own stamp and draw). The first step not taken starts no
// earlier than the move (rep.moveAt: a move's steps start at or after
// it, and the moves before it ended with every event published) nor,
// in the move synced last, than the first step start at or after that
// sync (synced). cachedOf, which syncs at every question, is the slow
// twin: TestCachedPrefixesAreEach holds longestEach to it at every
// arrival, before the twin syncs.
func (x *eventIndex) mustSync(rep *replica, by time.Duration) bool {
	next := rep.moveAt
	if x.syncMove == next {
		next = x.syncNext
	}
	return next <= by
}

// loud is asked where mustSync would sync replica rep: whether the engine's plan in flight
// may publish an event at its steps not taken (its probe, quietRun, or
// true without one). Quiet now, it is quiet to the move's end: the
// move's takes shrink the never-cached run at the free queue's head by
// what they take, and nothing else takes from it. That is noted as a
// sync past the move's end, unless the move starts now: a plan that
// replaces it (cut at its start) starts at the same instant.
// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's marginal count,
// 14,576 then 14,280 instructions a request (SyncTo and its takes, about
// 470, gone for quietRun 83 and loud 43; 14,505 with the probe inside
// mustSync, which no longer inlined in longestEach's loop).
func (x *eventIndex) loud(rep *replica, by time.Duration) bool {
	if x.quiet == nil || !x.quiet() {
		return true
	}
	if by+x.s.cfg.Lag > rep.moveAt {
		x.syncMove, x.syncNext = rep.moveAt, math.MaxInt64
	}
	return false
}

// KVQuietProbe keeps the replica's engine's probe of its plan in
// flight (engine's kvQuietSink): while it reports the steps whose
// blocks are not taken quiet, mustSync leaves the SyncTo out, which
// would publish nothing.
func (x *eventIndex) KVQuietProbe(quiet func() bool, next func(time.Duration) time.Duration) {
	x.quiet, x.next = quiet, next
}

// synced notes that replica rep's engine was brought to now (SyncTo):
// the steps of its move in flight that start before now are taken, so
// the first step not taken starts at the first step start at or after
// now.
func (x *eventIndex) synced(rep *replica, now time.Duration) {
	x.syncMove, x.syncNext = rep.moveAt, now // without the probe, a bound: no step not taken starts before now
	if x.next != nil {
		x.syncNext = x.next(now)
	}
}

// cachedOf is cached of the arrival, at replica i.
func (s *eventsState) cachedOf(r *runner, i int) int {
	rep := &r.reps[i]
	rep.run().SyncTo(r.now) // the events of the steps started by now
	x := s.reps[i]
	x.catchUp(r.now)
	// The request's keys, computed once per arrival for the whole fleet,
	// as far as some replica's index holds them (View.chainOf; req is the
	// view's request). A replica with its cache off publishes no event,
	// so none of them is held there.
	c := r.view.chainOf(i)
	return x.run(&r.keys, c) * r.keys.chains[c].blockSize // the replica's block size, not its Config copied
}

// run is the leading run of the arrival's chain c (k's, the replica's
// block size) that the index holds, looked up from where the memo of the
// chains' slot shows it to hold them (runMemo), the chain computed as
// far as the lookup goes (extend).
func (x *eventIndex) run(k *prefixChains, c int) int {
	if k.cur < 0 {
		return 0 // no unit, no key
	}
	return x.runIn(k, c, &k.memo[k.cur])
}

// runIn is run of an arrival with units, cm its chains' memo slot
// (k.memo[k.cur]).
func (x *eventIndex) runIn(k *prefixChains, c int, cm *chainMemo) int {
	if x.memo == nil {
		x.memo = make([]runMemo, memoSlots)
	}
	m := &x.memo[k.cur]
	n := 0
	if m.chain == cm && m.forgot == x.forgot {
		switch m.gen {
		case cm.gen: // the same chain, asked again
			n = m.run
		case cm.gen - 1: // the chain before in the slot
			n = min(m.run, k.chains[c].known)
		}
	}
	// walk is called only where the index holds keys[n] (its first
	// lookup), else its answer is n: an arrival of a group an index
	// holds finds the memo covering the chain computed (the group's
	// run), and then the next key (nextKey), the prompt's own, not held.
	// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's marginal count:
	// servesim's own 12,904 then 12,879 instructions a request (runIn and
	// walk 122 and 112 then 169 and 40, walk's two calls an arrival gone).
	ch := &k.chains[c]
	for {
		if n < len(ch.keys) && x.held.has(ch.keys[n]) {
			n = x.walk(ch.keys, n)
		}
		if n < len(ch.keys) || ch.full {
			break
		}
		step := chainStep
		if n == k.asc*k.p/ch.blockSize { // the first key past the prompt's run of ids (extend's first): its own, seldom held
			if k.nextKey(c) {
				continue
			}
			step = 1
		}
		k.extend(c, n+step)
	}
	*m = runMemo{chain: cm, gen: cm.gen, run: n, forgot: x.forgot}
	return n
}

// nextKey computes chain c's next key alone, as extend(c, len+1)
// would, and reports whether it did: with a block a unit (p = b), when
// the chain holds a key, the prompt a unit for the next block and a
// token past it (then extend computes that one key and leaves the chain
// not full). runIn asks it for the first key past the prompt's run of
// ids, every arrival whose group an index holds: one mix of the last key
// and the unit, without extend's limits and appendShared's setup:
// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's marginal count,
// 14,773 then 14,576 instructions a request.
// TestPrefixChainsEqualPrefixKeys holds it to extend.
func (k *prefixChains) nextKey(c int) bool {
	ch := &k.chains[c]
	n, b := len(ch.keys), ch.blockSize
	if k.p != b || n == 0 || n >= len(k.prefix) || (n+1)*b+1 >= k.input {
		return false
	}
	ch.keys = append(ch.keys, kvchain.Next(ch.keys[n-1], k.prefix[n]))
	k.memo[k.cur].keys[c] = ch.keys
	return true
}

// extended reports whether extend(c, len) would leave chain c as it is
// (its keys, and not full): with a block a unit (p = b), when its keys
// cover the prompt's run of ids (runKeys adds none), lie within its
// units, and the prompt goes on a token past them (extend's cut is
// shorter than the prompt). compute asks it at every arrival, whose
// chain its memo slot holds as far as the group's prefix goes:
// Regime/Fleet8PrefixEvents, SERVESIM_BUDGET_FUNCS's marginal count,
// 14,280 then 14,144 instructions a request. TestPrefixChainsEqualPrefixKeys
// holds it to extend.
func (k *prefixChains) extended(c int) bool {
	ch := &k.chains[c]
	n, b := len(ch.keys), ch.blockSize
	return k.p == b && n >= k.asc && n <= len(k.prefix) && n*b+1 < k.input
}

// chainStep is the keys run computes at a time past those the index
// held: an index holds a prompt's shared prefix and seldom more, so the
// rest of the chain, the prompt's own units, is seldom computed. Past
// the prompt's run of ids numbered on from its first (a shared prefix,
// whose keys extend takes whole), the first key is computed alone.
const chainStep = 8

// walk is the leading run of keys that the index holds, keys[:from]
// known held. Where the first key looked up, or the first past a run
// found so, begins a run an engine stored in one call (kept), and the
// index has forgotten nothing since, the keys that agree with the run
// are held: compared as memory (lcp.Len), not looked up a key at a time.
// walkEach (every key looked up), with from 0 and the whole chain, is
// walk's and run's slow twin.
func (x *eventIndex) walk(keys []uint64, from int) int {
	n, try := from, x.starts.n > 0
	for n < len(keys) && x.held.has(keys[n]) {
		if x.lazy.live > 0 && x.lazy.maybe(keys[n]) { // a lazy run it begins is woken before its interior is looked up (eventchains.go)
			x.wakeKey(keys[n])
		}
		if try {
			if r, ok := x.starts.get(keys[n]); ok {
				if r.forgot == x.forgot {
					n += 1 + lcp.Len(keys[n+1:], x.arena[r.off+1:r.off+r.n])
					continue
				}
				if x.forgotAt != nil {
					var whole bool
					if n, whole = x.walkStale(keys, n, r); whole {
						continue
					}
					return n
				}
			}
			try = false
		}
		n++
	}
	return n
}

// The index drops a key (forgot) when its engine evicts the key's last
// copy, and a kept run whose keys were all held when kept (its forgot,
// storedRun) is known held whole only while the index drops none: once
// a replica's pool is full it drops keys at every eviction, of other
// prompts mostly, and walk looked every key of a group's prefix up
// (Regime/Fleet8PrefixEvents at 6,400 requests, the pools full from
// about the 3,500th: walk 13,276 instructions a request, of 42,137,
// callgrind's count between 3,200 and 6,400 requests). So the index
// notes, by bucket of keys (forgetBucket, the top bits of the key, a
// hash), the forgot count just after it last dropped one of the
// bucket's keys (forgotAt): a key of a kept run whose bucket has dropped
// none since the run was kept (forgotAt <= its forgot) was held then
// and is still (a key leaves the index only when dropped), and begins
// no lazy run: a run by name whose first key is held comes woken
// (storeChain), and those a kept run's keys began were woken when it
// was kept (wakeIn). walkStale looks up only the others, waking the
// lazy run one may begin, and stamps the run with the index's forgot
// when it found every key held: the next walk before another drop
// compares it as memory again. 42,137 then 36,482 instructions a
// request (walk 1,003 and walkStale 5,665); at the budget's 1,600
// requests, where no key is dropped, the same (TestInstructionBudget:
// servesim's own 11,872 and 11,874). With 14 bits, 128 KiB an index:
// 35,490. twins.noForgetBuckets turns it off, every key looked up as
// before (the slow twin): TestForgetBucketsAreEach.

// forgetBits is the log2 of the buckets of forgotAt (32 KiB an index).
const forgetBits = 12

// forgetBucket is key's bucket in forgotAt.
func forgetBucket(key uint64) uint64 { return key >> (64 - forgetBits) }

// noteForgot notes that the index dropped key, forgot counting it.
func (x *eventIndex) noteForgot(key uint64) {
	if x.forgotAt == nil {
		if x.noBuckets { // the twin: no buckets, walk looks every key up
			return
		}
		x.forgotAt = new([1 << forgetBits]uint64)
	}
	x.forgotAt[forgetBucket(key)] = x.forgot
}

// walkStale is walk past keys[n], held, that begins the kept run r,
// kept before the index last dropped a key: the keys that agree with
// the run's are held but those of a bucket that dropped a key since,
// which are looked up, each waking the lazy run it may begin as walk
// does. It returns where the walk goes on and whether the run's keys
// that agree were all held (then walk goes on past them); the run is
// stamped held as of now when every key of it agreed and was held.
func (x *eventIndex) walkStale(keys []uint64, n int, r storedRun) (int, bool) {
	m := lcp.Len(keys[n+1:], x.arena[r.off+1:r.off+r.n]) // before any wake, which may drop the arena
	x.stale[0]++
	woke := false
	// An array's bucket by the key's top bits, within it, and the keys
	// ranged over: no bounds check a key. Regime/Fleet8PrefixEvents at
	// 6,400 requests, TestInstructionBudget's marginal count between
	// 3,200 and 6,400: walkStale 5,668 then 3,879 instructions a request,
	// of 33,992 then 32,151, the loop over a slice's buckets (forgotAt
	// []uint64) and keys[j] by index before.
	fa := x.forgotAt
	for j, k := range keys[n+1 : n+1+m] {
		if fa[forgetBucket(k)] <= r.forgot {
			continue // held since the run was kept
		}
		if !x.held.has(k) {
			return n + 1 + j, false
		}
		if x.lazy.live > 0 && x.lazy.maybe(k) {
			x.wakeKey(k)
			woke = true
		}
	}
	if !woke && m == int(r.n)-1 {
		x.starts.restamp(keys[n], x.forgot)
		x.stale[1]++
	}
	return n + 1 + m, true
}

func (s *eventsState) routed(*runner, int, *workload.Request) {}
