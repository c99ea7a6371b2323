package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The decode cohort: the running requests in a decode streak, kept in
// aggregate so that a step costs O(1) in them, not a walk.
//
// A request joins when, at the head of the running list, it is a plain
// decode (it emitted at the end of the last outcome, and its one known
// token not in KV is the one it samples next) holding exactly the blocks of
// its computed tokens. The members are the running list's first requests,
// in order (e.running holds the others, after them). Each member's
// computed, known and emitted tokens are its fields plus the steps the
// cohort has decoded since the fields were written (tick − t0), and its
// anonymous blocks those of its computed tokens and of the steps whose
// blocks the cohort has taken ahead of them (ahead).
//
// A step plans the cohort at once when its members fit the token budget
// and the blocks they need are free: then each of them decodes one token,
// in any order, and none is preempted, exactly as the walk would have it.
// Their blocks are counted from the residues of their computed tokens as
// residues.go counts a run's, and taken in one call. Otherwise, and when
// the cohort is off (RecordSteps, say: decideFast), the members are written back into the running list
// (materialize) and the step is planned by the walk.
//
// A member whose answer is shared content (PrefixCoversOutput) caches
// its blocks as its decodes complete them, as the walk's publishDecode
// would: it is listed by residue (pubs), and the members whose decodes
// complete a block at a step cache it when that step is planned, or
// reached by a run (coPublish), before the other running requests'.
//
// With a KV tier, the members offer it their blocks as the walk's decodes
// would, first at each step (coStore, tier.go): listed by residue too,
// and apart while the tier refuses a member's store.
//
// The price of a step reads its decodes' contexts, of which the cohort
// keeps only the sum (csum + members × tick), priced with the sum as the
// first context and zeros after (sumDecode): so it needs a model that
// reads them only through their number and sum (costmodel.DecodeSum), and
// a driver that left streaks out of the outcome (OmitStreaks), so that
// completing a step does not list them either. decideFast (fastpaths.go)
// holds the whole condition. Plan.Batch.Decode then lists the contexts of
// the decodes outside the cohort, and Plan.Cohort counts the cohort's.
//
// A member finishes at a known tick (the cohort's finish queue), so the
// longest run none finishes before is read off the queue, and a step's
// finishers are popped from it and reported in running order.
//
// The walk is the slow twin; docs/fastpaths.md names the tests that hold
// the two equal.
type cohort struct {
	on      bool          // the engine keeps a cohort (decideFast)
	each    bool          // KV events published or a tier: a run's later steps are taken step by step (allocThrough)
	members []*seq        // in running order, before every request of e.running; nil: one that left
	n       int           // members (non-nil entries)
	tick    int           // decode steps the cohort has taken: its clock
	ahead   int           // steps whose blocks the members hold beyond their computed tokens
	count   []int32       // members by (computed − t0) mod BlockSize
	suf     *sufs         // suf.n(k) = Σ count[k:], suf.n(BlockSize) = 0: the members; suf.r(k) = Σ r·count[r] over r ≥ k
	mask    int           // BlockSize − 1, for coGrow
	q       int           // Σ ⌊(computed − t0) / BlockSize⌋ over the members
	fin     finQueue      // members by the tick of their last token
	joins   uint64        // members so far: a member's rank is its running order
	csum    int           // Σ (computed − t0) over the members: their contexts are csum + n·tick
	sumbuf  []int         // decode contexts with the step's sum first and zeros after: a DecodeSum price
	scratch []*seq        // finishers, and the running list being rebuilt
	pubs    [][]pubMember // members with blocks of shared output left to cache, by residue (as count), in running order
	npub    int32         // entries in pubs, live or not, and coasting members (coasts) (int32, and cached: the two in 8 bytes, which ts took, so that a replica's setup stays within its 6 KB)
	cached  int32         // coPublish calls that cached a member's block (tests read it)
	ts      *coStores     // with a tier, made at the first join: the members' stores (tier.go)
}

// coasts are the members that coast: owing their answer's blocks
// (deferHeld) with every block left within the room, so that coPublish
// visits them no more. A coasting member's held blocks are what
// coPublish would have cached by the last step published (pubT): coHeld,
// its seq.held and runSeq.owe not written; it leaves its residue's list
// (pubs) for one of its own (lists, for coPubLeft, with the step that
// caches its last block) until it stops coasting (coStop): when it
// leaves the cohort, or when the pool settles it (a walk reached its
// edge: runTree.settle lists it in runTree.uncoasted, and coDrain lists
// it again in pubs before the next step is published). Once its last
// block is cached it coasts on, holding them all (coHeld), until it
// leaves; npub counts it all the while.
type coasts struct {
	lists [][]coastEntry // coasting members by residue, as pubs, not in order; entries of those that stopped are dropped as coPubLeft passes them
	n     int            // coasting members, and those the pool settled not yet drained
	pubT  int            // the last step published (coPlanPublish, runPublishSteps): the cohort's clock then
}

// coastEntry is a coasting member in coasts.lists, with the step whose
// decode caches its last block. A queue of them by that step (a
// finQueue, popped as steps were published) cost Regime/Conversations 91
// instructions a request more (its heap's pushes and pops 191, these
// lists' scans in coPubLeft 98; cachegrind).
type coastEntry struct {
	last int
	rank uint64
	s    *seq
}

// live reports whether x's member still coasts (or the pool settled it,
// not drained yet) with a block left to cache after step t.
func (x coastEntry) live(t int) bool {
	return x.last > t && x.s.member && x.s.rank == x.rank && x.s.runs.cs == x.s
}

// coasting reports whether some member coasts (coasts).
func (e *Engine) coasting() bool {
	t := e.pool.runs
	return t != nil && t.cst != nil && t.cst.n > 0
}

// coHeld is a coasting member's held blocks: those its decodes through the
// step published last complete, as coPublish would have cached them.
func (e *Engine) coHeld(s *seq) int {
	return min(s.shared, (s.computed-s.t0+1+e.pool.runs.cst.pubT)>>e.sh())
}

// memberHeld is a member's held blocks: coHeld while it coasts, its
// cursor's once the pool settled it (not drained yet), else its own.
func (e *Engine) memberHeld(s *seq) int {
	if r := s.runs; r != nil && r.cs != nil {
		if r.coast {
			return e.coHeld(s)
		}
		return r.cur.pos
	}
	return s.held
}

// coStop ends s's coasting (s.runs.cs is s): its held blocks written, its
// blocks not on its segment owed as deferHeld owes them, its count
// dropped; with stay (s stays a member), listed again in its residue's
// list, in running order, if it has blocks left to cache.
func (e *Engine) coStop(s *seq, stay bool) {
	co, r := &e.co, s.runs
	held := e.memberHeld(s)
	if r.coast {
		r.coast, r.owe = false, held-r.cur.pos
		if r.owe == 0 {
			e.pool.runs.settle(r) // off the owing list
		}
	}
	e.pool.cached += held - s.held
	s.anon -= held - s.held
	s.held = held
	r.cs = nil
	k := (s.computed - s.t0) & co.mask
	e.pool.runs.cst.n--
	co.npub--
	if stay && s.held < s.shared {
		l := co.pubs[k]
		i := len(l)
		for i > 0 && l[i-1].rank > s.rank {
			i--
		}
		co.pubs[k] = slices.Insert(l, i, pubMember{s: s, rank: s.rank})
		co.npub++
	}
}

// coastCached is how many cached blocks the coasting members hold that
// the pool does not count yet (coStop counts them).
func (e *Engine) coastCached() int {
	n := 0
	if e.coasting() {
		for _, s := range e.co.members {
			if s != nil && s.runs != nil && s.runs.cs != nil {
				n += e.memberHeld(s) - s.held
			}
		}
	}
	return n
}

// leaveCoast ends s's coasting, if it coasts, before it leaves the
// cohort (syncMember's callers). Written into syncMember, its test cost
// MooncakeReplay, which has no coasting member, 27 instructions a request
// (syncMember was no longer inlined; cachegrind).
func (e *Engine) leaveCoast(s *seq) {
	if r := s.runs; r != nil && r.cs != nil {
		e.coStop(s, false)
	}
}

// coDrain stops the coasting of the members the pool settled
// (runTree.uncoasted), which stay members: coPublish visits them again.
func (e *Engine) coDrain() {
	t := e.pool.runs
	for _, r := range t.uncoasted {
		if r.cs != nil { // else it left the cohort since (syncMember)
			e.coStop(r.cs, true)
		}
	}
	clear(t.uncoasted)
	t.uncoasted = t.uncoasted[:0]
}

// pubMember is a member whose answer has blocks of shared content left to
// cache (PrefixCoversOutput: s.held < s.shared), in the list of its
// residue: its decode at the cohort's clock t completes a block when
// ^t & mask is that residue. It is live while it is that member with
// blocks left; the lists drop the others as they pass them.
type pubMember struct {
	s    *seq
	rank uint64
}

func (x pubMember) live() bool { return x.in() && x.s.held < x.s.shared }

// keepMembers drops from l, in place, the entries that are no longer
// their members (live: or whose members have no block of shared output
// left to cache), in order, and returns what is left.
func keepMembers(l []pubMember, live bool) []pubMember {
	k := 0
	for i, x := range l {
		if x.in() && (!live || x.s.held < x.s.shared) {
			if k != i { // else it is in its place: no store (a pointer's, with its write barrier)
				l[k] = x
			}
			k++
		}
	}
	if k < len(l) { // else no call to clear
		clear(l[k:])
	}
	return l[:k]
}

// in reports whether x is still that member.
func (x pubMember) in() bool { return x.s.member && x.s.rank == x.rank }

// sufs holds the cohort's suffix sums of its residue counts: BlockSize
// + 1 of them (at most maxResidueBlock + 1) in an array whose length is a
// power of two, so that an index masked by maxResidueBlock − 1 (or sufLen
// − 1), which changes no index below it, and plus one needs no bounds
// check (coGrow is the engine's most run line). Each entry k packs two sums in one word, n(k) = Σ count[r] and
// r(k) = Σ r·count[r] over the residues r ≥ k, as n(k) + r(k)·2³²: n(k)
// is never negative nor 2³¹ (members, at most MaxSeqsLimit), nor is r(k)
// (less than maxResidueBlock·MaxSeqsLimit, 2²⁰), so adding d + d·r·2³²
// adds d to one and d·r to the other, and countMember's loop makes one
// store an entry where two arrays took two (and coRange one difference
// where it took two): countMember 141 → 122 instructions a request,
// coBlockSteps 70 → 61, RunAtlas 4,908 → 4,881 (the budget test); with
// countMember's test for noSufs, 136 and 4,894 (the test in joinCohort's
// join instead, 4,897 → 4,888).
type sufs [sufLen]int64

// noSufs is the sums of no member, which a cohort reads until its first
// join makes its own (joinCohort, before it counts the member): a kept
// cohort's sums are 1 KiB, and a replica's setup stays within its 6 KB
// (TestFleetSetupAllocatesEachReplicaOnce).
// Nothing writes it.
var noSufs sufs

// n is the members counted at residues k and above.
func (s *sufs) n(k int) int { return int(int32(s[k])) }

// r is Σ r·count[r] over the residues r ≥ k (k ≤ BlockSize).
func (s *sufs) r(k int) int { return int(s[k] >> 32) }

const sufLen = 128

const _ = uint(sufLen - maxResidueBlock - 2) // does not compile unless they fit

// finMin is the tick of the cohort's next last token (there are members).
func (e *Engine) finMin() int {
	q := &e.co.fin
	for {
		if x := q.front(); x.live() {
			return x.tick
		}
		q.pop()
	}
}

// setCohort keeps a cohort or not, as decideFast decided. A cohort that
// is no longer kept is written back into the running list at the next
// planning.
func (e *Engine) setCohort(on bool) {
	e.co.on = on
	if e.co.on && e.co.count == nil {
		e.co.count = make([]int32, e.cfg.BlockSize)
		e.co.suf = &noSufs // made at the first join (joinCohort)
		e.co.mask = e.cfg.BlockSize - 1
		e.co.sumbuf = make([]int, e.cfg.MaxSeqs)
	}
}

// countMember adds d members whose computed tokens when the clock read 0
// would be c (computed − t0) to the counts: O(BlockSize), once per join or
// leave, so that coBlocks is O(1) per step.
func (e *Engine) countMember(c, d int) {
	co := &e.co
	r := c & (e.cfg.BlockSize - 1)
	co.count[r] += int32(d)
	add := int64(d) + int64(d*r)<<32
	if r >= 16 {
		co.sufsTo(r, add)
	} else {
		// Entries r down to 0 of a block of at most 16 tokens (the
		// default's): the switch's jump table enters the run of adds at
		// r, one instruction an entry, where sufsTo's loop took 5 for
		// two, its bounds check and set-up: countMember 122 then 82
		// instructions a request in RunAtlas and in
		// Regime/Fleet8PrefixApprox (callgrind's marginal count),
		// RunAtlas 4,727 then 4,690 (the budget test).
		f := co.suf
		switch r {
		case 15:
			f[15] += add
			fallthrough
		case 14:
			f[14] += add
			fallthrough
		case 13:
			f[13] += add
			fallthrough
		case 12:
			f[12] += add
			fallthrough
		case 11:
			f[11] += add
			fallthrough
		case 10:
			f[10] += add
			fallthrough
		case 9:
			f[9] += add
			fallthrough
		case 8:
			f[8] += add
			fallthrough
		case 7:
			f[7] += add
			fallthrough
		case 6:
			f[6] += add
			fallthrough
		case 5:
			f[5] += add
			fallthrough
		case 4:
			f[4] += add
			fallthrough
		case 3:
			f[3] += add
			fallthrough
		case 2:
			f[2] += add
			fallthrough
		case 1:
			f[1] += add
			fallthrough
		case 0:
			f[0] += add
		}
	}
	co.q += d * (c >> e.sh())
	co.csum += d * c
}

// sufsTo adds add to the suffix sums' entries r down to 0 (countMember's,
// of a block of more than 16 tokens).
func (co *cohort) sufsTo(r int, add int64) {
	suf := co.suf[:r+1] // one bounds check, not one an entry
	// Two entries a pass, from the last down: the loop tests its counter
	// against 0 and has no bounds check, 5 instructions a pass (7 when the
	// sums were two arrays), where a pass of one entry took 6 (an
	// alignment NOP among them): countMember 183 → 141 instructions a
	// request, RunAtlas 5,380 → 5,338 (the budget test, go1.26). Four
	// entries a pass took more: 122 → 130.
	k := r
	for ; k > 0; k -= 2 {
		suf[k] += add
		suf[k-1] += add
	}
	if k == 0 {
		suf[0] += add
	}
}

// nrunning is the number of running requests, in the cohort or not.
func (e *Engine) nrunning() int { return e.co.n + len(e.running) }

// coBlocks is Σ ⌈(c + m) / BlockSize⌉ over the members, c a member's
// computed tokens now: the blocks they hold m steps ahead.
//
// ⌈y/B⌉ is ⌊(y − 1)/B⌋ + 1, and a member counted with residue r (its
// computed tokens are B·⌊C/B⌋ + r + tick) holds ⌊C/B⌋ + a + 1 + [r + b ≥
// B] blocks, where tick + m − 1 = B·a + b (0 ≤ b < B): so the sum is
// Σ⌊C/B⌋ + N·(a + 1) plus the members at residues B − b and above, a
// suffix sum, suf[B − b], its index B − b = (mask &^ (tick + m − 1)) + 1.
// The index is masked by maxResidueBlock − 1 (which changes none: B ≤
// maxResidueBlock) before its + 1, so that it needs no bounds check. Read
// at B + 1 − b of tick + m, an entry past the sums holding −count[0] for
// b = 0 (and countMember keeping it), each index took two instructions
// more, the block size plus one loaded and subtracted from: coGrow's
// calls cost Regime/Fleet8PrefixApprox 98 instructions a request and
// RunAtlas 47 (callgrind's marginal count), and the budget test counted
// 9,285 and 4,660 where it counts 9,274 and 4,656 so.
func (e *Engine) coBlocks(m int) int {
	co := &e.co
	t := co.tick + m - 1
	return co.q + co.suf.n(0)*(t>>e.sh()+1) + co.suf.n((co.mask&^t)&(maxResidueBlock-1)+1)
}

// coGrow is coBlocks(m1) − coBlocks(m0): the blocks the members take from
// m0 steps ahead to m1. (It shifts by the field masked once, as sh does:
// shifted by the int field, each shift carried Go's checks for a negative
// count and one past 63; with two calls to sh it no longer inlined. It
// reads the packed sums as int32s itself, not through sufs.n: with three
// calls to n it no longer inlined either, 4,895 then 4,912 instructions a
// request in RunAtlas, cachegrind's pair. The two entries it reads are
// subtracted as packed words, their n the int32 of the difference: with
// an int32 of each its cost was 81 of the 80, and it no longer inlined;
// so it is 79.)
func (e *Engine) coGrow(m0, m1 int) int {
	co := &e.co
	t0, t1, sh := co.tick+m0-1, co.tick+m1-1, uint(e.shift)&63
	return int(int32(co.suf[0]))*(t1>>sh-t0>>sh) + int(int32(co.suf[(co.mask&^t1)&(maxResidueBlock-1)+1]-co.suf[(co.mask&^t0)&(maxResidueBlock-1)+1]))
}

// coStep is coGrow(m−1, m): the blocks the members take in the m-th step
// ahead, one for each whose computed tokens when that step starts are a
// multiple of BlockSize (c = r + tick + m − 1 ≡ 0 at residue r). It reads
// one count where coGrow's shifts and three suffix sums took 25
// instructions: ScheduleUntil's cohort plan and Continue ask for the next
// step's blocks (coStep(1)) at every plan, and MooncakeReplay's engine
// took 6,084 instructions a request with coGrow(0, 1) there, 6,029 so
// (cachegrind, 2026-12-05). TestCohortCounts holds the two equal.
func (e *Engine) coStep(m int) int {
	co := &e.co
	return int(co.count[-(co.tick+m-1)&co.mask])
}

// coBlockSteps is Σ over the members of Σ_{x=c+1..c+j} ⌈x / BlockSize⌉:
// the blocks they hold summed over their next j steps, in O(1).
//
// It is Σ_{m=1..j} coBlocks(m) = j·(q + N) + Σ_{y=tick+1..tick+j} (N·⌊y/B⌋ +
// G(y mod B)), B the block size, N the members and G(b) the suffix sum
// coBlocks reads, suf.n(B + 1 − b) (−count[0] at b = 0). So it is φ(tick +
// j) − φ(tick), φ(y) the sum over every y' ≤ y from 0. With y = B·u + b
// (0 ≤ b < B), Σ_{y'≤y} ⌊y'/B⌋ = B·u(u−1)/2 + (b + 1)·u, and Σ_{y'≤y} G(y'
// mod B) = u·Σ_b G(b) + Σ_{b'≤b} G(b'), where Σ_b G(b) = suf.r(0) − N and
// Σ_{b'≤b} G(b') = −count[0] + suf.r(L) − L·suf.n(L), L = B − b (1 ≤ L ≤
// B): the prefix sums of the suffix sums, each member at residue r ≥ L
// counted r − L + 1 times. The −count[0]s cancel, so
//
//	φ(y) = N·(B·u(u−1)/2 + b·u) + u·suf.r(0) + suf.r(L) − L·suf.n(L),
//
// B·u(u−1)/2's difference taken as B·(u₁ − u₀)(u₁ + u₀ − 1)/2, which does
// not grow with the clock squared. Where the sum was taken by the two
// ranges of residues a run's steps past a block boundary split (two
// differences of sums behind three tests), a call cost 90 instructions
// (callgrind: Regime/Fleet8PrefixApprox makes 1.4 calls a request, RunAtlas
// 0.7). coBlockStepsWalk, the O(B) sum over residues, is the twin
// TestCohortCounts holds it to.
func (e *Engine) coBlockSteps(j int) int {
	co := &e.co
	sh := uint(e.shift) & 63
	bs, mask := 1<<sh, co.mask
	t0, t1 := co.tick, co.tick+j
	u0, b0, u1, b1 := t0>>sh, t0&mask, t1>>sh, t1&mask
	n, r := co.suf.n(0), co.suf.r(0)
	w0, w1 := co.suf[(bs-b0)&(sufLen-1)], co.suf[(bs-b1)&(sufLen-1)] // L = B − b, 1 ≤ L ≤ B: never the last entry
	du := u1 - u0
	sq := (du * (u1 + u0 - 1) >> 1) << sh // B·(u₁(u₁−1) − u₀(u₀−1))/2: du·(u₁ + u₀ − 1) is even
	return j*(co.q+n) + n*(sq+b1*u1-b0*u0) + du*r +
		int(w1>>32) - (bs-b1)*int(int32(w1)) - int(w0>>32) + (bs-b0)*int(int32(w0))
}

// syncMember writes a member's fields: its tokens now, and its anonymous
// blocks.
func (e *Engine) syncMember(s *seq) {
	d := e.co.tick - s.t0
	s.computed += d
	s.known += d
	s.emitted += d
	s.t0 = e.co.tick
	s.anon = e.blocksFor(s.computed+e.co.ahead) - s.held
}

// joins reports whether a running request is a plain decode that joins
// the cohort: it emitted at the end of the last outcome, its one known
// token not in KV is the one it samples next, and it holds the blocks of
// its computed tokens exactly; and its callers ask that it does not lag
// (lags). (With lags' test in it, joins was no longer inlined: the
// MooncakeReplay regime, whose running prompts Continue asks it of at
// every step end, cost 145 instructions a request more, cachegrind,
// 2026-12-05.)
func (e *Engine) joins(s *seq) bool {
	return s.emitted > 0 && s.known-s.computed == 1 && s.look == 0 && s.lastMove == e.move && e.move != 0 &&
		s.held+s.anon == e.blocksFor(s.computed)
}

// lags reports whether s has blocks of shared output left to cache and
// a full block of its computed tokens among them not cached: a member's
// decodes cache one block each as they complete it (coPublish), where
// publishDecode would also cache those it lagged by.
func (e *Engine) lags(s *seq) bool {
	return s.held < s.shared && s.held < s.computed>>e.sh() // a cohort's block size is a power of two (sh)
}

// coPublish caches the blocks of shared output that the members' decodes
// of the step at clock t complete (those at residue ^t & mask: a member's
// context there is c = computed + t − t0, and c + 1 a multiple of
// BlockSize), in running order, as publishDecode caches them when the
// walk plans that step (members are the running list's first requests).
func (e *Engine) coPublish(t int) {
	co := &e.co
	r := ^t & co.mask
	l := co.pubs[r]
	k := 0
	sh := e.sh() // the block size's, read once, not a member
	for i := range l {
		x := &l[i]
		if !x.live() {
			continue
		}
		s := x.s
		co.cached++
		full, from := min(s.shared, (s.computed+t-s.t0+1)>>sh), s.held
		if rs := s.runs; rs != nil && len(rs.path) > 0 && full > from && e.pool.runs != nil &&
			(!co.each && e.pool.deferHeld(&s.held, rs, full) || e.pool.extendHeld(&s.held, rs, full)) {
			// Its held segment grown in place (extendHeld, runCache's first
			// try: its path made, its cursor fresh after its held blocks),
			// with none of cacheThrough's calls between, or that put off
			// until something reads it (deferHeld; not with KV events or a
			// tier, whose stores and events go block by block: co.each).
			s.anon -= full - from
			if !co.each && s.held < s.shared && e.pool.coastable(rs, s.held, s.shared) {
				e.coStart(s, r, t)
				continue // off the list (the slot is dropped below)
			}
		} else {
			e.cacheThrough(s, full)
		}
		if s.held < s.shared {
			if k != i { // else it is in its place: no store (a pointer's, with its write barrier)
				l[k] = *x
			}
			k++
		}
	}
	if k < len(l) { // else the list stays as it is
		clear(l[k:])
		co.npub -= int32(len(l) - k)
		co.pubs[r] = l[:k]
	}
}

// coStart makes member s, owing blocks with every block left within its
// room, coast (coasts) from the step t published, listed at residue r.
func (e *Engine) coStart(s *seq, r, t int) {
	co := &e.co
	if e.pool.runs.cst == nil {
		e.pool.runs.cst = &coasts{lists: make([][]coastEntry, e.cfg.BlockSize)}
	}
	cst := e.pool.runs.cst
	cst.pubT = t
	s.runs.coast, s.runs.cs = true, s
	cst.lists[r] = append(cst.lists[r], coastEntry{last: s.shared<<e.sh() - (s.computed - s.t0 + 1), rank: s.rank, s: s})
	cst.n++
	co.npub++ // its entry in pubs[r] is dropped (coPublish)
}

// coPubLeft is, for the cohort's members, what publishDecode notes in
// pubLeft for the step at the clock: the fewest steps after it to one
// whose decode of a member caches a block of shared output (MaxInt if
// none will), dropping the members that have none left to cache.
func (e *Engine) coPubLeft() int {
	co := &e.co
	coast := e.coasting()
	for j := 1; j <= e.cfg.BlockSize && co.npub > 0; j++ {
		r := ^(co.tick + j) & co.mask
		l := co.pubs[r]
		if kept := keepMembers(l, true); len(kept) < len(l) { // else the list stays as it is
			co.npub -= int32(len(l) - len(kept))
			co.pubs[r], l = kept, kept
		}
		if len(l) > 0 || coast && e.coastsAt(r) {
			return j
		}
	}
	return math.MaxInt
}

// coastsAt reports whether a member coasting at residue r has a block
// left to cache after the step published last, dropping the entries of
// those that have none or coast no more.
func (e *Engine) coastsAt(r int) bool {
	cst := e.pool.runs.cst
	l := cst.lists[r]
	k := 0
	for i := range l {
		if x := &l[i]; x.live(cst.pubT) {
			if k != i { // else it is in its place: no store (a pointer's, with its write barrier)
				l[k] = *x
			}
			k++
		}
	}
	if k < len(l) { // else the list stays as it is
		// As coPublish's list: cleared and stored only when an entry
		// was dropped, not at every call, and an entry moved only when
		// one before it was: coastsAt 120 then 96 instructions a
		// request in Regime/Conversations, servesim's own 12,403 then
		// 12,379 (cachegrind's marginal count).
		clear(l[k:])
		cst.lists[r] = l[:k]
	}
	return k > 0
}

// coPlanPublish is the cohort's part of publishDecode for the first step
// of a plan at the clock: it caches what that step's decodes complete and
// counts in pubRun and pubLeft what later steps will.
func (e *Engine) coPlanPublish() {
	if t := e.pool.runs; t != nil && t.cst != nil {
		t.cst.pubT = e.co.tick
		if len(e.pool.runs.uncoasted) > 0 {
			e.coDrain()
		}
	}
	// A list of none caches nothing (runPublishSteps' test): coPublish
	// 214 then 180 instructions a request in Regime/Conversations,
	// servesim's own 12,379 then 12,353 (cachegrind's marginal count).
	if co := &e.co; len(co.pubs[^co.tick&co.mask]) > 0 {
		e.coPublish(co.tick)
	}
	if left := e.coPubLeft(); left < math.MaxInt {
		e.pubRun++
		e.pubLeft = min(e.pubLeft, left)
	}
}

// joinCohort moves the running list's leading plain decodes into the
// cohort (planning, nothing in flight); with all, the caller found that
// every running request joins (allJoin), and it does not ask again.
func (e *Engine) joinCohort(all bool) {
	co := &e.co
	k := 0
	for _, s := range e.running {
		if !all && (!e.joins(s) || e.lags(s)) {
			break
		}
		s.member, s.t0, s.rank = true, co.tick, co.joins
		co.joins++
		if co.suf == &noSufs { // its first join (countMember counts members only after it)
			co.suf = new(sufs)
		}
		e.countMember(s.computed-co.tick, 1)
		s.finTick = co.tick + s.req.Output - s.emitted
		co.fin.push(finEntry{tick: s.finTick, rank: s.rank, s: s})
		s.cidx = int32(len(co.members))
		co.members = append(co.members, s)
		co.n++
		k++
		if s.held < s.shared {
			if co.pubs == nil { // made at the first (a replica's setup stays within its 6 KB: TestFleetSetupAllocatesEachReplicaOnce)
				co.pubs = make([][]pubMember, e.cfg.BlockSize)
			}
			r := (s.computed - co.tick) & co.mask
			co.pubs[r] = append(co.pubs[r], pubMember{s: s, rank: s.rank})
			co.npub++
		}
		if e.tier != nil {
			e.joinStores(s)
		}
	}
	if k > 0 {
		// The few left (the prefills) move down one by one: copy and
		// clear of a slice of pointers were two runtime calls a join.
		run := e.running
		n := len(run) - k
		for i := 0; i < n; i++ {
			run[i] = run[i+k]
		}
		// The places left keep their seqs: the engine keeps its requests
		// for its lifetime (spare), and clearing them cost RunAtlas 11
		// instructions a request (servesim's own 5,047 then 5,036,
		// cachegrind's marginal count).
		e.running = run[:n]
	}
}

// uncount takes a synced member out of the cohort's counts (its heap
// entry goes stale).
func (e *Engine) uncount(s *seq) {
	e.countMember(s.computed-e.co.tick, -1)
	s.member = false
}

// leaveCohort takes one member out of the cohort (an abort), its fields
// written.
func (e *Engine) leaveCohort(s *seq) {
	e.leaveCoast(s)
	e.syncMember(s)
	e.uncount(s)
	e.vacate(s)
	e.compact()
}

// vacate leaves a member's place in the list empty.
func (e *Engine) vacate(s *seq) {
	co := &e.co
	if co.members[s.cidx] != s {
		panic("engine: invariant cohort-membership broken: a member is not at its place in the cohort")
	}
	co.members[s.cidx] = nil
	co.n--
}

// compact closes the list's empty places once they outnumber the members
// (amortized O(1) a leave).
func (e *Engine) compact() {
	co := &e.co
	if len(co.members)-co.n > max(16, co.n) { // more holes than members, past 16
		e.compact0()
	}
}

// materialize writes every member back into the running list, ahead of
// the others, and empties the cohort (planning, nothing in flight).
func (e *Engine) materialize() {
	co := &e.co
	if co.n == 0 {
		clear(co.members)
		co.members = co.members[:0]
		return
	}
	e.compact0()
	for _, s := range co.members {
		e.leaveCoast(s)
		e.syncMember(s)
		s.member = false
		s.lastMove = e.move // it emitted in every outcome since it joined
	}
	co.fin.reset()
	if t := e.pool.runs; t != nil && t.cst != nil { // every member stopped coasting (syncMember)
		cst := t.cst
		for r := range cst.lists {
			clear(cst.lists[r])
			cst.lists[r] = cst.lists[r][:0]
		}
	}
	for r := range co.pubs {
		clear(co.pubs[r])
		co.pubs[r] = co.pubs[r][:0]
	}
	co.npub = 0
	if co.ts != nil {
		co.ts.clear()
	}
	clear(co.count)
	if co.suf != &noSufs {
		clear(co.suf[:])
	}
	co.q, co.csum = 0, 0
	list := append(append(co.scratch[:0], co.members...), e.running...)
	co.scratch = e.running[:0]
	e.running = list
	clear(co.members)
	co.members = co.members[:0]
	co.n = 0
}

// compact0 closes every empty place in the list.
func (e *Engine) compact0() {
	co := &e.co
	if len(co.members) == co.n {
		return
	}
	k := 0
	for _, s := range co.members {
		if s != nil {
			s.cidx = int32(k)
			co.members[k] = s
			k++
		}
	}
	clear(co.members[k:])
	co.members = co.members[:k]
}

// planCohort schedules the cohort's members for the step being planned,
// one token each, when they fit budget and the free blocks; otherwise it
// writes them back into the running list for the walk. It returns the
// budget left and the blocks the members owe: planChunked takes them with
// its inline decodes' (owed), as the walk takes the running list's
// leading plain decodes' together, after every one of them cached what
// it caches (publishDecode; coPublish): with KV events published, the
// members' evictions then follow the others' stores, as in the walk.
func (e *Engine) planCohort(budget int) (int, int) {
	co := &e.co
	if !co.on {
		if co.n > 0 || len(co.members) > 0 { // else materialize changes nothing (a cohort never kept: speculative decoding's, 16 instructions a step)
			e.materialize() // the cohort was given up
		}
		return budget, 0
	}
	e.joinCohort(false)
	n := co.n
	if n == 0 {
		return budget, 0
	}
	need := e.coStep(1)
	// n > budget cannot happen with a valid Config (MaxSeqs <=
	// MaxBatchedTokens), but the walk would then leave members out.
	if n > budget || need > e.available() || !e.fcfs && need+e.walkNeed(budget-n) > e.available() {
		// A member would preempt or be left out, or (a policy other
		// than FCFS) the step may preempt and its victim be a member:
		// walk.
		e.materialize()
		return budget, 0
	}
	if co.npub > 0 {
		e.coPlanPublish() // caching takes no block: need stands
	}
	co.ahead = 1
	e.plan.Cohort = n
	e.minLeft = min(e.minLeft, e.finMin()-co.tick)
	return budget - n, need
}

// walkNeed is the blocks the running requests outside the cohort ask for
// in a step that leaves them budget tokens, walked as planChunked walks
// them: when they and the members' fit the free blocks, the step preempts
// no one (a block of shared content found cached meanwhile only gives one
// back).
func (e *Engine) walkNeed(budget int) int {
	total := 0
	for _, s := range e.running {
		if budget <= 0 {
			break
		}
		n := e.chunk(s, s.computed, budget)
		total += max(e.need(s, s.computed+n), 0)
		budget -= n
	}
	return total
}

// priceBatch makes b the batch the cost model prices: the plan's, with
// the cohort's decodes (see sumBatch), or under Frozen a speculative
// step's verified positions by their sum (sumVerify). (Written in
// place: a Batch returned was copied once more a move.)
func (e *Engine) priceBatch(b *costmodel.Batch) {
	*b = e.plan.Batch
	if b.Verify != nil { // speculative decoding (and its cohort: speccohort.go)
		e.sumVerify(b)
	} else if e.plan.Cohort > 0 {
		b.Decode = e.sumDecode(0)
	}
}

// sumDecode is the decode contexts of the plan's step k+1 (k steps on) as
// a costmodel.DecodeSum model reads them: as many as the step has, their
// sum first and zeros after.
func (e *Engine) sumDecode(k int) []int {
	co := &e.co
	n := e.plan.Cohort + len(e.plan.Batch.Decode)
	sum := co.csum + co.n*co.tick + n*k
	for _, c := range e.plan.Batch.Decode {
		sum += c
	}
	d := co.sumbuf[:n]
	d[0] = sum
	return d
}

// completeCohort applies steps decode steps to the cohort's members: their
// tokens advance by the clock, and those whose last token it was are
// reported, in running order, and leave. It returns them (valid until the
// next call), to be freed after the other requests' outcomes.
func (e *Engine) completeCohort(steps int, done bool) []*seq {
	co := &e.co
	if e.plan.Cohort == 0 {
		return nil
	}
	co.tick += steps
	co.ahead -= steps
	if done {
		co.ahead = 0
	}
	e.outstanding -= steps * co.n
	// The due entries, the run's and then the heap's, not in tick order:
	// sortByRank puts the finishers in order below. (Popped in order,
	// each pop compared the two fronts again.)
	fin := co.scratch[:0]
	for co.fin.runDue(co.tick) {
		if x := co.fin.popRun(); x.live() {
			fin = append(fin, x.s)
		}
	}
	for co.fin.heapDue(co.tick) {
		if x := co.fin.heap.pop(); x.live() {
			fin = append(fin, x.s)
		}
	}
	if e.prev == 0 && e.omit { // not back to back: every member is listed
		for _, s := range co.members {
			if s == nil {
				continue
			}
			em := Emit{Ref: s.req.Ref, Tokens: steps}
			if s.finTick <= co.tick { // none finishes before the last step
				if s.finTick < co.tick {
					panic("engine: invariant run-through broken: a run through finishes collected apart from the move before it")
				}
				em.Done = true
			}
			e.emit(s, em)
		}
		if len(fin) > 0 {
			fin = e.sortByRank(fin)
		}
	} else {
		e.out.Streak += co.n - len(fin)
		if len(fin) > 0 {
			fin = e.sortByRank(fin)
			for _, s := range fin {
				// Its tokens are the steps through its last: all of them
				// but in a run through finishes (through.go).
				e.out.Emitted = append(e.out.Emitted, Emit{Ref: s.req.Ref, Tokens: steps - (co.tick - s.finTick), Done: true})
			}
		}
	}
	if len(fin) == 0 {
		co.scratch = fin
		return nil
	}
	for _, s := range fin {
		e.leaveCoast(s)
		e.syncMember(s)
		e.countMember(s.computed-co.tick, -1)
		s.member = false
		e.vacate(s)
		if s.finTick < co.tick || e.thruSkip && co.ahead > 0 { // it finished inside a run through finishes (with steps taken ahead: CompleteUntil)
			e.thruFin(s, co.tick-s.finTick)
		}
	}
	e.compact()
	co.scratch = fin
	return fin
}

// completeNoCohort is completeCohort(e.plan.Steps, true) for a
// speculative engine (Complete's), which keeps no decode cohort
// (decideFast): a cohort never kept (no count table, setCohort) has no
// member and none due, and its clock alone moves (the plan's Cohort
// counts the speculative cohort's members, specCohort). Its body, each
// of its tests failing, was about 48 instructions a step (13,364 steps
// in 4,000 requests of BenchmarkRegime/Speculation: completeCohort 179
// instructions a request, the budget test's profile).
func (e *Engine) completeNoCohort() []*seq {
	if co := &e.co; co.count == nil {
		if e.plan.Cohort > 0 {
			co.tick += e.plan.Steps
			co.ahead = 0
		}
		return nil
	}
	return e.completeCohort(e.plan.Steps, true)
}

// sortByRank sorts a few members into running order, those of a run
// through finishes by their last step first (through.go): the order of
// the steps they finish at, each step's in running order.
func (e *Engine) sortByRank(a []*seq) []*seq {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && (a[j].finTick < a[j-1].finTick || a[j].finTick == a[j-1].finTick && a[j].rank < a[j-1].rank); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	return a
}

// truncateCohort gives back the blocks the members took for the steps of
// the plan in flight that will not run: all of them (Truncate before the
// plan's first step).
func (e *Engine) truncateCohort() {
	co := &e.co
	if e.plan.Cohort == 0 || !co.on { // off: a speculative cohort's (speccohort.go), materialized before
		return
	}
	e.pool.pushRun(e.coGrow(0, co.ahead))
	co.ahead = 0
}

// abortMember is Abort of a member: it leaves the cohort with its fields
// written, and is freed at once (the cohort's outcome will not list it).
func (e *Engine) abortMember(now time.Duration, s *seq) error {
	inPlan := e.inFlight && e.plan.Cohort > 0
	if inPlan && e.plan.Steps > 1 {
		return fmt.Errorf("%w: request %d at %v, %d steps of %v from %v", ErrUnsettledRun, s.req.Ref, now, e.plan.Steps, e.plan.StepTime, e.plan.Start)
	}
	e.leaveCohort(s)
	if inPlan && e.lazy {
		e.live--
	}
	e.drop(s)
	e.release(s)
	return nil
}
