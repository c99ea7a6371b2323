package sim

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/mixedrun"
	"github.com/servesim/servesim/internal/runthrough"
)

// Decode streaks: the per-token accounting of a request that decodes in
// every move of its replica, deferred until it stops.
//
// A request that emitted a token at the end of a replica's move, and then
// one token at the end of every step of the replica's following moves (a
// plain decode), has gaps equal to those steps' durations, the same for
// every such request: what its record and the summary gain from such a
// move depends only on the move. So a replica keeps its streak members as
// counts (measured ones, by class) and running totals over its moves
// (steps, steps longer than each class's ITL bound, and the moves' longest
// steps), and a member's record is brought up to date only when its streak
// ends: when it emits anything but one plain token a step (its last
// token, or after a move it sat out), is in no move at all (preempted, or
// left out of the token budget), or ends (it finishes, times out, is
// aborted, or the run stops). Its tokens are then the steps since it
// joined, its last token the end of the last move, its largest gap the
// longest step since it joined, and its gaps over its ITL bound the steps
// over it since it joined. The summary's ITL histograms and the window's
// token count take each move once, multiplied by its members. A move then
// costs one check of each member's Emit instead of the full accounting,
// with the same results to the byte: the eager accounting is the slow
// twin (Config.Stepwise, and Config.KeepTokens and speculative decoding,
// which need every token, use it), held to the same bytes by
// FuzzFastEqualsStepwise and TestPropertiesOfRandomScenarios.
type streaks struct {
	// members counts them. Each member's state is the runner's
	// (streaking.members, by ref), which names its replica: a list of
	// the replica's members cost each join an append and each leave the
	// list's swap of its last into its place (RunAtlas 5,148 then 5,112
	// instructions a request, the budget test's count), for the two
	// walks that read it, leaveAll, which no budget regime reaches with
	// a member, and trimPeaks, at 1,024 peaks: each walks the runner's
	// refs instead (TestStreakBookkeepingIsBruteForce).
	members int
	steps   int64   // steps of the moves with members
	over    []int64 // of them, steps over each class's ITL bound, by class
	peaks   []peak  // the moves' step times, strictly decreasing: suffix maxima
	moves   int64   // moves with members so far: the next one's index
	end     time.Duration

	measured int   // measured members
	byClass  []int // measured members by class (with classes)
	// lowITL is the least of the classes' ITL bounds: a move whose step
	// is no longer adds to no class's over, and streakMove skips the
	// loop over the classes (18 instructions a move with one class:
	// streakMove's own in Regime/Fleet8LeastLoaded 345 then 313 a
	// request, RunAtlas 6,138 then 6,115).
	lowITL time.Duration
}

// streaking is the runner's decode streak state (this file): whether the
// run defers streaks, each ref's membership, and a move's joiners.
type streaking struct {
	lazy    bool     // decode streaks are accounted when they end
	members []member // each ref's streak, when lazy
	joiners []int32  // scratch: the refs that join streaks after a move
	spare   []int32  // scratch for an accountLazy nested in another (interrupt)
}

func newStreaking(lazy bool) streaking { return streaking{lazy: lazy} }

// peak is a move with members whose step time is longer than that of
// every later one.
type peak struct {
	move int64
	d    time.Duration
}

// member is a request's streak state, by ref.
type member struct {
	in     bool
	rep    int32 // its replica's index
	from   int64 // index of its first deferred move
	steps0 int64 // streaks.steps when it joined
	over0  int64 // streaks.over[class] when it joined
}

// deferStreaks reports whether the run asks to defer decode streaks: not
// step by step (the slow twin), nor when every token is kept. It defers
// them when every engine then omits them (wireReplicas): not with
// speculative decoding, the engine decides (a step's tokens vary with its
// acceptance).
func (r *runner) deferStreaks() bool {
	return !r.cfg.Stepwise && !r.cfg.KeepTokens
}

func (r *runner) memberOf(ref int32) *member {
	if int(ref) >= len(r.members) {
		r.growMembers(ref)
	}
	return &r.members[ref]
}

// growMembers extends the members to hold ref.
func (r *runner) growMembers(ref int32) {
	r.members = append(r.members, make([]member, int(ref)+1-len(r.members))...)
}

// accountLazy is account's walk of a move's tokens with decode streaks.
// The engine leaves the members that continue their streak out of the
// outcome (engine.Runner.OmitStreaks) and counts them, and names those
// whose streak ended without an Emit: a move costs its changes only.
func (r *runner) accountLazy(rep *replica, out *engine.Outcome) error {
	st := &rep.streak
	d := rep.stepTime
	if st.members > 0 && out.End-time.Duration(out.Steps)*d != st.end {
		r.leaveAll(rep) // not back to back: the gaps are not the steps
	}
	// The loops over out.Left and the joiners are entered only when
	// they have something: set up for their calls, an empty loop
	// spilled and reloaded its slice (accountLazy's own count 146 then
	// 134 instructions a request in Regime/Fleet8LeastLoaded, 431 then
	// 413 in Regime/Disagg, 91 then 88 in RunAtlas; SERVESIM_BUDGET_FUNCS).
	if len(out.Left) > 0 {
		for _, ref := range out.Left { // preempted, or left out of the budget
			if int(ref) < len(r.members) && r.members[ref].in {
				r.leave(rep, ref)
			}
		}
	}
	if out.End > r.now && r.thruAt != &r.noThru { // steps collected ahead of the clock (settleThrough); a detected warm-up's reach collects ahead too, and has no such run
		return r.accountAhead(rep, out)
	}
	r.joiners = r.joiners[:0]
	fins, finMeasured := 0, 0 // members whose last move is the streak's (lastMove)
	for _, em := range out.Emitted {
		s := &r.slots[em.Ref]
		if m := r.memberOf(em.Ref); m.in {
			r.leaveAs(rep, m, s) // its last token: anything else continues
			if em.Done && st.byClass == nil && r.lastMove(s, d, em.Tokens, out) {
				fins++
				if s.rec.Measured {
					finMeasured++
				}
				if err := r.finishAs(rep, em.Ref, s); err != nil {
					return err
				}
				continue
			}
		}
		if em.First && em.Tokens == 1 {
			// A first token alone: no gap, and its count in the window
			// is that of the move's end (emit's, without the call:
			// RunAtlas 6,080 then 6,044 instructions a request).
			s.rec.FirstToken, s.rec.LastToken = out.End, out.End
			s.rec.Emitted++
			r.tokens += r.tokensIn(out.End, d, 1)
		} else {
			r.emit(s, d, em.Tokens, em.First, out.End)
		}
		if em.Done {
			if err := r.finishAs(rep, em.Ref, s); err != nil {
				return err
			}
		} else {
			r.joiners = append(r.joiners, em.Ref)
		}
	}
	cont := out.Streak
	if cont != st.members {
		return streakMismatch(rep, out, st.members)
	}
	if cont+fins > 0 {
		r.lastMoves += fins
		r.streakMove(rep, out, d, cont, fins, finMeasured)
	}
	st.end = out.End
	if len(r.joiners) > 0 {
		for _, ref := range r.joiners {
			r.join(rep, ref)
		}
	}
	return nil
}

// startStreaks sizes a replica's streak counts by class, at its first
// member.
func (r *runner) startStreaks(st *streaks) {
	st.over = make([]int64, len(r.classes.list))
	st.lowITL = r.bounds[0].itl
	for _, b := range r.bounds {
		st.lowITL = min(st.lowITL, b.itl)
	}
	if r.perClass {
		st.byClass = make([]int, len(r.classes.list))
	}
}

// streakMismatch is accountLazy's error for an engine whose count of the
// requests continuing their streak is not the run's.
func streakMismatch(rep *replica, out *engine.Outcome, members int) error {
	return fmt.Errorf("sim: replica %d, steps ending at %v: the engine counts %d requests continuing their decode streak, the run %d (an internal error)", rep.idx, out.End, out.Streak, members)
}

// lastMove accounts the n tokens a member that just left its streak
// emitted in the move out, steps of d, when they are one a step, every
// gap d (its last token a step before the move's first), and reports
// whether it did: emit's record, without the gaps' histogram and the
// window's token count, which streakMove adds with the members'. (A
// finisher's last move so costs a few fields, where emit and two gaps
// took about 100 instructions: RunAtlas 6,160 then 6,080 a request, the
// marginal count. Held to emit's bytes by
// TestStreakLastMovesAreStepwise.)
func (r *runner) lastMove(s *slot, d time.Duration, n int, out *engine.Outcome) bool {
	if n != out.Steps || s.rec.LastToken != out.End-time.Duration(n)*d {
		return false
	}
	r.plainTokens(s, d, n, out.End)
	return true
}

// plainTokens adds to s's record n tokens a step of d apart, the last at
// end, its last token before them one step before the first: a member's
// last move (lastMove, finishInside), whose gaps are all d.
func (r *runner) plainTokens(s *slot, d time.Duration, n int, end time.Duration) {
	rec := &s.rec
	rec.MaxITL = max(rec.MaxITL, d)
	rec.MaxTokenITL = max(rec.MaxTokenITL, d)
	if d > r.bounds[s.class].itl { // either series: a token a gap
		rec.ITLOver += n
	}
	rec.Emitted += n
	rec.LastToken = end
}

// streakMove adds a move of out.Steps steps of d to its cont members'
// totals, and to the summary's histograms and token count, with those of
// fins members that left at its end (lastMove), finMeasured of them
// measured. With no member left (cont is 0) it adds those alone.
func (r *runner) streakMove(rep *replica, out *engine.Outcome, d time.Duration, cont, fins, finMeasured int) {
	st := &rep.streak
	if cont > 0 { // the members' totals
		k := int64(out.Steps)
		st.steps += k
		if d > st.lowITL { // some class's bound is passed
			for c, b := range r.bounds { // a plain decode's gaps are its tokens': either series
				if d > b.itl {
					st.over[c] += k
				}
			}
		}
		if n := len(st.peaks); n > 0 && st.peaks[n-1].d == d {
			// The last peak's step again: it would pop the last peak alone
			// (the one before is longer) and take its place, which is the
			// last's move set to this one. (RunAtlas 6,115 then 6,102
			// instructions a request; streakMove's own in
			// Regime/Fleet8LeastLoaded, whose steps vary more, 313 then
			// 306.)
			st.peaks[n-1].move = st.moves
		} else {
			for n > 0 && st.peaks[n-1].d <= d {
				n--
			}
			// In place while it fits: append wrote the whole slice
			// header back, pointer and all.
			// This and the test of byClass below took streakMove's own
			// count from 319 to 295 instructions a request in
			// Regime/Fleet8LeastLoaded, 134 to 122 in Regime/Disagg,
			// 191 to 177 in RunAtlas (SERVESIM_BUDGET_FUNCS).
			if n < cap(st.peaks) {
				st.peaks = st.peaks[:n+1]
				st.peaks[n] = peak{move: st.moves, d: d}
			} else {
				st.peaks = append(st.peaks[:n], peak{move: st.moves, d: d})
			}
			if n >= 1024 {
				r.trimPeaks(rep)
			}
		}
		st.moves++
	}
	if m := st.measured + finMeasured; m > 0 {
		if r.fleet { // gapsOf, its replica at hand
			rep.col.itl.add(d, out.Steps*m)
		} else {
			r.col.itl.add(d, out.Steps*m)
		}
		if st.byClass != nil { // nil unless per class: the empty loop's setup reloaded what the call above spilled (see peaks')
			for c, m := range st.byClass {
				if m > 0 {
					r.classes.list[c].col.itl.add(d, out.Steps*m)
				}
			}
		}
	}
	r.tokens += r.tokensIn(out.End-time.Duration(out.Steps-1)*d, d, out.Steps) * (cont + fins)
}

// trimPeaks drops the peaks before every member's first deferred move.
func (sk *streaking) trimPeaks(rep *replica) {
	st := &rep.streak
	first := st.moves
	for i := range sk.members {
		if m := &sk.members[i]; m.in && m.rep == int32(rep.idx) {
			first = min(first, m.from)
		}
	}
	st.peaks = append(st.peaks[:0], st.peaks[st.firstPeak(first):]...)
}

// firstPeak is the index of the first peak at or after move from: the
// longest step of the moves since. It looks at the last eight peaks
// first, where a leaving member's mostly is (RunAtlas: about 2 from the
// end of about 9), then halves the rest: RunAtlas 4,885 then 4,868
// instructions a request, leaveAs 100 then 83 (the budget test; the last
// four alone, 4,872).
func (st *streaks) firstPeak(from int64) int {
	lo, hi := 0, len(st.peaks)
	for stop := max(0, hi-8); hi > stop; hi-- {
		if st.peaks[hi-1].move < from {
			return hi
		}
	}
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if st.peaks[mid].move < from {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// join makes ref, which emitted a token at the end of the move just
// accounted, a member of its replica's streak.
func (r *runner) join(rep *replica, ref int32) { r.joinAs(rep, ref, &r.slots[ref]) }

// joinAs is join of ref, whose slot is s (which the caller has found:
// joinAs and leaveAs, their callers' slots and members passed, took
// RunAtlas from 5,093 to 5,078 instructions a request, the budget
// test's count).
func (r *runner) joinAs(rep *replica, ref int32, s *slot) {
	st := &rep.streak
	if st.over == nil {
		r.startStreaks(st)
	}
	*r.memberOf(ref) = member{in: true, rep: int32(rep.idx),
		from: st.moves, steps0: st.steps, over0: st.over[s.class]}
	st.members++
	if s.rec.Measured {
		st.measured++
		if st.byClass != nil {
			st.byClass[s.class]++
		}
	}
}

// leave ends ref's streak: its record gets the tokens of the moves since
// it joined.
func (r *runner) leave(rep *replica, ref int32) { r.leaveAs(rep, &r.members[ref], &r.slots[ref]) }

// leaveAs is leave of the member m, whose slot is s (joinAs).
func (r *runner) leaveAs(rep *replica, m *member, s *slot) {
	st := &rep.streak
	rec := &s.rec
	if k := st.steps - m.steps0; k > 0 {
		rec.Emitted += int(k)
		rec.LastToken = st.end
		d := st.peaks[st.firstPeak(m.from)].d
		rec.MaxITL = max(rec.MaxITL, d)
		rec.MaxTokenITL = max(rec.MaxTokenITL, d)
		rec.ITLOver += int(st.over[s.class] - m.over0)
	}
	st.members--
	if rec.Measured {
		st.measured--
		if st.byClass != nil {
			st.byClass[s.class]--
		}
	}
	*m = member{}
	if st.members == 0 {
		st.peaks = st.peaks[:0]
	}
}

// leaveAll ends every streak of the replica, in ref order (each leave
// changes only its own record).
func (r *runner) leaveAll(rep *replica) {
	for ref := 0; ref < len(r.members) && rep.streak.members > 0; ref++ {
		if m := &r.members[ref]; m.in && m.rep == int32(rep.idx) {
			r.leave(rep, int32(ref))
		}
	}
}

// settleStreak brings ref's record up to date before it ends.
func (r *runner) settleStreak(ref int32) {
	if int(ref) < len(r.members) && r.members[ref].in {
		r.leave(&r.reps[r.slots[ref].rec.Replica], ref)
	}
}

// Runs through finishes (engine's through.go): a run of a replica's
// decode cohort that goes on past its members' finishes, the engine's
// Continue planning it when a finish changes nothing of the next step
// but who is in it. The engine lists each finisher at the run's
// collection with the tokens of its steps, fewer than the outcome's, and
// counts it as decoding on until then; so the runner collects the run
// before it handles anything at an instant after a finish inside it
// (settleThrough, in the loop, before the clock moves), and accounts
// each finisher at the end of its own step (finishInside): its record,
// the clock moved there (the window's integrals), then its end, as the
// step-by-step run does at that step's end. A finish may change what
// else happens at its instant: the runner asks for such runs only where
// none does (runThrough). The twin is the run that ends at the first
// finish (noThrough), held to the same bytes by
// TestRunsThroughFinishesAreStepwise.

// runThrough asks the one replica's engine for runs through finishes
// when a finish at an instant changes nothing else there: one replica
// (no router reads its engine inside a run, no fleet's records
// interleave), decode streaks deferred, no step observer, nothing a
// finish wakes (a closed-loop source, a gateway, a client's concurrency
// slot, an autoscaler), no stopping instant that a finish moves (a
// Horizon, a warm-up detected), no classes, tiers, cache view or
// prefill pool. A fleet under the same conditions may be asked for mixed
// moves alone (fleetMixed).
func (r *runner) runThrough() {
	r.thruAt = &r.noThru // 0: never a finish inside
	for i := range r.reps {
		r.reps[i].firstOn, r.reps[i].firstBlocks = &r.noFirst, &r.noBlocks // never on
	}
	r.odd = &r.noFirst
	c := &r.cfg
	if r.tw.noThrough || !r.lazy || r.steps != nil || r.fb != nil || r.gw != nil ||
		r.tiers != nil || r.scale != nil || r.recent != nil || r.pd != nil ||
		r.perClass || c.MaxConcurrency > 0 || c.Horizon > 0 || c.DetectWarmup || c.Stepwise || c.KeepTokens {
		return
	}
	if len(r.reps) != 1 || r.fleet {
		r.fleetMixed() // which tests the router and its cache view
		return
	}
	if r.roots != nil || r.cache != nil {
		return
	}
	rep := &r.reps[0]
	if !rep.continues || rep.oneStep || rep.async || rep.prefill {
		return
	}
	runthrough.Allow(rep.eng, true)
	r.thruAt = runthrough.FinAt(rep.eng)
	if !r.tw.noMixed { // mixed moves, which the same conditions allow (accountFirst)
		mixedrun.Allow(rep.eng, true)
		rep.firstOn, rep.firstBlocks = mixedrun.Out(rep.eng)
		r.odd = rep.firstOn
	}
}

// fleetMixed asks a fleet's engines for mixed moves (accountFirst) where
// runThrough would ask the one replica's, when the router reads nothing
// of an engine inside a move but its load or the requests it holds, in
// a fleet of at most mixedFleetMax, with no client deadline (whose abort
// of a mixed move's prompt inside its first step mixedrun.Least does not
// count) and fresh signals:
//   - LeastLoaded with no gateway, cache view or prefill pool
//     (leastFresh): send reads the loads through mixedrun.Least, which
//     counts a mixed move's steps as the step-by-step engine does
//     (Outstanding counts its prompt as decoding from the plan on);
//   - PrefixAffinity with ApproxView or ExactView (heldByView), in a
//     fleet of any size: it weighs the requests each replica holds,
//     which the runner counts (heldRangeEach), and the prompts it
//     routed, which ApproxView's tree keeps, or each replica's cache
//     (ExactView: engine.CachedPath, its run synced to the instant,
//     whose later steps take their blocks, and evict, as the
//     step-by-step engine's: TestExactViewMixedMovesAreStepwise); it
//     reads no load. (RunFleet64/workload=prefix/router=PrefixAffinity
//     11,586 then 11,207 instructions a request, atlas/PrefixAffinity
//     10,625 then 10,361: the budget test.)
//
// A finish still ends a fleet's run: a fleet asks for no run through
// finishes.
func (r *runner) fleetMixed() {
	if r.tw.noMixed || r.pd != nil || r.cfg.Timeout > 0 || !(r.leastFresh && (len(r.reps) <= mixedFleetMax || r.keptLoads) || r.heldByView()) {
		return
	}
	for i := range r.reps {
		rep := &r.reps[i]
		if !rep.continues || rep.oneStep || rep.async || rep.prefill {
			continue
		}
		mixedrun.Allow(rep.eng, true)
		rep.firstOn, rep.firstBlocks = mixedrun.Out(rep.eng)
		r.fleetOdd, r.odd = true, &r.fleetOdd // account tests the replica's firstOn
	}
	if r.leastFresh {
		r.mixLeast = mixedrun.Least(r.engs)
	}
}

// heldByView reports whether the router is PrefixAffinity with
// ApproxView, ExactView or EventsView and fresh signals, no gateway, and
// the whole fleet its view (no routable list): it reads of the replicas
// only the requests each holds, the runner's count (View.heldRange,
// heldRangeEach), and its tree, their caches or their KV events (whose
// index brings a replica to the instant where a step of its move may
// have published an event seen by then: mustSync and synced read a
// mixed move's later steps from the engine, which start lead later).
func (r *runner) heldByView() bool {
	pa, ok := affinityOf(r.router)
	if !ok || r.cfg.Fleet.SignalDelay > 0 || r.gw != nil || r.view.idx != nil {
		return false
	}
	switch pa.View.(type) {
	case ApproxView, ExactView, EventsView, nil:
		return true
	}
	return false
}

// affinityOf is the PrefixAffinity router rt is, or the one a test's
// wrapper of it holds (affinityWrapper): such a wrapper only checks what
// the router reads (checkedSyncs), so that the tests check fleets of
// mixed moves.
func affinityOf(rt Router) (PrefixAffinity, bool) {
	switch rt := rt.(type) {
	case PrefixAffinity:
		return rt, true
	case affinityWrapper:
		return rt.wrappedAffinity(), true
	}
	return PrefixAffinity{}, false
}

// affinityWrapper is a test's wrapper of a PrefixAffinity router that
// routes as the router it holds (affinityOf).
type affinityWrapper interface {
	Router
	wrappedAffinity() PrefixAffinity
}

// mixedFleetMax is the largest fleet behind LeastLoaded whose engines
// plan mixed moves (fleetMixed). Each arrival reads every replica's load through
// mixedrun.Least, which tests for a mixed move in each: in
// Regime/Fleet8LeastLoaded the load reads cost 222 then 310
// instructions a request, the moves they serve saved 270 more
// (12,142 then 11,961), but in BenchmarkRunFleet64/workload=atlas/
// router=LeastLoaded 1,617 then 2,857, the moves saved 560 (10,548
// then 11,229). A larger fleet behind LeastLoaded reads the loads its
// replicas keep (runner.keptLoads, leastKept), which read an engine again
// only once its load may have changed, and plans mixed moves too:
// RunFleet64 atlas/LeastLoaded 9,143 then 8,657 (the load reads 1,129
// then 1,225, the moves saved about 580). Kept loads in a fleet of 8 cost
// more than they save (Regime/Fleet8LeastLoaded 11,123 then 11,260:
// each replica's step ends fall between far fewer arrivals).
const mixedFleetMax = 16

// settleThrough collects the one replica's run through finishes up to
// the next event's instant (or the stopping instant, or the step before
// the move's end, whose step end collects the rest) when a finish inside
// it comes by then, accounting those finishes at their own instants.
// (The loop calls it before it reads the next event, with nothing of its
// own live across the call: testing the next event's instant there cost
// Regime/Autoscale, whose replicas never run through finishes, 24
// instructions a request in the loop.)
func (r *runner) settleThrough() error {
	at, _ := r.next()
	if *r.thruAt > at { // no finish inside by the next event (t below is at most at), without stopping's call: RunAtlas 5,625 then 5,624 instructions a request
		return nil
	}
	rep := &r.reps[0]
	t := min(at, r.stopping(), rep.stepDone-1)
	if *r.thruAt > t {
		return nil
	}
	return r.settle(rep, t)
}

// accountAhead is accountLazy's walk of the steps of a run through
// finishes that settleThrough collected ahead of the clock: the cohort's
// alone, so every Emit is a finisher's, inside the run or at the end of
// its last step collected, each ended at its own instant (finishInside);
// the members that go on continue their streak. (A test of each emit in
// accountLazy's loop cost Regime/Autoscale, which has no such run, 14
// instructions a request.)
func (r *runner) accountAhead(rep *replica, out *engine.Outcome) error {
	st := &rep.streak
	for _, em := range out.Emitted {
		if !em.Done {
			return fmt.Errorf("sim: replica %d: request %d emitted %d tokens by %v in a run through finishes without finishing (an internal error)", rep.idx, em.Ref, em.Tokens, out.End)
		}
		if err := r.finishInside(rep, out, em); err != nil {
			return err
		}
	}
	if out.Streak != st.members {
		return streakMismatch(rep, out, st.members)
	}
	if out.Streak > 0 {
		r.streakMove(rep, out, rep.stepTime, out.Streak, 0, 0)
	}
	st.end = out.End
	return nil
}

// finishInside accounts em, the last tokens of a request that finished
// inside the run out collected (em.Tokens of its steps from the first),
// or at its end when settleThrough collected it ahead of the clock, and
// ends it at the end of its last step: as lastMove and streakMove
// account a member's last move, one token a step, when it emitted last
// as the move began, else as emit does.
func (r *runner) finishInside(rep *replica, out *engine.Outcome, em engine.Emit) error {
	d, n := rep.stepTime, em.Tokens
	start := out.End - time.Duration(out.Steps)*d
	at := start + time.Duration(n)*d
	if at < r.now {
		return fmt.Errorf("sim: replica %d: request %d finished at %v inside a run, accounted at %v (an internal error)", rep.idx, em.Ref, at, r.now)
	}
	s := &r.slots[em.Ref]
	if m := r.memberOf(em.Ref); m.in {
		r.leaveAs(rep, m, s)
	}
	if rec := &s.rec; !em.First && rec.LastToken == start {
		r.plainTokens(s, d, n, at)
		if rec.Measured {
			r.col.itl.add(d, n)
		}
		r.tokens += r.tokensIn(start+d, d, n)
	} else {
		r.emit(s, d, n, em.First, at)
	}
	r.insides++
	r.advance(at)
	return r.finishAs(rep, em.Ref, s)
}

// Mixed moves (engine's mixed.go): a step that prefills a prompt whole
// beside the running decodes planned with the decode run after it as one
// move, its first step lead longer than the others (internal/mixedrun).
// The runner asks for them where it asks for runs through finishes
// (runThrough): it reads nothing of the engine inside a move. The twin
// is the mixed step and the run as two moves (noMixed), held to the
// same bytes by TestMixedMovesAreStepwise.

// accountFirst is account for an outcome whose first step is a mixed
// move's, which began the move (moveAt) and held blocks blocks: the
// measurements of that step, lead longer than the others, and of the
// others, then the tokens (accountMixed).
func (r *runner) accountFirst(rep *replica, out *engine.Outcome, blocks int) error {
	r.mixes++
	d, start := rep.stepTime, rep.moveAt
	lead := out.End - time.Duration(out.Steps)*d - start
	rep.busy += r.overlap(start, out.End)
	if r.endsInWindow(out.End) {
		// Its batch had one chunk and one decode fewer than the later
		// steps (Outcome.Decodes counts theirs).
		rep.blockTime.add(uint64(blocks), uint64(d+lead))
		r.mix.dur[compose(out.Decodes-1, out.Chunks+1)].add(d+lead, 1)
		if n := out.Steps - 1; n > 0 {
			rep.blockTime.add(uint64(out.BlockSteps-blocks), uint64(d))
			r.mix.dur[compose(out.Decodes, out.Chunks)].add(d, n)
		}
	}
	return r.accountMixed(rep, out, start, start+d+lead)
}

// accountMixed is accountLazy for a mixed move's outcome that began at
// start, its first step ending at first: as the two moves it stands for
// are accounted. The members decode in the first step (a streak move of
// its own); the admitted prompt emits its first token at its end and
// joins the streak there; the rest steps are a streak move of the members
// left and the prompt, those that finish at its end leaving as lastMove
// takes them. An Emit lists the tokens of every step: a member's first is
// its streak's, the prompt's its first token.
func (r *runner) accountMixed(rep *replica, out *engine.Outcome, start, first time.Duration) error {
	st := &rep.streak
	d, rest := rep.stepTime, out.Steps-1
	if st.members > 0 && start != st.end {
		r.leaveAll(rep) // not back to back: the gaps are not the steps
	}
	// Entered only when they have something, as accountLazy's loops
	// (this one and the joiners' below: RunAtlas 5,112 then 5,102
	// instructions a request, the budget test's count).
	if len(out.Left) > 0 {
		for _, ref := range out.Left {
			if int(ref) < len(r.members) && r.members[ref].in {
				r.leave(rep, ref)
			}
		}
	}
	part := &r.part // what streakMove reads of a move: its steps and end
	if n := st.members; n > 0 {
		part.Steps, part.End = 1, first
		r.streakMove(rep, part, first-start, n, 0, 0)
	}
	st.end = first
	r.joiners = r.joiners[:0]
	mc := &r.mixCounts
	mc.cont, mc.fins, mc.finMeasured = out.Streak, 0, 0
	for _, em := range out.Emitted {
		s := &r.slots[em.Ref]
		n := em.Tokens
		if em.First { // the prompt: its first token, at the first step's end
			s.rec.FirstToken, s.rec.LastToken = first, first
			s.rec.Emitted++
			r.tokens += r.tokensIn(first, d, 1)
			if rest > 0 && !em.Done { // a member from there
				r.joinAs(rep, em.Ref, s)
				mc.cont++
				continue
			}
			n--
		} else if m := r.memberOf(em.Ref); m.in {
			r.leaveAs(rep, m, s) // through the first step
			n--
		}
		if em.Done && (em.Tokens < out.Steps || out.End > r.now) { // inside the move, which goes on through finishes, or at its end collected ahead of the clock (settleThrough)
			if err := r.finishMixed(rep, em, n, first); err != nil {
				return err
			}
			continue
		}
		if n == rest && em.Done && st.byClass == nil && s.rec.LastToken == first {
			if n > 0 { // its last tokens, one a step from the first step's end (lastMove)
				r.plainTokens(s, d, n, out.End)
				mc.fins++
				if s.rec.Measured {
					mc.finMeasured++
				}
			}
		} else if n > 0 {
			r.emit(s, d, n, false, out.End)
		}
		if em.Done {
			if err := r.finishAs(rep, em.Ref, s); err != nil {
				return err
			}
		} else {
			r.joiners = append(r.joiners, em.Ref)
		}
	}
	if mc.cont != st.members {
		return streakMismatch(rep, out, st.members)
	}
	if rest > 0 && mc.cont+mc.fins > 0 {
		r.lastMoves += mc.fins
		part.Steps, part.End = rest, out.End
		r.streakMove(rep, part, d, mc.cont, mc.fins, mc.finMeasured)
	}
	st.end = out.End
	if len(r.joiners) > 0 {
		for _, ref := range r.joiners {
			r.join(rep, ref)
		}
	}
	return nil
}

// finishMixed is finishInside for em, the last tokens of a request that
// finished inside a mixed move that goes on through finishes (engine's
// mixed.go), or at its end when settleThrough collected it ahead of the
// clock: em.Tokens of its steps from the first, which ended at first,
// n of them after the first step (every one but the first when it left
// its streak there). It ends at the end of its last step, the clock
// moved there.
func (r *runner) finishMixed(rep *replica, em engine.Emit, n int, first time.Duration) error {
	d := rep.stepTime
	at := first + time.Duration(em.Tokens-1)*d
	if at < r.now {
		return fmt.Errorf("sim: replica %d: request %d finished at %v inside a mixed move, accounted at %v (an internal error)", rep.idx, em.Ref, at, r.now)
	}
	s := &r.slots[em.Ref]
	if rec := &s.rec; n == em.Tokens-1 && rec.LastToken == first {
		r.plainTokens(s, d, n, at)
		if rec.Measured {
			r.col.itl.add(d, n)
		}
		r.tokens += r.tokensIn(first+d, d, n)
	} else {
		r.emit(s, d, n, false, at)
	}
	r.insides++
	r.mixInsides++
	r.advance(at)
	return r.finishAs(rep, em.Ref, s)
}
