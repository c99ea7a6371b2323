package sim

import (
	"slices"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/specrun"
)

// Speculative runs (engine/specrun.go): the one replica's speculative
// cohort planned several steps a move, each member listed once in the
// outcome with its tokens over the run, and its steps counted by the
// tokens each emitted (specrun.Counts). Every step of such a run drafts
// K tokens for every member and lasts the step's length g, so a member's
// chunks after its first all have the gap g (its first too when it
// emitted last at the run's start, as it mostly has): its record and
// the histograms take from plainChunks' table (chunkTable) what each
// chunk of n tokens adds, times its count of them, once a run rather
// than once a step. The twin is the step a move (noSpecRuns, and
// Config.Stepwise): TestSpecRunsAreSteps and FuzzSpecRunsAreSteps hold
// the two to the same bytes.

// specRuns asks the one replica's engine for speculative runs when
// nothing reads it inside a move: one replica (no router, no fleet's
// records interleave), no step observer, gateway, cache view, tiers,
// autoscaler or prefill pool, no detected warm-up (whose reach collects
// ahead), no classes (plainChunks' table is the default class's) or
// kept tokens, i.i.d. acceptance of one α (accept.IID, which the engine
// draws ahead) and K + 1 < gapLanes.
func (r *runner) specRuns() {
	c := &r.cfg
	if r.tw.noSpecRuns || len(r.reps) != 1 || r.fleet || r.lazy || r.steps != nil || r.gw != nil || r.roots != nil ||
		r.cache != nil || r.tiers != nil || r.scale != nil || r.recent != nil || r.pd != nil || r.perClass ||
		c.DetectWarmup || c.Stepwise || c.KeepTokens {
		return
	}
	rep := &r.reps[0]
	s := rep.spec
	if !s.On() || s.AcceptedLengths != nil || len(s.ClassAcceptance) > 0 || s.Tokens+1 >= gapLanes || rep.async || rep.prefill {
		return
	}
	specrun.Allow(rep.eng, true)
	r.specCnt = specrun.Of(rep.eng)
}

// planSpec is plan's for the one replica with speculative runs: up to
// the next event (specUntil). A function of its own: with the call to
// specUntil in plan, RunAtlas's plans spilled (2 instructions a request).
func (r *runner) planSpec(rep *replica) error {
	p, err := rep.run().ScheduleUntil(r.now, r.specUntil())
	if err != nil || p == nil {
		return err
	}
	return r.planned(rep, p)
}

// specUntil is the instant before which the steps of a speculative run
// planned now start: the next event's (an arrival, a deadline, the
// window's edge), which would cut it there (the steps it would drop are
// never drawn), or the stopping instant. A run planned to the stopping
// instant and cut at the next arrival drew ahead, and rewound, about
// twice the steps it ran (BenchmarkRegime/Speculation, the budget test).
func (r *runner) specUntil() time.Duration {
	until := r.stopping()
	if r.events.len() > 0 && !r.tw.specFar {
		until = min(until, r.events.peek().at)
	}
	return until
}

// accountSpecRun accounts out, a speculative run's outcome of several
// steps, as accountChunk would each member's chunk of each step.
func (r *runner) accountSpecRun(rep *replica, out *engine.Outcome) error {
	c := r.specCnt
	steps, d, end := out.Steps, rep.stepTime, out.End
	start := end - time.Duration(steps)*d
	k := rep.spec.Tokens
	t := r.chunks.cur
	if t == nil || d != t.g || k != t.k || rep.idx != t.rep {
		t = r.tableOf(d, k, rep.idx)
	}
	r.specMoves++
	// Each member's chunks all have the step's gap, and the bound gates
	// each chunk by its gap (one verdict whatever its tokens): a
	// measured member whose last token was at the run's start has its
	// record read from its tokens and its fewest in a step, and the
	// run's chunks are counted by size at once (Counts.Total), not a
	// member at a time (2,410 then 741 instructions a request in
	// BenchmarkRegime/Speculation, the budget test). Any other member's
	// steps are read a step at a time (specEach), and taken out of the
	// total (off: they are counted there, or not at all); with the bound
	// on each token, every member's. Tested in the loop that accounts
	// the members, not in a loop before it that chose for all of them:
	// 25,401 then 25,302.
	each := r.bounds[0].perToken
	var off [gapLanes]int32
	tokens, over := 0, t.over[1]*steps
	// The members read a step at a time and those that finish (r.finish)
	// are accounted after the others, in their order: the others touch
	// their own records alone (the table, the counts and the histograms
	// are read or added to after both loops, or by specEach and finish
	// alone, which read no other member's record), and with those calls
	// in their loop its variables spilled and were reloaded a member;
	// the slots and fewest tokens held in locals, the records' stores
	// made the loop load them again a member (accountSpecRun 786 then
	// 751, then 666 instructions a request in
	// BenchmarkRegime/Speculation, the budget test's profile).
	ems, slots := out.Emitted, r.slots
	rare := slices.Grow(r.specRare[:0], len(ems))[:len(ems)]
	least := c.Least[:len(ems)]
	nr := 0
	for i := range ems {
		em := &ems[i]
		rec := &slots[em.Ref].rec
		if each || rec.LastToken != start || !rec.Measured || em.Done {
			rare[nr] = int32(i)
			nr++
			continue
		}
		rec.Drafted += k * steps
		rec.Accepted += em.Tokens - steps
		rec.MaxITL = max(rec.MaxITL, d)
		rec.MaxTokenITL = max(rec.MaxTokenITL, t.td[least[i]&(gapLanes-1)]) // least[i] <= K + 1 < gapLanes
		rec.ITLOver += over
		rec.Emitted += em.Tokens
		rec.LastToken = end
		tokens += em.Tokens
	}
	r.specRare = rare
	for _, i := range rare[:nr] {
		em := &out.Emitted[i]
		s := &r.slots[em.Ref]
		rec := &s.rec
		m, acc, td, o := steps, em.Tokens-steps, t.td[c.Least[i]], over
		if each || rec.LastToken != start || !rec.Measured {
			row := c.Accepted[int(i)*c.Stride:][:steps]
			m, acc, td, o = r.specEach(rep, s, row, start)
			for _, a := range row {
				off[a&(gapLanes-1)]++ // a <= K < gapLanes - 1
			}
		}
		if m > 0 {
			rec.Drafted += k * m
			rec.Accepted += acc
			rec.MaxITL = max(rec.MaxITL, d)
			rec.MaxTokenITL = max(rec.MaxTokenITL, td)
			rec.ITLOver += o
		}
		rec.Emitted += em.Tokens
		rec.LastToken = end
		tokens += em.Tokens
		if em.Done {
			if err := r.finish(rep, em.Ref); err != nil {
				return err
			}
		}
	}
	for n, x := range c.Total {
		t.cnt[n+1] += int(x - off[n&(gapLanes-1)])
	}
	r.specTokens(out, start, d, tokens)
	return nil
}

// specEach is a member's run, its accepted drafts a step row, a step at
// a time: its first chunk accounted alone when its gap is its own, the
// others' counted by size when it is measured. It returns those others'
// steps, accepted drafts, largest gap over tokens and count over the
// bound.
func (r *runner) specEach(rep *replica, s *slot, row []uint8, start time.Duration) (m, acc int, td time.Duration, over int) {
	rec, t, d := &s.rec, r.chunks.cur, rep.stepTime // accountSpecRun's
	if rec.LastToken != start {
		first := 1 + int(row[0])
		g, tf := chunkGap(rec, start+d, first)
		r.draftedChunk(rep, s, engine.Draft{Drafted: rep.spec.Tokens, Accepted: first - 1}, g, tf, first)
		row = row[1:]
	}
	for _, a := range row {
		n := 1 + int(a)
		acc += int(a)
		over += t.over[n]
		td = max(td, t.td[n])
		if rec.Measured {
			t.cnt[n]++
		}
	}
	return len(row), acc, td, over
}

// specTokens counts a speculative run's tokens in the window: each
// step's at its end.
func (r *runner) specTokens(out *engine.Outcome, start, d time.Duration, tokens int) {
	if start+d >= r.allIn {
		r.tokens += tokens
		return
	}
	// The window's edge, or its end, inside the run.
	c := r.specCnt
	for j := range out.Steps {
		in := r.tokensIn(start+time.Duration(j+1)*d, 0, 1)
		for i := range out.Emitted {
			r.tokens += in * (1 + int(c.Accepted[i*c.Stride+j]))
		}
	}
}
