package engine

import (
	"fmt"
	"time"
)

// Runner is the engine's batched contract: the moves of a driver that
// plans several identical decode steps as one move and cuts them where
// something happens (sim's runner is one). A driver that uses only the
// engine's own methods (the basic contract, engine/doc.go) never needs
// it: every step is one move, every emit is in its Outcome and every
// scheduled request is named by Engine.Scheduled.
//
// A Runner is had from its engine (Engine.Runner), and drives that
// engine: its moves and the engine's calls are one sequence of calls on
// one state machine. Like the engine it is not safe for concurrent use.
//
// What the batched contract changes, against the basic one:
//   - a move may be several steps (Plan.Steps > 1), planned by
//     ScheduleUntil or Continue, collected in part by CompleteUntil and cut
//     by Truncate where the driver learns something happened;
//   - its blocks are taken lazily, step by step, whenever the driver names
//     an instant (SyncTo before reading the engine's blocks or cache from
//     inside a run);
//   - with OmitStreaks the outcomes count the requests continuing a decode
//     streak (Outcome.Streak, Outcome.Left) instead of listing them, and
//     with a cost model that reads decode contexts only through their sum
//     the plan counts the decode cohort's decodes (Plan.Cohort) instead of
//     listing them in Plan.Batch.Decode; with speculative decoding under
//     costmodel.Frozen, the speculative cohort's decodes, listed in
//     neither Plan.Batch.Decode nor Plan.Batch.Verify.
//
// # The rules
//
// A batched driver follows these rules on top of the basic contract's.
// Each is checked when strict mode is on (SetStrict), which panics with
// the rule's name and the call that broke it:
//
//  1. time-forward: Schedule, ScheduleUntil, Continue, CompleteUntil and
//     Truncate never name an instant before the latest one named by any of
//     them, nor before the start of the move in flight (when none is in
//     flight, the end of the last move). SyncTo is held to the same floor
//     but does not raise it: it looks ahead into the move in flight, and a
//     later call may name the move's start again (a Truncate that then
//     drops the whole move gives the synced blocks back).
//  2. no-schedule-while-in-flight: Schedule, ScheduleUntil and Continue
//     only with no move in flight (Complete it, or Truncate it whole).
//  3. move-in-flight: CompleteUntil and Truncate only with a move in flight.
//  4. not-past-end: CompleteUntil, Truncate and SyncTo name no instant
//     past the end of the move in flight: past it, the driver missed the
//     move's end, which Complete collects.
//  5. cut-only-runs: Truncate drops steps only of a run whose blocks are
//     taken lazily (one of several steps, or one Continue planned); a step
//     planned alone (it may admit or preempt) runs to its end, and so
//     does the first step of a run that admits (a run of prefill chunks).
//  6. no-cut-behind-sync: a Truncate that keeps some of the run's steps
//     keeps every step whose blocks a SyncTo already took (else drop them
//     all).
//  7. continue-at-step-end: Continue(now) only at the end of the move the
//     last Complete collected (now is its End), before another move is
//     planned; requests may have been added or aborted since.
//  8. join-needs-move: JoinChangesNothing only with a move in flight (it
//     says whether a request just added leaves that move as planned).
//  9. omit-before-first-step: OmitStreaks only before the engine's first
//     move is planned (nothing in flight, no outcome yet).
//
// Beyond these, a driver that uses ScheduleUntil keeps its promise: it
// names as until an instant before which nothing external happens, or it
// cuts the run (CompleteUntil, Truncate) where something does, before
// Add or Abort there, unless JoinChangesNothing holds after the Add. The
// engine cannot see that promise; the differential tests (sim's
// FuzzFastEqualsStepwise) hold a driver to it by comparing its results
// with a step-by-step run's.
//
// A Runner is its engine seen through the batched contract (the same
// pointer, another method set): converting costs nothing, and neither do
// its methods, wrappers the compiler inlines into the engine's own code.
type Runner Engine

// strictState is what strict mode keeps (SetStrict).
type strictState struct {
	strict   bool          // check the batched contract's rules at every call
	strictAt time.Duration // the latest instant a move was planned, collected or cut at
}

// Runner returns the engine's batched contract (see Runner): the engine
// itself, with the batched moves. It is the same Runner at every call.
func (e *Engine) Runner() *Runner { return (*Runner)(e) }

// Engine is the engine the Runner drives: the Runner itself, with the
// basic contract's methods.
func (r *Runner) Engine() *Engine { return (*Engine)(r) }

// SetStrict turns the checks of the batched contract's rules on or off
// (see Runner, "The rules"), for tests and other drivers' conformance
// runs: with them on, a call that breaks a rule panics with the rule's
// name and what was called, e.g. "engine: rule no-schedule-while-in-flight
// broken: ScheduleUntil called at 1.2s with a move in flight until 1.5s".
// Off (the default), they cost one predictable branch a call.
func (r *Runner) SetStrict(on bool) {
	e := (*Engine)(r)
	e.strict, e.strictAt = on, 0
	e.gateFast()
}

// ScheduleUntil is Schedule for a driver that knows nothing external (an
// arrival, an abort) will happen before instant until: when the step
// schedules the running requests alone and its successors would be
// identical — the same requests, each decode a token a step and each
// prompt the same chunk a step, none finishing and no prompt reaching its
// last chunk before the last step, no admission possible, the blocks they
// need free, and the cost model pricing the last like the first — it plans
// the longest such run whose steps all start before until, as one move
// (Plan.Steps > 1; Plan.Batch is its first step). The outcome is exactly
// that of planning the steps one by one: each decode emits one token per
// step. If something does happen
// inside the run after all (an abort at the client's deadline, the end of
// the simulation), CompleteUntil collects the steps that ended before it.
// An Add or Abort at an instant before the run's last step started breaks
// the driver's promise: the run was planned without it. An Add after which
// JoinChangesNothing holds does not: the request waits behind a head no
// step of the run could admit, or for a running request to leave, so the
// run may go on; nor does the Add of a Remote request after which
// ReserveLater holds, which the run reserves at its next step.
func (r *Runner) ScheduleUntil(now, until time.Duration) (*Plan, error) {
	return (*Engine)(r).scheduleUntil(now, until)
}

// CompleteUntil ends the steps of the plan in flight that end at or before
// instant t, exactly as if each had been planned and completed on its own,
// and keeps the rest in flight: the plan's Start, Steps and Batch then
// describe the steps still to run (its End is unchanged; a prompt's
// chunks in Batch.Prefill start that much deeper). A driver calls it
// when something external happens at t inside a run of steps (an
// abort, a new request, the end of the simulation), so that the tokens of
// the steps that ended before t are not lost. When every step has ended
// (t is the plan's End) it is Complete; when none has, the Outcome is
// empty (Steps 0).
func (r *Runner) CompleteUntil(t time.Duration) (*Outcome, error) {
	return (*Engine)(r).completeUntil(t)
}

// Truncate drops the steps of the run in flight that start at or after
// instant t: something happened at t (a request joined or left the replica)
// that a step-by-step engine would weigh when planning its next step. It
// reports whether a step is still in flight, and the plan's new End. A step
// that would start exactly at t is dropped too: step by step, it would be
// planned only after everything at t.
//
// The steps that ended by t may have been collected first (CompleteUntil(t))
// or not: then they stay in flight with the step that started last, and
// Complete at the new End reports them all, as one move, exactly as the
// two calls would have. A driver that only adds a request at t needs
// nothing from them before then (Add reads no running request), so it
// saves a walk of the batch; an Abort at t needs them collected.
func (r *Runner) Truncate(t time.Duration) (inFlight bool, end time.Duration, err error) {
	return (*Engine)(r).truncate(t)
}

// SyncTo brings the run in flight up to instant t: the blocks of its steps
// that started before t are allocated, as they would be step by step. It
// changes nothing a step-by-step engine would not have done by t; a driver
// calls it before reading the engine's blocks or cache at t from inside a
// run (a router's view). With no run in flight it does nothing.
func (r *Runner) SyncTo(t time.Duration) {
	(*Engine)(r).syncTo(t)
}

// Continue plans, at instant now, the move that follows the one Complete
// has just ended there, when that move is the pure-decode run of the
// decode cohort that ScheduleUntil(now, until) would plan, and returns
// it; otherwise it returns nil and plans nothing, and the driver plans
// with ScheduleUntil as usual, once every event at now is handled.
//
// It plans when nothing waits (or the running list is at MaxSeqs, so
// the plan admits nobody before a finish), every running request is in
// the cohort or joins it now (a plain decode that emitted at the end of
// the move, as a prompt's last chunk does), their next step's blocks are
// free, and the cost model reads no decode context
// (costmodel.ContextFree): step by step, the plan at now then decodes
// every running request, a token each, priced by how many there are,
// up to the first finish. So a run goes on
// through a request's finish, and after the step that prefilled a prompt,
// without the planning a new move costs (the walk of the running list,
// the admission check, the run's length): the price is the model's for
// that many decodes, read from one decode's when a step of at least as
// many was priced the same (a model flat in the count, as Frozen, the
// Atlas default, is priced once). Its length is ScheduleUntil's: its
// steps start before until, none but its last sees a member's last token,
// and the blocks they need are free. (A driver that asked through the
// module's internal path, sim's single replica, may get a run that goes
// on through its members' finishes, its Outcome listing each finisher
// with its own steps' tokens: engine/through.go.) Continues says whether
// the engine's configuration lets it plan at all.
//
// Unlike ScheduleUntil, a driver may call it at the step end itself,
// before its other events at now: the run takes its blocks lazily, its
// first step's too, so until an instant after now the engine reads as a
// step-by-step engine would before planning (its free blocks, its cache;
// which running requests the cohort keeps is not read). An event at now
// that would change the plan is a join that does not leave it unchanged
// (JoinChangesNothing), or an abort; as for any run, the driver first
// cuts it with Truncate(now) (after CompleteUntil(now), for an abort),
// which drops every step of it, as if it had not been planned. The one
// exception: on a KV consumer (Config.RemoteKV) where Remote requests
// landed, the plan may admit them, and reserve the Remote request
// waiting, in its first step (continue.go's continueLanded): it then
// reads as after ScheduleUntil's plan, Truncate cannot drop that step,
// and a driver asks only when nothing else happens at now.
func (r *Runner) Continue(now, until time.Duration) *Plan {
	return (*Engine)(r).continueRun(now, until)
}

// Continues reports whether Continue may ever plan on this engine: the
// fast path "continue" is on (Engine.FastPaths says why not). The
// decision is the engine's, made once in New and in the setters
// (OmitStreaks, RecordSteps); a driver that skips Continue when it is
// false saves a call a move and decides nothing itself.
func (r *Runner) Continues() bool { return (*Engine)(r).fast.cont }

// JoinChangesNothing reports whether a request just added to the waiting
// queue leaves every step of the move in flight as planned: the running
// list is at its sequence cap (AtSeqCap), or the waiting queue's head is
// still the one the move was planned with. Admission stops at the head,
// and no step of a run could admit the head its first step could not
// (see fitBlocks), so then step by step nobody would be admitted before
// the move ends either. It is false when steps are recorded
// (RecordSteps): each step's shape carries the waiting queue's length,
// which the join changes (FastPaths, "joins").
func (r *Runner) JoinChangesNothing() bool {
	return (*Engine)(r).joinChangesNothing()
}

// OmitStreaks makes the outcomes of Complete and CompleteUntil leave out
// the requests that continue their decode streak (see Outcome.Streak and
// Outcome.Left). With speculative decoding, whose streaks vary with
// acceptance, the outcomes still list every emit (OmitsStreaks says
// whether it took), but under costmodel.Frozen the plans count the
// leading decodes with drafts in Plan.Cohort (see Plan). Call it before
// the first move is planned.
func (r *Runner) OmitStreaks(on bool) {
	(*Engine)(r).omitStreaks(on)
}

// OmitsStreaks reports whether the engine's outcomes leave out the
// requests continuing a decode streak: OmitStreaks(true) was asked and
// the engine's configuration allows it (FastPaths, "streaks").
func (r *Runner) OmitsStreaks() bool { return (*Engine)(r).omit }

// The strict checks (SetStrict), out of line: each runs only in strict
// mode, behind the one branch on r.strict at the top of the move.

// broken panics with a rule's name and what broke it.
func broken(rule, format string, args ...any) {
	panic(fmt.Sprintf("engine: rule %s broken: "+format, append([]any{rule}, args...)...))
}

// floor is the earliest instant a call may name: the latest a move was
// planned, collected or cut at, and the start of the move in flight (or
// the end of the last).
func (e *Engine) floor() time.Duration {
	if e.inFlight {
		return max(e.strictAt, e.plan.Start)
	}
	return max(e.strictAt, e.plan.End)
}

// checkTime holds a call at t to time-forward.
func (e *Engine) checkTime(call string, t time.Duration) {
	if f := e.floor(); t < f {
		broken("time-forward", "%s called at %v, after a call at %v", call, t, f)
	}
}

// checkPlan checks Schedule and ScheduleUntil.
func (e *Engine) checkPlan(now, until time.Duration) {
	call := "ScheduleUntil"
	if until == now {
		call = "Schedule"
	}
	if e.inFlight {
		broken("no-schedule-while-in-flight", "%s called at %v with a move in flight until %v", call, now, e.plan.End)
	}
	e.checkTime(call, now)
	e.strictAt = now
}

// checkContinue checks Continue.
func (e *Engine) checkContinue(now time.Duration) {
	if e.inFlight {
		broken("no-schedule-while-in-flight", "Continue called at %v with a move in flight until %v", now, e.plan.End)
	}
	e.checkTime("Continue", now)
	if e.plan.Steps == 0 || e.plan.End != now {
		if e.plan.Steps == 0 {
			broken("continue-at-step-end", "Continue called at %v, where no move was completed (the last move was cut, or none was planned)", now)
		}
		broken("continue-at-step-end", "Continue called at %v, not at the end of the move Complete collected (%v)", now, e.plan.End)
	}
	e.strictAt = now
}

// checkCollect checks CompleteUntil and Truncate.
func (e *Engine) checkCollect(call string, t time.Duration) {
	if !e.inFlight {
		broken("move-in-flight", "%s called at %v with no move in flight", call, t)
	}
	p := &e.plan
	if t > p.End {
		broken("not-past-end", "%s called at %v, past the end of the move in flight (%v): Complete it there first", call, t, p.End)
	}
	e.checkTime(call, t)
	if keep := e.started(t); call == "Truncate" && keep < p.Steps {
		if e.specRunning() { // a speculative run (specrun.go)
			e.checkSpecCut(t, keep)
		} else if !e.lazy {
			broken("cut-only-runs", "Truncate called at %v would drop a step planned alone at %v (it may admit or preempt): it runs to its end at %v", t, p.Start, p.End)
		}
		if keep == 0 && e.admits() {
			broken("cut-only-runs", "Truncate called at %v would drop the first step of a run, planned at %v, that admits: it runs to its end at %v", t, p.Start, p.Start+p.StepTime)
		}
		if keep > 0 && keep < e.runAlloc {
			broken("no-cut-behind-sync", "Truncate called at %v would keep %d of the run's steps but drop %d whose blocks a SyncTo took", t, keep, e.runAlloc-keep)
		}
	}
	e.strictAt = t
}

// checkSync checks SyncTo.
func (e *Engine) checkSync(t time.Duration) {
	e.checkTime("SyncTo", t)
	if e.inFlight && t > e.plan.End {
		broken("not-past-end", "SyncTo called at %v, past the end of the move in flight (%v): Complete it there first", t, e.plan.End)
	}
}

// checkJoin checks JoinChangesNothing.
func (e *Engine) checkJoin() {
	if !e.inFlight {
		broken("join-needs-move", "JoinChangesNothing called with no move in flight")
	}
}

// checkOmit checks OmitStreaks.
func (e *Engine) checkOmit(on bool) {
	if e.inFlight || e.move != 0 {
		broken("omit-before-first-step", "OmitStreaks called (on %v) after the first move was planned (%d outcomes so far)", on, e.move)
	}
}
