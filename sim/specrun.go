package sim

import (
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

// noSpecRuns turns speculative runs off, for tests: the twin.
var noSpecRuns = false

// specFar plans speculative runs to the stopping instant (tests: the
// events inside them cut them, Truncate and CompleteUntil).
var specFar = false

// specRuns asks the one replica's engine for speculative runs when
// nothing reads it inside a move: one replica (no router, no fleet's
// records interleave), no step observer, gateway, cache view, tiers,
// autoscaler or prefill pool, no detected warm-up (whose reach collects
// ahead), no classes (plainChunks' table is the default class's) or
// kept tokens, i.i.d. acceptance of one α (accept.IID, which the engine
// draws ahead) and K + 1 < gapLanes.
func (r *runner) specRuns() {
	c := &r.cfg
	if noSpecRuns || len(r.reps) != 1 || r.fleet || r.lazy || r.steps != nil || r.gw != nil || r.roots != nil ||
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
	if r.events.len() > 0 && !specFar {
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
	k, k1 := rep.spec.Tokens, c.K1
	t := &r.chunks
	if d != t.g || k != t.k || rep.idx != t.rep {
		r.chunkCounts()                     // the counts of the table's gap, before it changes
		t.make(d, &r.bounds[0], k, rep.idx) // without classes, the default class's bound
	}
	r.specMoves++
	tokens := 0
	for i := range out.Emitted {
		em := &out.Emitted[i]
		s := &r.slots[em.Ref]
		rec := &s.rec
		cnt := c.Steps[i*k1 : i*k1+k1]
		m, first := steps, 0
		if rec.LastToken != start {
			// Its first chunk's gap is its own: accounted alone.
			first = int(c.First[i])
			g, td := chunkGap(rec, start+d, first)
			r.draftedChunk(rep, s, engine.Draft{Drafted: k, Accepted: first - 1}, g, td, first)
			m--
		}
		if m > 0 {
			acc, over, td := 0, 0, rec.MaxTokenITL
			for n := 1; n <= k1; n++ {
				x := int(cnt[n-1])
				if n == first {
					x--
				}
				if x == 0 {
					continue
				}
				acc += x * (n - 1)
				over += x * t.over[n]
				td = max(td, t.td[n])
				if rec.Measured {
					t.cnt[n] += x
				}
			}
			rec.Drafted += k * m
			rec.Accepted += acc
			rec.MaxITL = max(rec.MaxITL, d)
			rec.MaxTokenITL = td
			rec.ITLOver += over
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
	if start+d >= r.allIn {
		r.tokens += tokens
	} else { // the window's edge, or its end, inside the run: each step's tokens at its end
		for j, n := range c.Tokens[:steps] {
			r.tokens += r.tokensIn(start+time.Duration(j+1)*d, 0, 1) * int(n)
		}
	}
	return nil
}
