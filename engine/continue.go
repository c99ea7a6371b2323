package engine

import "time"

// continueRun is Runner.Continue (runner.go), which documents it.
func (e *Engine) continueRun(now, until time.Duration) *Plan {
	if !e.fast.contFast { // off, strict mode, remote KV or a tier: the one test either way
		if ok, p := e.continueSlow(now, until); !ok {
			return p
		}
	}
	p, co := &e.plan, &e.co
	waits := e.waiting.len() > 0
	if waits && !e.admitsNone() || e.inFlight || p.End != now || until <= now || !e.allJoin() {
		return nil
	}
	e.joinCohort(true) // allJoin said they all join
	n := co.n
	if n == 0 || n > e.cfg.MaxBatchedTokens || e.coStep(1) > e.available() {
		return nil // idle, or the walk plans it: a member is left out, or preempts
	}
	e.resetPlan(now)
	e.probeK, e.runHead = 0, 0 // no probe (a model that reads no context)
	if waits {
		e.runHead = e.waiting.peek().order + 1 // as scheduleUntil notes it
	}
	p.Cohort = n
	d := e.decodePrice(n)
	if d <= 0 {
		return nil // ScheduleUntil reports the model
	}
	if co.npub > 0 && !e.continuePublishing() {
		return nil
	}
	left := e.finMin() - co.tick            // steps until a member's last token
	k := int(min((until-now-1)/d+1, 1<<40)) // every step starts before until
	if k > left {
		if e.thruOK && !waits && e.goesThrough(n, d) { // on through the finishes, to the last member's (through.go)
			k = min(k, e.lastFin()-co.tick)
		} else {
			k = left
		}
	}
	// The blocks: ScheduleUntil's cohort plan takes its first step's
	// (coStep(1)) and its run fits the rest (fitBlocks, coGrow(1, j)),
	// so the run is the longest whose steps need no more than are free.
	// Nothing waits, or nothing is admitted before a finish, which ends
	// the run: no admission could get easier (fitBlocks).
	if avail := e.available(); e.coGrow(0, k) > avail {
		k = lastTrue(1, k-1, func(j int) bool { return e.coGrow(0, j) <= avail })
	}
	p.Steps, p.StepTime, p.End = k, d, now+time.Duration(k)*d
	e.minLeft = left
	e.inFlight, e.lazy, e.runAlloc, e.live = true, true, 0, n
	if k > left { // a run through finishes
		e.thruAt, e.thruSkip = now+time.Duration(left)*d, e.runsDecided
	}
	return p
}

// admitsNone reports whether Continue may plan while requests wait: the
// running list is at MaxSeqs (AtSeqCap; with the cohort's joiners,
// which allJoin then holds to the running list), so the plan at now
// admits nobody and stops its waiting loop before the head (a vLLM
// step at max_num_seqs), and its run ends at the first finish, which
// frees a slot (no run through finishes then). Not on an engine whose
// waiting loop does more (async: a KV consumer's; a tier's admits
// nobody at MaxSeqs either, landed loads included: continueTier), nor
// with headFirst (tests), where fitBlocks cuts such a run to one step.
// (The twin: contAtCap off, for tests, declines whenever anything
// waits; TestContinueAtSeqCapIsStepwise holds the two together.) In
// RunAtlas, where the batch is at MaxSeqs with the next request
// waiting, this plans the decode run after a step that prefilled a
// prompt at once, at the step end, without ScheduleUntil's walk
// (RunAtlas 5,730 then 5,618 instructions a request, the budget test).
func (e *Engine) admitsNone() bool {
	return contAtCap && e.AtSeqCap() && (!e.async || e.tier != nil) && !e.headFirst
}

// contAtCap lets Continue plan at MaxSeqs while requests wait
// (admitsNone); tests turn it off for the twin.
var contAtCap = true

// continuePublishing is continueRun's part for members whose decodes
// cache blocks of shared output (coPublish): runPublish caches them as
// the run reaches their steps, the first's too (Continue takes nothing
// when it plans: runAlloc 0), unless the run must stop before a step
// that caches one (publishesThrough), which it declines: ScheduleUntil's
// plan caches its first step's and stops before the next.
func (e *Engine) continuePublishing() bool {
	if !e.publishesThrough() {
		return false
	}
	e.pubRun = 1
	return true
}

// continueSlow is continueRun's way in when contFast is false: the
// strict checks, whether Continue is on, and on a remote-KV engine
// whether a landed request waits to be admitted (then the plan is
// continueLanded's, or none) and the last plan's reservations cleared
// (a continued plan reserves nothing). It reports whether continueRun
// goes on, and else the plan it returns. It is a call of its own, which the inliner leaves out of
// line, so that the usual Continue pays one test: written into
// continueRun, these lines cost RunAtlas 1.7 instructions a request
// (its continueRun 158.0 a request against 155.4 so, cachegrind,
// 2026-12-05).
func (e *Engine) continueSlow(now, until time.Duration) (bool, *Plan) {
	if e.strict {
		e.checkContinue(now)
	}
	if !e.fast.cont {
		return false, nil
	}
	if e.tier != nil { // a PrivateTier's, without remote KV (decideFast)
		return e.continueTier(), nil
	}
	if e.cfg.RemoteKV {
		if len(e.landed) > 0 {
			if contLanded {
				return false, e.continueLanded(now, until)
			}
			return false, nil
		}
		e.plan.Reserved = e.plan.Reserved[:0]
	}
	return true, nil
}

// continueTier is continueSlow's part on an engine with a tier (a
// PrivateTier, without remote KV: decideFast): it reports whether
// continueRun goes on, which plans what ScheduleUntil would. There the
// waiting loop is admitAsync's: the landed loads first (admitLanded),
// then the waiting head looked up in the tier (reserveTier). Continue
// plans while nothing waits (admitAsync then has only the landed loads
// to admit, which it declines here unless the running list is at
// MaxSeqs, where admitLanded admits nobody) or at MaxSeqs (admitsNone:
// the waiting loop stops before the head, landed loads too), so the
// plan admits, reserves and looks nobody up: it clears what
// planChunked's async part clears (the last plan's reservations, the
// refused head), and its run goes on as a tier's run with nothing to
// look up (tierRuns, which is true then: a PrivateTier's runs are on).
// Loads in flight (reserved) change no plan until they land: a landing
// cuts the run (sim's landTier, as an arrival does; at the instant it
// was planned at, whole). The run offers the tier its first step's
// stores too as the driver brings it to an instant (runAlloc is 0:
// allocThrough, storeRun from step 1), where ScheduleUntil's plan offers
// them at once (storeTier): a PrivateTier sees no call of another in
// between, and the stores of a run cut whole are never offered, as that
// plan is never made. Regime/Tiers (the budget test): 58,816 then
// 58,151 instructions a request, 1.3 of its 3.8 step ends a request
// continued (the others: requests waiting below MaxSeqs, landed loads,
// a running request outside the cohort). The twin: contTier off
// (TestTierContinueIsSteps), and sim's twins.tierNoContinue
// (TestTierContinueIsQueuedPlans).
func (e *Engine) continueTier() bool {
	if len(e.landed) > 0 && !e.AtSeqCap() {
		return false // ScheduleUntil's waiting loop admits them (admitLanded)
	}
	e.plan.Reserved = e.plan.Reserved[:0]
	e.refusedHead = nil
	e.tierRun = true
	return true
}

// contTier lets Continue plan on an engine with a PrivateTier
// (continueTier); tests turn it off, before New, for the twin: Continue
// off, every plan ScheduleUntil's.
var contTier = true

// contLanded lets Continue admit a lone landed request (continueLanded);
// tests turn it off for the twin, which declines while one waits.
var contLanded = true

// continueLanded is Continue on a remote-KV engine with landed requests
// waiting (Remote requests', not tier loads': mostly one, and two or
// more that landed in one step), nothing in the waiting queue but a
// Remote request not yet reserved, and every running request joining
// the cohort: it plans what ScheduleUntil plans then, in the same order,
// without its walk. planCohort plans the cohort's step (its first step's
// blocks taken, co.ahead), planChunked's running loop has nobody left
// and its waiting loop (admitAsync) admits the landed requests first, in
// their order (admitLanded: start, schedule(s, 1)), then reserves the
// waiting Remote request's blocks if they fit (reserve; the plan is then
// one step, as runLength makes a plan that reserves) or stops there, and
// the run is extendRun's. (A Remote request waiting was declined until
// issue 41's twenty-fourth round: about 382 of 1,758 calls in
// Regime/Disagg at 2,000 requests.) It declines, changing nothing ScheduleUntil would not
// change the same way (the cohort's joins), unless that plan is the
// cohort's (no member left out, no block short: walkNeed is 0 with
// nobody outside the cohort), admits every landed request (the budget,
// the sequence cap, their blocks and the watermark with the cohort's
// first step's blocks taken) and is priced price1 (a model that reads
// no decode context, flat to n+m decodes, m landed: a step's price does
// not move with the admissions, and is known before them). (Two or more
// landed were declined until issue 41's twenty-third round: 118 of 878
// calls in Regime/Disagg at 1,000 requests.) No member publishes
// (coPlanPublish is the walk's). The plan admits in its first step, so
// no event at its instant may cut it (Truncate refuses): the driver
// asks only when nothing else happens then (sim's aloneAt). The twin:
// contLanded off (and the sim's Stepwise, which never continues).
func (e *Engine) continueLanded(now, until time.Duration) *Plan {
	co := &e.co
	if e.tier != nil || !co.on || e.cfg.SpeculativeTokens > 0 ||
		e.inFlight || e.plan.End != now || until <= now || !e.ctxFree || e.price1 <= 0 || !e.allJoin() {
		return nil
	}
	if w := e.waiting.len(); w > 0 && (w > 1 || e.waiting.peek().rstate != remoteWaiting) {
		return nil // the waiting loop may admit a prompt
	}
	m := len(e.landed)
	e.joinCohort(true) // allJoin said they all join
	n, budget := co.n, e.cfg.MaxBatchedTokens
	if n == 0 || n+m > budget || n+m > e.cfg.MaxSeqs || n+m > int(e.flatTo) || co.npub > 0 {
		return nil
	}
	need := e.coStep(1)
	avail := e.available() - need
	if avail < 0 {
		return nil
	}
	// Each landed request's blocks and the watermark fit after those
	// admitted before it (admitLanded's test, which then admits them
	// all): the watermark is one number with the cohort running.
	want := e.keepFree()
	for _, s := range e.landed {
		if s.rstate != remoteLanded {
			return nil
		}
		if want += e.need(s, s.known); want > avail {
			return nil
		}
	}
	e.resetPlan(now)
	p := &e.plan
	p.Reserved = p.Reserved[:0]
	co.ahead = 1 // planCohort's
	p.Cohort = n
	e.minLeft = min(e.minLeft, e.finMin()-co.tick)
	e.pool.take(need) // planChunked's owed
	e.refusedHead = nil
	left, ok := e.admitLanded(budget - n)
	if !ok || len(e.landed) > 0 {
		panic("engine: invariant continue-landed broken: a landed request was not admitted")
	}
	if e.waiting.len() > 0 && left > 0 && e.nrunning() < e.cfg.MaxSeqs {
		e.reserve(e.waiting.peek()) // admitAsync's waiting loop: it reserves, or stops there
	}
	e.tierRun = e.tierRuns()
	e.satOutFrom(0) // scheduleUntil's, from here on
	p.Steps, p.StepTime = 1, e.price1
	e.probeK = 0
	e.extendRun(now, until)
	if !e.mixed {
		p.End = now + time.Duration(p.Steps)*p.StepTime
	}
	e.inFlight = true
	e.noteFirstStep()
	e.runHead = 0
	if e.waiting.len() > 0 { // not reserved: as scheduleUntil notes it
		e.runHead = e.waiting.peek().order + 1
	}
	return p
}

// allJoin reports whether every running request outside the cohort would
// join it at the next plan (joinCohort).
func (e *Engine) allJoin() bool {
	for _, s := range e.running {
		if !e.joins(s) || e.lags(s) {
			return false
		}
	}
	return true
}

// decodePrice is the model's price of a step of n decodes and nothing
// else, for a model that reads no decode context: one decode's price
// when a step of at least n was priced the same (models are
// non-decreasing in the decodes a step has), else the model's, read
// through the plan (price, whose Batch is the cohort's n decodes).
func (e *Engine) decodePrice(n int) time.Duration {
	if n <= int(e.flatTo) {
		return e.price1
	}
	d := e.price()
	if d == e.price1 {
		e.flatTo = int32(n) // n <= MaxSeqs
	}
	return d
}
