package engine

import (
	"time"

	"github.com/servesim/servesim/costmodel"
)

// StepShape describes the steps an Outcome covers, for a driver that
// records every step (RecordSteps): Steps identical steps of StepTime from
// Start (one, unless a run of decode steps ended or was cut), the batch of
// the first (each later step of a run has every decode context one token
// longer), and the state of the replica at the start of each.
type StepShape struct {
	Start    time.Duration
	StepTime time.Duration
	Steps    int
	// Batch is the first step's batch as priced; its slices are owned by
	// the engine and valid until the next call.
	Batch costmodel.Batch
	// CachedTokens are the prompt tokens the requests the first step
	// started found in the prefix cache; Preempted the requests preempted
	// to plan it (both 0 for the later steps of a run).
	CachedTokens, Preempted int
	// Waiting and Running are the queues' lengths when the steps were
	// planned (a request added while they ran waits for the next).
	Waiting, Running int
	// Used and Cached are, at the start of each step, the KV blocks some
	// request held and the blocks carrying cached content (held or free),
	// out of KVBlocks.
	Used, Cached []int
	// Scheduled names the first step's requests in scheduling order, as
	// Engine.Scheduled named them while it was in flight (their tokens sum
	// to Batch's; the Cached of the new ones to CachedTokens). Each later
	// step of a run schedules the same requests with the same tokens,
	// every one continuing, its Computed Tokens more per step. Owned by
	// the engine and valid until the next call.
	Scheduled []Scheduled
}

// recording is what RecordSteps needs remembered to describe a plan's
// steps as they complete.
type recording struct {
	record     bool  // RecordSteps: describe every outcome's steps
	stepAlloc  bool  // record, or KV events published: a run's blocks are taken step by step (allocSteps); decideFast sets it
	noteStep   bool  // record, or a tier: noteFirstStep has work (one flag: the test costs what the record test did); decideFast sets it
	used0      int   // blocks held at the start of the plan's next step
	cachedAt   []int // cached blocks at the start of each allocated step of the plan
	atFirst    bool  // the plan's next step is its first
	cachedTok0 int   // prompt tokens found cached by the plan's first step
	waiting0   int   // queue lengths when the plan was made
	running0   int
	admitted0  uint64 // the admission mark of the plan's requests (Scheduled)
}

// RecordSteps makes every Outcome describe its steps (Outcome.Shape). It
// costs a little per step, so a driver turns it on only when something
// observes steps, before the first step: a step that lists every decode's
// context keeps no decode cohort (cohort.go), a run's blocks are taken
// step by step, not counted from residues, and a join cuts a run
// (Runner.JoinChangesNothing reports false). FastPaths says so.
func (e *Engine) RecordSteps(on bool) {
	e.record = on
	e.decideFast()
}

// noteFirstStep remembers the state at the start of a plan's first step,
// when steps are recorded (the test inlined at the call, as shape's).
func (e *Engine) noteFirstStep() {
	if e.noteStep {
		e.noteFirstStepSlow()
	}
}

// noteFirstStepSlow is noteFirstStep's work: the tier's stores of the
// plan (tier.go) and the step record's start.
//
//go:noinline
func (e *Engine) noteFirstStepSlow() {
	if e.tier != nil {
		e.storeTier()
	}
	if e.record {
		e.recordFirstStep()
	}
}

// recordFirstStep is noteFirstStep for an engine that records steps.
func (e *Engine) recordFirstStep() {
	e.used0 = e.pool.held()
	e.cachedAt = append(e.cachedAt[:0], e.pool.cached)
	e.waiting0, e.running0 = e.Waiting(), len(e.running) // Remote requests reserved or landed wait too
	e.atFirst = true
	e.admitted0 = e.move + 1 // as Scheduled reads it before the plan's first outcome
	e.cachedTok0 = 0
	for _, c := range e.plan.Cached {
		e.cachedTok0 += c
	}
}

// shape fills out.Shape for the first j steps of the plan in flight,
// before they are applied, when steps are recorded. (The test is inlined
// at the call, so that an engine that records none never reaches the body.)
func (e *Engine) shape(j int) {
	if e.record {
		e.recordShape(j)
	}
}

// recordShape is shape for an engine that records steps. The blocks of
// those steps are taken.
func (e *Engine) recordShape(j int) {
	p := &e.plan
	sh := &e.out.Shape
	// The decode contexts are copied: CompleteUntil moves the plan's on.
	decode := append(sh.Batch.Decode[:0], p.Batch.Decode...)
	*sh = StepShape{Start: p.Start, StepTime: p.StepTime, Steps: j,
		Batch:   costmodel.Batch{Decode: decode, Prefill: p.Batch.Prefill, Verify: p.Batch.Verify},
		Waiting: e.waiting0, Running: e.running0,
		Used: sh.Used[:0], Cached: sh.Cached[:0], Scheduled: sh.Scheduled}
	admitted := uint64(notAdmitted)
	if e.atFirst {
		sh.CachedTokens, sh.Preempted = e.cachedTok0, len(p.Preempted)
		admitted = e.admitted0
	}
	sh.Scheduled = e.scheduled(sh.Scheduled[:0], admitted)
	b := e.cfg.BlockSize
	for i := range j {
		used := e.used0
		for _, s := range e.sched {
			if !s.aborted && e.lazy {
				used += ceilDiv(s.computed+1+i, b) - ceilDiv(s.computed+1, b)
			}
		}
		sh.Used = append(sh.Used, used)
		sh.Cached = append(sh.Cached, e.cachedAt[min(i, len(e.cachedAt)-1)])
	}
}

// shiftShape moves the remembered state to the plan's step j (after
// CompleteUntil applied the first j).
func (e *Engine) shiftShape(j int, usedNext int) {
	if !e.record {
		return
	}
	e.used0 = usedNext
	n := copy(e.cachedAt, e.cachedAt[min(j, len(e.cachedAt)):])
	e.cachedAt = e.cachedAt[:n]
	e.atFirst = false
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
