package sim

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
)

// stepEnd applies the end of the move in flight.
func (r *runner) stepEnd() error {
	out, err := r.eng.Complete(r.now)
	if err != nil {
		return err
	}
	return r.account(out)
}

// account applies completed steps: every emitted token is accounted to its
// request (first token, inter-token gaps), and requests that emitted their
// last token end.
func (r *runner) account(out *engine.Outcome) error {
	if r.checkEngine {
		if err := r.eng.Check(); err != nil {
			return fmt.Errorf("sim: after the steps that ended at %v: %w", out.End, err)
		}
	}
	var run itlRun
	for _, em := range out.Emitted {
		s := &r.slots[em.Ref]
		r.emit(s, em.Tokens, em.First, out.End, &run)
		if em.Done {
			r.inSystem--
			if s.willError {
				r.end(em.Ref, StatusErrored, "server error (injected or recorded in the trace)")
			} else {
				r.end(em.Ref, StatusOK, "")
			}
		}
	}
	run.flush(&r.col.itl)
	return nil
}

// itlRun batches equal inter-token gaps of one step before they reach the
// summary's histogram, so a step costs one map update, not one per token.
type itlRun struct {
	d time.Duration
	n int
}

func (a *itlRun) add(d time.Duration, n int, w *weighted) {
	if a.n > 0 && a.d != d {
		a.flush(w)
	}
	a.d = d
	a.n += n
}

func (a *itlRun) flush(w *weighted) {
	if a.n > 0 {
		w.add(a.d, a.n)
		a.n = 0
	}
}

// emit accounts n tokens of one request, emitted at the ends of the last n
// steps of a move, the last of which ended at end.
func (r *runner) emit(s *slot, n int, first bool, end time.Duration, run *itlRun) {
	rec := &s.rec
	step := r.stepTime
	t := end - time.Duration(n-1)*step // the first of the n instants
	if first {
		rec.FirstToken = t
	} else {
		r.gap(rec, t-rec.LastToken, 1, run)
	}
	if n > 1 {
		r.gap(rec, step, n-1, run)
	}
	rec.Emitted += n
	rec.LastToken = end
	r.tokens += r.inWindow(t, step, n)
	if r.cfg.KeepTokens {
		for i := range n {
			rec.Tokens = append(rec.Tokens, t+time.Duration(i)*step)
		}
	}
}

// gap accounts k inter-token gaps of length d.
func (r *runner) gap(rec *Record, d time.Duration, k int, run *itlRun) {
	if d > rec.MaxITL {
		rec.MaxITL = d
	}
	if d > r.slo.ITL {
		rec.ITLOver += k
	}
	if rec.Measured {
		run.add(d, k, &r.col.itl)
	}
}

// end gives a live request its terminal status, hands its record to the
// observer and the summary, frees its slot, and tells a closed-loop source.
func (r *runner) end(ref int32, st Status, reason string) {
	s := &r.slots[ref]
	rec := &s.rec
	rec.Status, rec.Reason, rec.Finish = st, reason, r.now
	s.live = false
	r.lastEnd = r.now
	if st == StatusOK && r.inWindow(r.now, 0, 1) == 1 {
		r.done++
	}
	if rec.Measured {
		r.measuredLive--
		r.col.add(rec)
	}
	if r.obs != nil {
		r.obs.Observe(rec)
	}
	id := rec.ID
	s.gen++
	s.prefix = nil // the workload's slice: do not keep it alive
	r.freeRefs = append(r.freeRefs, ref)
	if r.fb != nil && st != StatusUnfinished {
		r.fb.Finished(id, r.now, st == StatusOK)
		r.pullErr = r.pull()
	}
}

// abandon ends every request still live when the run stops as unfinished,
// in slot order (deterministic).
func (r *runner) abandon() {
	reason := "still in flight when the run stopped"
	if r.overloaded {
		reason = fmt.Sprintf("the run stopped: the replica held more than %d requests (Config.MaxBacklog), an overload", r.maxHeld)
	}
	r.col.s.Stopped = r.now
	for ref := range r.slots {
		if r.slots[ref].live {
			r.end(int32(ref), StatusUnfinished, reason)
		}
	}
}

func (r *runner) summary() Summary {
	end := r.cfg.Horizon
	switch {
	case r.overloaded && (end == 0 || r.col.s.Stopped < end):
		// Nothing arrived after the stop: the window ends there.
		end = max(r.col.s.Stopped, r.cfg.Warmup)
		r.col.s.HeldAtEnd = r.inSystem
	case end == 0:
		end = r.lastEnd
		r.advance(max(r.lastEnd, r.now))
		r.col.s.HeldAtEnd = r.inSystem
	case !r.endSeen: // stopped before the horizon: every request ended
		r.advance(r.cfg.Horizon)
	}
	r.col.s.Overloaded = r.overloaded
	w := r.cfg.Window
	rep := WarmupReport{Declared: w.Warmup, DeclaredRequests: w.WarmupRequests, Method: "declared", Start: w.Warmup}
	area, done, tokens := r.area, r.done, r.tokens
	if w.DetectWarmup {
		var kept []Record
		kept, rep = truncate(r.col.eligible, w)
		r.col.detect = false
		for i := range kept {
			r.col.count(&kept[i])
		}
		area, r.col.s.HeldAtStart = integrate(r.segs, rep.Start, end)
		m := r.markAt(rep.Start)
		done, tokens = done-m.done, tokens-m.tokens
	}
	r.col.s.Completed, r.col.s.WindowTokens = done, tokens
	r.col.s.Warmup = rep
	// An open window whose warm-up outlasts every request is empty, never
	// negative.
	return r.col.finish(max(0, end-rep.Start), area.seconds(), r.cfg.Percentiles)
}

// inWindow counts the instants t, t+step, …, t+(n-1)·step that fall in the
// declared window [Warmup, Horizon) (Horizon 0: no end), in O(1).
func (r *runner) inWindow(t, step time.Duration, n int) int {
	lo, hi := 0, n // indices i in [lo, hi) are inside
	if step == 0 {
		n = 1
		hi = 1
	}
	if w := r.cfg.Warmup; t < w {
		if step == 0 {
			return 0
		}
		lo = int(ceilDiv(w-t, step))
	}
	if h := r.cfg.Horizon; h > 0 {
		if t >= h {
			return 0
		}
		if step > 0 {
			hi = min(hi, int(ceilDiv(h-t, step)))
		}
	}
	return max(0, min(hi, n)-lo)
}

func ceilDiv(a, b time.Duration) time.Duration { return (a + b - 1) / b }
