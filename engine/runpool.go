package engine

import (
	"slices"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/kvchain"
)

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
// not one a block. No key is computed but those KV events name, once an
// edge (runTree.key). The fuzz target FuzzRunPoolTwin holds the run pool
// to blockPool, block by block, over random hits, caching, releases,
// trims, allocations and evictions, and their KV events event by event.
//
// The engine keeps its pool so (blockPool.runs non-nil) unless CachedKeys
// was asked before its first content (decideRuns): then walkHits, attach, cacheThrough,
// drop, trim, Warm and CachedPrefix go through the tree, and the
// per-block pool is the twin (testKnobs.noRuns).

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
	run := oneShape(x, y)
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

// oneShape reports whether x and y are runs of one shape: commonRun's
// answer for them is read off their first block.
func oneShape(x, y *runLabel) bool {
	return x.per == y.per && x.c.kind == y.c.kind && (x.per > 0 || x.c.kind == 3)
}

// appendRunPath appends to dst, and returns, the content of a sequence as
// runs: its shared blocks over prefix ids of p tokens each (blocks of b
// tokens), then its own without end (own is mix(0x0a11ce, order)). When
// p is a multiple of b, a run is a run of consecutive ids, found through
// memo when it is not nil and there are memoRunIDs units or more
// (keyMemo.appendRuns), or by bisection (ascend.Two) when two, the
// request's PrefixTwoRuns, promises at most two and the ids pass Two's
// check; else each block is a run of one.
func appendRunPath(memo *keyMemo, dst []runLabel, prefix []uint64, p, b, shared int, two bool, own uint64) []runLabel {
	if shared > 0 && (p == b || p%b == 0) {
		per, units := 1, shared // a unit a block (p == b) needs no division
		if p != b {
			per = p / b
			units = (shared + per - 1) / per // the last perhaps in part
		}
		ids := prefix[:units]
		if k, ok := twoRuns(memo, ids, two); ok {
			// Its labels (appendRun's) and its own, written in place
			// into room made once, each field by field: three
			// appends, each built aside and copied, cost Regime/
			// Fleet8PrefixApprox 29 instructions a request of
			// servesim's own more (9,590 then 9,561; appendRunPath
			// 136 then 107; the budget test). TestTwoRunsIsScan
			// holds the labels to the scan's.
			n, m := len(dst), 2
			if k < len(ids) {
				m = 3
			}
			dst = slices.Grow(dst, m)[:n+m]
			l := &dst[n]
			l.c, l.per, l.n = runContent{kind: 1, id: ids[0]}, per, min(k*per, shared)
			if k < len(ids) {
				l = &dst[n+1]
				l.c, l.per, l.n = runContent{kind: 1, id: ids[k]}, per, min(len(ids)*per, shared)-k*per
			}
			l = &dst[n+m-1]
			l.c, l.per, l.n = runContent{kind: 3, id: own}, 0, ownRun
			return dst
		} else if memo != nil && len(ids) >= memoRunIDs {
			dst = memo.appendRuns(dst, ids, per, shared)
		} else {
			for u := 0; u < len(ids); {
				v := u + ascend.Len(ids[u:])
				dst, u = appendRun(dst, ids, u, v, per, shared), v
			}
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

// appendRisingPath is appendRunPath for a request that promises rising
// ids: when p is a multiple of b, each run's end is found by bisection
// (appendRisen) if the ids pass its check; else appendRunPath's way.
// Its callers choose between the two (a call that chose cost Regime/
// Fleet8PrefixApprox, whose requests promise two runs, a call a path).
func appendRisingPath(memo *keyMemo, dst []runLabel, prefix []uint64, p, b, shared int, own uint64) []runLabel {
	if shared > 0 && (p == b || p%b == 0) {
		// A unit a block (p == b) needs no division, as in
		// appendRunPath: Regime/Conversations, whose ids are of a
		// block each, 9,621 then 9,607 instructions a request of
		// servesim's own (appendRisingPath 62 then 44, cachegrind's
		// marginal count).
		per, units := 1, shared
		if p != b {
			per = p / b
			units = (shared + per - 1) / per
		}
		ids := prefix[:units]
		if memo != nil && !risenApart {
			if d, ok := appendRisenPath(memo, dst, ids, per, shared, own); ok {
				return d
			}
		} else if d, ok := appendRisen(dst, ids, per, shared, memo); ok {
			return append(d, runLabel{c: runContent{kind: 3, id: own}, n: ownRun})
		}
	}
	return appendRunPath(memo, dst, prefix, p, b, shared, false, own)
}

// risenApart is a test switch: appendRisingPath labels through a memo
// by appendRisen, appendRisenFrom and risenEnds, each its own call
// (appendRisenPath's twin).
var risenApart = false

// appendRisenPath is appendRisen(dst, ids, per, shared, memo) through
// memo (not nil), the own label (own) appended when ok, in one
// function: the first run's end guessed (memo.two), the ends of the
// runs after it read from the slot of the id that begins them
// (keyMemo.risen: a conversation's first id of its own, its last
// turn's ends kept there until its next turn), each checked as
// risenEnds checks it and labelled as it passes, the last runs found
// by ascend.Rise, and the ends written back, as appendRisenFrom does,
// the same writes in the same order (the slot's guesses compacted in
// place, as risenEnds leaves them, when a check fails too). A
// conversation's turn takes no call but its first run's Rise: a turn
// relabels the runs its last turn labelled from their kept ends, and
// its last run, its fresh ids, is one when Rise's first check, made
// here, says so; the labels are written in place. The calls of
// appendRisen, appendRisenFrom and risenEnds, each with its frame and
// its arguments, cost more than the labels: Regime/Conversations
// 12,442 then 12,295 instructions a request (the budget test; its
// appendRisen, appendRisenFrom, risenEnds and Rise 481, then this and
// Rise 381, SERVESIM_BUDGET_FUNCS). TestRisenPathIsApart holds it to
// appendRisen's way (risenApart) and to the scan.
func appendRisenPath(memo *keyMemo, dst []runLabel, ids []uint64, per, shared int, own uint64) (_ []runLabel, ok bool) {
	// The first run's end: Rise's answer at its guess, when its checks
	// pass, made here (a conversation's group prefix, the guess right;
	// the call cost Regime/Conversations 27 instructions a request of
	// servesim's own, 11,683 then 11,656, the budget test), else Rise's.
	k, g, x, z := 0, memo.two.At(), ids[0], ids[len(ids)-1]
	if g > 0 && g < len(ids) && z >= x && z-x > uint64(len(ids)-1) &&
		ids[g-1]-x == uint64(g-1) && ids[g] > ids[g-1] && ids[g]-ids[g-1] != 1 {
		k = g
	} else {
		var ok bool
		if k, ok = ascend.Rise(ids, g); !ok {
			memo.two.Set(k)
			return dst, false
		}
	}
	memo.two.Set(k)
	n := len(dst)
	if k == len(ids) {
		return append(dst, runLabel{c: runContent{kind: 1, id: ids[0]}, per: per, n: min(k*per, shared)},
			runLabel{c: runContent{kind: 3, id: own}, n: ownRun}), true
	}
	ends := memo.risen(ids[k])
	guesses := *ends
	// The labels written in place, into room for the first run's, one
	// a guess, the last run's and the own label (more runs after the
	// guesses are appended).
	out := slices.Grow(dst, len(guesses)+3)[:n+len(guesses)+3]
	// The first run ends before the last unit: its blocks are all shared
	// (k·per ≤ (len(ids)−1)·per < shared), as are those of a run a
	// guess ends.
	out[n] = runLabel{c: runContent{kind: 1, id: ids[0]}, per: per, n: k * per}
	i, u, w, first := n+1, k, 0, ids[k]
	for j, g := range guesses { // risenEnds' checks, each end labelled as it passes
		v := int(g)
		if v <= u || v >= len(ids) {
			break
		}
		last, next := ids[v-1], ids[v]
		if last-first != uint64(v-1-u) {
			break
		}
		if next == last+1 {
			continue
		}
		if next <= last {
			return dst, false
		}
		if w != j {
			guesses[w] = g
		}
		l := &out[i]
		l.c, l.per, l.n = runContent{kind: 1, id: first}, per, (v-u)*per
		first, u, w, i = next, v, w+1, i+1
	}
	for {
		v := len(ids) // the rest one run (Rise's first check, made here: a turn's last run, its fresh ids)
		if ids[v-1]-ids[u] != uint64(v-1-u) {
			k, ok := ascend.Rise(ids[u:], 0)
			if !ok {
				return dst, false
			}
			v = u + k
		}
		if i == len(out) {
			out = append(out, runLabel{})
		}
		l := &out[i]
		l.c, l.per, l.n = runContent{kind: 1, id: ids[u]}, per, min(v*per, shared)-u*per
		i++
		if u = v; u == len(ids) {
			break
		}
		guesses = append(guesses[:w], int32(u))
		w++
	}
	*ends = append(guesses[:w], int32(len(ids)-1), int32(len(ids)))
	// The last run's label and the own one written in place, field by
	// field: each built aside and copied (an append's too), Regime/
	// Conversations 10,475 then 10,470 instructions a request (the
	// budget test; appendRisenPath 347 then 337).
	if i == len(out) {
		out = append(out, runLabel{})
	}
	l := &out[i]
	l.c, l.per, l.n = runContent{kind: 3, id: own}, 0, ownRun
	return out[:i+1], true
}

// twoRuns is where the first run of ids ends when the request promises
// at most two (two, its PrefixTwoRuns) and the ids pass ascend.Two's
// check; ok is false otherwise, and then the runs are scanned. Where
// the last prompt's first run ended (memo.two, when memo is not nil)
// is tried first: a workload's shared prefixes are of one length.
// TestTwoRunsIsScan holds the path it gives to the scan's.
func twoRuns(memo *keyMemo, ids []uint64, two bool) (k int, ok bool) {
	if !two {
		return 0, false
	}
	if memo == nil {
		return ascend.Two(ids, 0)
	}
	return memo.two.Two(ids)
}

// appendRisen appends to dst, and returns, the labels of the runs of
// ids (units of per blocks each, the first shared blocks of them), which
// the request promises rise, when they pass ascend.Rise's check, each
// run's end found by bisection; ok reports whether it did (else dst is
// as it was). A conversation's turn is a run for its group's shared
// prompt and one for each turn so far (its user's message and its
// answer), of 150 ids: read one by one
// (keyMemo.appendRuns, past the shared prompt) they cost Regime/
// Conversations 418 instructions a request more (cachegrind,
// 2026-12-05). The first run's end is guessed where the last prompt's
// ended (the memo's guess, when memo is not nil: a conversation's first
// run is its group's shared prompt), checked in two compares: 18,713
// then 18,636 instructions a request in Regime/Conversations
// (cachegrind's marginal count; guessed in the loop, 18,728). The
// ends of the runs after it are guessed where the memo's slot of the id
// that begins them (keyMemo.risen: a conversation's first id of its
// own) has them, and kept there (appendRisenFrom). TestRisingIsScan
// holds the path to the scan's.
func appendRisen(dst []runLabel, ids []uint64, per, shared int, memo *keyMemo) (_ []runLabel, ok bool) {
	var guess *ascend.Guess
	if memo != nil {
		guess = &memo.two // a field of its own grew keyMemo out of its size class (TestFleetSetupAllocatesEachReplicaOnce)
	}
	k, ok := ascend.Rise(ids, guess.At())
	guess.Set(k)
	if !ok {
		return dst, false
	}
	n := len(dst)
	if dst = appendRun(dst, ids, 0, k, per, shared); k == len(ids) {
		return dst, true
	}
	var ends *[]int32
	if memo != nil {
		ends = memo.risen(ids[k])
	}
	if dst, ok = appendRisenFrom(dst, ids, k, per, shared, ends); !ok {
		return dst[:n], false
	}
	return dst, true
}

// appendRisenFrom appends to dst, and returns, the labels of the runs of
// rising ids from u on (appendRisen's), each run's end taken from *ends
// (when ends is not nil) where it is one, else found by bisection, and
// keeps in *ends where they end, and one id before the last end: a
// guess of the runs' ends for a later prompt that resends these ids
// (a conversation's next turn, which keeps every run but the last,
// its user's message and answer, cut where its last block, partial,
// began). ok is false
// when the ids fail ascend.Rise's check, or fall at a guess.
//
// A guess v is an end of the run from u when the ids rise by one from
// u to v−1 (they rise, so the last is u's plus v−1−u) and not at v, as
// ascend.Rise checks a guess, without its bisection. The guesses are
// taken in order: one the run goes on past is passed, one past the
// run's end, or not past u, ends them. A turn's runs but its last (its
// user's message and its answer, to the end of the ids: ascend.Rise's
// first check) are so found with no bisection:
// Regime/Conversations, bisected then guessed, 18,092 then 18,014
// instructions a request (SERVESIM_BUDGET_FUNCS, the marginal count). The guesses are
// only guesses: a slot another prompt took over costs a check, and
// TestRisingIsScan holds the labels to the scan with guesses wrong in
// every way.
func appendRisenFrom(dst []runLabel, ids []uint64, u, per, shared int, ends *[]int32) (_ []runLabel, ok bool) {
	var guesses []int32
	if ends != nil {
		guesses = *ends
	}
	w := 0 // the guesses taken, kept in guesses[:w]
	if len(guesses) > 0 {
		w, ok = risenEnds(ids, u, guesses)
		if !ok {
			return dst, false
		}
		// Their labels (appendRun's, n without the min: an end is
		// below len(ids), so v·per < shared), in a loop of their own
		// that calls nothing, each written in place (an append's is
		// built aside and copied: 18,038 then 18,014 instructions a
		// request in Regime/Conversations, SERVESIM_BUDGET_FUNCS).
		n := len(dst)
		dst = slices.Grow(dst, w)[:n+w]
		for i, g := range guesses[:w] {
			v := int(g)
			l := &dst[n+i]
			l.c, l.per, l.n = runContent{kind: 1, id: ids[u]}, per, (v-u)*per
			u = v
		}
	}
	for {
		k, ok := ascend.Rise(ids[u:], 0)
		if !ok {
			return dst, false
		}
		dst, u = appendRun(dst, ids, u, u+k, per, shared), u+k
		if u == len(ids) {
			break
		}
		if ends != nil {
			guesses = append(guesses[:w], int32(u))
			w++
		}
	}
	if ends != nil {
		*ends = append(guesses[:w], int32(len(ids)-1), int32(len(ids))) // the first perhaps an end already: passed as one the run goes past
	}
	return dst, true
}

// risenEnds checks the guesses of where the runs of rising ids from u
// on end (appendRisenFrom's), in order, and keeps those that are in
// guesses[:w], each an end of the run from the one before (from u): ok
// is false when the ids do not rise at one (ascend.Rise's check).
func risenEnds(ids []uint64, u int, guesses []int32) (w int, ok bool) {
	first := ids[u]
	for j, g := range guesses {
		v := int(g)
		if v <= u || v >= len(ids) {
			break // out of order (a slot another prompt took over), or past the ids
		}
		last, next := ids[v-1], ids[v]
		if last-first != uint64(v-1-u) {
			break // the run ends before v
		}
		if next == last+1 {
			continue // it goes on past v
		}
		if next <= last {
			return w, false // they do not rise
		}
		if w != j {
			guesses[w] = g
		}
		first, u, w = next, v, w+1
	}
	return w, true
}

// memoRunIDs is the fewest units whose runs appendRunPath takes through
// its memo: the memo's compare, copy and ends cost about what scanning 50
// ids does (a Mooncake prompt's 25 ids of 512 tokens paid 115
// instructions more through it, and Conversations' turns 30).
const memoRunIDs = 64

// appendRun appends the label of the run of ids from u to v (ids of per
// blocks each, the first shared blocks of them).
func appendRun(dst []runLabel, ids []uint64, u, v, per, shared int) []runLabel {
	return append(dst, runLabel{c: runContent{kind: 1, id: ids[u]}, per: per, n: (min(v*per, shared) - u*per)})
}

// runEdge is an edge of the tree: lab's blocks after parent's.
type runEdge struct {
	parent int32
	kidAt  int32 // its index in its parent's kids, so that gcEdge need not look for it there
	lab    runLabel
	kids   []int32
	segs   []int32 // its segments, primary and copies, in no order
	ncopy  int32   // its segments that are copies
	gen    uint32  // bumped when it is cut or dropped: a cursor on it is stale
	owed   int32   // requests whose cursor is on it owing blocks (deferHeld)
	// indexed: its ckey is in the child index. An edge added as its
	// parent's only kid is not (runTree.kid finds it by its parent's
	// kids), and is put there when a second kid comes: every kid of an
	// edge of two kids or more is (indexKids).
	indexed bool
	// ckey is its childKey(parent, lab.c), its key in the child index,
	// where indexed (an only kid added by cacheNewEdge gets it when a
	// second kid comes, indexKids; else it may be any value), kept so
	// that gcEdge and splitEdge need not mix it again (two
	// SplitMix64 finalisers for a run of ids, about 50 instructions):
	// 13,239 then 13,120 instructions a request in Regime/
	// Fleet8LeastLoaded, whose prompts' own edges are dropped about one
	// a request (cachegrind's marginal count). runEdge stays in the size
	// class of its first allocation (newRunPool's root: 144 bytes).
	ckey uint64
	// keys holds the chained keys of its first len(keys) blocks, computed
	// when a publisher observes one of them (runTree.key): blockPool's
	// keys of those blocks.
	keys []uint64
}

// runCursor is a place in the tree reached along a path: after the
// path's first pos blocks, at offset eoff of edge (of generation gen),
// at block lo of the path's label li. A request keeps the one after its
// held blocks, so that caching one more block does not walk its path
// from the root again.
type runCursor struct {
	edge      int32
	gen       uint32
	eoff, pos int
	li, lo    int
}

// childKey finds an edge by its parent and its first block: the block's
// content value plus the parent times an odd constant, one key of the
// child index. The value is a SplitMix64 finaliser's output (mix's, or
// sharedContent's, or the request's own content, mix(0x0a11ce, order)),
// so two different pairs collide with the chance two different chains of
// blockPool's keys do (2⁻⁶⁴), an event neither way of keeping the cache
// has; one content under two parents never does (the constant is odd
// and edges are fewer than 2³¹). The value mixed again with the parent
// (mix, which kept childKey from inlining) cost 81 instructions a
// request more in Regime/Fleet8LeastLoaded (12,930 then 12,849) and 64
// in Regime/Conversations (cachegrind's marginal count).
func childKey(parent int32, c runContent) uint64 { return c.value() + uint64(parent)*golden }

// blockAt is a block's place in the tree.
type blockAt struct {
	edge int32
	off  int32
}

// runSpan is the part [lo, hi) of an edge that a sequence's blocks pos
// to pos+hi−lo lie on.
type runSpan struct {
	edge   int32
	lo, hi int
	pos    int
}

// runSeq is a request's side of a pool kept by runs: its content as runs
// (appendRunPath), and what it holds of the cache: its first held blocks
// (seq.held, passed along), those at copies' positions as those copies
// (segments of one block, which keep their id), the rest as the primary
// block at their place. A request gets one the first time it needs it,
// and keeps it through recycle.
type runSeq struct {
	path   []runLabel
	copies []runCopy // by position, ascending
	cur    runCursor // after its held blocks, unless stale
	// room is how many blocks after cur the edge of cur and the label of
	// the path there agree on, and both go on for, as extendHeld found
	// when it last moved cur (0: unknown; any other move of cur sets 0).
	// They agree as long as cur is fresh: an edge's label only shortens
	// when it is cut, which makes cur stale.
	room int
	// owe is how many blocks after cur it holds cached, counted in its
	// held blocks, that its segment there does not cover yet (deferHeld),
	// and oweAt its place in runTree.owing while owe > 0.
	owe   int
	oweAt int32
	// coast: a decode cohort's member owing what coHeld counts, not owe
	// (coasts); cs is that member while it coasts and until the cohort
	// hears that the pool settled it (runTree.uncoasted).
	coast bool
	cs    *seq
}

type runCopy struct {
	pos int
	seg int32
}

// segRun is node.run of a segment.
const segRun = -1

// segPlace is where a segment lies: blocks lo to hi−1 of edge edge.
type segPlace struct {
	edge, lo, hi int32
}

func (g *segPlace) size() int { return int(g.hi - g.lo) }

// runTree is what a blockPool kept by runs adds: the tree, the places of
// the segments (at, by node) and the copies by place (blockPool.copies
// holds them by key).
type runTree struct {
	at        []segPlace
	b         int // BlockSize
	edges     []runEdge
	espare    []int32
	child     blockIndex              // an edge by childKey
	copies    map[blockAt][]int32     // copies at a place, oldest first
	spans     []runSpan               // match's answer
	walked    walkedPath              // the walk that left spans
	shape     uint64                  // bumped when an edge is cut or dropped
	memo      *keyMemo                // the engine's, perhaps its fleet's: the keys of runs from the root (extendKeys)
	inPlace   int                     // runCache calls extendHeld answered (tests read it)
	grown     int                     // of those, the ones answered from runSeq.room with no scan (tests read it)
	newEdges  int                     // runCache calls cacheNewEdge answered (tests read it)
	owing     []*runSeq               // the sequences owing blocks (deferHeld), in no order
	checking  bool                    // Check reads the tree: a walk settles nothing (segmentsChecked)
	holders   map[blockAt]int32       // Check's count of the requests holding each block, kept for the next Check (segmentsChecked)
	cst       *coasts                 // the decode cohort's coasting members, made at the first (coStart): kept here, not in the cohort, so that an Engine stays in its 2,304-byte size class (TestFleetSetupAllocatesEachReplicaOnce)
	uncoasted []*runSeq               // coasting members settled, for the cohort to list again (coDrain)
	slab      []int32                 // room's
	probe     *[probeSlots]probeEntry // edges by their label's first block (addEdge), for walk's first steps (probed)
	noProbe   bool                    // tests': walk takes no step from probe (probed's twin)
	noTop     bool                    // tests': walk looks up a child past topID too (its twin)
	// indexAll is tests': every edge is put in the child index as it is
	// added, an only kid too (runEdge.indexed's twin).
	indexAll bool
	// noProbeTouch is tests': runHitsTouch takes its walk and loop where
	// probedTouch would answer (its twin); probeTouched counts the calls
	// probedTouch answered (tests read it).
	noProbeTouch bool
	probeTouched int
	probeUndone  int // segments probedTouch took and gave back (probeUntouch; tests read it)
	probeShort   int // calls probedTouch answered whose probe's edge held its label's first blocks only (tests read it)
	probeTop     int // calls probedTouch passed whose probe's edge has kids (none beginning with the next label's first block; tests read it)
	probeLooked  int // of those, the ones that looked that up (the next label's first id not past topID; tests read it)
	probeKid     int // calls probedTouch declined as the probe's edge has a kid beginning with the next label's first block (tests read it)
	joined       int // lone kids put in the child index as a second came (indexKids; tests read it)
	// topID is the highest id of a label of kind 1 an edge began with
	// (addEdge): no child's label begins with a higher one, so walk
	// finds none without a lookup (a prompt's fresh ids, rising).
	topID uint64
}

// walkedPath notes which walk left runTree.spans: along the path whose
// first label is at path, from position from to to, the tree's edges of
// shape shape. runTouch reads its spans instead of walking again.
type walkedPath struct {
	path     *runLabel
	from, to int
	shape    uint64
	cur      runCursor // the cursor it returned, after to
}

// newRunPool is newBlockPool kept by runs, of blocks of b tokens.
func newRunPool(n, b int, split bool) blockPool {
	p := newBlockPool(n, split)
	p.runs = &runTree{b: b, copies: map[blockAt][]int32{}, memo: &keyMemo{}, probe: new([probeSlots]probeEntry)}
	p.runs.edges = append(p.runs.edges, runEdge{parent: -1}) // the root: no blocks
	return p
}

// insertBefore puts id into queue qi before node at, a node of it.
func (p *blockPool) insertBefore(id int32, qi uint8, at int32) {
	b := &p.nodes[id]
	q := &p.q[qi]
	prev := p.nodes[at].prev
	if prev != noNode {
		p.nodes[prev].next = id
	} else {
		q.head = id
	}
	p.nodes[at].prev = id
	b.prev, b.next, b.queued, b.queue = prev, at, true, qi
}

// evictSegmentAside is the part of takeEach's eviction of k blocks from
// the end of queued segment id (the first of the blocks its queue entry
// stands for) that copies and published events need, out of line: it
// returns the blocks to evict, k or 1 (where a copy caches the content of
// the block it evicts, it evicts that one block, and the oldest copy is
// found there instead), having settled the copies and emitted the events.
// Written into the eviction (then evictSegment, called from takeEach's
// loop), with dropSegment's calls, its map calls kept the hot path's
// values on the stack (a 0xd8-byte frame): MooncakeReplay's evictSegment
// cost 318 instructions a request, 217 with this part and dropSegment
// (43) out of line; the eviction written into takeEach's loop, not
// called, adds 115 to takeEach's 225 (cachegrind, 2026-12-05).
func (p *blockPool) evictSegmentAside(id int32, k int) int {
	t := p.runs
	s, g := &p.nodes[id], &t.at[id]
	e, x := g.edge, g.hi-1
	if p.ncopy > 0 && t.edges[e].ncopy > 0 {
		k = 1
		at := blockAt{e, x}
		if s.copy {
			p.dropCopy(at, id)
		} else if c := t.copies[at]; len(c) > 0 {
			p.nodes[c[0]].copy = false
			t.edges[e].ncopy--
			p.setCopies(at, c[1:])
		}
	}
	if p.pub != nil { // its blocks leave last first, each an event (uncache's)
		if k > 1 && p.pub.runs != nil {
			t.key(e, int(g.hi)-1) // computes those before it too
			p.pub.emitRemoved(t.edges[e].keys[int(g.hi)-k : g.hi])
		} else {
			for x := int(g.hi) - 1; x >= int(g.hi)-k; x-- {
				p.pub.emit(t.key(e, x), true)
			}
		}
	}
	return k
}

// dropHeadSegment drops segment id, emptied, of edge e, at the head of
// free queue qi (takeEach's): out of the queue as evictHead takes its
// block (popHead), off its edge, its node recycled, and the edge
// collected if it is bare. Taken out as a node anywhere in the queue (unlinkSeg's
// dequeue, and its count of no blocks), Regime/Conversations 10,179
// then 10,141 instructions a request (the budget test; servesim's own
// 9,902 then 9,874).
func (p *blockPool) dropHeadSegment(qi uint8, id, e int32) {
	p.popHead(&p.q[qi], id)
	// Off its edge: its one segment (every edge of a conversation's) by
	// the length stored, the slice not written back through a call
	// (removeSeg's): dropHeadSegment 85 then 65 instructions a request
	// in Regime/Conversations (cachegrind's marginal count).
	if ed := &p.runs.edges[e]; len(ed.segs) == 1 {
		ed.segs = ed.segs[:0]
	} else {
		ed.segs = without(ed.segs, id)
	}
	p.freeNode(id)
	p.gcEdge(e)
}

// setCopies keeps c as the copies at at, one fewer than there were.
func (p *blockPool) setCopies(at blockAt, c []int32) {
	p.ncopy--
	if len(c) == 0 {
		delete(p.runs.copies, at)
	} else {
		p.runs.copies[at] = c
	}
}

// dropCopy takes copy id out of the copies at at.
func (p *blockPool) dropCopy(at blockAt, id int32) {
	c := p.runs.copies[at]
	for i, x := range c {
		if x == id {
			c = append(c[:i:i], c[i+1:]...)
			break
		}
	}
	p.runs.edges[at.edge].ncopy--
	p.setCopies(at, c)
}

// without is ids without x (its last moved to x's place).
func without(ids []int32, x int32) []int32 {
	for i, y := range ids {
		if y == x {
			ids[i] = ids[len(ids)-1]
			return ids[:len(ids)-1]
		}
	}
	return ids
}

func (p *blockPool) gcEdge(e int32) { p.runs.gcEdge(e) }

// gcEdge drops edge e and then its ancestors while they hold no block
// and have no children.
func (t *runTree) gcEdge(e int32) {
	for e > 0 {
		ed := &t.edges[e]
		if len(ed.segs) > 0 || len(ed.kids) > 0 {
			return
		}
		par := ed.parent
		if ed.indexed {
			t.child.del(ed.ckey)
			ed.indexed = false
		}
		t.dropKid(par, ed.kidAt)
		// Its lists cut to none, field by field: a slice cut to none is
		// a length stored, where the struct written whole rewrote its
		// three pointers through the write barrier (gcEdge 135 -> 105
		// instructions a request on Fleet8LeastLoaded, cachegrind). Its
		// parent, place and label are left as they are: nothing reads
		// them before addEdge writes them again (a cursor on it is told
		// stale by gen; ncopy and owed are 0 with no segments): gcEdge
		// 160 then 144 instructions a request in Regime/
		// Fleet8LeastLoaded (12,463 then 12,460 in all, cachegrind's
		// marginal count).
		ed.kids, ed.segs, ed.keys = ed.kids[:0], ed.segs[:0], ed.keys[:0]
		ed.gen++
		t.shape++
		t.espare = append(t.espare, e)
		e = par
	}
}

// dropKid takes parent's kid at index i out of its kids as without
// would (the last moved to its place), found by the kid's kidAt instead
// of a scan: a group's shared prefix has a kid for each prompt of its
// own ids cached, dropped one by one as they are evicted. Check holds
// every kidAt to its place.
func (t *runTree) dropKid(parent, i int32) {
	kids := t.edges[parent].kids
	last := kids[len(kids)-1]
	kids[i] = last
	t.edges[last].kidAt = i
	t.edges[parent].kids = kids[:len(kids)-1]
}

// newEdge adds an edge of lab's blocks under parent.
func (t *runTree) newEdge(parent int32, lab runLabel) int32 {
	return t.newEdgeKeyed(parent, lab, childKey(parent, lab.c))
}

// newEdgeKeyed is newEdge with the edge's childKey at hand.
func (t *runTree) newEdgeKeyed(parent int32, lab runLabel, key uint64) int32 {
	e := t.addEdge(parent, lab, key, false)
	t.indexKids(parent, e)
	return e
}

// indexKids keeps the child index as runEdge.indexed says once edge e
// is added as parent's newest kid: e is put there unless it is the only
// one (or indexAll), and the kid before it with it when they are two.
func (t *runTree) indexKids(parent, e int32) {
	kids := t.edges[parent].kids
	if len(kids) == 1 && !t.indexAll {
		return
	}
	if len(kids) == 2 {
		if o := &t.edges[kids[0]]; !o.indexed {
			o.ckey = childKey(parent, o.lab.c) // perhaps not made as it was added (cacheNewEdge)
			t.child.put(o.ckey, kids[0])
			o.indexed = true
			t.joined++
		}
	}
	ed := &t.edges[e]
	t.child.put(ed.ckey, e)
	ed.indexed = true
}

// kid is parent's kid whose label begins with content c, key its
// childKey(parent, c): the one kid compared (it may not be in the child
// index: runEdge.indexed), else the index's.
func (t *runTree) kid(parent int32, c runContent, key uint64) (int32, bool) {
	if kids := t.edges[parent].kids; len(kids) == 1 {
		return kids[0], t.edges[kids[0]].lab.c == c
	} else if len(kids) == 0 {
		return noNode, false
	}
	return t.child.get(key)
}

// nextEdge is the edge addEdge adds next.
func (t *runTree) nextEdge() int32 {
	if n := len(t.espare); n > 0 {
		return t.espare[n-1]
	}
	return int32(len(t.edges))
}

// addEdge is newEdgeKeyed but for the child index, which its caller
// keeps (key to the edge it returns, nextEdge, when indexed: the
// edge's runEdge.indexed).
func (t *runTree) addEdge(parent int32, lab runLabel, key uint64, indexed bool) int32 {
	var e int32
	if n := len(t.espare); n > 0 {
		e = t.espare[n-1]
		t.espare = t.espare[:n-1]
	} else {
		// A zero edge appended, its room then set in place: the
		// edge built aside (zeroed on the stack, filled, copied in)
		// cost Regime/Fleet8PrefixApprox, which adds an edge about
		// an arrival, 9,551 then 9,539 instructions a request
		// (addEdge 150 then 142; the budget test).
		room := t.room()
		t.edges = append(t.edges, runEdge{})
		e = int32(len(t.edges) - 1)
		x := &t.edges[e]
		x.kids, x.segs = room[:0:2], room[2:2:4]
	}
	ed := &t.edges[e]
	ed.parent, ed.lab, ed.kidAt, ed.ckey, ed.indexed = parent, lab, int32(len(t.edges[parent].kids)), key, indexed
	if lab.c.kind == 1 && lab.c.id > t.topID {
		t.topID = lab.c.id
	}
	t.edges[parent].kids = append(t.edges[parent].kids, e)
	// Kept for probed, every edge: it cannot tell which a later path
	// will ask by (addEdge 131 then 145 instructions a request in
	// Regime/Fleet8PrefixApprox, which never asks; cachegrind's
	// marginal count).
	pe := &t.probe[probeSlot(lab.c)]
	pe.edge, pe.gen = e, ed.gen
	return e
}

// probeSlots is the size of runTree.probe, a power of two. Every edge
// added takes its slot, so a conversation's last turn's edge is found
// there at its next turn unless an edge added since took the slot: in
// Regime/Conversations, whose turns come some 20 requests apart, 75 of
// 1,500 turns probed (the budget test's 2,000 requests) found another
// edge there with 512 slots, each then walked from the root and found
// by runHitsTouch's loop: 2,048 slots, 16 KB an engine that caches
// (12 KB more), cost Regime/Conversations 9,969 then 9,941
// instructions a request (servesim's own 9,706 then 9,668; the budget
// test).
const probeSlots = 2048

// probeEntry is an edge of the tree as runTree.probe keeps it: its
// generation when it was added (a stale one is passed over).
type probeEntry struct {
	edge int32
	gen  uint32
}

// probeSlot is the slot of runTree.probe that keeps the edge whose label
// begins with content c.
func probeSlot(c runContent) uint64 {
	return ((c.id ^ c.off) * golden) >> (64 - 11) // 2¹¹ = probeSlots
}

// probed is walk's first steps from the root along path, to at most n
// blocks, taken from runTree.probe: the edge kept there by the path's
// label len(path)−3 (a conversation's next turn: its last turn's fresh
// ids, whose edge ends where that turn's blocks did, before its new
// ids and its own), checked up the tree to the root, label by label.
// When every edge on the way is its label (the one found may go on
// past it) and they hold no more than n blocks, a walk from the root
// takes exactly those edges, each by a child step whose span is the
// edge's first blocks, its label's: probed leaves those spans in
// t.spans and returns the edge, the blocks and the labels walked (ok);
// else it leaves t.spans as they were and ok is false. The walk's twin
// is its own loop from the root (runTree.noProbe, tests'):
// TestProbedIsWalk holds the two to each other.
func (t *runTree) probed(path []runLabel, n int) (e int32, pos, li int, ok bool) {
	l := len(path) - 3
	if l < 1 {
		// A path of two labels and its own (a prompt's group prefix
		// and its own ids): the probe would save the root's child
		// lookup alone, and cost more (walk and probed 322 against
		// walk's 277 a request in Regime/Fleet8PrefixApprox,
		// cachegrind's marginal count). walk asks only of longer ones.
		return 0, 0, 0, false
	}
	lab := &path[l]
	pe := &t.probe[probeSlot(lab.c)]
	e = pe.edge
	ed := &t.edges[e]
	if e == 0 || ed.gen != pe.gen || ed.lab.c != lab.c || ed.lab.per != lab.per || ed.lab.n < lab.n || lab.n <= 0 {
		return 0, 0, 0, false
	}
	// The spans written on the way up, each at its position less the
	// blocks walked, then moved on by them.
	spans := slices.Grow(t.spans[:0], l+1)[:l+1]
	pos = lab.n
	spans[l] = runSpan{edge: e, hi: pos, pos: -pos}
	f := ed.parent
	for i := l - 1; i >= 0; i-- {
		if f <= 0 {
			return 0, 0, 0, false
		}
		pl, fe := &path[i], &t.edges[f]
		if fe.lab.n != pl.n || fe.lab.c != pl.c || fe.lab.per != pl.per || pl.n <= 0 {
			return 0, 0, 0, false
		}
		pos += pl.n
		spans[i] = runSpan{edge: f, hi: pl.n, pos: -pos}
		f = fe.parent
	}
	if f != 0 || pos > n {
		return 0, 0, 0, false
	}
	for i := range spans {
		spans[i].pos += pos
	}
	t.spans = spans
	return e, pos, l + 1, true
}

// room is four ids cut from t's slab: a new edge's kids and segs, room
// for two each, capped (an edge recycled keeps its own). One cut for
// both, not one each: 12,623 then 12,588 instructions a request in
// Regime/Fleet8PrefixApprox (with runCache's path read only where it
// inserts; 12,500 then 12,485 in Regime/Fleet8LeastLoaded). Each
// allocated by its first append, they cost 175
// instructions a request more in Regime/Fleet8PrefixApprox, whose cache
// never evicts an edge to recycle (12,805 then 12,630), 60 in Regime/
// Fleet8LeastLoaded and 53 in Regime/Conversations (cachegrind's
// marginal count). TestRunPoolTwin fails with the room not capped. The
// slab grows runTree from 288 to 312 bytes, which an engine allocates
// when it first caches content (decideRuns), not at a fleet's setup
// (TestFleetSetupAllocatesEachReplicaOnce).
func (t *runTree) room() []int32 {
	if len(t.slab) < 4 {
		t.slab = make([]int32, 1024)
	}
	r := t.slab[:4:4]
	t.slab = t.slab[4:]
	return r
}

// match finds the blocks of path's first n already in the tree: it
// leaves in t.spans the edge ranges they lie on, in order, and returns
// how many there are and where the last ends (edge, offset).
func (t *runTree) match(path []runLabel, n int) (pos int, e int32, eoff int) {
	c := t.walk(path, n, runCursor{})
	return c.pos, c.edge, c.eoff
}

// walk is match from cursor c, a place along path: it leaves in t.spans
// the edge ranges of the path's blocks c.pos to n−1 in the tree, and
// returns the cursor after the last.
// From the root, its first steps may be probed's.
func (t *runTree) walk(path []runLabel, n int, c runCursor) runCursor {
	t.spans = t.spans[:0]
	pos, e, eoff, li, lo := c.pos, c.edge, c.eoff, c.li, c.lo
	if len(path) > 3 && pos == 0 && e == 0 && !t.noProbe {
		// From the root, its first steps taken from the probe where it
		// can (a conversation's next turn: its last turn's edges):
		// walk 644 then walk and probed 450 instructions a request in
		// Regime/Conversations (cachegrind's marginal count).
		if pe, pp, pl, ok := t.probed(path, n); ok {
			pos, e, eoff, li = pp, pe, path[pl-1].n, pl
			if ed := &t.edges[e]; eoff == ed.lab.n && len(ed.kids) == 0 {
				// At the end of an edge with no child (a conversation's
				// last turn's, which its new ids will follow): the loop
				// would find no child and stop, so it is not entered (n
				// is not read after it).
				n = pos
			}
		}
	}
	for pos < n {
		ed := &t.edges[e]
		lab := &path[li]
		var k int
		if eoff == ed.lab.n {
			// The child index holds a pair for each kid of an edge of
			// two kids or more, keyed by its parent (runEdge.indexed):
			// an edge of no child has none there, and one of one child
			// whose first block is first has that one (a conversation's
			// edges: each turn goes on from the last), perhaps not in
			// the index. childKey's hash and the index's probe cost
			// Regime/Conversations 68 instructions a request more
			// (cachegrind, 2026-12-05). Where the one child's first
			// block differs, the index answers, as it did (it finds
			// none: it holds no other kid of the edge).
			first := lab.at(lo, t.b)
			if first.kind == 1 && first.id > t.topID && !t.noTop {
				// Past every id an edge began with (a prompt's fresh
				// ids after its group's prefix): no child, found
				// without childKey's hash and the index's probe:
				// Regime/Fleet8PrefixApprox 10,240 then 10,179
				// instructions a request (walk 367 then 315, addEdge's
				// topID 144 then 150; the budget test, its marginal
				// count). TestRunPoolTwin holds it to the lookup
				// (noTop, topIsLookup).
				break
			}
			var c int32
			ok := false
			if kids := ed.kids; len(kids) > 1 {
				c, ok = t.child.get(childKey(e, first))
			} else if len(kids) == 1 {
				if c = kids[0]; t.edges[c].lab.c == first {
					ok = true
				} else {
					c, ok = t.child.get(childKey(e, first))
				}
			}
			if !ok {
				break
			}
			e, eoff = c, 0
			ed = &t.edges[e]
			if oneShape(&ed.lab, lab) {
				// The child found begins with first (its key, or the one
				// kid's compare), and two runs of one shape that agree on
				// a block agree on every one after it (commonRun), with
				// no call: a call cost a conversation's request 150
				// instructions (cachegrind). Nor is the edge's first
				// block compared again, nor its span one to extend:
				// 17,760 then 17,674 instructions a request in Regime/
				// Conversations, 12,520 then 12,500 in Regime/
				// Fleet8LeastLoaded (cachegrind's marginal count).
				k = min(n-pos, ed.lab.n, lab.n-lo)
			} else if k = commonRun(&ed.lab, 0, lab, lo, min(n-pos, ed.lab.n, lab.n-lo), t.b); k == 0 {
				break
			}
			t.spans = append(t.spans, runSpan{edge: e, lo: 0, hi: k, pos: pos})
		} else {
			if k = commonRun(&ed.lab, eoff, lab, lo, min(n-pos, ed.lab.n-eoff, lab.n-lo), t.b); k == 0 {
				break
			}
			if m := len(t.spans) - 1; m >= 0 && t.spans[m].edge == e && t.spans[m].hi == eoff {
				t.spans[m].hi += k
			} else {
				t.spans = append(t.spans, runSpan{edge: e, lo: eoff, hi: eoff + k, pos: pos})
			}
		}
		pos, eoff, lo = pos+k, eoff+k, lo+k
		if lo == lab.n {
			li, lo = li+1, 0
		}
	}
	if len(t.owing) > 0 && !t.checking && t.walkedOwed(e) { // its caller reads the segments of those edges next: they are owed theirs
		t.settleAll()
	}
	// Field by field: the note written whole (a composite literal) was
	// built apart and copied, walk 672 then 649 instructions a request
	// in Regime/Conversations (cachegrind's marginal count).
	w := &t.walked
	w.path, w.from, w.to, w.shape = &path[0], c.pos, pos, t.shape
	w.cur.edge, w.cur.gen, w.cur.eoff, w.cur.pos, w.cur.li, w.cur.lo = e, t.edges[e].gen, eoff, pos, li, lo
	return w.cur
}

// walkedTo reports whether t.spans hold path's first n blocks: the last
// walk went along path from the root to n or past it, and no edge was
// cut or dropped since.
func (t *runTree) walkedTo(path []runLabel, n int) bool {
	w := &t.walked
	return w.path == &path[0] && w.from == 0 && w.to >= n && w.shape == t.shape
}

// cutWalk cuts the spans of a walk along path (walkedTo n) at n and
// returns the cursor after them: what walk(path, n) returns, and leaves
// in t.spans, without walking again.
func (t *runTree) cutWalk(path []runLabel, n int) runCursor {
	if n == t.walked.to {
		// Where the walk ended (a prompt's blocks found cached as far as
		// the tree has them): its cursor, without the labels counted
		// off to n again: Regime/Conversations 16,502 then 16,455
		// instructions a request (the budget test).
		return t.walked.cur
	}
	t.walked.to = n
	if n == 0 {
		t.spans = t.spans[:0]
		return runCursor{gen: t.edges[0].gen}
	}
	i := len(t.spans) - 1
	for t.spans[i].pos >= n { // the spans follow one another along the path
		i--
	}
	sp := &t.spans[i]
	sp.hi = sp.lo + n - sp.pos
	t.spans = t.spans[:i+1]
	li, lo := 0, n
	for lo >= path[li].n {
		lo -= path[li].n
		li++
	}
	return runCursor{edge: sp.edge, gen: t.edges[sp.edge].gen, eoff: sp.hi, pos: n, li: li, lo: lo}
}

// chain is match(path, n) for the path of cursor c, a place after n of
// its blocks, read up the tree from c instead of down it from the root:
// a walk from the root enters every edge at its first block and leaves
// it at its last, so the path's first n blocks lie on the edges from the
// root to c's, all of each but c's, which they cover up to c. It leaves
// those spans in t.spans and reports true; false, having left nothing,
// when c is stale or is not after n blocks (match's to answer then).
// TestRunPoolTwin holds it to match after every step.
func (t *runTree) chain(c runCursor, n int) bool {
	if c.pos != n || t.edges[c.edge].gen != c.gen {
		return false
	}
	t.spans = t.spans[:0]
	t.walked = walkedPath{} // no walk left these spans
	pos := n
	for e, hi := c.edge, c.eoff; e > 0; e = t.edges[e].parent {
		if e != c.edge {
			hi = t.edges[e].lab.n
		}
		if hi > 0 {
			pos -= hi
			t.spans = append(t.spans, runSpan{edge: e, hi: hi, pos: pos})
		}
	}
	slices.Reverse(t.spans)
	return true
}

// fresh is c if it is not stale, else the root.
func (t *runTree) fresh(c runCursor) runCursor {
	if t.edges[c.edge].gen != c.gen {
		return runCursor{}
	}
	return c
}

// insert puts path's first n blocks in the tree, splitting the edge
// where the path leaves it, and returns the cursor after them, with
// t.spans their edge ranges from from's place on: what walk from from
// (or from the root, were from's edge cut) finds afterwards, made as
// it is inserted (a walk again cost runCache about 550 instructions a
// conversation's request; TestRunPoolTwin holds the cursor to a walk).
func (p *blockPool) insert(path []runLabel, n int, from runCursor) runCursor {
	t := p.runs
	c := t.walk(path, n, from)
	pos, e, eoff := c.pos, c.edge, c.eoff
	if pos == n {
		return c
	}
	if eoff < t.edges[e].lab.n {
		p.splitEdge(e, eoff) // e keeps its first eoff blocks, which the spans lie on
	}
	li, lo := c.li, c.lo
	for {
		lab := path[li].from(lo, t.b)
		e = t.newEdge(e, lab)
		k := min(lab.n, n-pos)
		t.spans = append(t.spans, runSpan{edge: e, lo: 0, hi: k, pos: pos})
		if pos += k; pos == n {
			if lo += k; lo == path[li].n {
				li, lo = li+1, 0
			}
			return runCursor{edge: e, gen: t.edges[e].gen, eoff: k, pos: n, li: li, lo: lo}
		}
		li, lo = li+1, 0
	}
}

// splitEdge cuts edge e at offset m: e keeps its first m blocks, a new
// child takes the rest, with e's children and the segments over them.
func (p *blockPool) splitEdge(e int32, m int) {
	t := p.runs
	rest := t.edges[e].lab.from(m, t.b)
	kids := t.edges[e].kids
	for _, k := range kids {
		if t.edges[k].indexed {
			t.child.del(t.edges[k].ckey)
		}
	}
	t.edges[e].kids = nil
	t.edges[e].lab.n = m
	t.edges[e].gen++
	t.shape++
	f := t.newEdge(e, rest) // e's only child
	t.edges[f].kids = kids
	if keys := t.edges[e].keys; len(keys) > m { // the keys computed past the cut are f's
		t.edges[f].keys = append(t.edges[f].keys[:0], keys[m:]...)
		t.edges[e].keys = keys[:m]
	}
	for _, k := range kids { // f's kids are e's: each indexed as it was
		key := childKey(f, t.edges[k].lab.c)
		if t.edges[k].indexed {
			t.child.put(key, k)
		}
		t.edges[k].parent, t.edges[k].ckey = f, key
	}
	m32 := int32(m)
	for _, id := range append([]int32(nil), t.edges[e].segs...) {
		if g := &t.at[id]; g.lo < m32 && m32 < g.hi {
			p.splitSeg(id, m32)
		}
	}
	keep := t.edges[e].segs[:0]
	for _, id := range t.edges[e].segs {
		g := &t.at[id]
		if g.hi <= m32 {
			keep = append(keep, id)
			continue
		}
		if p.nodes[id].copy {
			t.edges[e].ncopy--
			t.edges[f].ncopy++
			old := blockAt{e, g.lo}
			if c, ok := t.copies[old]; ok {
				delete(t.copies, old)
				t.copies[blockAt{f, g.lo - m32}] = c
			}
		}
		g.edge, g.lo, g.hi = f, g.lo-m32, g.hi-m32
		t.edges[f].segs = append(t.edges[f].segs, id)
	}
	t.edges[e].segs = keep
}

// splitSeg cuts segment id at offset m: id keeps [lo, m), a new segment
// of the same references takes [m, hi), before it in the free queue if
// it is queued (its blocks are freed first). It returns the new one.
func (p *blockPool) splitSeg(id int32, m int32) int32 {
	g := p.runs.at[id]
	t := p.newSeg(segPlace{g.edge, m, g.hi}, p.nodes[id].refs, false)
	p.runs.at[id].hi = m
	if s := &p.nodes[id]; s.queued {
		p.insertBefore(t, s.queue, id)
	}
	return t
}

// newSeg makes a segment at g of refs references, a copy or not, and
// lists it on its edge.
func (p *blockPool) newSeg(g segPlace, refs int32, copy bool) int32 {
	id := p.newNode()
	p.nodes[id] = node{refs: refs, run: segRun, prev: noNode, next: noNode, copy: copy, pinned: copy}
	t := p.runs
	for int(id) >= len(t.at) {
		t.at = append(t.at, segPlace{})
	}
	t.at[id] = g
	t.edges[g.edge].segs = append(t.edges[g.edge].segs, id)
	return id
}

// primAt is the primary segment holding block off of edge e, or noNode.
// (Its place is read before whether it is a copy: most of an edge's
// segments do not hold off, and the place is beside the id.)
func (p *blockPool) primAt(e int32, off int) int32 {
	o := int32(off)
	for _, id := range p.runs.edges[e].segs {
		if g := &p.runs.at[id]; g.lo <= o && o < g.hi && !p.nodes[id].copy {
			return id
		}
	}
	return noNode
}

// nextPrim is the first offset past off, at most end, where a primary
// segment of e begins.
func (p *blockPool) nextPrim(e int32, off, end int) int {
	for _, id := range p.runs.edges[e].segs {
		if g := &p.runs.at[id]; int(g.lo) > off && int(g.lo) < end && !p.nodes[id].copy {
			end = int(g.lo)
		}
	}
	return end
}

// runHits is walkHits for path: how many of its first limit blocks are
// found, leading, and how many of those nobody holds.
func (p *blockPool) runHits(path []runLabel, limit int) (h, evictable int) {
	t := p.runs
	t.match(path, limit)
	for _, sp := range t.spans {
		x := sp.lo
		if segs := t.edges[sp.edge].segs; len(segs) == 1 {
			// The edge's one segment (every edge of a conversation's
			// path): the loop below without primAt's, which finds no
			// other segment past it. With runTouch's: Regime/
			// Conversations 12,615 then 12,444 instructions a request
			// (servesim's own, cachegrind's marginal count).
			id := segs[0]
			g := &t.at[id]
			s := &p.nodes[id]
			if int(g.lo) > x || int(g.hi) <= x || s.copy {
				return h, evictable
			}
			end := min(int(g.hi), sp.hi)
			if s.refs == 0 {
				evictable += end - x
			}
			if h += end - x; end < sp.hi {
				return h, evictable
			}
			continue
		}
		for x < sp.hi {
			id := p.primAt(sp.edge, x)
			if id == noNode {
				return h, evictable
			}
			s := &p.nodes[id]
			end := min(int(p.runs.at[id].hi), sp.hi)
			if s.refs == 0 {
				evictable += end - x
			}
			h += end - x
			x = end
		}
	}
	return h, evictable
}

// runHitsTouch is runHits and then runTouch, for a request that is
// admitted whatever it finds (hitsTouch): one pass over the walk's spans
// finds the leading blocks cached, each run of them a primary segment's,
// as runHits does, and references those from r's held ones on as it
// goes, as runTouch does, which takes the same segments in the same
// order (runHits changes nothing, and runTouch's spans are the walk's cut
// where runHits stopped). It returns how many it found; with none, r is
// as it was (attach touches nothing then). The two passes cost Regime/
// Conversations 142 instructions a request more (servesim's own 12,353
// then 12,211 with this, cachegrind's marginal count). Where the walk
// would take its steps from the probe alone, probedTouch answers first.
func (p *blockPool) runHitsTouch(held *int, r *runSeq, limit int) int {
	t := p.runs
	if len(r.path) > 2 && *held == 0 && !t.noProbe && !t.noProbeTouch {
		if h := p.probedTouch(r, limit); h > 0 {
			*held = h
			return h
		}
	}
	t.match(r.path, limit)
	if len(r.path) == 3 && len(t.spans) > 0 {
		// The edge of the path's first label, a child of the root, put
		// back in its probe slot (probedTouch reads it there for a path
		// of three labels: edges added since may have taken the slot,
		// as every edge added takes one; a group's prefix stays found
		// past the pools' fill). Whatever the slot holds, probedTouch
		// checks it.
		e := t.spans[0].edge
		t.probe[probeSlot(r.path[0].c)] = probeEntry{edge: e, gen: t.edges[e].gen}
	}
	h := 0
spans:
	for _, sp := range t.spans {
		x, x0 := sp.lo, sp.lo+max(0, *held-sp.pos)
		if segs := t.edges[sp.edge].segs; len(segs) == 1 {
			// The edge's one segment (runHits' and runTouch's way).
			id := segs[0]
			g := &t.at[id]
			s := &p.nodes[id]
			if int(g.lo) > x || int(g.hi) <= x || s.copy {
				break
			}
			end := min(int(g.hi), sp.hi)
			h += end - x
			if x0 < end {
				if int(g.lo) != x0 || int(g.hi) != end { // else id is those blocks (isolate's test)
					id = p.isolate(id, x0, end)
					s = &p.nodes[id]
				}
				if s.refs == 0 {
					// unlinkSeg with s at hand (id is blocks x0 to
					// end−1), its dequeue inlined (unqueue).
					p.evict -= end - x0
					p.unqueue(s, end-x0)
				}
				s.refs++
			}
			if end < sp.hi {
				break
			}
			continue
		}
		for x < sp.hi {
			id := p.primAt(sp.edge, x)
			if id == noNode {
				break spans
			}
			g := &t.at[id]
			end := min(int(g.hi), sp.hi)
			h += end - x
			if lo := max(x, x0); lo < end {
				if int(g.lo) < lo || int(g.hi) > end { // else id is those blocks (isolate's test)
					id = p.isolate(id, lo, end)
				}
				s := &p.nodes[id]
				if s.refs == 0 {
					p.unlinkSeg(id)
				}
				s.refs++
			}
			x = end
		}
	}
	if h > 0 {
		// runTouch's cursor, after the blocks found: where the walk
		// ended (cutWalk's first case, the usual one here), copied from
		// the walk's note in place, not returned by cutWalk's call and
		// copied from the stack: Regime/Fleet8PrefixApprox 9,641 then
		// 9,597 instructions a request (cutWalk's call and copy about
		// 52 of them; the budget test, its marginal count).
		if h == t.walked.to {
			r.cur = t.walked.cur
		} else {
			r.cur = t.cutWalk(r.path, h)
		}
		r.room = 0
		*held = h
	}
	return h
}

// probedTouch is runHitsTouch for r holding nothing, where the walk
// from the root would take its steps from the probe (probed's; for a
// path of three labels, the probe's edge is its first label's, a child
// of the root) alone and stop at the end of the edge found there, an
// edge with no child (a conversation's next turn: its last turn's
// edges, after which its new ids begin) or none beginning with the
// next label's first block (a prompt's fresh ids after its group's
// prefix), and every edge on the way holds one primary segment, its
// label's blocks, and is owed none (walkedOwed): it finds them all. It
// checks the edges up the tree from the probe's, as probed does, and
// then references each segment from there up, taking those nobody held
// off the free queue (the same queue whatever the order), and returns
// the blocks found, r's cursor after them (the walk's), with no spans
// written or read: it leaves no walk noted (walkedTo). It returns 0,
// having changed nothing, where any of that fails: runHitsTouch's walk
// and loop then. Regime/Conversations 10,470 then 10,347 instructions
// a request (the budget test; probed, walk and runHitsTouch 159, 217
// and 342, then 16, 140 and 107 with probedTouch's 327). Its twin is
// runHitsTouch's walk and loop (runTree.noProbeTouch, tests'), and
// blockPool's way through runTwin: TestProbedTouchIsTouch and
// TestRunPoolTwin.
func (p *blockPool) probedTouch(r *runSeq, limit int) int {
	t := p.runs
	path := r.path
	l := len(path) - 3
	lab := &path[l]
	pe := &t.probe[probeSlot(lab.c)]
	e := pe.edge
	ed := &t.edges[e]
	if e == 0 || ed.gen != pe.gen { // its label is the loop's first check
		return 0
	}
	if len(ed.kids) != 0 {
		// The walk asks the edge's children for the next label's first
		// block (a path of three labels: a prompt's fresh ids after its
		// group's prefix, the probe's edge, which has kids): it goes on
		// where one begins with it, and stops where none does, as here
		// (none past every id an edge began with, runTree.topID, else
		// walk's lookup, runTree.kid). A conversation's first turn (its
		// fresh ids drawn before later turns' of others, so not past
		// topID) and a prefix fleet's prompt, walked from the root and
		// found by runHitsTouch's loop before: Regime/Conversations
		// servesim's own 9,607 then 9,566 instructions a request,
		// Regime/Fleet8PrefixApprox 9,131 then 8,908 (walk 316 then 7,
		// probedTouch 0 then 203; cachegrind's marginal count).
		if c := path[l+1].c; c.kind != 1 || c.id <= t.topID || t.noTop {
			if _, ok := t.kid(e, c, childKey(e, c)); ok {
				t.probeKid++
				return 0
			}
			t.probeLooked++
		}
		t.probeTop++
	}
	// Each edge checked and its segment referenced in one pass up the
	// tree, not checked all first and referenced in a second pass that
	// read each edge, its segment and its node again: Regime/
	// Conversations 10,081 then 10,028 instructions a request (the
	// budget test; probedTouch 329 then 287). Where a check fails past
	// the first edge, probeUntouch gives back what the pass took, last
	// first, each segment nobody holds again back in its queue between
	// the links unqueue left it.
	//
	// The probe's edge may hold its label's first blocks only, its one
	// segment ending short of the label's end (the rest evicted from
	// the free queue's head, or never cached: a turn's answer's last
	// block, its last token never computed): the walk's spans end
	// there, and runHitsTouch's loop finds those blocks and stops, its
	// cursor cut where they end (cutWalk). probedTouch takes them and
	// sets that cursor: in Regime/Conversations 90 of 1,500 turns
	// probed (the budget test's 2,000 requests), each a walk and
	// runHitsTouch's loop after probedTouch failed.
	pos, f, i, eh := 0, e, l, 0
	for ; i >= 0; i-- {
		if f <= 0 {
			break
		}
		pl, fe := &path[i], &t.edges[f]
		if fe.lab.n != pl.n || fe.lab.c != pl.c || fe.lab.per != pl.per || pl.n <= 0 || fe.owed != 0 || len(fe.segs) != 1 {
			break
		}
		id := fe.segs[0]
		s := &p.nodes[id]
		n := pl.n
		if g := &t.at[id]; g.lo != 0 || int(g.hi) != n || s.copy {
			if i != l || g.lo != 0 || int(g.hi) > n || s.copy {
				break
			}
			n = int(g.hi) // the probe's edge's first blocks (g.hi > g.lo)
		}
		if s.refs == 0 { // unlinkSeg with s at hand (see runHitsTouch)
			p.evict -= n
			p.unqueue(s, n)
		}
		s.refs++
		if pos += n; i == l {
			eh = n
		}
		f = fe.parent
	}
	if i >= 0 || f != 0 || pos > limit {
		p.probeUntouch(e, f)
		return 0
	}
	t.walked.path = nil // no walk left t.spans (walkedTo)
	t.probeTouched++
	c := &r.cur
	c.edge, c.gen, c.eoff, c.pos, c.li, c.lo = e, ed.gen, eh, pos, l+1, 0
	if eh < lab.n { // cutWalk's cursor: on the label, after the blocks found
		c.li, c.lo = l, eh
		t.probeShort++
	}
	r.room = 0
	return pos
}

// probeUntouch undoes probedTouch's pass from edge e up to edge stop
// (an ancestor of e, not taken): it drops the reference the pass took to
// each edge's one segment, in the reverse order of their taking (from
// the edge below stop down to e), and puts each segment nobody holds
// again back in its queue where it was, between the links unqueue left
// in it: taken off last first, put back first first, each finds its
// neighbours as they were. Its calls count in probeUndone (tests read
// it).
func (p *blockPool) probeUntouch(e, stop int32) {
	if e == stop {
		return
	}
	t := p.runs
	fe := &t.edges[e]
	p.probeUntouch(fe.parent, stop)
	t.probeUndone++
	id := fe.segs[0]
	s := &p.nodes[id]
	if s.refs--; s.refs == 0 {
		n := t.at[id].size() // the label's blocks, or the probe's edge's first (probedTouch)
		p.requeue(s, id, n)
		p.evict += n
	}
}

// isolate makes blocks [lo, hi) of segment id a segment of their own and
// returns it. runTouch and runReleaseRange call it only when id holds
// blocks outside them: the spans they take are mostly whole segments,
// and a call for each cost Regime/Conversations 290 instructions a
// request (cachegrind).
func (p *blockPool) isolate(id int32, lo, hi int) int32 {
	if int(p.runs.at[id].hi) > hi {
		p.splitSeg(id, int32(hi))
	}
	if int(p.runs.at[id].lo) < lo {
		id = p.splitSeg(id, int32(lo))
	}
	return id
}

// runTouch makes r reference path's blocks from those it holds up to h,
// found cached (runHits).
func (p *blockPool) runTouch(held *int, r *runSeq, h int) {
	if t := p.runs; t.walkedTo(r.path, h) { // runHits walked it (a walk again cost 300 instructions a conversation's request)
		r.cur = t.cutWalk(r.path, h)
	} else {
		r.cur = t.walk(r.path, h, runCursor{})
	}
	r.room = 0
	t := p.runs
	for _, sp := range t.spans {
		x := sp.lo + max(0, *held-sp.pos)
		if segs := t.edges[sp.edge].segs; len(segs) == 1 && x < sp.hi {
			// The edge's one segment the span's blocks, as on every
			// edge of a conversation's path: the loop below without
			// primAt's and isolate's tests (see runHits).
			id := segs[0]
			if g := &t.at[id]; int(g.lo) == x && int(g.hi) == sp.hi {
				if s := &p.nodes[id]; !s.copy {
					if s.refs == 0 {
						p.unlinkSeg(id)
					}
					s.refs++
					continue
				}
			}
		}
		for x < sp.hi {
			id := p.primAt(sp.edge, x)
			g := &p.runs.at[id]
			end := min(int(g.hi), sp.hi)
			if int(g.lo) < x || int(g.hi) > end { // else id is those blocks (isolate's test)
				id = p.isolate(id, x, end)
			}
			s := &p.nodes[id]
			if s.refs == 0 {
				p.unlinkSeg(id)
			}
			s.refs++
			x = end
		}
	}
	*held = h
}

// runCache gives r's blocks from its held ones up to full their content,
// in order: each a primary block of the tree, or a copy where one caches
// its content already.
func (p *blockPool) runCache(held *int, r *runSeq, full int) {
	from := *held
	if full <= from {
		return
	}
	t := p.runs
	if c := &r.cur; c.pos == from && t.edges[c.edge].gen == c.gen { // a fresh cursor
		// At its edge's end, extendHeld has no room (r.room is 0 there)
		// and is not called: 12,836 then 12,775 instructions a request
		// in Regime/Fleet8LeastLoaded, whose prompts' own ids begin an
		// edge, 17,932 then 17,848 in Regime/Conversations
		// (cachegrind's marginal count).
		if n := t.edges[c.edge].lab.n; c.eoff != n {
			if p.extendHeld(held, r, full) {
				return
			}
			if end := from + n - c.eoff; full > end {
				// Blocks past the edge's end: those up to it cached
				// first, then the rest from there (cacheNewEdge's way,
				// where they begin a new edge), as caching up to full at
				// once leaves them. A prompt's shared prefix found in
				// part (its edge's last blocks evicted), then its own
				// ids, walked no more: 12,715 then 12,520 instructions
				// a request in Regime/Fleet8LeastLoaded, 17,795 then
				// 17,760 in Regime/Conversations (cachegrind's marginal
				// count). TestRunPoolTwin fails without the second call.
				p.runCache(held, r, end)
				p.runCache(held, r, full)
				return
			}
		} else if p.cacheNewEdge(r, full) {
			*held = full
			return
		}
	}
	start := runCursor{}
	if r.cur.pos == from {
		start = t.fresh(r.cur)
	}
	r.cur, r.room = p.insert(r.path, full, start), 0
	for _, sp := range t.spans {
		x, end := sp.lo+max(sp.pos, from)-sp.pos, sp.hi // match stopped at full
		if p.pub != nil {
			p.emitStored(sp.edge, x, end)
		}
		for x < end {
			if id := p.primAt(sp.edge, x); id != noNode {
				c := p.newSeg(segPlace{sp.edge, int32(x), int32(x + 1)}, 1, true)
				t.edges[sp.edge].ncopy++
				at := blockAt{sp.edge, int32(x)}
				t.copies[at] = append(t.copies[at], c)
				p.ncopy++
				r.copies = append(r.copies, runCopy{pos: sp.pos + x - sp.lo, seg: c})
				x++
				continue
			}
			y := p.nextPrim(sp.edge, x, end)
			if prev := p.primAt(sp.edge, x-1); prev != noNode && !p.nodes[prev].pinned && p.nodes[prev].refs == 1 && int(t.at[prev].hi) == x {
				t.at[prev].hi = int32(y) // a held neighbour of the same references: one segment
			} else {
				p.newSeg(segPlace{sp.edge, int32(x), int32(y)}, 1, false)
			}
			x = y
		}
	}
	p.cached += full - from
	*held = full
}

// extendHeld is runCache's shortcut for r's blocks from its held ones
// (*held) up to full (more) that go on along the edge of r's cursor
// (fresh, after its held blocks), where the segment ending at the cursor
// is r's alone and nothing is cached after it on the edge up to full: as
// runCache would (insert finds the blocks in the tree, walk one span
// over them, no primary block there, so the neighbour of the same
// references takes them), it extends that segment in place, with no
// walk from the cursor and no search per block. It reports whether it
// did (*held is full then); else nothing changed.
func (p *blockPool) extendHeld(held *int, r *runSeq, full int) bool {
	t := p.runs
	c := &r.cur
	ed := &t.edges[c.edge]
	if c.pos != *held || ed.gen != c.gen { // a stale cursor
		return false
	}
	k := full - c.pos
	lo := int32(c.eoff)
	prev, room := noNode, r.room
	var g *segPlace // prev's place
	if k <= room && len(ed.segs) == 1 {
		// A decoding request's answer, a block a call: the blocks agree
		// (room), and the edge's one segment is what heldBefore finds,
		// without a scan, if it is primary and ends at the cursor; else
		// heldBefore finds nothing. TestRunPoolTwin reaches both ways.
		// Then, as below, it must be r's alone.
		prev = ed.segs[0]
		g = &t.at[prev]
		if nd := &p.nodes[prev]; g.hi != lo || nd.copy || nd.pinned || nd.refs != 1 {
			return false
		}
		t.grown++
	} else {
		lab := &r.path[c.li]
		if c.eoff == 0 || c.eoff+k > ed.lab.n || c.lo+k > lab.n {
			return false
		}
		// The block before the cursor is block eoff−1 of the edge and lo−1 of
		// the label: two runs of one shape (commonRun's run) that agree on
		// that block agree on those after it.
		run := ed.lab.per == lab.per && ed.lab.c.kind == lab.c.kind && (lab.per > 0 || lab.c.kind == 3)
		if !(c.lo > 0 && run) && commonRun(&ed.lab, c.eoff, lab, c.lo, k, t.b) != k {
			return false
		}
		if prev = p.heldBefore(c.edge, lo, lo+int32(k)); prev == noNode {
			return false
		}
		// So, of one shape, they agree on all the blocks both go on for.
		room = k
		if run {
			room = min(ed.lab.n-c.eoff, lab.n-c.lo)
		}
		if p.nodes[prev].pinned || p.nodes[prev].refs != 1 {
			return false
		}
		g = &t.at[prev]
	}
	r.room = room - k
	hi := lo + int32(k)
	g.hi = hi
	t.inPlace++
	if p.pub != nil {
		p.emitStored(c.edge, int(lo), int(hi))
	}
	p.cached += k
	*held = full
	c.eoff, c.pos, c.lo = c.eoff+k, full, c.lo+k
	if r.room == 0 && c.lo == r.path[c.li].n {
		c.li, c.lo = c.li+1, 0
	}
	return true
}

// deferHeld is extendHeld put off: r's blocks from its held ones (*held)
// up to full counted as held and cached (*held is full, p.cached counts
// them) while its segment and cursor stay where they are, r owing them
// (r.owe), when extendHeld would take its first way for them all (the
// edge's one segment r's alone, ending at the cursor, the blocks within
// the room noted). Nothing reads that segment or cursor but a walk along
// the edge, a read of the segments on it, or a call for r itself, and
// each settles what is owed first (settle, settleAll: walk, so runCache's
// insertion too, runLeading, runKeys, runReleaseRange, and a publisher or
// a tier set; Check reads the debt as it is), as extendHeld would have
// left it: the one segment can
// change in nothing else meanwhile (nobody else holds a block of the
// edge, so no release or eviction reaches it, and no other segment comes
// on it but by a walk along it). It reports whether it did; else r owes
// nothing (settled) and nothing else changed. A decode cohort's member
// caching its answer block by block (coPublish) saves the segment's and
// cursor's moves of every block but the last, settled once.
func (p *blockPool) deferHeld(held *int, r *runSeq, full int) bool {
	t := p.runs
	k := full - *held
	if r.owe > 0 { // its conditions stand while it owes
		if r.owe+k > r.room {
			t.settle(r)
			return false
		}
		r.owe += k
	} else {
		c := &r.cur
		ed := &t.edges[c.edge]
		if c.pos != *held || ed.gen != c.gen || k > r.room || len(ed.segs) != 1 {
			return false
		}
		id := ed.segs[0]
		if nd := &p.nodes[id]; t.at[id].hi != int32(c.eoff) || nd.copy || nd.pinned || nd.refs != 1 {
			return false
		}
		r.owe, r.oweAt = k, int32(len(t.owing))
		t.owing = append(t.owing, r)
		ed.owed++
	}
	p.cached += k
	*held = full
	return true
}

// coastable reports whether r, holding held blocks, may owe every block
// up to shared as deferHeld owes them (a decode cohort's member that
// coasts: coasts), and if so lists it as owing.
func (p *blockPool) coastable(r *runSeq, held, shared int) bool {
	if r.owe > 0 {
		return r.owe+shared-held <= r.room
	}
	t := p.runs
	c := &r.cur
	ed := &t.edges[c.edge]
	if c.pos != held || ed.gen != c.gen || shared-held > r.room || len(ed.segs) != 1 {
		return false
	}
	id := ed.segs[0]
	if nd := &p.nodes[id]; t.at[id].hi != int32(c.eoff) || nd.copy || nd.pinned || nd.refs != 1 {
		return false
	}
	r.oweAt = int32(len(t.owing))
	t.owing = append(t.owing, r)
	ed.owed++
	return true
}

// walkedOwed reports whether a sequence owes blocks (deferHeld) on an
// edge the walk that left t.spans and stopped on edge e entered: every
// edge it entered holds a span but the last. A test of each edge as the
// walk entered it cost MooncakeReplay, which owes none, 13 instructions
// a request (cachegrind).
func (t *runTree) walkedOwed(e int32) bool {
	owed := t.edges[e].owed
	for _, sp := range t.spans {
		owed |= t.edges[sp.edge].owed
	}
	return owed != 0
}

// settle moves r's segment and cursor over the blocks r owes
// (deferHeld), as extendHeld's first way would have moved them a call at
// a time, and takes r off the owing list.
func (t *runTree) settle(r *runSeq) {
	k := r.owe
	c := &r.cur
	if r.coast { // it owes coHeld's blocks, and coasts no more
		s := r.cs
		k = min(s.shared, (s.computed-s.t0+1+t.cst.pubT)/t.b) - c.pos
		r.coast = false
		t.uncoasted = append(t.uncoasted, r)
	}
	ed := &t.edges[c.edge]
	t.at[ed.segs[0]].hi += int32(k)
	ed.owed--
	r.room -= k
	c.eoff, c.pos, c.lo = c.eoff+k, c.pos+k, c.lo+k
	if r.room == 0 && c.lo == r.path[c.li].n {
		c.li, c.lo = c.li+1, 0
	}
	r.owe = 0
	last := len(t.owing) - 1
	x := t.owing[last]
	t.owing[r.oweAt], x.oweAt = x, r.oweAt
	t.owing[last] = nil
	t.owing = t.owing[:last]
}

// settleAll settles every sequence owing blocks (deferHeld).
func (t *runTree) settleAll() {
	for len(t.owing) > 0 {
		t.settle(t.owing[len(t.owing)-1])
	}
}

// heldBefore is the primary segment of edge e ending at block lo, or
// noNode if there is none or if a primary segment holds any of blocks
// lo to hi−1 (cached there already: those would be copies).
func (p *blockPool) heldBefore(e, lo, hi int32) int32 {
	t := p.runs
	prev := noNode
	for _, id := range t.edges[e].segs {
		if p.nodes[id].copy {
			continue
		}
		if g := &t.at[id]; g.hi == lo {
			prev = id
		} else if g.lo < hi && lo < g.hi {
			return noNode
		}
	}
	return prev
}

// cacheNewEdge is runCache's shortcut for blocks that begin a new edge:
// r's cursor (fresh, after r's held blocks) at the end of its edge, the
// blocks up to full on one label of r's path, and no child of the edge
// beginning with the first of them (a prompt's own ids after a shared
// prefix it found). As runCache would (insert finds nothing after the
// cursor and adds the edge, walk one span over its first blocks, no
// segment on it), it adds the edge and one segment of the blocks, with
// no walk. It reports whether it did; else nothing changed.
func (p *blockPool) cacheNewEdge(r *runSeq, full int) bool {
	t := p.runs
	c := &r.cur
	k := full - c.pos
	lab := &r.path[c.li]
	if c.eoff != t.edges[c.edge].lab.n || c.lo+k > lab.n {
		return false
	}
	// The edge's key is added to the child index where the lookup for
	// it found none, in one probe: a lookup and then a put cost 28
	// instructions a request more in Regime/Fleet8LeastLoaded (12,958
	// then 12,930) and 55 in Regime/Conversations (cachegrind's
	// marginal count).
	//
	// An edge of no kid (a conversation's last turn's, before its next
	// turn's new ids) takes its first out of the index: walk and
	// runLeading find an only kid by compare (runTree.kid), and
	// indexKids puts it there when a second comes (runEdge.indexed).
	// The index's add, and gcEdge's delete when the edge is dropped,
	// cost Regime/Conversations 86 instructions a request of
	// servesim's own (9,988 then 9,902; Fleet8PrefixApprox, whose new
	// edges are a group's kids, 9,407 then 9,416: cachegrind's marginal
	// count). With one kid not indexed, the kid is compared as the
	// index's add would find it.
	var e int32
	if kids := t.edges[c.edge].kids; len(kids) > 1 || t.indexAll || len(kids) == 1 && t.edges[kids[0]].indexed {
		key := childKey(c.edge, lab.at(c.lo, t.b))
		if _, added := t.child.add(key, t.nextEdge()); !added {
			return false
		}
		e = t.addEdge(c.edge, lab.from(c.lo, t.b), key, true)
	} else {
		first := lab.at(c.lo, t.b)
		if len(kids) == 1 && t.edges[kids[0]].lab.c == first { // its kid begins with them: no new edge
			return false
		}
		// An only kid's key is made when a second kid comes (indexKids):
		// a conversation's turns, each its last turn's only kid, are
		// not keyed at all. The key made here for each cost Regime/
		// Conversations 21 instructions a request of servesim's own
		// (9,556 then 9,535; cacheNewEdge 182 then 161, cachegrind's
		// marginal count).
		var key uint64
		if len(kids) == 1 {
			key = childKey(c.edge, first)
		}
		e = t.addEdge(c.edge, lab.from(c.lo, t.b), key, false)
		if len(kids) == 1 {
			t.indexKids(c.edge, e)
		}
	}
	p.newSeg(segPlace{e, 0, int32(k)}, 1, false)
	if p.pub != nil {
		p.emitStored(e, 0, k)
	}
	t.newEdges++
	p.cached += k
	// Field by field (li stays): the cursor written whole was built
	// apart and copied, cacheNewEdge 333 then 307 instructions a request
	// in Regime/Conversations (cachegrind's marginal count).
	c.edge, c.gen, c.eoff, c.pos, c.lo = e, t.edges[e].gen, k, full, c.lo+k
	r.room = lab.n - c.lo // the edge is the rest of the label (extendHeld)
	if c.lo == lab.n {
		c.li, c.lo = c.li+1, 0
	}
	return true
}

// emitStored publishes the caching of blocks lo to hi−1 of edge e, in
// order, as blockPool.cache publishes each (a copy too), as one run to a
// sink that takes runs. Its callers
// test for a publisher: a call that returns at once costs Regime/
// Conversations, which publishes nothing, 150 instructions a request.
// A run along consecutive ids goes by name to a sink that takes it so
// (chainAt), or with its keys, computed here and kept for its eviction,
// to one that asks for them (kvChainKeysSink).
func (p *blockPool) emitStored(e int32, lo, hi int) {
	if lo >= hi {
		return
	}
	t := p.runs
	if p.pub.chains != nil {
		if c, ok := t.chainAt(e, lo, hi); ok {
			if k := p.pub.keyed; k != nil && k.ChainKeys() {
				t.key(e, hi-1)
				k.KVStoredChainKeys(p.pub.at(), t.edges[e].keys[lo:hi])
				return
			}
			p.pub.chains.KVStoredChain(p.pub.at(), c)
			return
		}
	}
	t.key(e, hi-1) // computes those before it too
	p.pub.emitRun(t.edges[e].keys[lo:hi], false)
}

// chainAt names blocks lo to hi−1 of edge e by what their keys are
// computed from (kvchain.Run), ok false where the edge is not along
// consecutive ids, its keys from lo on are known already, or it copies
// them from the fleet's memo (an edge under the root from a unit's
// first block: a shared prefix, whose keys a router asks for). Their keys
// are not computed here: a sink that takes runs so (kvChainSink) computes
// those it needs, and the engine those it needs (an eviction's), when it
// needs them (extendKeys, the same keys). The keys before lo are.
func (t *runTree) chainAt(e int32, lo, hi int) (kvchain.Run, bool) {
	ed := &t.edges[e]
	lab := &ed.lab
	if lab.per == 0 || len(ed.keys) > lo || ed.parent == 0 && lab.c.off == 0 && t.memo != nil {
		return kvchain.Run{}, false
	}
	k := rootKey
	if lo > 0 {
		k = t.key(e, lo-1)
	} else if par := ed.parent; par > 0 {
		k = t.key(par, t.edges[par].lab.n-1)
	}
	b := t.b
	o := int(lab.c.off)/b + lo
	return kvchain.Run{Parent: k, ID: lab.c.id + uint64(o/lab.per), R: o % lab.per, Per: lab.per, B: b, N: hi - lo}, true
}

// key is blockPool's key of block off of edge e: chained from the root
// over the content of the blocks before it (keyAt), computed once an
// edge and kept in its keys, each edge's first chained on its parent's
// last.
func (t *runTree) key(e int32, off int) uint64 {
	if keys := t.edges[e].keys; off < len(keys) {
		return keys[off]
	}
	return t.extendKeys(e, off)
}

// extendKeys computes edge e's keys up to its block off and returns
// that one's. Along a run of consecutive ids (per > 0) block j's
// content is at(j)'s, the unit id+(o+j)/per at offset ((o+j)%per)·b, o
// the first block's place in its unit (kvchain.Fill).
//
// An edge under the root along consecutive ids from a unit's first
// block (a shared prefix, as workloads number it) copies its keys from
// the memo the engine shares with its fleet (keyMemo.runKeys), where a
// router asking Engine.RunKeys found them first, or another replica.
func (t *runTree) extendKeys(e int32, off int) uint64 {
	ed := &t.edges[e]
	if lab := &ed.lab; ed.parent == 0 && lab.per > 0 && lab.c.off == 0 && t.memo != nil {
		ed.keys = t.memo.runKeys(ed.keys, lab.c.id, lab.per*t.b, t.b, off+1)
		return ed.keys[off]
	}
	k := rootKey
	if n := len(ed.keys); n > 0 {
		k = ed.keys[n-1]
	} else if par := ed.parent; par > 0 {
		k = t.key(par, t.edges[par].lab.n-1)
		ed = &t.edges[e]
	}
	from := len(ed.keys)
	ed.keys = slices.Grow(ed.keys, off+1-from)[:off+1]
	keys, lab, b := ed.keys[from:], &ed.lab, t.b
	if lab.per == 0 { // one content, every block
		v := lab.c.value()
		for i := range keys {
			k = mix(k, v)
			keys[i] = k
		}
		return k
	}
	o := int(lab.c.off)/b + from
	return kvchain.Fill(keys, k, lab.c.id+uint64(o/lab.per), o%lab.per, lab.per, b)
}

// runRelease drops r's references to its blocks from position from on,
// last first, as releaseAll: those nobody holds any more join the tail of
// the free queue (queue 1 under FreeBlocksFirst) in that order.
func (p *blockPool) runRelease(held *int, r *runSeq, from int) {
	p.runReleaseRange(r, from, *held)
	for len(r.copies) > 0 && r.copies[len(r.copies)-1].pos >= from {
		r.copies = r.copies[:len(r.copies)-1]
	}
	*held = from
}

// runReleaseRange drops r's references to its blocks lo to hi−1, last
// first, leaving r as it is. With r's cursor after its hi blocks (most
// releases) it reads chain's spans as chain finds them, up the tree from
// the cursor, last first, and keeps none: as after chain, no walk left
// t.spans (t.walked); else it reads match's.
func (p *blockPool) runReleaseRange(r *runSeq, lo, hi int) {
	if r.owe > 0 || r.coast {
		p.runs.settle(r)
	}
	qi := uint8(0)
	if p.split {
		qi = 1
	}
	t := p.runs
	ci := len(r.copies) - 1
	for ci >= 0 && r.copies[ci].pos >= hi {
		ci--
	}
	// The cursor read where it is, not copied, and only the walk's path
	// forgotten, not all it noted: 12,485 then 12,463 instructions a
	// request in Regime/Fleet8LeastLoaded (cachegrind's marginal count).
	if c := &r.cur; c.pos == hi && t.edges[c.edge].gen == c.gen { // chain's test
		t.walked.path = nil // no walk left t.spans (walkedTo)
		pos, ce := hi, c.edge
		up, eh := ce, c.eoff
		if ci < 0 && lo == 0 {
			up, eh, pos = p.releaseOnes(up, eh, pos, qi)
		}
		for up > 0 && pos > lo {
			// The edge read once, its parent the next up with the rest:
			// t.edges[e] indexed for each (the parent in the loop's
			// post statement) cost Regime/Conversations 41 instructions
			// a request more (12,444 then 12,403, servesim's own,
			// cachegrind's marginal count).
			e, ed := up, &t.edges[up]
			up = ed.parent
			if e != ce {
				eh = ed.lab.n
			}
			if eh > 0 {
				pos -= eh
				if ci >= 0 {
					ci = p.releaseSpan(r, runSpan{edge: e, hi: eh, pos: pos}, lo, ci, qi)
					continue
				}
				// No copy of r's left: releaseSpan's first loop, without
				// its call, 18,067 then 17,932 instructions a request in
				// Regime/Conversations, whose release goes up six edges
				// (cachegrind's marginal count; 12,849 then 12,836 in
				// Regime/Fleet8LeastLoaded).
				low := max(0, lo-pos)
				if segs := ed.segs; len(segs) == 1 {
					// The edge's one segment is the span's blocks, as
					// every edge a conversation's turn releases: its
					// reference dropped here, releaseDown's primAt and
					// isolate's test without the call: Regime/
					// Conversations 12,822 then 12,615 instructions a
					// request (servesim's own, cachegrind's marginal
					// count).
					id := segs[0]
					if g := &t.at[id]; int(g.lo) == low && int(g.hi) == eh {
						if s := &p.nodes[id]; !s.copy {
							if s.refs--; s.refs == 0 {
								// linkSeg with s and g at hand: its call
								// (too complex to inline) cost Regime/
								// Conversations 66 instructions a request
								// more, and 34 more with enqueue's call
								// inlined here instead (cachegrind's
								// marginal count): queueTail.
								n := int(g.hi - g.lo)
								p.evict += n
								p.queueTail(s, id, &p.q[qi], qi, n)
							}
							continue
						}
					}
				}
				for x := eh - 1; x >= low; {
					x = p.releaseDown(e, x, low, qi)
				}
			}
		}
		return
	}
	t.match(r.path, hi)
	for si := len(t.spans) - 1; si >= 0; si-- {
		sp := t.spans[si]
		if sp.pos+sp.hi-sp.lo <= lo {
			break
		}
		ci = p.releaseSpan(r, sp, lo, ci, qi)
	}
}

// releaseOnes is runReleaseRange's loop for a release of r's blocks
// from its first (lo 0), none of them a copy of r's, up the tree from
// edge up, its span's blocks eh, after pos blocks: while each edge's
// one segment is its span's blocks, a primary one (every edge a
// conversation's turn releases), its reference is dropped, and the
// segment queued at qi's tail when nobody holds it, as that loop does.
// It returns the edge it stopped at, that edge's eh and pos, for the
// loop to go on from. With no call in it, the span's first block 0
// and the queue taken once, it keeps its values in registers, and the
// edge's eh read from its label as the loop leaves the edge below, not
// tested against the cursor's edge: Regime/Conversations 10,337 then
// 10,299 instructions a request (the budget test; runReleaseRange 391,
// then 71 and this 292), Regime/Fleet8PrefixApprox 9,753 then 9,749
// (the same loop with lo and the cursor's edge kept, and its queue
// indexed at each edge, 10,495 then 10,490 in Regime/Conversations).
func (p *blockPool) releaseOnes(up int32, eh, pos int, qi uint8) (int32, int, int) {
	if up <= 0 || pos <= 0 {
		return up, eh, pos
	}
	t := p.runs
	q := &p.q[qi]
	// The edge above taken where its blocks are read, and kept for the
	// next turn of the loop (indexed at its head again, and up tested
	// there and at the parent).
	ed := &t.edges[up]
	for {
		if eh > 0 {
			segs := ed.segs
			if len(segs) != 1 {
				break
			}
			id := segs[0]
			g := &t.at[id]
			if g.lo != 0 || int(g.hi) != eh {
				break
			}
			s := &p.nodes[id]
			if s.copy {
				break
			}
			pos -= eh
			if s.refs--; s.refs == 0 {
				p.evict += eh
				p.queueTail(s, id, q, qi, eh)
			}
		}
		if up = ed.parent; up <= 0 {
			break
		}
		ed = &t.edges[up]
		if eh = ed.lab.n; pos <= 0 {
			break
		}
	}
	return up, eh, pos
}

// releaseSpan is runReleaseRange's release of the blocks of span sp from
// lo on, last first, r's copies among them from r.copies[ci] down. It
// returns the index of r's last copy before them.
func (p *blockPool) releaseSpan(r *runSeq, sp runSpan, lo, ci int, qi uint8) int {
	low := sp.lo + max(0, lo-sp.pos)
	x := sp.hi - 1
	if ci < 0 || r.copies[ci].pos < sp.pos+low-sp.lo { // no copy of r's among them, as most spans
		// The loop below without its tests of copies: 18,633 then
		// 18,546 instructions a request in Regime/Conversations
		// (cachegrind's marginal count; releaseSpan 819 then 748 with
		// releaseDown). The copy's position tested against an offset
		// kept (one loop, one test a block) cost more than both loops:
		// 18,630.
		for x >= low {
			x = p.releaseDown(sp.edge, x, low, qi)
		}
		return ci
	}
	for x >= low {
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
		x = p.releaseDown(sp.edge, x, bound, qi)
	}
	return ci
}

// releaseDown drops one reference to the blocks of edge e from x down
// to bound, or to the first of the segment holding x if it begins
// after bound, and returns the block below them.
func (p *blockPool) releaseDown(e int32, x, bound int, qi uint8) int {
	id := p.primAt(e, x)
	g := &p.runs.at[id]
	b := max(int(g.lo), bound)
	if int(g.lo) < b || int(g.hi) > x+1 { // else id is those blocks (isolate's test)
		id = p.isolate(id, b, x+1)
	}
	p.unref(id, qi)
	return b - 1
}

// unref drops one reference to segment id, queueing it at the tail of
// queue qi when nobody holds it any more.
func (p *blockPool) unref(id int32, qi uint8) {
	if p.nodes[id].refs--; p.nodes[id].refs == 0 {
		p.linkSeg(id, qi)
	}
}

// runFinds reports whether block j of path is cached, found by a lookup
// of its key (the blocks before it may not be).
func (p *blockPool) runFinds(path []runLabel, j int) bool {
	t := p.runs
	if pos, _, _ := t.match(path, j+1); pos != j+1 {
		return false
	}
	sp := t.spans[len(t.spans)-1]
	return p.primAt(sp.edge, sp.hi-1) != noNode
}

// runLeading is how many of path's first limit blocks (limit > 0) are
// cached, leading, read without changing the pool (match's scratch
// included). first is childKey(0, path[0].c), the key of the root's
// child the path begins with, the same in every tree: a caller asking
// many pools about one path computes it once (PrefixPath).
func (p *blockPool) runLeading(path []runLabel, limit int, first uint64) int {
	t := p.runs
	pos, li, lo := 0, 0, 0
	e, ok := t.kid(0, path[0].c, first) // the root holds no block: its child's first is the path's
	if !ok {
		return 0
	}
	if ed, lab := &t.edges[e], &path[0]; limit <= ed.lab.n && limit <= lab.n && ed.owed == 0 && oneShape(&ed.lab, lab) {
		// The path's blocks all lie on the edge its first is found at,
		// in one label: the loop's first turn, which is its last, without
		// its bookkeeping. A group's prefix asked of a replica that holds
		// it is such an edge (every one of 208,552 asks in
		// BenchmarkRunFleet64/workload=prefix/router=PrefixAffinity,
		// SERVESIM_BUDGET_FUNCS: 13,249 then 13,041 instructions a
		// request; runLeading 704 then 287).
		if ed.lab.c != lab.c { // as the loop's one compare, below
			return 0
		}
		if len(ed.segs) == 1 {
			// primReach of one segment, without its call and primAt's
			// loop: the group's edge held whole is one segment (13,041
			// then 12,904 instructions a request in the benchmark above).
			if id := ed.segs[0]; t.at[id].lo == 0 && !p.nodes[id].copy {
				return min(int(t.at[id].hi), limit)
			}
			return 0
		}
		return p.primReach(e, 0, limit)
	}
	eoff := 0
	for pos < limit {
		ed := &t.edges[e]
		if eoff == ed.lab.n {
			first := path[li].at(lo, t.b)
			c, ok := t.kid(e, first, childKey(e, first))
			if !ok {
				return pos
			}
			e, eoff = c, 0
			ed = &t.edges[e]
		}
		if ed.owed != 0 { // its segments are read below (deferHeld)
			t.settleAll()
		}
		lab := &path[li]
		k := min(limit-pos, ed.lab.n-eoff, lab.n-lo) // > 0
		if eoff == 0 && lo == 0 && oneShape(&ed.lab, lab) {
			// commonRun's one compare, of the two first blocks at hand,
			// as walk's (an edge just found by the key of the path's
			// block there: they agree unless two keys collide), without
			// the call: a group's prefix asked of a replica that holds
			// it is one edge (BenchmarkRunFleet64/workload=prefix/
			// router=PrefixAffinity, SERVESIM_BUDGET_FUNCS: 14,109 then 13,975
			// instructions a request).
			if ed.lab.c != lab.c {
				k = 0
			}
		} else {
			k = commonRun(&ed.lab, eoff, lab, lo, k, t.b)
		}
		if x := p.primReach(e, eoff, eoff+k); x < eoff+k {
			return pos + x - eoff
		}
		if k == 0 {
			return pos
		}
		pos, eoff, lo = pos+k, eoff+k, lo+k
		if lo == lab.n {
			li, lo = li+1, 0
		}
	}
	return pos
}

// primReach is the first offset of edge e in [from, to) that no primary
// segment holds, to when they hold them all.
func (p *blockPool) primReach(e int32, from, to int) int {
	for x := from; x < to; {
		id := p.primAt(e, x)
		if id == noNode {
			return x
		}
		x = int(p.runs.at[id].hi)
	}
	return to
}

// runKeys is CachedKeys in a pool kept by runs: how many of keys, a
// chain from the root, are cached, leading. The tree holds no key, so it
// computes those of the blocks it walks (of every child at an edge's
// end): slow, and only for a CachedKeys asked once the pool was kept by
// runs (decideRuns keeps it by blocks for one asked before).
func (p *blockPool) runKeys(keys []uint64) int {
	t := p.runs
	t.settleAll() // it reads the segments of the edges it walks (deferHeld)
	e, off, key := int32(0), 0, rootKey
	for j, k := range keys {
		if ed := &t.edges[e]; off < ed.lab.n {
			if mix(key, ed.lab.at(off, t.b).value()) != k {
				return j
			}
			off++
		} else {
			next := noNode
			for _, c := range ed.kids {
				if mix(key, t.edges[c].lab.c.value()) == k {
					next = c
					break
				}
			}
			if next == noNode {
				return j
			}
			e, off = next, 1
		}
		if p.primAt(e, off-1) == noNode {
			return j
		}
		key = k
	}
	return len(keys)
}

// decideRuns keeps the pool by runs from now on unless CachedKeys was
// asked (keysRead) or the prefix cache is off. The engine calls it when
// it caches its first content. KV events read the keys of the blocks
// they name, which the tree computes once an edge (runTree.key); a tier
// reads no key of the pool: it is handed each request's own chain of
// keys (seq.keys, storeNew, reserveTier), which the engine computes by
// the request either way (extendKeys).
func (e *Engine) decideRuns() {
	e.runsDecided = true
	if e.cacheOn && !e.keysRead && !e.noRuns {
		t := &runTree{b: e.cfg.BlockSize, copies: map[blockAt][]int32{}, memo: e.memo, probe: new([probeSlots]probeEntry)}
		t.edges = append(t.edges, runEdge{parent: -1}) // the root: no blocks
		e.pool.runs = t
	}
}

// keyAt is the key of block off of edge e, chained from the root: the
// slow twin of runTree.key (Check holds the kept keys to the same chain,
// from chainStarts).
func keyAt(t *runTree, e int32, off int) uint64 {
	var chain []int32
	for x := e; x > 0; x = t.edges[x].parent {
		chain = append(chain, x)
	}
	key := rootKey
	for i := len(chain) - 1; i >= 0; i-- {
		x := chain[i]
		n := t.edges[x].lab.n
		if x == e {
			n = off + 1
		}
		for j := range n {
			key = mix(key, t.edges[x].lab.at(j, t.b).value())
		}
	}
	return key
}

// chainStarts are the keys the edges of t chain from (keyAt's chain
// before an edge's first block: its parent's last block's key, rootKey
// under the root), each edge's labels mixed once, as Check asks for
// them: Check's measure of the kept keys is then linear in the tree's
// blocks. keyAt a kept key was quadratic in a path's length, and the
// checked runs of long conversations spent nearly all their time there
// (sim's TestConversationIDsAreLabels/PrefixEvents, 19 s, 88 % in
// keyAt). TestChainStartsAreKeyAt holds the two equal.
type chainStarts struct {
	t     *runTree
	ends  map[int32]uint64 // the key of an edge's last block, by edge
	chain []int32
}

// at is the key edge e's first block chains from.
func (c *chainStarts) at(e int32) uint64 {
	t := c.t
	if c.ends == nil {
		c.ends = map[int32]uint64{}
	}
	c.chain = c.chain[:0]
	x := t.edges[e].parent
	for ; x > 0; x = t.edges[x].parent {
		if _, ok := c.ends[x]; ok {
			break
		}
		c.chain = append(c.chain, x)
	}
	key := rootKey
	if x > 0 {
		key = c.ends[x]
	}
	for i := len(c.chain) - 1; i >= 0; i-- {
		y := c.chain[i]
		for j := range t.edges[y].lab.n {
			key = mix(key, t.edges[y].lab.at(j, t.b).value())
		}
		c.ends[y] = key
	}
	return key
}

// warmRuns is Warm in a pool kept by runs: the n blocks of shared content
// of r, block by block as Warm's walk of their keys.
func (e *Engine) warmRuns(r *Request, n int) int {
	p := &e.pool
	var rs runSeq
	if r.PrefixTwoRuns.Rises() {
		rs.path = appendRisingPath(nil, nil, r.Prefix, r.PrefixBlockTokens, e.cfg.BlockSize, n, 0)
	} else {
		rs.path = appendRunPath(nil, nil, r.Prefix, r.PrefixBlockTokens, e.cfg.BlockSize, n, r.PrefixTwoRuns.Two(), 0)
	}
	held, added := 0, 0
	for j := range n {
		if p.runFinds(rs.path, j) {
			p.runTouch(&held, &rs, j+1)
			continue
		}
		if p.free() == 0 { // only the blocks this call holds are left
			break
		}
		p.take(1)
		p.runCache(&held, &rs, j+1)
		added++
	}
	p.runRelease(&held, &rs, 0) // freed last first, as a request's
	return added
}

// segmentsChecked is Check's part on the blocks of a pool kept by runs:
// each segment lies on its edge, a copy is one block at a place a primary
// segment holds, the primary segments of an edge do not overlap, the tree
// finds each edge under its parent, a segment counts as references the
// requests holding each of its blocks and is queued exactly when nobody
// holds it, blocks held + free = total, and the counts of cached,
// evictable and copied blocks are right.
func (c *checker) segmentsChecked() {
	e := c.e
	p := &e.pool
	t := p.runs
	// Blocks owed (deferHeld) stay owed: the segments are checked as they
	// are, each owing request's blocks up to its cursor, and its owed
	// ones as extendHeld's first way would take them.
	t.checking = true
	defer func() { t.checking = false }()
	owed, owing := 0, 0
	// holders is by segment (edge field: its id) and offset, the map
	// kept from the last Check: grown once, not every step of a checked
	// run (sim's checked runs of large pools spent half their Check's time
	// growing it: TestFastForwardIsExactUnderKVPressureWithSharing's CPU
	// profile).
	if t.holders == nil {
		t.holders = map[blockAt]int32{}
	}
	holders := t.holders
	clear(holders)
	note := func(s *seq) {
		if s.held == 0 {
			return
		}
		r := s.runs
		held, owe := s.held, r.owe
		if r.coast {
			owe = held - r.cur.pos // s is memberView's: coHeld's blocks
		}
		if r.owe > 0 || r.coast {
			held -= owe
			owed, owing = owed+owe, owing+1
			cu := r.cur
			ed := &t.edges[cu.edge]
			if int(r.oweAt) >= len(t.owing) || t.owing[r.oweAt] != r || cu.pos != held || ed.gen != cu.gen || ed.owed <= 0 ||
				owe > r.room || len(ed.segs) != 1 || int(t.at[ed.segs[0]].hi) != cu.eoff || p.nodes[ed.segs[0]].refs != 1 ||
				p.nodes[ed.segs[0]].copy || p.nodes[ed.segs[0]].pinned || cu.eoff+owe > ed.lab.n || owe < 0 || r.coast && owe+s.shared-s.held > r.room {
				c.badRequest(s, "owes %d blocks (room %d, coasting %v) after %d at %+v, which its edge %d (%d owing, %d segments) cannot take in place", owe, r.room, r.coast, held, cu, cu.edge, ed.owed, len(ed.segs))
				return
			}
		}
		if pos, _, _ := t.match(r.path, held); pos != held {
			c.badRequest(s, "holds %d cached blocks, %d of them in the tree", held, pos)
			return
		}
		ci := 0
		for _, sp := range t.spans {
			for x := sp.lo; x < sp.hi; x++ {
				id := noNode
				if ci < len(r.copies) && r.copies[ci].pos == sp.pos+x-sp.lo {
					id = r.copies[ci].seg
					ci++
				} else {
					id = p.primAt(sp.edge, x)
				}
				if id == noNode || t.at[id].edge != sp.edge || int(t.at[id].lo) > x || int(t.at[id].hi) <= x {
					c.badRequest(s, "holds block %d of edge %d, which segment %d does not hold", x, sp.edge, id)
					continue
				}
				holders[blockAt{id, int32(x)}]++
			}
		}
		if ci != len(r.copies) {
			c.badRequest(s, "holds %d copies, %d of them along its blocks", len(r.copies), ci)
		}
	}
	for _, s := range e.co.members {
		if s != nil {
			v := e.memberView(s)
			note(&v)
		}
	}
	for _, list := range [...][]*seq{e.running, e.reserved, e.landed} {
		for _, s := range list {
			note(s)
		}
	}
	if owing != len(t.owing) {
		c.badBlocks("%d requests owe blocks, %d listed", owing, len(t.owing))
	}
	held, cached, ncopy, owedEdges := c.anon+owed, owed, 0, 0 // the owed blocks counted as cached and held, not anonymous
	// counted is the blocks held by requests in segments counting
	// references.
	counted, indexed := 0, 0
	starts := chainStarts{t: t}
	for ei := range t.edges {
		ed := &t.edges[ei]
		owedEdges += int(ed.owed)
		if ed.indexed {
			indexed++
		}
		if ei > 0 && len(ed.segs)+len(ed.kids) > 0 {
			if !ed.indexed {
				if len(t.edges[ed.parent].kids) != 1 || t.indexAll {
					c.badBlocks("edge %d is not in the child index, one of its parent %d's %d kids", ei, ed.parent, len(t.edges[ed.parent].kids))
				}
			} else if got, ok := t.child.get(childKey(ed.parent, ed.lab.c)); !ok || got != int32(ei) {
				c.badBlocks("edge %d is found under its parent %d as %d (%v)", ei, ed.parent, got, ok)
			}
			if ed.indexed && ed.ckey != childKey(ed.parent, ed.lab.c) {
				c.badBlocks("edge %d keeps child key %x, not its own", ei, ed.ckey)
			}
			if kids := t.edges[ed.parent].kids; int(ed.kidAt) >= len(kids) || kids[ed.kidAt] != int32(ei) {
				c.badBlocks("edge %d is not at its place %d among its parent %d's kids %v", ei, ed.kidAt, ed.parent, kids)
			}
		}
		var key uint64
		if len(ed.keys) > 0 { // a freed edge's parents may lead nowhere
			key = starts.at(int32(ei))
		}
		for off, k := range ed.keys {
			if off < ed.lab.n {
				key = mix(key, ed.lab.at(off, t.b).value())
			}
			if off >= ed.lab.n || k != key {
				c.badBlocks("edge %d keeps key %x for its block %d of %d, not its chain's", ei, k, off, ed.lab.n)
				break
			}
		}
		copies := int32(0)
		for i, id := range ed.segs {
			s, g := &p.nodes[id], &t.at[id]
			if g.edge != int32(ei) || g.lo >= g.hi || s.run != segRun || int(g.hi) > ed.lab.n || s.refs < 0 || (s.refs == 0) != s.queued {
				c.badBlocks("segment %d of edge %d: %+v at %+v", id, ei, *s, *g)
				continue
			}
			size := g.size()
			cached += size
			if s.refs > 0 {
				held += size
			}
			if s.refs > 0 { // a block held in a segment counting none is found below, by the holders left
				for x := g.lo; x < g.hi; x++ {
					if n := holders[blockAt{id, x}]; n != s.refs {
						c.badBlocks("segment %d counts %d references, %d requests hold its block %d", id, s.refs, n, x)
					} else {
						counted++
					}
				}
			}
			if s.copy {
				copies++
				if size != 1 || !slices.Contains(t.copies[blockAt{int32(ei), g.lo}], id) || p.primAt(int32(ei), int(g.lo)) == noNode {
					c.badBlocks("copy %d at block %d of edge %d is not behind a primary block", id, g.lo, ei)
				}
				continue
			}
			for _, o := range ed.segs[i+1:] {
				if q := &t.at[o]; !p.nodes[o].copy && q.lo < g.hi && g.lo < q.hi {
					c.badBlocks("segments %d and %d of edge %d overlap", id, o, ei)
				}
			}
		}
		if copies != ed.ncopy {
			c.badBlocks("edge %d counts %d copies, holds %d", ei, ed.ncopy, copies)
		}
		ncopy += int(copies)
	}
	listed := 0
	for _, l := range t.copies {
		listed += len(l)
	}
	if indexed != t.child.len() {
		c.badBlocks("the child index holds %d edges, %d are in it", t.child.len(), indexed)
	}
	if owedEdges != owing {
		c.badBlocks("edges count %d requests owing blocks, %d owe", owedEdges, owing)
	}
	if len(holders) != counted {
		c.badBlocks("requests hold %d blocks of segments, %d of them in segments that count their references", len(holders), counted)
	}
	if held+c.free != p.total || c.free != p.free() || cached != e.CachedBlocks() || c.evict != p.evict || ncopy != p.ncopy || listed != ncopy {
		c.badBlocks("blocks held %d + free %d (counted %d) of %d; cached %d (counted %d), evictable %d (counted %d), copies %d listed %d (counted %d)",
			held, c.free, p.free(), p.total, cached, e.CachedBlocks(), c.evict, p.evict, ncopy, listed, p.ncopy)
	}
}
