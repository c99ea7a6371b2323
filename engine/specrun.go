package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/internal/specrun"
)

// Speculative runs: steps of the speculative cohort alone planned as one
// move.
//
// Each member draws its accepted drafts from its own stream (accept.IID:
// one PCG a request, one draw a step), so its draws do not depend on the
// other members': they can be drawn ahead, a member at a time, in a
// tight loop. While every member has 1 + K tokens left at least at a
// step's start, each verifies 1 + K positions, the step's verified sum
// and batch are the first step's, and so is its price under
// costmodel.Frozen (fast.verifySum: it reads the sum alone); with
// nothing waiting (or the running list at MaxSeqs), no step admits, and
// with the blocks free, none preempts. Each member's tokens a step, and
// the blocks it takes, follow from its own draws alone. So extendSpec
// draws ahead, when the driver allows (internal/specrun.Allow: sim's
// single replica), for the plan that the speculative cohort alone makes
// (planSpec), the steps up to the first where some member would have
// fewer than 1 + K tokens left after it, or would finish (that step is
// the run's last), or whose blocks would not be free, or that starts at
// until or later, at most maxSpecRun: it keeps the draws (buf), each
// member's stream at the run's start (saved), and the blocks the members
// take at each later step (needs). The streams are left where the
// steps kept have drawn them: a run cut short (Truncate) rewinds each
// to its start and draws again as many as its kept steps (rewindSpec),
// the same values in the same order, so a stream yields the sequence
// the step-by-step engine draws.
//
// The blocks are taken step by step as the driver collects or cuts the
// run (specTake: taking n₁ then n₂ anonymous blocks from the free
// queue's head is taking n₁ + n₂, residues.go); the members' tokens,
// blocks and outcome are written when steps are collected (applySpec):
// each member once, with its tokens over the steps, and its steps
// counted by their tokens for the driver (specrun.Counts), instead of
// once a step. Anything else that reads the members first ends the run
// (materializeSpec: the streams rewound to the steps collected, the step
// in flight listed as the walk plans it).
//
// The twin is the step a move (sim's Config.Stepwise, and sim's
// noSpecRuns: the same fast paths otherwise); sim's FuzzSpecRunsAreSteps
// and TestSpecRunsAreSteps hold the two to the same bytes.

// maxSpecRun bounds a speculative run's steps (buf's room a member): a
// run is cut mostly by a member near its end well before it.
const maxSpecRun = 64

// specRun is the speculative run in flight, kept in the specCohort.
type specRun struct {
	allow  bool                  // the driver allows speculative runs (specrun.Allow)
	run    bool                  // the plan in flight is a speculative run of its members
	steps  int                   // its steps from the first, those collected included
	done   int                   // steps collected (applySpec)
	taken  int                   // steps whose blocks are taken (specTake)
	iid    *accept.IID           // the acceptor the draws came from
	buf    []uint8               // accepted drafts: member i's at step j in buf[i*maxSpecRun+j]
	saved  []accept.PCG          // each member's stream at the run's start
	needs  [2 * maxSpecRun]int32 // the blocks the members take at each step after the first (drawMembers counts past the run's steps, to maxSpecRun, at an index it masks)
	counts specrun.Counts
	total  [256]int32 // counts.Total's room, indexed by a step's accepted drafts (sumRows)
}

func init() {
	specrun.Allow = func(x any, on bool) { x.(*Engine).specCohort().allow = on }
	specrun.Of = func(x any) *specrun.Counts { return &x.(*Engine).specCohort().counts }
}

// specCohort is the engine's speculative cohort, made (off) if it has
// none yet.
func (e *Engine) specCohort() *specCohort {
	if e.sc == nil {
		e.sc = &specCohort{ex: make([]specEx, 0, e.cfg.MaxSeqs)}
	}
	return e.sc
}

// specRunning reports whether the plan in flight is a speculative run.
func (e *Engine) specRunning() bool { return e.sc != nil && e.sc.run }

// extendSpec turns the plan, just priced, into a speculative run when it
// is the speculative cohort's alone and the driver allows it (see
// above): its steps all start before until.
func (e *Engine) extendSpec(now, until time.Duration) {
	sc := e.sc
	// One step, or a member verifies fewer than 1 + K positions: each
	// verifies min(1 + K, its tokens left), and the plan lists none but
	// the members, so that vsum is their sum, 1 + K each only when none
	// has fewer left. Tested before the members are walked (the walk
	// for the one with fewest left found one below 1 + K in about half
	// the plans that got to it: 25,518 then 25,401 instructions a
	// request in BenchmarkRegime/Speculation, the budget test), and
	// before the plan's other fields and the steps' division (19,367
	// then 19,312, extendSpec 357 then 300). It only saves work: such a
	// member would end the run at its first step (drawMembers), which is
	// then planned as the one step it is.
	k := e.cfg.SpeculativeTokens
	if sc == nil || !sc.allow || sc.m == 0 || int(e.vsum) != sc.m*(k+1) || sc.m != len(e.running) || len(e.sched) > 0 || e.plan.Steps != 1 ||
		len(e.plan.Batch.Prefill) > 0 || len(e.plan.Preempted) > 0 || len(e.plan.Started) > 0 || len(e.plan.Reserved) > 0 ||
		e.shift < 0 || e.waiting.len() > 0 && e.nrunning() < e.cfg.MaxSeqs {
		return
	}
	iid, _ := e.acceptor.(*accept.IID)
	if iid == nil || k > 255 || len(iid.Below) != k { // a step's accepted drafts are a uint8 (buf, total); drawMembers' table counts K at most
		return
	}
	d := e.plan.StepTime
	steps := int(min((until-now-1)/d+1, maxSpecRun))
	if steps <= 1 {
		return
	}
	members := e.running[:sc.m]
	first, least := 0, members[0].req.Output-members[0].emitted
	for i, s := range members {
		if left := s.req.Output - s.emitted; left < least {
			first, least = i, left
		}
	}
	if sc.buf == nil {
		n := e.cfg.MaxSeqs
		sc.buf = make([]uint8, n*maxSpecRun)
		sc.saved = make([]accept.PCG, n)
	}
	clear(sc.needs[:steps]) // those drawMembers counts past them are never read
	streams, saved := *iid.Streams, sc.saved[:len(members)]
	// The member with the fewest tokens left first: it ends the run
	// most often, and the others then draw no further. The others after
	// it round the running list (the order changes nothing but which are
	// drawn before the run is known to be one step). The members drawn
	// before the one that last cut the run short (cut of them, in that
	// order) drew steps past it, and only they: their streams are
	// rewound after the draws, the others' are where the run leaves
	// them.
	steps, x, cut := drawMembers(members, saved, streams, sc.buf, &sc.needs, iid, first, steps, k, e.cfg.BlockSize)
	if steps == 1 {
		// The first member drawn (or one after it) ends the run at its
		// first step: the one step is planned, the others not drawn
		// (about 1 plan in 8 that draws: 23,533 then 23,307 instructions
		// a request in BenchmarkRegime/Speculation, the budget test).
		// The step's draws are made again as it completes: the streams
		// back at its start.
		rewindFrom(members, saved, streams, first, x, 0)
		return
	}
	// The free blocks cut the run at the first step whose blocks, with
	// those of the steps after the first before it, exceed them. The
	// tokens a member's blocks hold for the run's i-th step (the first
	// is the 1st) are at most c + i(1 + K), c its computed ones, and
	// those it holds for the first c + 1 + K at least (drawMembers'
	// room), so the steps after the first take at most ⌈(steps − 1)(1 +
	// K) / bs⌉ blocks of it: with that many free for each member, none
	// cuts the run, and the steps' needs are not summed
	// (BenchmarkRegime/Speculation, whose pool is never short: 19,402
	// then 19,367 instructions a request, the budget test; extendSpec 378
	// then 357).
	if avail := e.available(); avail < len(members)*(((steps-1)*(k+1)+e.cfg.BlockSize-1)>>e.sh()) {
		for j := 1; j < steps; j++ {
			if avail -= int(sc.needs[j]); avail < 0 {
				steps, cut = j, len(members) // every member drew past it
				break
			}
		}
	}
	if steps == 1 {
		rewindFrom(members, saved, streams, first, len(members), 0)
		return
	}
	rewindFrom(members, saved, streams, first, cut, steps)
	sc.run, sc.steps, sc.done, sc.taken, sc.iid = true, steps, 0, 1, iid
	e.plan.Steps = steps
}

// drawMembers is extendSpec's loop over the members, drawing each one's
// accepted drafts ahead into its row of buf, K drafted a step, from its
// stream (saved first, left where its draws leave it), a step at a time
// from the run's first while it has 1 + K tokens left at least after
// the step: up to steps, fewer when one of them leaves it with fewer
// than 1 + K tokens (or none), which the run's steps then are, and it
// counts the blocks of bs tokens it takes at the step after each in
// need (that step's). It draws the member with the fewest tokens left
// first and the others after it, round the running list, and returns
// at steps 1 or after every member: the steps, the members drawn and
// cut, the members drawn before the one that last cut the run short
// (they drew past its steps).
//
// Its blocks: its tokens before step j + 1 are c + 1 + K + Σ (1 +
// row[i]) for i <= j, c its computed ones; with left its tokens left
// less 1 + K after step j, cz − left, cz its tokens at its end, c +
// Output − emitted. Its blocks before the second step hold max(c +
// look, c + 1 + K), verify's look, up to room; it takes a block each
// time its tokens pass room, room then a block further, mostly never:
// tracked as lim = cz − room, a block when left falls below it, a
// compare and a branch a step (in a loop of their own after the draws,
// addNeeds, 11 instructions a step and 37 a member: 20,865 then 20,297
// instructions a request of servesim's own in
// BenchmarkRegime/Speculation, the budget test; addNeeds 819 and the
// draws 2,168, then 2,368; with cz − left tested against room, cz
// spilled: 20,515).
//
// A function of its own that loops over the members and their steps,
// the climb of a draw in a bucket a threshold cuts (accept.Starts: 1 in
// 64 at K = 4, α = 0.7) a call in its loop: extendSpec's loop, which
// called a function for the steps (drawUncut, which returned at such a
// draw, then drawCut, which climbed it and called drawUncut again),
// kept more of its variables, the Engine's among them, in memory across
// those calls, and with the steps each member drew kept and tested in a
// loop over every member, then the order first and the others in running
// order: 20,297 then 20,164 instructions a request of servesim's own
// (extendSpec 1,442 and drawUncut 2,368, then extendSpec 378 and
// drawMembers 3,311); drawMembers calling drawUncut and drawCut,
// 20,196; its steps' loop in a function of its own called a member, the
// climb out of the loop of the uncut draws, 20,556.
func drawMembers(members []*seq, saved, streams []accept.PCG, buf []uint8, need *[2 * maxSpecRun]int32, a *accept.IID, first, steps, k, bs int) (int, int, int) {
	start, k1 := a.Start, k+1
	cut, i := 0, first
	for x := range members {
		if steps == 1 {
			return steps, x, cut
		}
		s := members[i]
		p := &streams[s.req.Ref]
		hi, lo := p.Hi, p.Lo
		saved[i] = accept.PCG{Hi: hi, Lo: lo}
		row := buf[i*maxSpecRun : i*maxSpecRun+steps]
		c, left := s.computed, s.req.Output-s.emitted
		room := (max(c+int(s.look), c+k1) + bs - 1) &^ (bs - 1) // a run's block size is a power of two (e.shift >= 0)
		lim := c + left - room
		left -= k1
		n := len(row)
		for j := range row {
			var u uint64
			hi, lo, u = accept.Next(hi, lo)
			u >>= 11
			b := start[u>>45]
			acc := int(b &^ accept.Exact)
			if b < accept.Exact {
				acc = acceptedCut(a, u, k) // a bucket a threshold cuts
			}
			row[j] = uint8(acc)
			left -= 1 + acc
			for ; left < lim; lim -= bs {
				need[(j+1)&(2*maxSpecRun-1)]++
			}
			if left < 0 {
				n = j + 1
				break
			}
		}
		p.Hi, p.Lo = hi, lo
		if n < steps {
			steps, cut = n, x
		}
		if i++; i == len(members) {
			i = 0
		}
	}
	return steps, len(members), cut
}

// acceptedCut is a.Accepted(u, k) for drawMembers' draw in a bucket a
// threshold cuts, not inlined: inlined, the climb's loop and the
// acceptor's fields made drawMembers' step loop keep its index, its
// row's length and the draw's bucket in memory (20,164 then 19,929
// instructions a request of servesim's own in
// BenchmarkRegime/Speculation, the budget test; drawMembers 3,311 then
// 3,052). A cut draw is 1 in 64 at K = 4, α = 0.7.
//
//go:noinline
func acceptedCut(a *accept.IID, u uint64, k int) int { return a.Accepted(u, k) }

// rewindFrom leaves the streams of the x members drawn first, in
// extendSpec's order (from first on, round the running list), where
// their saved streams drew n values.
func rewindFrom(members []*seq, saved, streams []accept.PCG, first, x, n int) {
	for i := first; x > 0; x-- {
		p := &streams[members[i].req.Ref]
		*p = saved[i]
		advance(p, n)
		if i++; i == len(members) {
			i = 0
		}
	}
}

// advance draws n values from p, dropping them.
func advance(p *accept.PCG, n int) {
	for range n {
		p.Uint64()
	}
}

// rewindSpec leaves each member's stream where the run's first n steps
// drew it: at the run's start, n draws on.
func (e *Engine) rewindSpec(n int) {
	sc := e.sc
	streams := *sc.iid.Streams
	for i, s := range e.running[:sc.m] {
		p := &streams[s.req.Ref]
		*p = sc.saved[i]
		advance(p, n)
	}
}

// specTake takes the blocks of the run's steps up to the m-th (from its
// first) that it has not taken.
func (e *Engine) specTake(m int) {
	sc := e.sc
	m = min(m, sc.steps)
	n := 0
	for j := sc.taken; j < m; j++ {
		n += int(sc.needs[j])
	}
	if m > sc.taken {
		e.pool.take(n)
		sc.taken = m
	}
}

// specBlockSteps is the sum of the blocks held during each of the run's
// steps a to b (b excluded), its steps up to taken having taken theirs:
// during step j, those held now less those the steps after j took.
func (e *Engine) specBlockSteps(a, b int) int {
	sc := e.sc
	h, later, sum := e.pool.held(), 0, 0
	for j := sc.taken - 1; j >= a; j-- {
		if j < b {
			sum += h - later
		}
		later += int(sc.needs[j])
	}
	return sum
}

// applySpec completes the run's steps a to b (b excluded) for its
// members: each advances by its tokens over them, its blocks those of
// the steps taken, and its Emit and Draft (its drafts and accepted ones
// summed) are written, in running order, with its steps counted by their
// tokens (specrun.Counts). Whether one of them emitted its last token
// (only in the run's last step) the notes say (completeSpecRun).
func (e *Engine) applySpec(a, b int) {
	sc := e.sc
	members := e.running[:sc.m]
	m, steps := len(members), b-a
	k := e.cfg.SpeculativeTokens
	k1 := k + 1
	base := len(e.out.Emitted)
	e.out.Emitted = slices.Grow(e.out.Emitted, m)[:base+m]
	e.out.Drafts = slices.Grow(e.out.Drafts, m)[:base+m]
	ems, drs := e.out.Emitted[base:], e.out.Drafts[base:]
	cn := &sc.counts
	cn.K1, cn.Stride = k1, maxSpecRun
	cn.Accepted = sc.buf[a:]    // member i's steps from a at i*maxSpecRun
	cn.Total = sc.total[:k1:k1] // k1 <= 256: a step's accepted drafts are a uint8
	cn.Least = slices.Grow(cn.Least[:0], m)[:m]
	clear(cn.Total)
	alloc := sc.taken > b // step b's blocks are taken
	// Each member's tokens over the steps (in its Emit), fewest in a
	// step, and the steps by their tokens, in a function of its own: in
	// the members' loop below, its variables spilled and were reloaded
	// a member (25,302 then 25,157 instructions a request in
	// BenchmarkRegime/Speculation, the budget test; sumRows inlined,
	// 25,418).
	sumRows(sc.buf[a:], steps, cn.Least, &sc.total, ems)
	last := sc.buf[b-1:]
	// Whether a member finished the notes say (noteMembers): with that
	// flag the loop's variables spilled and were reloaded a member (977
	// then 914 instructions a request in it in
	// BenchmarkRegime/Speculation, the budget test's profile; the tokens
	// summed in sumRows instead, sumRows 890 then 966).
	floor := 0 // the fewest tokens ahead of its computed whose blocks a member holds
	if alloc {
		floor = k1
	}
	e.outstanding -= applyRows(members, ems, drs, last, k1, floor, steps, e.shift)
}

// applyRows is applySpec's loop over the members: each advances by its
// tokens over the steps (ems[i].Tokens, from sumRows), holds the blocks
// of 1 << shift tokens up to max(look, floor) past its computed ones, and
// has its Emit and Draft written. It returns their tokens. A function of
// its own, which reads no Engine and whose block size is a shift (a
// run's is a power of two), a member's blocks ahead counted from floor
// without a branch: in applySpec's loop, which read the block size
// through blocksFor, more of its variables spilled and were reloaded a
// member (applySpec 912, then 171 and applyRows 618 instructions a
// request, 21,242 then 21,127 in all, in BenchmarkRegime/Speculation,
// the budget test).
//
//go:noinline
func applyRows(members []*seq, ems []Emit, drs []Draft, last []uint8, k1, floor, steps, shift int) (tokens int) {
	ems, drs = ems[:len(members)], drs[:len(members)]
	sh := uint(shift) & 63
	up := 1<<sh - 1
	drafted := (k1 - 1) * steps
	for i, s := range members {
		t := ems[i].Tokens
		// Its look after the steps: what verify leaves, max(look, n) − t
		// a step, is max(c + look, c' + 1 + K) − c'' over them, c' its
		// computed tokens before the last step, c'' after (the y extendSpec
		// rounds up to room).
		c := s.computed + t
		look := max(s.computed+int(s.look), c-1-int(last[i*maxSpecRun])+k1) - c
		s.look = int32(look)
		s.computed = c
		s.known += t
		s.emitted += t
		s.anon = (c+max(look, floor)+up)>>sh - s.held // look >= 0: floor 0 leaves it
		ems[i] = Emit{Ref: s.req.Ref, Tokens: t, Done: s.emitted >= s.req.Output}
		drs[i] = Draft{Drafted: drafted, Accepted: t - steps}
		tokens += t
	}
	return tokens
}

// sumRows writes, for each member i of ems, its tokens over the steps
// (a token more than it accepted a step, buf[i*maxSpecRun:][:steps]) in
// ems[i].Tokens and its fewest in a step in least[i], and counts its
// steps by their tokens in tot (tot[n − 1] steps of n). Not inlined:
// see applySpec. tot is an array a uint8 indexes, its nil check made
// once, and the fewest is an int (a CMOV, where a uint8's min branched
// and shuffled registers): counting a step takes 8 instructions, no
// bounds check (sumRows 891 then 601 instructions a request, 22,408
// then 22,103 in all, in BenchmarkRegime/Speculation, the budget test;
// the array alone, its nil check a step, 884).
//
//go:noinline
func sumRows(buf []uint8, steps int, least []uint8, tot *[256]int32, ems []Emit) {
	least = least[:len(ems)]
	_ = *tot // its nil check, once
	for i := range ems {
		row := buf[i*maxSpecRun:][:steps]
		t, lo := steps, 255 // steps >= 1: lo is a step's
		for _, acc := range row {
			t += int(acc)
			lo = min(lo, int(acc))
			tot[acc]++
		}
		least[i] = uint8(1 + lo)
		ems[i].Tokens = t
	}
}

// completeSpecRun is completeSpec for a speculative run: its steps not
// collected complete, and the members are noted for the next plan.
func (e *Engine) completeSpecRun() bool {
	sc := e.sc
	e.specTake(sc.steps)
	e.out.BlockSteps = e.specBlockSteps(sc.done, sc.steps)
	e.applySpec(sc.done, sc.steps)
	sc.run = false
	members := e.running[:sc.m]
	sc.m = 0
	return noteMembers(members, sc, e.cfg.SpeculativeTokens+1, e.cfg.BlockSize-1) // a run's block size is a power of two (extendSpec)
}

// specCollect is completeUntil for a speculative run, its first j
// steps left ended (none its last), their blocks taken (syncRun).
func (e *Engine) specCollect(j int) (*Outcome, error) {
	p, sc := &e.plan, e.sc
	e.out.BlockSteps = e.specBlockSteps(sc.done, sc.done+j)
	e.applySpec(sc.done, sc.done+j) // none finishes before the run's last step
	sc.done += j
	p.Start = e.out.End
	p.Steps -= j
	return &e.out, nil
}

// specTruncate is truncate for a speculative run, keeping the first
// keep of its steps left (fewer than its steps).
func (e *Engine) specTruncate(keep int) (inFlight bool, end time.Duration, err error) {
	p, sc := &e.plan, e.sc
	if keep == 0 && sc.done == 0 {
		return true, p.End, fmt.Errorf("engine: Truncate would drop a speculative run's first step (planned at %v)", p.Start)
	}
	if keep == 0 {
		// At the end of its last step collected: nothing of the rest
		// started, and the members hold no block of it.
		e.rewindSpec(sc.done)
		e.specAnon()
		sc.run, sc.m = false, 0
		p.Steps, p.End = 0, p.Start
		e.inFlight = false
		return false, p.End, nil
	}
	e.specTake(sc.done + keep)
	sc.steps = sc.done + keep
	e.rewindSpec(sc.steps)
	p.Steps = keep
	p.End = p.Start + time.Duration(keep)*p.StepTime
	return true, p.End, nil
}

// unrunSpec ends the speculative run in flight where it stands, for
// whatever reads its members' fields (materializeSpec): the streams back
// where the steps collected left them, and the step in progress, its
// blocks taken, left to complete as the walk's (verified draws it
// again).
func (e *Engine) unrunSpec() {
	sc := e.sc
	e.specTake(sc.done + 1)
	if sc.taken > sc.done+1 {
		panic("engine: invariant spec-run broken: a speculative run's members read with its later steps' blocks taken")
	}
	e.rewindSpec(sc.done)
	e.specAnon()
	sc.run = false
}

// specAnon writes each member's anonymous blocks as applySpec does:
// those of its tokens and, when the step in progress took its blocks,
// that step's.
func (e *Engine) specAnon() {
	sc := e.sc
	k1 := e.cfg.SpeculativeTokens + 1
	for _, s := range e.running[:sc.m] {
		ahead := int(s.look)
		if sc.taken > sc.done {
			ahead = max(ahead, k1)
		}
		s.anon = e.blocksFor(s.computed+ahead) - s.held
	}
}

// checkSpecCut is checkCollect's check of a Truncate at t that keeps
// keep of a speculative run's steps left: not none of a run that
// completed none (its first step's blocks were taken as it was planned),
// nor fewer than those whose blocks are taken.
func (e *Engine) checkSpecCut(t time.Duration, keep int) {
	p, sc := &e.plan, e.sc
	if keep == 0 && sc.done == 0 {
		broken("cut-only-runs", "Truncate called at %v would drop the first step of a speculative run, planned at %v: it runs to its end at %v", t, p.Start, p.Start+p.StepTime)
	}
	if keep > 0 && sc.done+keep < sc.taken {
		broken("no-cut-behind-sync", "Truncate called at %v would keep %d of the speculative run's steps but drop %d whose blocks were taken", t, keep, sc.taken-sc.done-keep)
	}
}
