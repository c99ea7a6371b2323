package engine

import "strconv"

// Scheduled is one request the step in flight scheduled: its Ref, the
// tokens it was given this step, whether they are a decode (one token
// after an emitted one, plus any speculative drafts) rather than a prefill
// chunk, Computed, its tokens in KV before the step (prefix-cache hits
// included), and Kind, whether the step admitted it for the first time,
// resumed it after a preemption, or continued it from an earlier step.
type Scheduled struct {
	Ref      int32
	Tokens   int
	Computed int
	Decode   bool
	Kind     ScheduledKind
}

// ScheduledKind says how a scheduled request came to the step, as vLLM's
// SchedulerOutput tells scheduled_new_reqs from scheduled_cached_reqs
// (and, among those, the resumed ones).
type ScheduledKind uint8

const (
	// ScheduledContinuing: it ran in an earlier step and was not
	// preempted since (vLLM: a cached request, not resumed).
	ScheduledContinuing ScheduledKind = iota
	// ScheduledNew: admitted for the first time; it is in Plan.Started
	// (vLLM: a new request).
	ScheduledNew
	// ScheduledResumed: admitted again after a preemption (vLLM: a
	// cached request, resumed from preemption).
	ScheduledResumed
)

func (k ScheduledKind) String() string {
	switch k {
	case ScheduledContinuing:
		return "continuing"
	case ScheduledNew:
		return "new"
	case ScheduledResumed:
		return "resumed"
	}
	return "ScheduledKind(" + strconv.Itoa(int(k)) + ")"
}

// Scheduled appends to dst every request the step in flight scheduled, in
// scheduling order, and returns it with true; with no step in flight it
// returns dst unchanged and false. It allocates nothing when dst has room
// and costs nothing unless called.
//
// It answers in every mode. When the engine keeps a decode cohort
// (Runner.OmitStreaks with a cost model reading decode contexts only
// through their sum, Plan.Cohort > 0), the cohort's members come first,
// each a continuing decode of one token, as they are scheduled first;
// then the requests of Plan.Batch, in its order. Inside a run of several
// steps (Runner.ScheduleUntil, Runner.Continue) it describes each of the
// steps still to run: every request gets its tokens in each, and
// Computed is before the first of them (after CompleteUntil, the first
// not collected). A request aborted while in flight is still named
// when it was planned outside the cohort (its work is discarded at
// Complete, as Plan.Batch still counts it), and no longer when it was a
// member of the cohort (Plan.Cohort still counts it).
//
// Naming the cohort walks its members: O(members) a call, where the
// engine's own steps cost O(1) in them.
func (e *Engine) Scheduled(dst []Scheduled) ([]Scheduled, bool) {
	if !e.inFlight {
		return dst, false
	}
	if co := &e.co; e.plan.Cohort > 0 {
		for _, s := range co.members {
			if s != nil {
				dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: 1, Computed: s.computed + co.tick - s.t0, Decode: true})
			}
		}
	}
	admitted := e.move + 1 // a request admitted by the plan in flight notes this (tryAdmit)
	for _, s := range e.sched {
		k := ScheduledContinuing
		if s.admitted == admitted {
			k = ScheduledNew
			if s.preempts > 0 {
				k = ScheduledResumed
			}
		}
		dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: s.sched, Computed: s.computed, Decode: s.decoding, Kind: k})
	}
	return dst, true
}
