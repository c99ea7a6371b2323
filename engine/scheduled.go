package engine

import "strconv"

// Scheduled is one request the step in flight scheduled: its Ref, the
// tokens it was given this step, whether they are a decode (one token
// after an emitted one, plus any speculative drafts) rather than a prefill
// chunk, Computed, its tokens in KV before the step (prefix-cache hits
// included), Cached, the tokens it found in the prefix cache when this
// step admitted it (Computed for a new or resumed request: for a new one
// its entry of Plan.Cached; 0 for a continuing one), and Kind, whether the
// step admitted it for the first time, resumed it after a preemption, or
// continued it from an earlier step. Aborted says it was aborted while the
// step was in flight: its work is discarded at Complete, and its Ref may
// already name another request added since.
type Scheduled struct {
	Ref      int32
	Tokens   int
	Computed int
	Cached   int
	Decode   bool
	Aborted  bool
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
// then the requests of Plan.Batch, in its order. The members of the
// speculative cohort (speculative decoding under costmodel.Frozen,
// Plan.Cohort > 0) come first too, each a continuing decode of 1 + its
// drafts tokens; an Abort in flight lists them, so that one aborted is
// named, Aborted, as a request planned outside a cohort. Inside a run of several
// steps (Runner.ScheduleUntil, Runner.Continue) it describes each of the
// steps still to run: every request gets its tokens in each, and
// Computed is before the first of them (after CompleteUntil, the first
// not collected); a request the run's first step admitted is named New
// or Resumed, as of that step, until it is collected. A request aborted while in flight is still named
// when it was planned outside the cohort, Aborted (its work is discarded
// at Complete, as Plan.Batch still counts it), and no longer when it was a
// member of the cohort (Plan.Cohort still counts it).
//
// Naming the cohort walks its members: O(members) a call, where the
// engine's own steps cost O(1) in them.
func (e *Engine) Scheduled(dst []Scheduled) ([]Scheduled, bool) {
	if !e.inFlight {
		return dst, false
	}
	// A request admitted by the plan in flight notes this (attach).
	return e.scheduled(dst, e.move+1), true
}

// notAdmitted is an admission mark no request carries (they carry a count
// of outcomes + 1, or 0 once running): with it, scheduled calls every
// request continuing.
const notAdmitted = ^uint64(0)

// scheduled is Scheduled for a step in flight whose newly admitted
// requests carry the mark admitted.
func (e *Engine) scheduled(dst []Scheduled, admitted uint64) []Scheduled {
	if co := &e.co; e.plan.Cohort > 0 {
		for _, s := range co.members {
			if s != nil {
				dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: 1, Computed: s.computed + co.tick - s.t0, Decode: true})
			}
		}
	}
	k1 := e.cfg.SpeculativeTokens + 1
	for _, s := range e.running[:e.specMembers()] { // the speculative cohort's (speccohort.go), first as planned
		dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: min(k1, s.req.Output-s.emitted), Computed: s.computed, Decode: true})
	}
	for _, s := range e.sched {
		k, cached := ScheduledContinuing, 0
		if s.admitted == admitted {
			k, cached = ScheduledNew, s.computed // admitted with nothing computed but its hits
			if s.preempts > 0 {
				k = ScheduledResumed
			} else {
				cached = int(s.cached) // a landed Remote request computed its prompt by transfer
			}
		}
		dst = append(dst, Scheduled{Ref: s.req.Ref, Tokens: s.sched, Computed: s.computed, Cached: cached,
			Decode: s.decoding, Aborted: s.aborted, Kind: k})
	}
	return dst
}
