package engine

import (
	"time"

	"github.com/servesim/servesim/internal/mixedrun"
)

// Mixed moves: a step that prefills an admitted prompt whole beside the
// running decodes (a mixed step) planned with the decode run after it as
// one move, for a driver that asked (internal/mixedrun). The move's first
// step lasts plan.StepTime + lead, each later one plan.StepTime; every
// place that counts a move's steps from its start reads lead (started,
// completeUntil, truncate), 0 for a move of equal steps.

func init() {
	mixedrun.Allow = func(x any, on bool) { e := x.(*Engine); e.mixAsked = on; e.decideFast() }
	mixedrun.Out = func(x any) (*bool, *int) { e := x.(*Engine); return &e.firstOn, &e.firstBlocks }
	mixedrun.Least = func(x any) func(time.Duration) int {
		return leastMixed(x.([]*Engine))
	}
}

// lead is how much longer than StepTime the first step of the move in
// flight lasts: a mixed move's until that step is collected (its End
// holds it), else 0.
func (e *Engine) lead() time.Duration {
	if !e.mixed {
		return 0
	}
	p := &e.plan
	return p.End - p.Start - time.Duration(p.Steps)*p.StepTime
}

// collectFirst notes, as the steps of a mixed move that include its first
// are collected (Complete, CompleteUntil), that the outcome covers it and
// the blocks held during it, for the driver (firstOn; firstBlocks, which
// mixRun set to the blocks held once the move was planned, all of its
// first step's: unless an Abort inside that step released some, then
// runBlockSteps(1), which cost RunAtlas 60 instructions a request more
// at each collection). Called before the outcome's blocks move.
func (e *Engine) collectFirst() {
	e.firstOn = true
	if e.firstBlocks < 0 { // an abort inside the first step released a member's blocks
		e.firstBlocks = e.runBlockSteps(1)
	}
}

// listFirst lists the admitted prompt of the mixed move whose first j
// steps are being collected, a member of the cohort that joined last
// (the list keeps its order) and the only one that never emitted (a
// member's emitted is its count at its join), unless an Abort took it:
// its first token and the next j − 1 (completeCohort, called next, counts
// it among the members that continue their streak), and the prompt token
// seq.left counted it for as it decoded from its prompt's last. The
// move's later steps are equal (lead is 0).
func (e *Engine) listFirst(j int) {
	if m := e.co.members; len(m) > 0 {
		if s := m[len(m)-1]; s != nil && s.emitted == 0 {
			e.outstanding--
			e.out.Streak--
			s.lastMove = e.move
			e.out.Emitted = append(e.out.Emitted, Emit{Ref: s.req.Ref, Tokens: j, First: true})
		}
	}
	e.mixed = false
}

// mixRun turns the step just planned and priced, when it is a mixed
// step that the step-by-step engine would follow with a run of decode
// steps, into a mixed move: that step, then the run, and reports whether
// it did. The step schedules one prompt beside the cohort's members
// (every other running request is one), whose prompt's rest is its one
// chunk: all of it (or all not found cached) for a prompt it admitted,
// the last chunk for one admitted in an earlier move (which emitted
// nothing: from the plan on they are alike, the step priced and its
// blocks taken as the step-by-step engine plans them before this call);
// and every later step is a decode of the members and the prompt, a
// token each, priced alike, as a step-by-step engine plans them: nothing
// waits, or the running list is at MaxSeqs (no admission before a
// finish, and none but the run's own blocks taken), or the step's
// waiting loop stopped at the head with budget left, refused for its
// blocks (chunked prefill: a refusal for the budget is a whole prompt's,
// DisableChunkedPrefill), which no later step could admit (fitBlocks's
// reasons: fewer blocks free a step, and more budget only asks for more
// with AdmitOnFirstChunk; a newcomer that would go before it cuts the
// move, JoinChangesNothing), the model reads no
// decode context and prices a step of those decodes as one (flatTo, as
// runs through finishes require, through.go), no member caches blocks of
// shared output, and no tier, recorded steps or remote KV (KV events
// stamp the later steps lead after the grid: kvPublisher.at). The
// run's rules hold from the second step on: every step starts before
// until, none finishes before the last (the prompt emits its first token
// at the first step's end, then one a step, and does not finish in the
// move), and the blocks of every step fit (fitBlocks). Or, where the
// step-by-step engine would follow the mixed step with a run through
// finishes (through.go: the driver asked, nothing waits, goesThrough),
// the move goes on through the members' finishes (the first no earlier
// than the second step's end: thruAt), to the last member's or the step
// before the prompt's: from its second step on it is that run. Its collection
// starts where the last outcome ended (the members continue their
// streak: completeCohort counts them).
//
// From the plan on, the prompt is a member from its prompt's last token
// on: its computed tokens one fewer than its prompt (the blocks it holds
// are its prompt's, the first step's), a token a step, its first emitted
// at the first step's end (listFirst); seq.left counts one prompt token
// more until then. The plan's StepTime is the later steps'; its End is
// the first step's price later than Start + Steps × StepTime (lead).
func (e *Engine) mixRun(now, until time.Duration) bool {
	p := &e.plan
	s := e.sched[0] // the one scheduled beside the cohort (extendRun)
	if s.computed+s.sched != s.known || s.decoding || s.emitted != 0 || s.held < s.shared || s.look != 0 {
		return false
	}
	if len(e.running) != 1 || p.Cohort == 0 || len(p.Preempted) > 0 || e.co.npub > 0 || e.lastEnd != now || e.move == 0 {
		return false // (mixOK holds the configuration's conditions, decideFast)
	}
	if e.waiting.len() > 0 && !e.AtSeqCap() && (e.cfg.DisableChunkedPrefill || e.cfg.MaxBatchedTokens-p.Cohort-s.sched <= 0) {
		return false // the head may be admitted once the budget the prompt's chunk took is free (or, whole, its prompt fits it)
	}
	decodes := p.Cohort + 1 // the later steps'
	d0, d := p.StepTime, e.price1
	if decodes > int(e.flatTo) || decodes > e.cfg.MaxBatchedTokens {
		return false
	}
	left := e.minLeft // the members' first finish (planCohort)
	k := min(s.req.Output-1, left)
	if k < 2 {
		return false
	}
	if k == left && k < s.req.Output-1 && e.thruOK && e.waiting.len() == 0 && e.goesThrough(decodes, d) {
		k = min(s.req.Output-1, e.lastFin()-e.co.tick) // on through the members' finishes, as Continue plans at the first step's end (through.go); the prompt's is past the move
	}
	if now+d0+time.Duration(k-2)*d >= until { // the j-th step (j >= 2) starts at now + d0 + (j−2)·d, before until
		if until-now <= d0 {
			return false
		}
		k = int(min(time.Duration(k), (until-now-d0-1)/d+2))
	}
	// The blocks of steps 2 to k: the members' (coGrow, as Continue
	// fits them) and the prompt's, which holds its prompt's (fitBlocks's
	// reasons: no later step could admit the waiting head). (Through
	// fitBlocks, which walks the plan's requests, RunAtlas counted 5,490
	// instructions a request, 5,468 so.)
	if e.headFirst && e.waiting.len() > 0 {
		return false
	}
	avail, held := e.available(), e.blocksFor(s.known)
	if e.coGrow(1, k)+e.blocksFor(s.known-1+k)-held > avail {
		k = lastTrue(1, k-1, func(j int) bool { return e.coGrow(1, j)+e.blocksFor(s.known-1+j)-held <= avail })
		if k < 2 {
			return false // the blocks run short: the mixed step alone
		}
	}
	e.outstanding += 1 - s.sched // seq.left: one prompt token left, not its chunk
	e.resHeld = s.sched - 1      // until the first step ends (mixedOutstanding; resHeld is free: no remote KV here)
	s.computed, s.sched, s.decoding = s.known-1, 0, false
	p.Batch.Prefill = p.Batch.Prefill[:0]
	e.sched = e.sched[:0]
	e.joinCohort(true) // the running list is s
	p.Cohort = decodes
	p.Steps, p.StepTime, p.End = k, d, now+d0+time.Duration(k-1)*d
	e.lazy, e.runAlloc, e.live, e.mixed = true, 1, decodes, true
	e.firstBlocks = e.pool.held() // the first step's (collectFirst)
	// A run through finishes from its second step on: its first finish
	// inside ends step left (>= 2).
	if k > left {
		e.thruAt, e.thruSkip = now+d0+time.Duration(left-1)*d, e.runsDecided
	}
	return true
}
