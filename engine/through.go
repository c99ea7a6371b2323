package engine

import (
	"time"

	"github.com/servesim/servesim/internal/runthrough"
)

// Runs through finishes: a continued run of the cohort's members alone
// (Continue) that goes on past the steps where members emit their last
// tokens, when a finish changes nothing of the next step but who is in
// it: nothing waits (no admission follows the finish), the model prices
// every step of up to the run's decodes alike (flatTo: a step of fewer
// decodes costs the same), and the pool holds no cached block (every
// block is anonymous: which free blocks a step takes is not seen, only
// how many). Step by step, the plan at such a finish decodes the
// members left, a token each, at the same price: the run is those steps.
//
// The finishers stay counted in the cohort's aggregates until the run's
// steps are collected (Complete, CompleteUntil), as if they decoded on:
// the blocks the run takes lazily count theirs too, which only the
// lengths the run was fitted to (coGrow over every member) allow, and
// collecting gives back what they took past their last step (their
// tokens, blocks, block-steps and outstanding tokens: thruFin). So the
// pool's free count and Outstanding inside such a run are not a
// step-by-step engine's until its steps are collected: only a driver
// that reads neither inside a run and collects it before anything at an
// instant after its first finish inside (thruAt) may ask for such runs
// (internal/runthrough; sim's single replica does). Each finisher is
// listed at the run's collection with its own tokens, those of its steps
// (Emit.Tokens fewer than Outcome.Steps: it emitted its last at the end
// of the step that many after the outcome's first began), in the order
// of their steps, and in running order within one.
//
// The twin is the run that ends at the first finish (allow off), held to
// it by sim's TestRunsThroughFinishesAreStepwise, and to a step a move by
// TestRunsThroughFinishesAreSteps. The state is runState's
// thruOK and thruAt (the run in flight goes on through a finish not
// collected yet when it is not noFinish).

// noFinish is thruAt when no member finishes inside the move in flight:
// zero, which no finish inside a run is (its step ends after the run's
// start), and which the zero Engine holds.
const noFinish = time.Duration(0)

func init() {
	runthrough.Allow = func(x any, on bool) { x.(*Engine).thruOK = on }
	runthrough.FinAt = func(x any) *time.Duration { return &x.(*Engine).thruAt }
}

// goesThrough reports whether a continued run of n members, each step
// priced d, may go on through finishes, on an engine whose driver asked
// for them (thruOK, which continueRun tests first).
func (e *Engine) goesThrough(n int, d time.Duration) bool {
	return n <= e.flatTo && d == e.price1 && e.pool.cached == 0 && e.co.npub == 0 && !e.co.each && e.pool.pub == nil && !e.record && !e.cfg.RemoteKV
}

// lastFin is the tick of the last live member's last token.
func (e *Engine) lastFin() int {
	q := &e.co.fin
	m := -1
	for i := len(q.run) - 1; i >= q.head; i-- {
		if q.run[i].live() {
			m = q.run[i].tick
			break
		}
	}
	for _, x := range q.heap {
		if x.tick > m && x.live() {
			m = x.tick
		}
	}
	return m
}

// thruFin takes back what a member that finished over steps before the
// cohort's clock (a run through finishes) was counted for past its last
// step, once it has left the cohort's counts (completeCohort): its
// tokens, outstanding tokens and, from the outcome's block-steps, the
// blocks it did not hold in the steps after its last (it still holds
// their blocks, which its release gives back).
func (e *Engine) thruFin(s *seq, over int) {
	c := s.computed // as if it had decoded through the clock (syncMember)
	s.computed -= over
	s.known -= over
	s.emitted -= over
	e.outstanding += over
	b := e.cfg.BlockSize
	e.out.BlockSteps -= blockSum(c, b) - blockSum(s.computed, b)
}

// setThruAt notes the first finish inside the run in flight through
// finishes, once its steps up to another are collected (thruAt: a run
// with none left inside it is a plain run).
func (e *Engine) setThruAt() {
	e.thruAt = noFinish
	if e.co.n == 0 {
		return
	}
	p := &e.plan
	if f := e.finMin() - e.co.tick; f < p.Steps {
		e.thruAt = p.Start + time.Duration(f)*p.StepTime
	}
}
