package engine

import (
	"slices"
	"time"

	"github.com/servesim/servesim/internal/accept"
)

// The speculative cohort: with speculative decoding, the running list's
// leading decodes with drafts planned from sums, not listed.
//
// A step's walk (planDrafts) writes each speculative decode's plan: its
// entry in e.sched and in the plan's Decode and Verify, and its sched,
// draft and decoding fields, after testing that it is one; Complete
// reads them back. The cohort keeps instead what the walk would find,
// worked out where each member was last touched: as Complete verifies
// the running list's leading decodes with drafts, it notes for the next
// step, while each has no block of shared output to cache, how many
// tokens it will verify (1 + K, or its tokens left: with one left, it
// decodes it without drafts, drawing nothing), their sum, and the
// blocks each will take, listing the few that take any (at a block
// boundary). When the next step's plan finds them all in its token
// budget and the free blocks, and nothing has changed them since (an
// Abort drops the notes), it plans them at once: it takes their blocks,
// counts them in Plan.Cohort and the verified positions in vsum, and
// lists none of them; Complete verifies them from the running list,
// each member's drafts worked out again as
// min(K, Output − emitted − 1). The walk then goes on after them as
// before, and the requests it plans are listed.
//
// Its members are the running list's first Plan.Cohort requests (sc.m),
// outside e.sched, their sched, draft and decoding left 0. Whatever
// reads those: an Abort while the step is in flight writes them back
// and lists the members first in e.sched (materializeSpec), after which
// the step completes as listed; Check writes them for its checks and
// clears them after; Scheduled names the members first.
//
// The plan lists them nowhere, so only a driver that reads no listed
// decode has it: one that asked for OmitStreaks, with costmodel.Frozen,
// which prices verified positions by their sum (fast.verifySum), no
// recorded steps, KV events, tier or remote KV, under FCFS (a victim is
// then never a member: makeRoom takes the tail). The walk is the twin;
// FuzzSpecCohort holds the two equal, and docs/fastpaths.md names the
// other tests.
//
// It moves a member's per-step work more than it removes it: the walk's
// tests and stores go (planDrafts 5,435 then 1,315 instructions a
// request in BenchmarkRegime/Speculation, verified's dispatch 790 then
// 40), but each member is still verified and noted a step (the budget
// test, SERVESIM_BUDGET_FUNCS: verifyMembersIID 7,289 where verifyIID
// was 7,521, noteMembers 1,945, completeSpec 1,004): 31,636 then 31,090
// instructions a request in all. Listing them nowhere in the outcome
// too (Outcome.Emitted, Outcome.Drafts: sim's plainChunks, 7,073) is
// what would take the member-step out.
type specCohort struct {
	on bool // the engine keeps a speculative cohort (decideFast)
	m  int  // members of the plan in flight: the running list's first m, not in e.sched

	// The next plan's members, as the last Complete noted them.
	ready bool     // the notes hold: nothing changed the running list since
	next  int      // the running list's first next requests
	vsum  int      // Σ the tokens each verifies (1 + drafts)
	need  int      // Σ the blocks they take
	ex    []specEx // those that take blocks, in running order
	cut   bool     // a request that will not be a member follows them

	// The members noteMembers found finished (nfin), the last of them
	// (fin, its index in the running list) and the members' count then
	// (finM): dropFinished's start, which clears nfin. A member that
	// finished makes Complete call dropFinished (completeSpec's done), so
	// nfin is 0 outside a Complete and no noting is left over.
	fin, nfin, finM int

	specRun // the speculative run in flight (specrun.go)

	prices [1 << specPriceBits]time.Duration // specPrice's memo, by the positions verified beyond one a decode (0: none)
}

// specPriceBits sizes specPrice's memo: 256 sums (K = 4 and 64 decodes).
const specPriceBits = 8

// specEx is a member that takes blocks in the next step: its index in
// the running list and how many.
type specEx struct {
	i, need int32
}

// setSpecCohort keeps a speculative cohort or not, as decideFast decided;
// the notes go either way (RecordSteps and OmitStreaks change the
// decision between steps).
func (e *Engine) setSpecCohort(on bool) {
	if on && e.sc == nil {
		e.sc = &specCohort{ex: make([]specEx, 0, e.cfg.MaxSeqs)}
	}
	if e.sc != nil {
		e.materializeSpec()
		e.sc.ready = false
		e.sc.on = on
	}
}

// planSpec plans the noted members, when their tokens fit budget and
// their blocks avail, as planDrafts' walk would plan them, and the
// decodes with drafts after them that the walk would plan uncapped
// (absorb): it returns the running index after them and the budget,
// free blocks and owed blocks they leave (those it was given when the
// noted do not fit, planning none).
func (e *Engine) planSpec(budget, avail, owed int) (int, int, int, int) {
	sc := e.sc
	sc.ready = false
	if sc.vsum > budget || sc.need > avail {
		return 0, budget, avail, owed
	}
	for _, x := range sc.ex {
		e.running[x.i].anon += int(x.need)
	}
	m, vsum := sc.next, sc.vsum
	budget, avail, owed = budget-vsum, avail-sc.need, owed+sc.need
	if !sc.cut {
		m, vsum, budget, avail, owed = e.absorb(m, vsum, budget, avail, owed)
	}
	sc.m = m
	e.plan.Cohort = m
	e.vsum += int32(vsum)
	return m, budget, avail, owed
}

// absorb plans as members the running requests from the m-th on that
// the walk would plan as decodes with drafts, uncapped, in order: a
// prompt's first token was sampled in the step before (it was not
// verified, so not noted) and the walk would list it, the step's members
// then not the whole running list (a speculative run plans only the
// cohort alone: extendSpec). Each asks min(1 + K, Output − emitted)
// tokens (one, without drafts, with one left), within the budget, and
// its blocks (planDrafts').
// It returns the members and their tokens, and the budget, free blocks
// and owed blocks left.
func (e *Engine) absorb(m, vsum, budget, avail, owed int) (int, int, int, int, int) {
	k1 := e.cfg.SpeculativeTokens + 1
	for ; m < len(e.running); m++ {
		s := e.running[m]
		left := s.req.Output - s.emitted
		if s.emitted == 0 || s.known-s.computed != 1 || s.held < s.shared {
			break
		}
		n := min(k1, left)
		if n > budget {
			break // the walk caps it
		}
		need := e.blocksFor(s.computed+n) - s.blocks()
		if need > 0 {
			if need > avail {
				break
			}
			owed += need
			avail -= need
			s.anon += need
		}
		budget -= n
		vsum += n
	}
	return m, vsum, budget, avail, owed
}

// specNotes gathers, as completeSpec verifies each decode, the next
// plan's notes.
type specNotes struct {
	k1   int      // 1 + K: a member's tokens when it has more left
	next int      // members noted
	vsum int      // their tokens
	need int      // their blocks
	ex   []specEx // those that take blocks: room for each, cut to nex
	nex  int
	cut  bool // a request that will not be a member came first: no more
	done bool // a member noted had emitted its last token
}

// note notes s, verified, for the next plan: a member unless cut, or
// done (it leaves), or it has blocks of shared output to cache
// (planDrafts plans it otherwise). With one token left it is a member
// that decodes it without drafts (verifyMembersIID).
func (e *Engine) note(ns *specNotes, s *seq, done bool) {
	if done || ns.cut {
		return
	}
	left := s.req.Output - s.emitted
	if s.held < s.shared {
		ns.cut = true
		return
	}
	n := min(ns.k1, left)
	if need := e.blocksFor(s.computed+n) - s.held - s.anon; need > 0 {
		ns.ex[ns.nex] = specEx{i: int32(ns.next), need: int32(need)}
		ns.nex++
		ns.need += need
	}
	ns.vsum += n
	ns.next++
}

// completeSpec verifies the step's members (those planSpec planned),
// writing their Emits and Drafts, and notes them for the next plan
// (verified notes the listed decodes with drafts that follow them:
// noteListed). It reports whether one of them emitted its last token.
func (e *Engine) completeSpec() bool {
	sc := e.sc
	if sc.run { // a speculative run (specrun.go)
		return e.completeSpecRun()
	}
	m := sc.m
	sc.m = 0
	members := e.running[:m]
	// Room for an Emit and a Draft each, written in place.
	base := len(e.out.Emitted)
	e.out.Emitted = slices.Grow(e.out.Emitted, m)[:base+m]
	e.out.Drafts = slices.Grow(e.out.Drafts, m)[:base+m]
	ems, drs := e.out.Emitted[base:], e.out.Drafts[base:]
	k1 := e.cfg.SpeculativeTokens + 1
	var tokens int
	var done, noted bool
	if iid, _ := e.acceptor.(*accept.IID); iid != nil {
		tokens, noted = verifyMembersIID(members, ems, drs, iid, k1), true
	} else {
		for i, s := range members {
			n := min(k1, s.req.Output-s.emitted) // planSpec's: never capped by the budget
			d, acc := n-1, 0
			if d > 0 { // with one token left, no drafts: not asked (the walk's decoded)
				acc = min(max(e.acceptor.Accept(s.req.Ref, d), 0), d)
			}
			drs[i] = Draft{Drafted: d, Accepted: acc}
			s.sched = n // verify reads it, and clears it
			em := s.verify(1 + acc)
			ems[i] = em
			tokens += em.Tokens
			done = done || em.Done
		}
	}
	e.outstanding -= tokens
	// The notes, in running order: a loop of their own (verifying and
	// noting the members in one loop spilled: 31,227 against 31,045
	// instructions a request in BenchmarkRegime/Speculation).
	var noteDone bool
	if e.shift >= 0 {
		noteDone = noteMembers(members, sc, k1, e.cfg.BlockSize-1)
	} else {
		ns := specNotes{k1: k1, ex: sc.ex[:cap(sc.ex)]} // room for MaxSeqs (setSpecCohort)
		for _, s := range members {
			left := s.req.Output - s.emitted
			ns.done = ns.done || left <= 0
			e.note(&ns, s, left <= 0)
		}
		e.keepNotes(&ns)
		noteDone = ns.done
	}
	if noted {
		// verifyMembersIID leaves done to the notes, which test each
		// member's tokens left anyway.
		done = noteDone
	}
	return done
}

// noteListed notes the listed decodes with drafts the step verified
// after the members, sched, as completeSpec noted the members: members
// of the next plan while the notes were not cut.
func (e *Engine) noteListed(sched []*seq) {
	sc := e.sc
	if sc.cut {
		return
	}
	ns := specNotes{k1: e.cfg.SpeculativeTokens + 1, next: sc.next, vsum: sc.vsum, need: sc.need, ex: sc.ex[:cap(sc.ex)], nex: len(sc.ex)}
	for _, s := range sched {
		e.note(&ns, s, s.emitted >= s.req.Output)
	}
	e.keepNotes(&ns)
}

// keepNotes keeps ns as the next plan's notes.
func (e *Engine) keepNotes(ns *specNotes) {
	sc := e.sc
	sc.ex = ns.ex[:ns.nex]
	sc.next, sc.vsum, sc.need, sc.cut = ns.next, ns.vsum, ns.need, ns.cut
	sc.ready = ns.next > 0
}

// verifyMembersIID is completeSpec's loop over the members under i.i.d.
// acceptance: verifyIID's, each member's tokens worked out (k1 = 1 + K,
// fewer near its end). It returns the tokens they emitted; whether one of
// them emitted its last the notes say (specNotes.done), which test each
// member's tokens left anyway: tested here too, a flag more in the loop,
// it spilled (3,481 then 3,324 instructions a request in it, 22,754 then
// 22,626 in all, in BenchmarkRegime/Speculation, the budget test). It
// calls nothing, so that its variables stay in registers.
func verifyMembersIID(members []*seq, ems []Emit, drs []Draft, a *accept.IID, k1 int) (tokens int) {
	streams := *a.Streams
	ems, drs = ems[:len(members)], drs[:len(members)]
	for i := 0; ; i++ {
		var u uint64
		i, u, tokens = verifyUncut(members, ems, drs, streams, a.Start, k1, i, tokens)
		if i >= len(members) {
			return tokens
		}
		// A draw in a bucket a threshold cuts: climbed here, out of
		// verifyUncut's loop (its stream drawn there).
		s := members[i]
		n := min(k1, s.req.Output-s.emitted)
		acc := a.Accepted(u, n-1)
		drs[i] = Draft{Drafted: n - 1, Accepted: acc}
		ems[i] = verifiedIID(s, n, 1+acc)
		tokens += 1 + acc
	}
}

// verifyUncut is verifyMembersIID's loop over the members from the i-th
// on, tokens their tokens so far, each member's draw in a bucket no
// threshold cuts (accept.Starts): it returns at the first member whose
// draw is in one that does, its index and the draw's u (53 bits), its
// stream drawn but nothing of it written, or at the end (i the members'
// count). It reads the thresholds' table and not the acceptor, and
// calls nothing, so that fewer of its variables are reloaded a member:
// with the climb in its loop, 7 and two spills, now 5 (22,006 then
// 21,788 instructions a request in BenchmarkRegime/Speculation, the
// budget test; verifyMembersIID 3,324, then 184 and verifyUncut 2,935).
func verifyUncut(members []*seq, ems []Emit, drs []Draft, streams []accept.PCG, start *[256]uint8, k1, i, tokens int) (int, uint64, int) {
	ems, drs = ems[:len(members)], drs[:len(members)]
	// start's nil check, once, not a member's (verifyUncut 2,724 then
	// 2,700 instructions a request in BenchmarkRegime/Speculation, the
	// budget test; the same in drawMembers' loop, 3,052 then 3,135).
	_ = *start
	var spare accept.PCG // drawn for a member with one token left
	// j unsigned: no bounds checks on the members, ems and drs.
	for j := uint(i); j < uint(len(members)); j++ {
		s := members[j]
		n := min(k1, s.req.Output-s.emitted)
		// With one token left it has no drafts, and the walk decodes it
		// without a draw (decoded): the draw is made from spare, its
		// stream left as it is, the same straight code (tested before
		// the draw, in a branch, 23,145 against 22,774 instructions a
		// request in BenchmarkRegime/Speculation, the budget test).
		p := &streams[s.req.Ref]
		if n == 1 {
			p = &spare
		}
		u := p.Uint64() >> 11
		b := start[u>>45]
		if b < accept.Exact {
			return int(j), u, tokens
		}
		// Its tokens, 1 + its accepted drafts, worked out as one value,
		// min(1 + entry, n), which its fields are then added to in
		// place (with 1 + min(entry, n − 1) each add was a load, two
		// LEAs and a store: verifyUncut 2,935 then 2,694 instructions a
		// request, 21,570 then 21,335 in all, in
		// BenchmarkRegime/Speculation, the budget test).
		t := min(int(b&^accept.Exact)+1, n)
		drs[j] = Draft{Drafted: n - 1, Accepted: t - 1}
		ems[j] = verifiedIID(s, n, t)
		tokens += t
	}
	return len(members), 0, tokens
}

// verifiedIID is seq.verify's for member s, its sched n, verified to t
// tokens, written out: its sched and draft stay 0 (with sched written
// for verify, which clears both: 31,446 then 31,075 instructions a
// request in BenchmarkRegime/Speculation). It returns its Emit.
func verifiedIID(s *seq, n, t int) Emit {
	s.look = int32(max(int(s.look), n) - t)
	s.computed += t
	s.known += t
	s.emitted += t
	return Emit{Ref: s.req.Ref, Tokens: t, Done: s.emitted >= s.req.Output}
}

// noteMembers is note over the members, verified, with a power-of-two
// block size bs (up + 1), written as the next plan's notes in sc (keepNotes'): a
// running request holds blocksFor(computed + look) once verified, and a
// member has no block of shared output to cache, as when it was noted.
// It reports whether one of them emitted its last token, told by the
// count, not by a flag (which spilled in the loop).
//
// Most members are noted alike, 1 + K tokens (k1) and no block, and
// their test alone is in the loop's straight path: the others (22 % of
// them in BenchmarkRegime/Speculation: 16 % take a block, 6 % have
// fewer than 1 + K tokens left or leave) are counted in sc's fields, in memory,
// where they are read and written only for them: the members that leave
// (in next until the end), the tokens short of 1 + K (in vsum), the
// blocks (need) and those that take them (ex). The usual members are
// counted from the members' count at the end. With every count a local
// of the loop (next, vsum, need and ex's room), the loop reloaded four
// of them a member: 19,809 then 19,787 instructions a request of
// servesim's own in BenchmarkRegime/Speculation, the budget test
// (noteMembers 1,223 then 1,200); the usual members tested in a function
// of their own that returned at the others, which noteMembers noted,
// 20,191 (noteMembers 890 and the function 715); each member noted as
// verifyUncut verifies it, the others through a function that noted
// them in sc, 19,915 (verifyUncut 2,694 then 3,429: its loop spilled).
// The caller gives up = bs − 1, not bs: with bs, the compiler rounded x
// up as (x + bs) − 1, two LEAs a member (noteMembers 1,139 then 1,088
// instructions a request, the budget test). A member's tokens short of
// k1 are counted negative, n − k1, with n = min(left, k1) in left's
// register: as k1 − n, with min(k1, left), the loop's k1 was written
// over for the others and copied back a member, two MOVs on the usual
// member's path too (noteMembers 1,088 then 1,020).
func noteMembers(members []*seq, sc *specCohort, k1, up int) bool {
	bs, down := up+1, ^up // round up to a multiple of bs: (x + up) & down
	sc.next, sc.vsum, sc.need, sc.ex = 0, 0, 0, sc.ex[:0]
	for i, s := range members {
		c := s.computed
		if s.req.Output-s.emitted >= k1 && c+k1 <= (c+int(s.look)+up)&down {
			continue // the usual member: k1 tokens, no block
		}
		left := s.req.Output - s.emitted
		if left <= 0 {
			sc.next++ // it leaves, not counted in next
			sc.fin, sc.finM = i, len(members)
			sc.nfin++
			continue
		}
		n := min(left, k1)
		sc.vsum += n - k1 // its tokens short of k1, negative
		// Its blocks hold the tokens up to room, a block boundary: n
		// takes blocks past it. Counted a block at a time, without a
		// shift: with the shift's count in CX the loop spilled its index
		// (31,989 then 31,683 instructions a request in
		// BenchmarkRegime/Speculation).
		if room := (c + int(s.look) + up) & down; c+n > room {
			b := 0
			for ; c+n > room; room += bs {
				b++
			}
			nex := len(sc.ex)
			sc.ex = sc.ex[:nex+1] // room for MaxSeqs (setSpecCohort)
			sc.ex[nex] = specEx{i: int32(i - sc.next), need: int32(b)}
			sc.need += b
		}
	}
	next := len(members) - sc.next
	sc.next, sc.vsum, sc.cut, sc.ready = next, k1*next+sc.vsum, false, next > 0
	return next < len(members) // one left: no flag in the loop, which spilled with it
}

// materializeSpec writes the members of the plan in flight back as the
// walk would have planned them: their fields, and first in e.sched.
func (e *Engine) materializeSpec() {
	sc := e.sc
	if sc == nil || sc.m == 0 {
		return
	}
	if sc.run { // a speculative run ends where it stands (specrun.go)
		e.unrunSpec()
	}
	e.specFields(true)
	e.sched = slices.Insert(e.sched, 0, e.running[:sc.m]...)
	sc.m = 0
}

// specFields writes (on) or clears the members' sched, draft and
// decoding, as the walk writes them for the step in flight.
func (e *Engine) specFields(on bool) {
	k1 := e.cfg.SpeculativeTokens + 1
	if sc := e.sc; on && sc.run { // a speculative run (specrun.go): its members as its step in progress leaves them
		e.specAnon()
		if sc.taken <= sc.done {
			return // none in progress: they hold no block of it
		}
	}
	for _, s := range e.running[:e.sc.m] {
		if on {
			n := min(k1, s.req.Output-s.emitted)
			s.sched, s.decoding, s.draft = n, true, int32(n-1)
		} else {
			s.sched, s.decoding, s.draft = 0, false, 0
		}
	}
}

// specMembers is the number of members of the plan in flight.
func (e *Engine) specMembers() int {
	if e.sc == nil {
		return 0
	}
	return e.sc.m
}
