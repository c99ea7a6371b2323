package sim

import (
	"math/bits"
	"slices"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// lackRoots is what an exact view (ExactView) has learnt of which
// replicas hold no block of a group: a replica asked about a prompt
// whose first prefix id is x, of as many tokens as its blocks or more
// (so that its first block's content is x's alone, engine's runContent
// {kind 1, x, offset 0}), that found none of it (CachedPath 0: the
// prompt's first block is not cached), finds none for any prompt of x
// until a block of that content is cached there, which only a request
// whose first prefix id is x can do, and only while the replica holds it.
// So the answer 0 is kept, by x, when the replica holds no such request,
// and dropped when one is added to it (in): a fleet of 64 behind
// PrefixAffinity asks each of its replicas about every arrival, and most
// hold nothing of the arrival's group. longestOfEach, which asks every
// replica, is the twin (TestCachedPrefixesAreEach, at every arrival;
// TestHeldIsTheLoads, whole runs).
//
// It is kept for a run whose routers read the replicas' caches
// themselves (newLackRoots), of at most maxRootBits replicas.
type lackRoots struct {
	// lack is, by first prefix id, bit i: replica i holds no block of
	// it; an idTable since a Go map (mapaccess1_fast64 81 instructions a
	// request in RunFleet64/workload=prefix/router=PrefixAffinity): 10,998
	// then 10,941 (the budget test). An id without a bit has no entry.
	lack *idTable[uint64]
	held [][]heldRoot // by replica: the first prefix ids of the requests it holds, counted
	maxB int          // the fleet's largest block size
	// count is the requests each replica holds, as in and out count
	// them (replica.held at every arrival), and by the replicas holding
	// each count, a bit each; least and most are the fewest and the most
	// any replica holds: PrefixAffinity's balance test read in O(1)
	// (View.heldRange), not by a loop over the fleet.
	count       []int32
	by          []uint64
	least, most int32

	// top is the largest prefix id given to any replica (in) or warmed
	// into one (newLackRoots), once given says there is one: no replica
	// holds a block of content made of an id past it, nor so any block
	// after such a block on a prompt's path. An arrival's ids from its
	// first past top are fresh: its path is asked cut before them
	// (fresh, cutPaths).
	top   uint64
	given bool
	// The ids of the arrival fresh read last (their first's address and
	// their count) and their largest, which in takes without a scan
	// when that arrival is added (once: lastN is -1 when taken, or when
	// the last arrival's were not read; lastIDs nil when the ids were
	// handed back); guess is where their first run ended (ascend.Two's
	// guess).
	lastIDs *uint64
	lastN   int
	lastMax uint64
	guess   int
	// lastLack is lack's value for that arrival's first id as
	// exactLongest left it, when lackOK (no other request's in since),
	// which in reads for that arrival instead of the map (RunFleet64/
	// workload=prefix/router=PrefixAffinity, SERVESIM_BUDGET_FUNCS:
	// 12,914 then 12,831 instructions a request).
	lastLack uint64
	lackOK   bool
	// one is View.oneSize's answer (lackRoots.oneSize): 1 yes, 2 no, 0
	// not asked yet.
	one int8
	// cuts remembers the paths of recent arrivals cut before their fresh
	// ids (cutPaths), a slot for each first id (cutSlot); paths are the
	// arrival's, one for each block size (prefixChains' chains).
	cuts  []cutMemo
	paths []engine.PrefixPath
}

// cutMemo is the paths of a prompt's ids cut before its fresh ones (a
// run of consecutive ids, from x, cut of them, prefixBlockTokens p, of a
// prompt of input tokens), made and labelled once for the arrivals of
// its group (View.cutPaths), over the memo's own copy of the ids (the
// arrival's may be reused by its source once it ends).
type cutMemo struct {
	x          uint64
	cut, p, in int
	ids        []uint64
	paths      []engine.PrefixPath // by chain
}

// cutSlots is the number of cut paths lackRoots remembers: a workload
// of more groups makes some paths again, as before the memo. 1,024, not
// 256: RunFleet64/workload=prefix/router=PrefixAffinity's 256 groups
// shared slots, and each miss copied a group's ids and made its paths
// again: 10,941 then 10,880 instructions a request (the budget test). A
// slot is 80 bytes, and a memo made keeps its group's ids and paths.
const cutSlots = 1024

// heldRoot counts a replica's requests of one first prefix id.
type heldRoot struct {
	x uint64
	n int32
}

// maxLack bounds the first prefix ids lackRoots remembers: past it, it
// forgets them all (a workload of a prefix a request would grow it
// without end), and asks again.
const maxLack = 1 << 14

// newLackRoots is the run's lackRoots when a router of it reads the
// replicas' caches through ExactView, and nil otherwise.
func newLackRoots(r *runner) *lackRoots {
	if r.cache != nil || !r.fleet || len(r.reps) > maxRootBits {
		return nil
	}
	exact := func(rt Router) bool {
		pa, ok := rt.(PrefixAware)
		if !ok {
			return false
		}
		_, ok = pa.CacheView().(ExactView)
		return ok || pa.CacheView() == nil
	}
	if !exact(r.router) && (r.pd == nil || !exact(r.pd.router)) {
		return nil
	}
	m := &lackRoots{lack: newIDTable[uint64](0), held: make([][]heldRoot, len(r.reps)),
		count: make([]int32, len(r.reps)), by: []uint64{0}}
	for i := range r.reps {
		m.maxB = max(m.maxB, r.reps[i].eng.Config().BlockSize)
		m.by[0] |= 1 << i
	}
	for _, w := range r.cfg.Warm { // every replica holds them (runner.warm)
		if len(w.PrefixHashes) > 0 {
			m.took(slices.Max(w.PrefixHashes))
		}
	}
	return m
}

// added makes room for replica i, which has just joined the fleet,
// holding nothing; past maxRootBits replicas the run keeps none.
func (m *lackRoots) added(r *runner, i int) *lackRoots {
	if i >= maxRootBits {
		return nil
	}
	m.held = append(m.held, nil)
	m.maxB = max(m.maxB, r.reps[i].eng.Config().BlockSize)
	m.count = append(m.count, 0)
	m.by[0] |= 1 << i
	m.least = 0
	// The fleet's chains are found again (runner.addReplica): a memo
	// made before may hold a path too few (cutPaths' memo is found by
	// its key alone, without a test of its paths' count).
	m.cuts = nil
	return m
}

// in notes that replica i took a request of prefix ids prefix.
func (m *lackRoots) in(i int, prefix []uint64) {
	m.up(i)
	if len(prefix) == 0 {
		return
	}
	last := &prefix[0] == m.lastIDs && len(prefix) == m.lastN // the arrival just asked about
	if last {
		m.took(m.lastMax)
		m.lastN = -1 // not lastIDs = nil: an int's store, without a pointer's write barrier
	} else {
		m.took(slices.Max(prefix))
	}
	x := prefix[0]
	b := m.lastLack
	if !last || !m.lackOK {
		b = m.lack.get(x)
	}
	m.lackOK = false
	// i < maxRootBits, as up's: the mask spares the shifts' tests of a
	// count past 63 (RunFleet64/workload=prefix/router=PrefixAffinity
	// 9,314 then 9,305 instructions a request with cutPaths' hit below,
	// the budget test; in 122 then 117).
	if bit := uint64(1) << (uint(i) & 63); b&bit != 0 {
		if b &^= bit; b != 0 {
			m.lack.put(x, b)
		} else {
			m.lack.del(x)
		}
	}
	h := m.held[i]
	for k := range h {
		if h[k].x == x {
			h[k].n++
			return
		}
	}
	m.held[i] = append(h, heldRoot{x: x, n: 1})
}

// out notes that replica i no longer holds a request of prefix ids
// prefix (it finished, or was aborted there).
func (m *lackRoots) out(i int, prefix []uint64) {
	m.down(i)
	if len(prefix) == 0 {
		return
	}
	h := m.held[i]
	for k := range h {
		if h[k].x == prefix[0] {
			if h[k].n--; h[k].n == 0 {
				h[k] = h[len(h)-1]
				m.held[i] = h[:len(h)-1]
			}
			return
		}
	}
	panic("sim: invariant held-root broken: a request left a replica that did not hold it")
}

// took raises top to id.
func (m *lackRoots) took(id uint64) {
	if !m.given || id > m.top {
		m.top, m.given = id, true
	}
}

// fresh is how many of the arrival's first prefix ids a replica may
// hold a block of: the ids before the first past top that its promise
// lets be found at once (its first, or its second run's first: a
// synthetic prompt's own ids, fresh from the workload's counter),
// len(ids) when none is found. It notes their largest for in: found
// by the promise, as the engine finds their runs (the ends of the two
// runs, or the last of rising ids), else by a scan.
func (m *lackRoots) fresh(req *workload.Request) int {
	ids := req.PrefixHashes
	n, cut := len(ids), len(ids)
	var hi uint64
	switch {
	case req.PrefixTwoRuns.Two():
		k, ok := ascend.Two(ids, m.guess)
		if !ok {
			hi = slices.Max(ids)
			break
		}
		m.guess, hi = k, max(ids[k-1], ids[n-1])
		if k < n && ids[k] > m.top {
			cut = k
		}
	case req.PrefixTwoRuns.Rises():
		hi = ids[n-1]
	default:
		hi = slices.Max(ids)
	}
	if !m.given || ids[0] > m.top {
		cut = 0
	}
	m.lastIDs, m.lastN, m.lastMax, m.lackOK = &ids[0], n, hi, false
	return cut
}

// cutPaths makes the arrival's paths (lackRoots.paths), at each block
// size, cut before its id cut (its first run: fresh's cut, 0 < cut <
// len(ids)). Those ids are one run of consecutive ids, so the paths
// promise they rise, which the engine finds in one compare
// (ascend.Rise). A replica holds no block past the cut: the first block
// past it is made of a fresh id, and a block is held only after the
// blocks before it on its path.
//
// The ids, a run from the first, are the same for every arrival of the
// group whose first run is as long: the paths made for the last such
// arrival of the first id's memo slot, labelled at its first question
// (engine.PrefixPath's labels, a function of the ids, the prompt's
// length and the block size alone), are its paths again, neither reset
// nor labelled: BenchmarkRunFleet64/workload=prefix/router=PrefixAffinity
// 12,370 then 12,135 instructions a request (SERVESIM_BUDGET_FUNCS).
// The memo is keyed by what makes the paths: the first id and the cut
// (the ids, a run from it), the units' tokens and the prompt's length.
// longestOfEach, which asks each replica with the arrival's own path,
// made afresh, is the twin (TestCachedPrefixesAreEach;
// TestCutPathsAreEach, groups cut at other lengths at the same first
// id).
func (v *View) cutPaths(m *lackRoots, cut int) {
	k := &v.r.keys
	if k.chains == nil {
		k.init(v.r.reps)
	}
	if m.cuts == nil {
		m.cuts = make([]cutMemo, cutSlots)
	}
	ids, p, in := v.req.PrefixHashes[:cut], v.req.PrefixBlockTokens, v.req.InputTokens
	c := &m.cuts[cutSlot(ids[0])]
	if c.x == ids[0] && c.cut == cut && c.p == p && c.in == in { // a memo made holds a path for each chain: added forgets them all
		m.paths = c.paths
		return
	}
	c.x, c.cut, c.p, c.in = ids[0], cut, p, in
	c.ids = append(c.ids[:0], ids...)
	if len(c.paths) != len(k.chains) {
		c.paths = make([]engine.PrefixPath, len(k.chains))
	}
	for j := range k.chains {
		c.paths[j].ResetPromised(c.ids, p, in, k.chains[j].blockSize, ascend.Rising())
	}
	m.paths = c.paths
}

// cutSlot is the memo slot of a cut path whose first id is x.
func cutSlot(x uint64) int {
	return int((x*keyMul)>>32) % cutSlots
}

// up counts one more request held by replica i. Its bit is 1 << (i &
// 63), i being below maxRootBits: the mask spares the shift's tests of
// a negative count and of one past 63 (up and down, and
// exactOneSize's bits: RunFleet64/workload=prefix/router=PrefixAffinity
// 9,870 then 9,852 instructions a request, the budget test).
func (m *lackRoots) up(i int) {
	c, bit := m.count[i], uint64(1)<<(uint(i)&63)
	m.by[c] &^= bit
	if c++; int(c) == len(m.by) {
		m.by = append(m.by, 0)
	}
	m.by[c] |= bit
	m.count[i] = c
	m.most = max(m.most, c)
	if c-1 == m.least && m.by[c-1] == 0 { // i was the last to hold the fewest
		m.least = c
	}
}

// down counts one request fewer held by replica i.
//
// Its slices are read once, into variables: stores through m's would
// reload them and test their bounds again (RunFleet64/workload=prefix/
// router=PrefixAffinity 9,274 then 9,267 instructions a request, the
// budget test; out 83 then 76). up keeps m's, its append within the
// inliner's budget.
func (m *lackRoots) down(i int) {
	count, by := m.count, m.by
	c, bit := count[i], uint64(1)<<(uint(i)&63)
	by[c] &^= bit
	c--
	by[c] |= bit
	count[i] = c
	m.least = min(m.least, c)
	if c+1 == m.most && by[c+1] == 0 { // i was the last to hold the most
		m.most = c
	}
}

// heldRange is View.heldRange of the whole fleet: the lowest replica
// holding the fewest requests, that count and the most any holds.
func (m *lackRoots) heldRange() (least, lo, hi int) {
	return bits.TrailingZeros64(m.by[m.least]), int(m.least), int(m.most)
}

// holds reports whether replica i holds a request whose first prefix id
// is x.
func (m *lackRoots) holds(i int, x uint64) bool {
	for _, h := range m.held[i] {
		if h.x == x {
			return true
		}
	}
	return false
}

// exactLongest is View.longestCached through ExactView with the run's
// lackRoots m: CachedPrefix of each replica not known to hold nothing of
// the arrival's group, each answer of none kept where it holds. With
// the view's replicas in one block of the fleet, the others are found
// by their bits, not visited (RunFleet64/workload=prefix/
// router=PrefixAffinity: a loop over all 64 cost about 1,100
// instructions an arrival).
func (v *View) exactLongest(m *lackRoots, least int) (best, longest int) {
	req := v.req
	if len(req.PrefixHashes) == 0 || req.PrefixBlockTokens < m.maxB {
		m.lastN = -1 // insurance, no test needs it: in scans its ids, and forgot the last asked's if added; one rejected (no in) leaves them, whose array a later arrival's may reuse
		if len(req.PrefixHashes) == 0 {
			return least, 0 // as longestCached's fallback answers it
		}
		return longestOfEach(v, least)
	}
	best = least
	x := req.PrefixHashes[0]
	cut := m.fresh(req)
	if cut == 0 { // its first id is fresh: no replica holds any of it
		return best, 0
	}
	if cut < len(req.PrefixHashes) {
		v.cutPaths(m, cut)
	}
	lack := m.lack.get(x)
	learnt := lack
	if v.idx != nil {
		for k := range v.n {
			if i := v.at(k); lack>>i&1 == 0 {
				best, longest, learnt = v.askExact(m, x, i, k, cut, best, longest, learnt)
			}
		}
	} else if may := ^lack >> (uint(v.lo) & 63) & (^uint64(0) >> ((64 - uint(v.n)) & 63)); may != 0 && m.oneSize(v) {
		// (The view's bits, 1 << n − 1 for its n of 1 to 64 replicas
		// from lo, below maxRootBits: shifts by counts masked to six
		// bits, without the tests of a count past 63.)
		best, longest, learnt = v.exactOneSize(m, x, may, cut, best, longest, learnt)
	} else {
		for ; may != 0; may &= may - 1 { // by position: replica v.lo+k
			k := bits.TrailingZeros64(may)
			best, longest, learnt = v.askExact(m, x, v.lo+k, k, cut, best, longest, learnt)
		}
	}
	if learnt != lack {
		if m.lack.n >= maxLack {
			m.lack = newIDTable[uint64](0)
		}
		m.lack.put(x, learnt)
	}
	m.lastLack, m.lackOK = learnt, true
	return best, longest
}

// oneSize is v.oneSize(), which does not change in a run, found at its
// first call: its call at every arrival cost RunFleet64/workload=prefix/
// router=PrefixAffinity about 17 instructions a request.
func (m *lackRoots) oneSize(v *View) bool {
	if m.one == 0 {
		m.one = 2
		if v.oneSize() {
			m.one = 1
		}
	}
	return m.one == 1
}

// oneSize reports whether every replica of the fleet has one block size
// (one chain: every replica is asked with the same path) and signals are
// fresh (held counts read from lackRoots): exactOneSize's case.
func (v *View) oneSize() bool {
	k := &v.r.keys
	if k.chains == nil {
		k.init(v.r.reps)
	}
	return k.chainOf == nil && v.r.cfg.Fleet.SignalDelay <= 0
}

// exactOneSize is exactLongest's loop over the replicas may (by
// position in the view: replica v.lo+k) where oneSize holds: askExact's test of a
// replica that need not be asked, and its question, read in the loop
// from the path and its tokens, the same for every replica, and the
// counts, not in a call that finds the path, its tokens and both counts
// anew. In 32,000 requests of RunFleet64/workload=prefix/
// router=PrefixAffinity 1.8 of an arrival's 3.6 calls are so turned
// away: 11,153 then 11,100 instructions a request (the budget test);
// with the question asked in the loop too, 10,998. Its twin is
// askExact (the loop over every replica that may hold the group,
// below), held with it by TestCachedPrefixesAreEach to longestOfEach.
//
// It asks the replicas by the requests they hold, the fewest first (a
// scan of may's few bits for the next), not by position: the best so
// far then holds no more requests than any replica left, and once it
// holds the whole path none of them is asked. RunFleet64/
// workload=prefix/router=PrefixAffinity (the budget test,
// SERVESIM_BUDGET_FUNCS): 10,816 then 10,676 instructions a request
// (runLeading's 150 a request gone from the list's 30): its 64,000
// arrivals ask 80,124 questions, 104,981 by position (a temporary
// count). Asking first the replica the group's last request went to
// would have asked 106,498 (counted with every answer known: the lower
// positions it passes must be asked still). Its twin is exactByPosition
// (noFewestFirst): TestFewestFirstIsByPosition.
func (v *View) exactOneSize(m *lackRoots, x uint64, may uint64, cut, best, longest int, learnt uint64) (int, int, uint64) {
	var p *engine.PrefixPath
	if cut == len(v.req.PrefixHashes) {
		p = v.prefixPath(v.lo)
	} else {
		p = &m.paths[0]
	}
	whole := v.pathTokens(p, v.lo)
	if noFewestFirst {
		return v.exactByPosition(m, x, may, p, whole, best, longest, learnt)
	}
	// By the requests they hold, the fewest first, and by position among
	// equals: once one answers the whole path, every replica after it
	// holds no fewer requests and comes later among equals, so that
	// askExact would not ask it.
	count := m.count[v.lo:]
	for may != 0 {
		k := bits.TrailingZeros64(may)
		least := count[k]
		for q := may & (may - 1); q != 0; q &= q - 1 {
			if j := bits.TrailingZeros64(q); count[j] < least {
				k, least = j, count[j]
			}
		}
		may &^= 1 << (k & 63) // k < 64: the mask spares the shift's test of a count past 63
		i := v.lo + k
		switch a := v.cachedPath(i, p); { // askExact's question
		case a == 0:
			if p.Blocks() > 0 && !m.holds(i, x) {
				learnt |= 1 << (uint(i) & 63) // i < maxRootBits, as up's
			}
		case a > longest || a == longest && least < count[best]:
			best, longest = k, a
		}
		if longest >= whole && longest > 0 {
			break
		}
	}
	return best, longest, learnt
}

// noFewestFirst turns exactOneSize's order off (a test's switch): the
// replicas are asked by position (exactByPosition), its twin.
var noFewestFirst bool

// exactByPosition is exactOneSize's loop over the replicas may by
// position, each asked unless askExact would not ask it.
func (v *View) exactByPosition(m *lackRoots, x uint64, may uint64, p *engine.PrefixPath, whole, best, longest int, learnt uint64) (int, int, uint64) {
	for ; may != 0; may &= may - 1 {
		k := bits.TrailingZeros64(may)
		i := v.lo + k
		if longest > whole || longest == whole && longest > 0 && m.count[i] >= m.count[v.lo+best] {
			continue // askExact would not ask it
		}
		switch c := v.cachedPath(i, p); { // askExact's question
		case c == 0:
			if p.Blocks() > 0 && !m.holds(i, x) {
				learnt |= 1 << i
			}
		case c > longest || c == longest && m.count[i] < m.count[v.lo+best]:
			best, longest = k, c
		}
	}
	return best, longest, learnt
}

// askExact is exactLongest's question to the fleet's replica i, the
// view's k, about a prompt whose first prefix id is x, its ids from cut
// on fresh (lackRoots.fresh): best and longest so far, with learnt, the
// replicas known to hold nothing of x, updated. The path cut before the
// fresh ids gives the same answer for less: the walk stops at the
// cut, where it looked a child up in the replica's tree for the first
// fresh block, and found none: BenchmarkRunFleet64/workload=prefix/
// router=PrefixAffinity 14,414 then 14,109 instructions a request
// (SERVESIM_BUDGET_FUNCS; runLeading 833 then 629, childKey 350 then 186).
func (v *View) askExact(m *lackRoots, x uint64, i, k, cut, best, longest int, learnt uint64) (int, int, uint64) {
	var p *engine.PrefixPath
	switch {
	case cut == len(v.req.PrefixHashes):
		p = v.prefixPath(i)
	case v.r.keys.chainOf == nil:
		p = &m.paths[0]
	default:
		p = &m.paths[v.r.keys.chainOf[i]]
	}
	if whole := v.pathTokens(p, i); longest > whole || longest == whole && longest > 0 && v.heldCounted(m, i, k) >= v.heldCounted(m, v.at(best), best) {
		// Its answer is at most the path's blocks, which the best so
		// far holds already (or more, at another block size), and a tie
		// would not go to it: it holds no fewer requests. It is not
		// asked then, and teaches nothing of the group (its lack bit
		// stays as it was). In BenchmarkRunFleet64/workload=prefix/
		// router=PrefixAffinity's workload (12,800 requests) 1.4 of the
		// 3.9 replicas an arrival that may hold its group are not asked:
		// 12,832 then 12,370 instructions a request
		// (SERVESIM_BUDGET_FUNCS). longestOfEach, which asks them all,
		// is the twin (TestCachedPrefixesAreEach).
		return best, longest, learnt
	}
	c := v.cachedPath(i, p)
	switch {
	case c == 0:
		if p.Blocks() > 0 && !m.holds(i, x) {
			learnt |= 1 << i
		}
	case c > longest || c == longest && v.heldCounted(m, i, k) < v.heldCounted(m, v.at(best), best):
		best, longest = k, c
	}
	return best, longest, learnt
}

// pathTokens is the most a replica's answer to path p can be (its
// blocks), at the fleet's replica i's block size.
func (v *View) pathTokens(p *engine.PrefixPath, i int) int {
	c := 0 // replica i's chain: its block size's
	if of := v.r.keys.chainOf; of != nil {
		c = int(of[i])
	}
	return p.Blocks() * v.r.keys.chains[c].blockSize
}

// heldCounted is held(k), of the fleet's replica i, read from
// lackRoots' counts with fresh signals
// (each replica.held at every arrival, which checkedPrefixes holds
// them to), not from the engine: the tie between replicas that hold a
// group's whole prefix, broken at every arrival (BenchmarkRunFleet64/
// workload=prefix/router=PrefixAffinity, SERVESIM_BUDGET_FUNCS: 13,975 then 13,877
// instructions a request).
func (v *View) heldCounted(m *lackRoots, i, k int) int {
	if v.r.cfg.Fleet.SignalDelay > 0 {
		return v.held(k)
	}
	return int(m.count[i])
}
