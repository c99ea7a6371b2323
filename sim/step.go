package sim

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
)

// collectors is where the runner's records and steps go (this file and
// record.go): the observer, the fleet's collector, each class's, the
// classes' bounds, and the step observer and mix.
type collectors struct {
	slo SLO // Config.SLO with its defaults
	obs Observer
	col collector

	classes  classes      // Config.Classes, the default class last
	bounds   []classBound // each class's bounds, by class
	perClass bool         // Config.Classes is set: each class has its own summary

	gaps   gapRuns     // measured gaps not yet in the ITL histograms
	chunks chunkTables // plainChunks' tables of a step's chunks by size, and their counts, by gap

	steps StepObserver  // the observer's steps, if it wants them
	step  Step          // reused for each call
	names []StepRequest // the step's requests by ID, reused for each call
	mix   stepMix       // step time by composition over the window
}

// newCollectors is the collectors of a run of cfg (whose SLO with its
// defaults is slo) handing records to obs, with speculative decoding on
// some replica if speculates. With classes, the collector finds a
// record's SLO through the runner's classes (classSLO), set once the
// runner is.
func newCollectors(cfg Config, slo SLO, obs Observer, speculates bool) collectors {
	c := collectors{slo: slo, obs: obs, classes: newClasses(cfg.Classes, slo), perClass: len(cfg.Classes) > 0}
	c.steps, _ = obs.(StepObserver)
	c.col.slo = slo
	c.col.detect = cfg.DetectWarmup
	c.col.speculates = speculates
	c.col.setExact(cfg.ExactSamples)
	c.bounds = make([]classBound, len(c.classes.list))
	for i := range c.classes.list {
		cl := &c.classes.list[i]
		c.bounds[i] = classBound{itl: cl.slo.ITL, ttft: cl.slo.TTFT, perToken: cl.slo.ITLSeries == PerToken}
		cl.col.setExact(cfg.ExactSamples)
	}
	for i := range c.mix.dur {
		c.mix.dur[i].limit = c.col.limit()
	}
	return c
}

// account applies a replica's completed steps: every emitted token is
// accounted to its request (first token, inter-token gaps), requests that
// emitted their last token end, and the steps that ended inside the window
// add their time and KV blocks to the replica's measurements.
func (r *runner) account(rep *replica, out *engine.Outcome) error {
	if *r.odd { // a mixed move's first step, every outcome of a run whose engines are checked (tests), or of a fleet of mixed moves: one test of them (odd)
		if r.checkEngine {
			if err := r.checkAfter(rep, out); err != nil {
				return err
			}
		}
		if *rep.firstOn { // and its later steps (accountMixed)
			*rep.firstOn = false
			return r.accountFirst(rep, out, *rep.firstBlocks)
		}
	}
	if out.Steps > 0 {
		start := out.End - time.Duration(out.Steps)*rep.stepTime
		rep.busy += r.overlap(start, out.End)
		if r.endsInWindow(out.End) {
			rep.blockTime.add(uint64(out.BlockSteps), uint64(rep.stepTime))
			r.mix.dur[compose(out.Decodes, out.Chunks)].add(rep.stepTime, out.Steps)
		}
		if r.steps != nil {
			r.observeSteps(rep, out)
		}
	}
	if r.lazy {
		if out.Steps > 0 {
			return r.accountLazy(rep, out)
		}
		return nil
	}
	if out.Drafts != nil {
		return r.accountChunks(rep, out)
	}
	for _, em := range out.Emitted {
		r.emit(&r.slots[em.Ref], rep.stepTime, em.Tokens, em.First, out.End)
		if em.Done {
			if err := r.finish(rep, em.Ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkAfter is account's check of the engine that returned out, in a
// run whose engines are checked (tests: checkEngines).
func (r *runner) checkAfter(rep *replica, out *engine.Outcome) error {
	if err := rep.eng.Check(); err != nil {
		return fmt.Errorf("sim: replica %d, after the steps that ended at %v: %w", rep.idx, out.End, err)
	}
	return nil
}

// accountChunks is account's loop with speculative decoding, whose
// outcome lists a Draft beside each Emit: runs of plain chunks
// (plainChunks), each other emit alone (accountChunk).
func (r *runner) accountChunks(rep *replica, out *engine.Outcome) error {
	if out.Steps > 1 && r.specCnt != nil { // a speculative run (specrun.go)
		return r.accountSpecRun(rep, out)
	}
	inW := r.tokensIn(out.End, 0, 1) // a chunk's tokens are all at out.End
	for i, n := 0, len(out.Emitted); i < n; i++ {
		j, tokens := r.plainChunks(rep, out, i)
		r.tokens += inW * tokens
		if i = j; i == n {
			break
		}
		if err := r.accountChunk(rep, out, inW, i); err != nil {
			return err
		}
	}
	return nil
}

// accountChunk accounts out's i-th emit. A step that drafted emits its
// tokens at out.End as one streamed chunk after the request's last one:
// one gap a chunk (gap(s, g, 1, tokens), inline here), and its
// retokenized gaps, the gap over the chunk's tokens, once a token. A
// step that did not draft emits as emit does.
func (r *runner) accountChunk(rep *replica, out *engine.Outcome, inW, i int) error {
	em, d, end := &out.Emitted[i], out.Drafts[i], out.End
	s := &r.slots[em.Ref]
	rec, tokens := &s.rec, em.Tokens
	if d.Drafted == 0 {
		r.emit(s, rep.stepTime, tokens, em.First, end)
	} else {
		g, td := chunkGap(rec, end, tokens)
		r.draftedChunk(rep, s, d, g, td, tokens)
		rec.Emitted += tokens
		rec.LastToken = end
		r.tokens += inW * tokens
		if r.cfg.KeepTokens {
			for range tokens {
				rec.Tokens = append(rec.Tokens, end)
			}
		}
	}
	if em.Done {
		return r.finish(rep, em.Ref)
	}
	return nil
}

// draftedChunk accounts a chunk of tokens whose step drafted (d), with
// the gap g after the request's last token (td over its tokens), in its
// record and, measured, in the histograms and the specStats.
func (r *runner) draftedChunk(rep *replica, s *slot, d engine.Draft, g, td time.Duration, tokens int) {
	rec := &s.rec
	chunkRecord(rec, &r.bounds[s.class], d, g, td, tokens)
	if rec.Measured {
		r.col.spec.add(d.Drafted, d.Accepted, rep.spec.Tokens)
		if run := &r.gaps.run; g == run.d && rec.Replica == run.rep {
			run.k++
		} else {
			r.newRun(g, 1, rec.Replica)
		}
		if r.perClass {
			r.classes.list[s.class].col.itl.add(g, 1)
		}
		if run := r.tokRun(tokens); run != nil && (td == run.d || run.k == 0) {
			run.d, run.k = td, run.k+tokens
		} else {
			r.newTokRun(run, td, tokens)
		}
	}
}

// chunkGap is the gap a chunk of tokens emitted at end makes after the
// request's last token, and that gap over its tokens.
func chunkGap(rec *Record, end time.Duration, tokens int) (g, td time.Duration) {
	g = end - rec.LastToken
	// g >= 0 and tokens > 0: an unsigned division is the signed one.
	return g, time.Duration(uint64(g) / uint64(tokens))
}

// chunkRecord accounts a chunk's drafts and its gap g (td over its
// tokens) in its record, against its class's bound b.
func chunkRecord(rec *Record, b *classBound, d engine.Draft, g, td time.Duration, tokens int) {
	rec.Drafted += d.Drafted
	rec.Accepted += d.Accepted
	rec.MaxITL = max(rec.MaxITL, g)
	rec.MaxTokenITL = max(rec.MaxTokenITL, td)
	if b.perToken {
		if td > b.itl {
			rec.ITLOver += tokens
		}
	} else if g > b.itl {
		rec.ITLOver++
	}
}

// finish ends a request that emitted its last token (or, prefilled
// remotely, moves it to its decode replica: handoff). The caller has
// ended its decode streak, if it was in one (leave): endSlot does not.
func (r *runner) finish(rep *replica, ref int32) error { return r.finishAs(rep, ref, &r.slots[ref]) }

// finishAs is finish of ref, whose slot is s (found once, for end too:
// endSlot): the streaks' callers hold it (RunAtlas 5,078 then 5,067
// instructions a request, the budget test's count).
func (r *runner) finishAs(rep *replica, ref int32, s *slot) error {
	if r.roots != nil {
		r.roots.out(rep.idx, s.prefix)
	}
	if rep.prefill {
		if on, err := r.handoff(rep, ref); on || err != nil {
			return err
		}
	}
	r.hold(rep, -1)
	r.sysOut()
	if s.willError {
		return r.endSlot(ref, s, StatusErrored, "server error (injected or recorded in the trace)")
	}
	if r.gw != nil {
		r.wakeGateway()
	}
	return r.endSlot(ref, s, StatusOK, "")
}

// emit accounts n tokens of one request, emitted at the ends of the last n
// steps of a move of steps of length step, the last of which ended at end.
func (r *runner) emit(s *slot, step time.Duration, n int, first bool, end time.Duration) {
	rec := &s.rec
	t := end - time.Duration(n-1)*step // the first of the n instants
	if first {
		rec.FirstToken = t
	} else {
		r.gap(s, t-rec.LastToken, 1, 1)
	}
	if n > 1 {
		r.gap(s, step, n-1, 1)
	}
	rec.Emitted += n
	rec.LastToken = end
	r.tokens += r.tokensIn(t, step, n) // a move's steps take time: step > 0
	if r.cfg.KeepTokens {
		for i := range n {
			rec.Tokens = append(rec.Tokens, t+time.Duration(i)*step)
		}
	}
}

// gap accounts k gaps of length d, each ending a chunk of per tokens (1
// without speculative decoding), against the ITL bound of the request's
// class in the series it gates.
func (r *runner) gap(s *slot, d time.Duration, k, per int) {
	rec := &s.rec
	if d > rec.MaxITL {
		rec.MaxITL = d
	}
	td := d
	if per > 1 {
		td = d / time.Duration(per)
	}
	if td > rec.MaxTokenITL {
		rec.MaxTokenITL = td
	}
	if b := &r.bounds[s.class]; b.perToken {
		if td > b.itl {
			rec.ITLOver += k * per
		}
	} else if d > b.itl {
		rec.ITLOver += k
	}
	if rec.Measured {
		if run := &r.gaps.run; d == run.d && rec.Replica == run.rep {
			run.k += k
		} else {
			r.newRun(d, k, rec.Replica)
		}
		if r.perClass {
			r.classes.list[s.class].col.itl.add(d, k)
		}
		if r.speculates {
			if run := r.tokRun(per); run != nil && (td == run.d || run.k == 0) {
				run.d, run.k = td, run.k+k*per
			} else {
				r.newTokRun(run, td, k*per)
			}
		}
	}
}

// gapRuns are the measured gaps not yet added to the ITL histograms: a
// step's requests mostly share their gap, the step's length, so the
// fleet's histogram and the replica's take a run of equal gaps once
// instead of once a token, and the retokenized one a run for each chunk
// size. A histogram's counts are integers, the same whatever the order
// and grouping of its adds (weighted), so when a run reaches it changes
// nothing: the runs go on across steps and replicas (a run names its
// replica), and the summary adds them before it reads the histograms
// (flushGaps).
type gapRuns struct {
	run gapRun           // the fleet's series and the replica's
	tok [gapLanes]gapRun // the retokenized series', by chunk size (per): the gap over its tokens

	// Full steps plainChunks counted (specStats), by the tokens each
	// emitted, added to the run's specStats with the runs (flushGaps):
	// an increment a step instead of add's three sums, 34,966 then
	// 34,452 instructions a request in BenchmarkRegime/Speculation.
	full [gapLanes]int
}

// gapRun is k measured gaps of d (of the requests on replica rep, in the
// fleet's series).
type gapRun struct {
	d   time.Duration
	k   int
	rep int
}

// gapLanes bounds the chunk sizes that have a run of their own: larger
// chunks (K > 6 drafts) add their retokenized gaps as they come.
const gapLanes = 8

// newRun adds the fleet's run to the histograms and starts one of k gaps
// of d on replica rep.
func (r *runner) newRun(d time.Duration, k, rep int) {
	r.endRun()
	r.gaps.run = gapRun{d: d, k: k, rep: rep}
}

// endRun adds the fleet's run to its histogram (gapsOf), and empties it.
func (r *runner) endRun() {
	run := &r.gaps.run
	if run.k == 0 {
		return
	}
	r.gapsOf(run.rep).add(run.d, run.k)
	run.k = 0
}

// gapsOf is the histogram a measured gap of replica rep goes to: the
// run's, or in a fleet the replica's alone, the fleet's being gathered
// from the replicas' when the run is summarised (mergedGaps): a gap added
// to both cost two adds, and the fleet's, its replicas' gaps interleaved,
// missed weighted's pending runs and went to its map far more often.
func (r *runner) gapsOf(rep int) *weighted {
	if r.fleet {
		return &r.reps[rep].col.itl
	}
	return &r.col.itl
}

// tokRun is the retokenized run of chunks of per tokens (nil for a chunk
// size without one).
func (r *runner) tokRun(per int) *gapRun {
	if uint(per) < gapLanes {
		return &r.gaps.tok[per]
	}
	return nil
}

// newTokRun adds run (nil: none) to the retokenized histogram and starts
// it again with k gaps of td; or, without a run, adds those.
func (r *runner) newTokRun(run *gapRun, td time.Duration, k int) {
	if run == nil {
		r.col.itlTok.add(td, k)
		return
	}
	if run.k > 0 {
		r.col.itlTok.add(run.d, run.k)
	}
	run.d, run.k = td, k
}

// flushGaps adds the chunks plainChunks counted (chunkCounts), every
// pending run to its histogram, and the full steps counted to the run's
// specStats.
func (r *runner) flushGaps() {
	r.chunkCounts()
	r.endRun()
	for t, n := range r.gaps.full {
		if n > 0 {
			r.col.spec.addFull(t, n)
			r.gaps.full[t] = 0
		}
	}
	for i := range r.gaps.tok {
		if run := &r.gaps.tok[i]; run.k > 0 {
			r.col.itlTok.add(run.d, run.k)
			run.k = 0
		}
	}
}

// classBound is a class's ITL bound and the series it gates, and its
// TTFT bound, kept apart from the class's state, a large struct (its
// collector): a bound read there was a cache miss a gap, a move and a
// request.
type classBound struct {
	itl, ttft time.Duration
	perToken  bool
}

// end gives a live request its terminal status, hands its record to the
// observer and the summary, frees its slot, and tells a closed-loop source,
// returning the error the source met pulling what that released. Its
// decode streak, if any, ends first (settleStreak).
func (r *runner) end(ref int32, st Status, reason string) error {
	r.settleStreak(ref)
	return r.endSlot(ref, &r.slots[ref], st, reason)
}

// endSlot is end of the request in slot s, r.slots[ref] (which finish
// has found: RunAtlas's finish and end 121 then 113 instructions a
// request), in no decode streak: finish's callers have ended its streak
// (each leaves it before it accounts the finisher's last tokens), so
// that finish does not look it up again (settleStreak's call, 20
// instructions a request in RunAtlas: 5,176 then 5,148 a request, the
// budget test's count).
func (r *runner) endSlot(ref int32, s *slot, st Status, reason string) error {
	rec := &s.rec
	rec.Status, rec.Reason, rec.Finish = st, reason, r.now
	// The engine ends a request early only at MaxModelLen (settleStreak
	// has brought Emitted up to date).
	rec.LengthCapped = st == StatusOK && rec.Emitted < rec.Output
	s.live = false
	r.lastEnd = r.now
	if rec.Sent {
		r.inFlight--
	}
	r.tally(rec, s.class)
	if r.obs != nil {
		r.obs.Observe(rec)
	}
	id := rec.ID
	s.gen++
	if s.prefix != nil { // the workload's slice: do not keep it alive (tested, not written: RunAtlas has none, and schedule counts on it)
		if r.recycle != nil {
			// Handed back (recycleIDs), lackRoots' note of them, if it
			// is theirs, forgotten first: a later arrival given the
			// same array is another request. Here, not in a call of
			// its own: Regime/Fleet8PrefixApprox 9,847 then 9,834
			// instructions a request (the budget test).
			if m := r.roots; m != nil && len(s.prefix) > 0 && m.lastIDs == &s.prefix[0] {
				m.lastIDs = nil
			}
			r.recycle.Recycle(s.prefix)
			r.recycled++
		}
		s.prefix = nil
	}
	r.freeRefs = append(r.freeRefs, ref)
	if r.fb != nil && st != StatusUnfinished {
		return r.feedback(id, st)
	}
	return nil
}

// feedback tells a closed-loop source that request id ended with st, and
// pulls what that released.
func (r *runner) feedback(id uint64, st Status) error {
	r.fb.Finished(id, r.now, st == StatusOK)
	return r.pull()
}

// tally counts a record that ended at rec.Finish: among the window's
// completions, among the recent ends when an autoscaling policy reads
// them back (ScaleView.Recent), and when measured in the summaries
// (Summarize replays records through it too).
func (r *runner) tally(rec *Record, class int) {
	if rec.Status == StatusOK && r.tokensIn(rec.Finish, 0, 1) == 1 {
		r.done++
	}
	if r.recent != nil { // every end, measured or not
		r.recent.note(rec, r.col.sloFor(rec))
	}
	if rec.Measured {
		r.measuredLive--
		if r.scale != nil {
			r.scale.noteEnd(rec, r.col.sloFor(rec))
		}
		switch {
		case r.col.detect: // counted once the warm-up is known
			r.col.hold(rec)
		case r.apart:
			r.countAll(rec, class)
		default:
			r.col.count(rec)
		}
	}
}

// countAll counts a measured record in the run's summary and apart: in
// its replica's share (in a fleet), its class's summary (with classes)
// and the tiers' tallies (with tiers). One replica with no classes and
// no tiers keeps no summary apart (runner.apart says so). Without
// classes the replica judges a request by the run's SLO, so its share
// takes the run's verdict (count's) rather than judge it again
// (countShared); with classes it judges it by that SLO itself.
func (r *runner) countAll(rec *Record, class int) {
	good := r.col.s.Good
	r.col.count(rec)
	if r.fleet && rec.Replica != Unrouted {
		c := &r.reps[rec.Replica].col
		if r.perClass {
			c.countShared(rec, c.attribute(rec, &c.slo))
		} else {
			c.countShared(rec, r.col.s.Good != good)
		}
	}
	if r.perClass {
		r.classes.list[class].col.count(rec)
	}
	if r.tiers != nil {
		r.tiers.count(rec, r.col.sloFor(rec))
	}
}

// abandon ends every request still live when the run stops as unfinished,
// in slot order (deterministic). An unfinished request tells its source
// nothing, so no error comes of it.
func (r *runner) abandon() {
	reason := "still in flight when the run stopped"
	if r.overloaded {
		who := "the replica"
		if r.fleet {
			who = "the fleet"
		}
		reason = fmt.Sprintf("the run stopped: %s held more than %d requests (Config.MaxBacklog), an overload", who, r.maxHeld)
	}
	r.col.s.Stopped = r.now
	for ref := range r.slots {
		if s := &r.slots[ref]; s.live {
			why := reason
			if !s.rec.Sent && !r.overloaded {
				why = "waiting client-side for a slot (Config.MaxConcurrency) when the run stopped"
			}
			if s.queued {
				r.leaveQueue(s)
				why = "waiting at the gateway when the run stopped"
			}
			_ = r.end(int32(ref), StatusUnfinished, why) // nil: no feedback
		}
	}
}
