package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// A run is one plan standing for several identical steps of the running
// requests (ScheduleUntil): decodes, a token a step, and, when fast.chunks
// is on, prompts mid-prefill, the same chunk a step, none its last. Its
// blocks are allocated lazily, step by step as a step-by-step engine would
// take them, whenever the driver tells the engine the time (CompleteUntil,
// Truncate, SyncTo, Complete): so at any instant
// the engine's free queue and prefix cache are what they would be step by
// step, whatever the driver reads, and a run cut short never took the
// blocks of the steps it did not run. Runs are cut short only by the
// driver: when a request joins or leaves the replica inside one, the steps
// that had not started are dropped (Truncate) and planned again.

// runState is the run in flight: how far its blocks are taken and who is
// still in it, with its blocks counted from residues (residues.go).
type runState struct {
	runHead  uint64 // Add order + 1 of the waiting head the plan in flight was made with; 0: none
	lazy     bool   // the plan in flight is a run whose blocks are taken step by step
	thruOK   bool   // the driver asked for runs through finishes (through.go: runthrough.Allow)
	thruSkip bool   // the last run through finishes was planned on a pool that has held content (through.go: skipBlocks)
	mixAsked bool   // the driver asked for mixed moves (mixed.go: mixedrun.Allow)
	mixOK    bool   // and the configuration allows them (decideFast)
	mixed    bool   // the move in flight is a mixed move whose first step is not collected yet (mixed.go: lead)
	firstOn  bool   // the outcome last collected covers a mixed move's first step (mixedrun.Out)
	lateAsk  bool   // the driver asked for answers cached late (prefix.go: lateanswers.Allow)
	late     bool   // and the configuration allows it (decideFast)
	runAlloc int    // steps of the run in flight whose blocks are taken
	live     int    // outstanding tokens a step of the run in flight takes, over its requests not aborted (stepTokens)
	res      residues
	// pendAt: the start of a step of the run in flight whose waiting
	// loop is to reserve a Remote request added inside the run (0:
	// none; reservein.go).
	pendAt time.Duration
	// resHeld: the blocks that reservation took, held from its step on;
	// resBefore: the steps of the plan (as it stands) before that one
	// not yet collected, which did not hold them (runBlockSteps; 0 once
	// they are). resHeld is read only while resBefore > 0, which only a
	// replica with remote KV sets, where no mixed move is planned
	// (mixOK): while mixed it holds the tokens of the admitted prompt's
	// chunk less the one seq.left counts it for from the plan on (mixRun),
	// which the step-by-step engine counts outstanding until the first
	// step ends (mixedOutstanding). (A field of its own took the Engine
	// past its size class: TestFleetSetupAllocatesEachReplicaOnce.)
	resHeld, resBefore int
	// thruAt: the end of the first step inside the run in flight that a
	// member finishes at (through.go); noFinish: none.
	thruAt time.Duration
	// thru: a cached pool's runs through finishes (through.go), kept
	// apart, allocated when the driver asks for such runs: a fleet's
	// replica stays within its 6 KB at setup (sim's
	// TestFleetSetupAllocatesEachReplicaOnce).
	thru *thruState
	// firstBlocks: with firstOn, the blocks held during that first step
	// (mixedrun.Out). (The bools above sit in runHead's padding, and
	// priceCache's priceMoves moved into its bools' to make room for
	// this word: the Engine keeps its size class, which one word more
	// leaves, TestFleetSetupAllocatesEachReplicaOnce; kvState's cacheOn
	// moved beside its other flags for thru's.)
	firstBlocks int
}

// priceCache is what the engine knows of its cost model's prices, so as
// to ask it less: how the model reads decode contexts (New), the price
// of a step of decodes alone, and the probe of the last run priced.
type priceCache struct {
	sumPriced bool // the model prices decode contexts by their sum (costmodel.DecodeSum)
	ctxFree   bool // the model reads no decode context (costmodel.ContextFree): a run's steps cost its first's
	chunkFree bool // with ctxFree, it reads no chunk context either (costmodel.PrefillContextFree): a run of chunks costs its first step's
	// priceMoves: the last run the planner priced was cut by a price that
	// moved at its second step, so the next one is tried there first.
	// (Beside the bools above, in their padding: alone below flatTo, its
	// word put the Engine, with runState's firstBlocks, in a larger size
	// class: TestFleetSetupAllocatesEachReplicaOnce.)
	priceMoves bool
	// flatTo: steps of up to this many decodes alone are priced price1.
	// (An int32 in the bools' padding, which made room for chunkMemo:
	// with a word more, the Engine, 2,296 bytes, went to a larger size
	// class, TestFleetSetupAllocatesEachReplicaOnce.)
	flatTo int32
	price1 time.Duration // with ctxFree, the model's price of one decode alone (decodePrice)
	// chunkMemo is the last step of one prefill chunk beside decodes
	// that price asked the model for, with chunkFree: its decodes << 54
	// | the chunk's tokens << 32 (fewer than 2¹⁰ and 2²²) | its price in
	// nanoseconds (below 2³²); 0: none.
	chunkMemo uint64
	// probe is the decode contexts of the first step the planner found
	// priced unlike its run (samePrice), and probeTime its price: when a
	// run ends there and nothing else changes, the next plan's first step
	// is that batch, and its price is known (StepTime is pure).
	probe     []int
	probeTime time.Duration
	probeK    int               // the step of the plan in flight that probe is; 0: none
	shifted   []int             // scratch: decode contexts k-1 steps ahead (samePrice, chunkPrice)
	chunked   []costmodel.Chunk // scratch: prefill chunks k-1 steps ahead (chunkPrice)
}

// newPriceCache notes what the cost model says of how it reads decode
// contexts.
func newPriceCache(m costmodel.Model) priceCache {
	var c priceCache
	if ds, ok := m.(costmodel.DecodeSum); ok && ds.DecodeSum() {
		c.sumPriced = true
	}
	if cf, ok := m.(costmodel.ContextFree); ok && cf.ContextFree() {
		c.ctxFree = true
		c.price1 = m.StepTime(costmodel.Batch{Decode: []int{1}})
		pf, ok := m.(costmodel.PrefillContextFree)
		c.chunkFree = ok && pf.PrefillContextFree()
	}
	return c
}

// extendRun turns the planned step into a run of identical steps when
// nothing can differ between them (see ScheduleUntil). It must be called
// with exactly one step planned and priced.
func (e *Engine) extendRun(now, until time.Duration) {
	if e.mixOK && e.lastOne && len(e.sched) == 1 && e.mixRun(now, until) { // a prompt's last chunk, alone beside the cohort: a mixed move (mixed.go; the call for every last chunk cost Regime/KVPressure, whose steps schedule several, 58 instructions a request)
		return
	}
	k := e.runLength(now, until)
	if k <= 1 {
		e.res.on = false
		return
	}
	// Its requests keep sched (a decode 1, a token a step; a prompt its
	// chunk a step); the plan's Steps is the run's length.
	e.plan.Steps = k
	e.lazy = true
	e.runAlloc = 1 // the first step's blocks were taken when it was planned
	e.live = len(e.sched) + e.plan.Cohort
	if len(e.plan.Batch.Prefill) > 0 { // a run of chunks: each prompt its chunk a step
		for _, s := range e.sched {
			if !s.decoding {
				e.live += e.stepTokens(s) - 1
			}
		}
	}
}

// runLength is the number of identical steps the plan may stand for.
func (e *Engine) runLength(now, until time.Duration) int {
	p := &e.plan
	chunks := len(p.Batch.Prefill) > 0
	if chunks && (!e.fast.chunks || e.lastOne) {
		return 1 // runs of chunks are off; or, the usual case, a prompt's last chunk (or whole prompt)
	}
	if !e.fast.runs && !e.tierRun {
		// Off: a speculative step's tokens depend on its acceptance (but
		// see extendSpec, which plans a speculative run of its own); with
		// a tier, a later step's lookup it would not make.
		e.extendSpec(now, until)
		return 1
	}
	if len(p.Preempted) > 0 || len(e.sched) != len(e.running) {
		return 1 // a step that preempts or leaves a running request out
	}
	// A step that admits a prompt schedules its chunk as the later steps'
	// running loop would: at the running list's tail, with the budget the
	// requests before it leave. A run of chunks may start with admissions
	// (Plan.Started), and so may a run of decodes: a landed Remote
	// request's first decode (admitLanded) is a plain decode at the
	// running list's tail, which the later steps' running loop schedules
	// there too, a token a step (its blocks were held since its
	// reservation; admission of another landed request stops at a gate
	// that fewer free blocks do not open).
	kc := 1 << 40 // the steps its prompts' chunks allow
	if chunks {
		if kc = e.chunkLimit(); kc <= 1 {
			return 1
		}
	}
	if len(p.Reserved) > 0 {
		return 1 // its transfers may land as it starts (remote.go)
	}
	// Every step must start before until: now + (k-1)·d < until (written
	// so that until near the end of time does not overflow).
	d := p.StepTime
	k := int(min((until-now-1)/d+1, time.Duration(kc)))
	// None finishes before the last step, and none but the first caches
	// a block of shared output (publishDecode notes those in pubLeft)
	// unless the run may go on through them (publishesThrough).
	if e.pubRun > 0 && !e.publishesThrough() {
		k = min(k, e.pubLeft)
		e.pubRun = 0 // runPublish finds nothing past the first step
	}
	// minLeft holds the inline decodes' fewest tokens left and, with a
	// cohort planned, its members' first finish (planCohort's, and
	// continueLanded's, finMin): the others' decodes are read here. (The
	// members' finish read again here cost Regime/Disagg, whose landed
	// requests are scheduled outside the inline loop, about 25
	// instructions a request; strict mode checks it.)
	k = min(k, e.minLeft)
	if e.inline != len(e.sched) {
		for _, s := range e.sched {
			if s.decoding {
				k = min(k, s.req.Output-s.emitted)
			}
		}
		if e.strict && e.plan.Cohort > 0 && e.minLeft > e.finMin()-e.co.tick {
			panic("engine: invariant min-left broken: a planned cohort's first finish is not in minLeft")
		}
	}
	if k <= 1 {
		return k
	}
	e.res.on = e.useResidues()
	if kc < 1<<40 {
		return e.fitChunkPrices(e.fitBlocks(k))
	}
	return e.fitPrices(e.fitBlocks(k))
}

// tierRuns reports whether a run may have several steps on an engine
// with a tier (fast.tierRuns, where fast.runs is off); planChunked notes
// it in tierRun after its waiting loop, which runLength reads where
// fast.runs is off (with it called there, RunAtlas's runLength cost 4
// instructions a call more). While nothing waits, or the running list is at
// MaxSeqs, no later step's plan would look the waiting head up in the
// tier (reserveTier), which touches its keys.
//
// Otherwise a run goes on when its first step's waiting loop looked at
// the head and stopped there, refused (admitAsync's refusedHead), with
// no load in flight (a lookup would find it busy, and its landing cuts
// the run anyway), none skipped, AdmitOnFirstChunk off, and steps
// neither recorded nor stamped on KV events (allocThrough's stepAlloc
// loop, which notes each step's cached blocks): each later
// step takes its blocks, looks the head up in the tier as its plan would
// (lookHead: it is refused again) and offers its stores (allocTierSteps).
//
// (With nothing waiting, or at MaxSeqs, the waiting loop stopped at no
// refusal: refusedHead is nil, and allocThrough takes no lookups.)
func (e *Engine) tierRuns() bool {
	return e.fast.tierRuns && (e.waiting.len() == 0 || e.AtSeqCap() || e.headRefused())
}

// headRefused reports whether the run being planned may go on past the
// waiting head its first step refused (tierRuns).
func (e *Engine) headRefused() bool {
	h := e.refusedHead
	return h != nil && h == e.waiting.peek() && len(e.reserved) == 0 && len(e.skipped) == 0 && !e.cfg.AdmitOnFirstChunk && !e.stepAlloc
}

// chunkSteps is the number of steps of a run that s, a prompt scheduled
// a chunk of s.sched tokens in its first, may take: each asks the same
// chunk (the chunk cap or the budget left to it, both the same a step,
// less than the tokens it has left) and none is its last, which samples
// its first token. One with blocks of shared content left to cache is
// one step, as a later step would cache them (publish) where the waiting
// head could find them, unless the run may cache them as it goes
// (chunksPublish): then it notes that in chunkPub.
//
// A prompt recomputing its emitted tokens after a preemption (known past
// its Input) stops too before the step whose chunk would cross its
// Input, so that each step takes the same outstanding tokens
// (stepTokens), which Outstanding reads inside the run as j·live.
func (e *Engine) chunkSteps(s *seq) int {
	left := s.known - s.computed
	if left <= 2*s.sched { // (left-1)/sched <= 1: its last chunk, or the one before
		return 1
	}
	if s.held < s.shared {
		if !e.chunksPublish() {
			return 1
		}
		e.chunkPub = true
	}
	k := (left - 1) / s.sched
	if in := s.req.Input; s.computed < in {
		k = min(k, (in-s.computed)/s.sched)
	}
	return max(k, 1)
}

// chunksPublish reports whether a run of chunks may go on through steps
// whose prompts cache blocks of shared content, chunkPubSteps caching
// them at each step as its plan would (publish; with KV events, takeStep,
// step by step): when the waiting head cannot look them up before the
// run ends (nothing waits, the running list is at MaxSeqs, or a step
// that spends the whole token budget: budgetSpent), with no decode of
// the run caching blocks of shared output (pubRun: runPublish caches
// those ahead of the steps' blocks, and two requests caching one
// content must do so in the step-by-step engine's order, which makes
// one the indexed block and the other its copy), and no KV tier or
// remote KV (async: their waiting loops are their own). Only a run of
// chunks asks (fast.chunks: steps not recorded), whose steps cache as
// they go with KV events published too (takeStep stamps each step).
func (e *Engine) chunksPublish() bool {
	return (e.waiting.len() == 0 || e.AtSeqCap() || e.budgetSpent()) && e.pubRun == 0 && !e.async
}

// budgetSpent reports whether the planned step schedules the whole token
// budget (MaxBatchedTokens): its waiting loop stops before it looks at
// the waiting head (planChunked: budget > 0), and so does that of every
// later step of a run, which schedules the same tokens (each decode its
// token, each cohort member its own, each prompt the same chunk).
func (e *Engine) budgetSpent() bool {
	n := e.plan.Cohort
	for _, s := range e.sched {
		n += s.sched
	}
	return n >= e.cfg.MaxBatchedTokens
}

// stepTokens is the outstanding tokens a step of the run in flight
// takes of s, one of its requests: a decode's token, or a prompt's chunk
// as far as it is of its Input (a resumed request's emitted tokens
// count once, as emitted: seq.left), which chunkSteps keeps the same a
// step.
func (e *Engine) stepTokens(s *seq) int {
	switch {
	case s.decoding:
		return 1
	case s.computed < s.req.Input:
		return s.sched
	}
	return 0
}

// chunkLimit is the fewest steps the plan's prompts allow (chunkSteps).
// It sets chunkPub, which only a run of chunks reads (allocThrough), and
// every such run is planned through here: resetPlan's store of it cost
// RunAtlas 2 instructions a request (cachegrind), with no chunk to plan.
func (e *Engine) chunkLimit() int {
	e.chunkPub = false
	k := 1 << 40
	for _, s := range e.sched {
		if !s.decoding {
			if k = min(k, e.chunkSteps(s)); k <= 1 {
				return 1
			}
		}
	}
	return k
}

// fitChunkPrices is fitPrices for a run with prefill chunks: the longest
// run of at most k steps all priced like the first, each step's chunks a
// chunk further into their prompts and its decodes a token further: k
// for a model that reads no context (Frozen: ContextFree and
// PrefillContextFree), whose steps differ in nothing it reads. The
// model is non-decreasing in every context, so the k-th step priced like
// the first prices every step between alike (samePrice).
func (e *Engine) fitChunkPrices(k int) int {
	if e.chunkFree || e.chunkPrice(k) == e.plan.StepTime {
		return k
	}
	return lastTrue(1, k-1, func(j int) bool { return e.chunkPrice(j) == e.plan.StepTime })
}

// chunkPrice is the model's price of the j-th step of a run with prefill
// chunks.
func (e *Engine) chunkPrice(j int) time.Duration {
	p := &e.plan
	e.chunked = e.chunked[:0]
	for _, c := range p.Batch.Prefill {
		e.chunked = append(e.chunked, costmodel.Chunk{NewTokens: c.NewTokens, Context: c.Context + (j-1)*c.NewTokens})
	}
	b := costmodel.Batch{Prefill: e.chunked}
	if p.Cohort > 0 {
		b.Decode = e.sumDecode(j - 1)
	} else if len(p.Batch.Decode) > 0 {
		e.shifted = e.shifted[:0]
		for _, c := range p.Batch.Decode {
			e.shifted = append(e.shifted, c+j-1)
		}
		b.Decode = e.shifted
	}
	return e.model.StepTime(b)
}

// publishesThrough reports whether the run being planned may go on
// through decodes that cache blocks of shared output, runPublish caching
// each as the run reaches its step (fast.pubRuns: not when each caching
// is noted at its step). A block cached in a run's step changes nothing
// in its later steps but what the waiting requests find: so the run goes
// on when nothing waits (a request that arrives joins the waiting queue
// and cuts it: JoinChangesNothing) or when the running list is at
// MaxSeqs (nothing is admitted before a finish, which ends the run).
// Otherwise the waiting head, which did not fit at the run's first step,
// might fit at a later one with the blocks cached by then, as at the step
// by step engine's plan of that step: the run stops before it.
func (e *Engine) publishesThrough() bool {
	return e.fast.pubRuns && (e.waiting.len() == 0 || e.AtSeqCap())
}

// fitPrices is the longest run of at most k steps all priced like the
// first: k for a model that reads no decode context (costmodel.ContextFree,
// as Frozen), whose run's steps differ in nothing it reads. When the price moved at the second step of the last run priced
// (a model whose price reads every context moves within a step or two), it
// tries the second step first, else the k-th (a price that holds, as
// Frozen's, holds to the end): one pricing either way when it guesses
// right, and, samePrice being monotone, the same answer whatever it tries
// first.
func (e *Engine) fitPrices(k int) int {
	if e.ctxFree {
		return k // its steps differ only in their contexts, which it does not read
	}
	return e.fitReadPrices(k)
}

// fitPrices for a model that reads decode contexts.
func (e *Engine) fitReadPrices(k int) int {
	lo := 1 // samePrice(1) holds
	if e.priceMoves && k > 2 {
		if !e.samePrice(2) {
			return 1
		}
		lo = 2
	}
	if e.samePrice(k) {
		e.priceMoves = false
		return k
	}
	j := e.fitPrice(lo, k)
	e.priceMoves = j == 1
	return j
}

// runNeed is the number of blocks the run's requests still need so that
// the first m of its steps can run.
func (e *Engine) runNeed(m int) int {
	n := 0
	if e.plan.Cohort > 0 {
		n = e.coGrow(1, m)
	}
	if e.res.on { // planning: each has taken the first step's blocks
		return n + e.resBlocks(m) - e.resBlocks(1)
	}
	if len(e.plan.Batch.Prefill) > 0 { // a run of chunks (the loop below is a decode run's)
		for _, s := range e.sched {
			if !s.aborted {
				n += e.need(s, s.computed+m*s.sched) // a decode's sched is 1, a chunk's its tokens
			}
		}
		return n
	}
	for _, s := range e.sched {
		if !s.aborted {
			n += e.need(s, s.computed+m)
		}
	}
	return n
}

// fitBlocks is the largest j <= k whose run needs no more blocks than are
// free (the first step's blocks are already allocated): a run never
// preempts. No step of the run could admit the waiting queue's head,
// which the first could not: each block a step takes leaves one fewer free,
// and if it evicts a cached block the head would reference, that block is
// the deepest of the head's hits (blocks are freed last first, and a
// request holding a block holds those before it), so the head needs one
// block more and pins one less: its admission never gets easier. (A
// prompt's chunks in later steps cache no block, or the head cannot look
// them up: chunkSteps.)
func (e *Engine) fitBlocks(k int) int {
	if e.headFirst && e.waiting.len() > 0 {
		// Freed first to last, an evicted hit may be the head of the
		// chain and cut every hit after it: admission may get easier.
		return 1
	}
	avail := e.available()
	if e.runNeed(k) <= avail { // the usual case: blocks to spare
		return k
	}
	return lastTrue(1, k-1, func(j int) bool { return e.runNeed(j) <= avail }) // runNeed(1) fits
}

// lastTrue is the largest j in [lo, hi] for which ok holds, given that it
// holds at lo and, once false, stays false (bisection).
func lastTrue(lo, hi int, ok func(int) bool) int {
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// samePrice reports whether the k-th step of the run is priced like the
// first. Models are non-decreasing in context, so then every step between is
// priced the same too.
func (e *Engine) samePrice(k int) bool {
	if e.plan.Cohort > 0 { // priced by the contexts' sum
		return e.model.StepTime(costmodel.Batch{Decode: e.sumDecode(k - 1)}) == e.plan.StepTime
	}
	e.shifted = e.shifted[:0]
	for _, c := range e.plan.Batch.Decode {
		e.shifted = append(e.shifted, c+k-1)
	}
	d := e.model.StepTime(costmodel.Batch{Decode: e.shifted})
	if d != e.plan.StepTime && (e.probeK == 0 || k < e.probeK) {
		e.probe, e.probeTime, e.probeK = append(e.probe[:0], e.shifted...), d, k
	}
	return d == e.plan.StepTime
}

// price is the plan's first step's price: the model's, or the probe's
// when the step is the batch the probe priced, or, for a speculative
// step under Frozen, the memo's (specPrice).
func (e *Engine) price() time.Duration {
	if e.plan.Batch.Verify != nil && e.fast.verifySum && e.sc != nil && chunkMemo {
		return e.specPrice()
	}
	return e.modelPrice()
}

// modelPrice is price without the speculative memo.
func (e *Engine) modelPrice() time.Duration {
	var b costmodel.Batch
	e.priceBatch(&b)
	if e.probeK != 0 && len(b.Prefill) == 0 && len(b.Verify) == 0 && slices.Equal(b.Decode, e.probe) {
		return e.probeTime
	}
	return e.model.StepTime(b)
}

// wholePrice is price for a plan whose step schedules one prefill chunk
// beside decodes, a whole prompt's from its start (scheduleUntil tests
// that, lastOne, no Verify and chunkFree), on a model that reads no
// context (chunkFree: ContextFree, PrefillContextFree): the price of the
// last such step with as many decodes and prompt tokens (chunkMemo;
// StepTime is pure), as a mixed step's mostly is when the prompts are
// alike. RunAtlas 5,418 then 5,379 instructions a request, RunBatch256
// 5,490 then 5,470 (the budget test). (Tested in price, for every step
// of one chunk, which Regime/KVPressure's chunked prompts mostly
// missed, it cost that regime about 50; called for every last chunk
// alone, and testing the rest itself, Regime/Speculation 25,971 then
// 26,006, Regime/KVPressure 10,084 then 10,103.)
func (e *Engine) wholePrice() time.Duration {
	pb := &e.plan.Batch
	n, c := uint64(e.plan.Cohort+len(pb.Decode)), uint64(pb.Prefill[0].NewTokens)
	if n >= 1<<10 || c >= 1<<22 || !chunkMemo {
		return e.price()
	}
	key := (n<<22 | c) << 32 // not 0: c >= 1
	if m := e.chunkMemo; m>>32 == key>>32 {
		return time.Duration(uint32(m))
	}
	d := e.price()
	if d > 0 && d < 1<<32 {
		e.chunkMemo = key | uint64(d)
	}
	return d
}

// chunkMemo lets wholePrice answer from the last such price
// (priceCache.chunkMemo), and specPrice from its memo; tests turn it off
// for the twin, the model's price.
var chunkMemo = true

// specPrice is price for a speculative step (its Verify listed) under
// Frozen (verifySum): of the batch sumVerify hands it, Frozen reads only
// whether it decodes, its positions verified beyond one a decode (vsum
// less the listed decodes and the cohort's members) and its prefill
// tokens, and StepTime is pure. So the price of a step that decodes
// without prefill is the price of the last such step with the same sum
// the model priced, in specCohort.prices, a slot for each sum; one with
// prefill is Frozen's price of its two sums (mixedSpecPrice).
func (e *Engine) specPrice() time.Duration {
	pb := &e.plan.Batch
	x := uint(int(e.vsum) - len(pb.Verify) - e.sc.m)
	if x >= 1<<specPriceBits || len(pb.Decode) == 0 && e.sc.m == 0 {
		return e.modelPrice()
	}
	if len(pb.Prefill) > 0 {
		return e.mixedSpecPrice(x)
	}
	if d := e.sc.prices[x]; d > 0 {
		return d
	}
	d := e.modelPrice()
	e.sc.prices[x] = d
	return d
}

// mixedSpecPrice is specPrice for a step with prefill, x its sum: the
// step decodes (specPrice's test), and Frozen prices it from x and its
// prefill tokens (costmodel.Frozen.DecodeStepTime), without the batch
// priceBatch and sumVerify build. Its prompts' lengths vary, so a memo
// of such steps by the sum and the tokens (a slot by their hash, with
// its key) missed 1,289 of 5,466 in BenchmarkRegime/Speculation, each
// a model's price of about 195 instructions: 19,153 then 19,111
// instructions a request (the budget test; servesim's own 19,038 then
// 18,986).
func (e *Engine) mixedSpecPrice(x uint) time.Duration {
	n := 0
	for _, c := range e.plan.Batch.Prefill {
		n += c.NewTokens
	}
	f, _ := e.model.(costmodel.Frozen) // verifySum's model
	return f.DecodeStepTime(int(x), n)
}

// sumVerify hands Frozen (fast.verifySum), which reads of a speculative
// step's verified positions only Σ Verify − len(Verify), those beyond
// one a decode, b's Verify as if its first decode verified them all,
// from their sum (vsum), without Frozen's walk of Verify: 31,795 then
// 31,644 instructions a request in BenchmarkRegime/Speculation. The
// slow twin (walkRuns) prices the listed plan. resetPlan clears vsum
// (in its branch for a Verify, which only speculative decoding lists).
// Called by priceBatch past its test of the
// cohort, which RunAtlas's priced plans have (in price, its test of
// Verify cost RunAtlas 4 instructions a request). Out of line: inlined
// in priceBatch, it cost RunAtlas's cohort branch there 3 instructions
// a request (RunAtlas 6,230 then 6,228, main's 6,227; the call costs
// BenchmarkRegime/Speculation 31,549 then 31,616; with the sum an int32
// and samePrice's scratch, which keep the Engine in its size class,
// 31,669 against main's 31,795).
//
//go:noinline
func (e *Engine) sumVerify(b *costmodel.Batch) {
	if e.fast.verifySum {
		// In samePrice's scratch, which runs use, and speculative
		// decoding has none (allocated once, at the first step). The
		// speculative cohort's members verify positions too, listed in
		// neither Decode nor Verify (speccohort.go): a batch of them alone
		// decodes, which is all Frozen reads of Decode.
		m := e.specMembers()
		e.shifted = append(e.shifted[:0], int(e.vsum)+1-len(b.Verify)-m)
		b.Verify = e.shifted
		if m > 0 && len(b.Decode) == 0 {
			b.Decode = e.shifted
		}
	}
}

// fitPrice is the largest j < k whose j-th step is priced like the first,
// given that the k-th is not and the lo-th is. samePrice is monotone (models are
// non-decreasing in context), so any search for its last true finds the
// same j; this one gallops from the lo-th step (lo + 1, lo + 2, lo + 4,
// … on) before it bisects, so a model whose price moves within a few steps (a
// model read from kernel profiles, whose every pricing reads a grid once
// per decode) is priced about twice a move, not log₂ k times.
func (e *Engine) fitPrice(lo, k int) int {
	hi := k - 1
	for step := 1; lo+step <= hi; step *= 2 {
		if !e.samePrice(lo + step) {
			hi = lo + step - 1
			break
		}
		lo += step
	}
	return lastTrue(lo, hi, e.samePrice)
}

// started is the number of steps of the plan in flight that start before
// t: its first at Start, the j-th (j >= 2) at Start + lead + (j−1) ×
// StepTime (lead: a mixed move's, mixed.go).
func (e *Engine) started(t time.Duration) int {
	p := &e.plan
	if t <= p.Start {
		return 0
	}
	t -= p.Start
	if e.mixed { // the later steps start lead later (mixed.go)
		if t -= e.lead(); t <= 0 {
			return 1
		}
	}
	n := (t-1)/p.StepTime + 1 // no overflow for t near the end of time
	return int(min(n, time.Duration(p.Steps)))
}

// allocThrough takes the blocks the first m steps of a run need, as a
// step-by-step engine would have by the time those steps started. The
// blocks come from the free queue's head in the order a step-by-step engine
// would take them (which request holds which block is immaterial: a
// block's content, not its identity, is what the cache sees).
//
// Its test that no block is left to take is inline at the calls (its
// body, allocMore, is not): of RunAtlas's 1.6 calls a request about
// half take none (a run cut takes its steps' blocks, and its collection
// then none), 4,922 then 4,914 instructions a request (the budget
// test's count).
func (e *Engine) allocThrough(m int) {
	if e.lazy && m > e.runAlloc {
		e.allocMore(m)
	}
}

// allocMore is allocThrough of a lazy run whose first m steps take
// blocks not yet taken.
func (e *Engine) allocMore(m int) {
	if e.pubRun > 0 {
		e.runPublish(e.runAlloc, m)
	}
	if co := &e.co; e.plan.Cohort > 0 { // the members come first
		if co.each && e.eachSteps(m) { // KV events published, or a tier
			return
		}
		n := e.coGrow(co.ahead, m)
		if e.thruSkip && e.thruAt != noFinish { // not the finishers' blocks past their last steps (through.go)
			k := e.skipBlocks(co.ahead, m)
			n -= k
			e.thru.skipped += k
		}
		e.pool.take(n)
		co.ahead = m
	} else if e.tier != nil {
		// The steps' stores, as they start (a PrivateTier: decideFast).
		if e.tierSteps(m) {
			return
		}
	}
	if e.res.on {
		if e.pool.pub != nil {
			e.pubSteps(m)
			return
		}
		base := e.res.base
		e.pool.take(e.resBlocks(base+m) - e.resBlocks(base+e.runAlloc))
		e.runAlloc = m
		return
	}
	if e.stepAlloc { // step by step, noting the cached blocks at each start, or stamping its events (one flag: the test costs what the record test did); a run of decodes, or of chunks with KV events (fast.chunks is off with record)
		for step := e.runAlloc + 1; step <= m; step++ {
			if e.pool.pub != nil {
				e.pool.pub.step = step
			}
			e.takeStep(step)
			if e.record {
				e.cachedAt = append(e.cachedAt, e.pool.cached)
			}
		}
		if e.pool.pub != nil {
			e.pool.pub.step = 0
		}
		e.runAlloc = m
		return
	}
	if len(e.plan.Batch.Prefill) > 0 { // a run of chunks (the loop below is a decode run's)
		for _, s := range e.sched {
			if !s.aborted {
				e.take(s, e.need(s, s.computed+m*s.sched))
			}
		}
		if e.chunkPub {
			e.chunkPubSteps(m)
		}
		e.runAlloc = m
		return
	}
	for _, s := range e.sched {
		if !s.aborted {
			e.take(s, e.need(s, s.computed+m))
		}
	}
	e.runAlloc = m
}

// chunkPubSteps caches the blocks of shared content that the prompts'
// chunks of the run's steps runAlloc+1 to m complete (chunkPub), as
// each step's plan caches them (schedule's publish), once allocThrough
// has taken those steps' blocks: caching takes no block and frees none,
// and the one state both touch ends the same either way (runPublish).
// Steps in order and, in a step, prompts in the run's order, as the
// step-by-step plans cache them; a lone prompt, the usual case, caches
// its blocks through step m in one call (publish caches them in order).
func (e *Engine) chunkPubSteps(m int) {
	var one *seq
	n := 0
	for _, s := range e.sched {
		if e.pubChunk(s) {
			one, n = s, n+1
		}
	}
	if n == 1 {
		e.publish(one, one.computed+m*one.sched)
		return
	}
	for step := e.runAlloc + 1; step <= m && n > 1; step++ {
		for _, s := range e.sched {
			if e.pubChunk(s) {
				e.publish(s, s.computed+step*s.sched)
			}
		}
	}
}

// pubChunk reports whether s is a prompt of the run in flight with
// blocks of shared content left to cache.
func (e *Engine) pubChunk(s *seq) bool {
	return !s.decoding && !s.aborted && s.held < s.shared
}

// takeStep takes the blocks of the run's requests for its step-th step,
// in the run's order, as that step's plan takes them, and, in a run of
// chunks whose prompts cache blocks of shared content (chunkPub), caches
// each prompt's after it took its own, as schedule does (publish): with
// KV events published (pubSteps, allocThrough's stepAlloc loop), step by
// step, each event stamped with its step's start. A decode's chunk is its
// token (sched 1), a prompt's its chunk. A run's takes between two
// prompts' are the step's decodes', which the plan takes together (owed)
// before the next prompt: taking n₁ then n₂ blocks from the free queue's
// head is taking n₁ + n₂, events and all.
func (e *Engine) takeStep(step int) {
	for _, s := range e.sched {
		if s.aborted {
			continue
		}
		to := s.computed + step*s.sched
		e.take(s, e.need(s, to))
		if e.chunkPub && !s.decoding && s.held < s.shared {
			e.publish(s, to)
		}
	}
}

// pubSteps is allocThrough for a run with a cohort, or whose blocks are
// kept in aggregate (residues), on an engine that publishes KV events:
// step by step, so that each eviction carries its step's start
// (kvPublisher.step), as the walk (allocThrough's stepAlloc loop) takes
// them, each step's blocks in one call where they are counted: taking n₁
// then n₂ blocks from the free queue's head is taking n₁ + n₂, events
// and all (one a block, in the queue's order). The members come first,
// their step's blocks coGrow's; then the others', counted (step m takes
// resBlocks(m) − resBlocks(m − 1): ⌈(r + m) / B⌉ grows by one exactly
// when r + m − 1 is a multiple of B, so the requests counted at residue
// (1 − m) mod B, O(1) a step) or walked.
//
// When the run is the members alone, the usual case, and the run never
// cached at the free queue's head holds more blocks than steps
// runAlloc+1 to m take (headRun), their takes evict nothing and publish
// no event: the steps' blocks are taken in one call, as where no event
// is published (pubAtOnce, which eachSteps tries first). The loop is
// its slow twin, as is the twin tests' walk (walkRuns: no cohort, every
// request's blocks taken step by step).
func (e *Engine) pubSteps(m int) {
	pub, co, mask := e.pool.pub, &e.co, e.cfg.BlockSize-1
	for step := e.runAlloc + 1; step <= m; step++ {
		pub.step = step
		n := 0
		if e.plan.Cohort > 0 {
			n = e.coGrow(step-1, step) // co.ahead is runAlloc
		}
		if e.res.on {
			e.pool.take(n + int(e.res.count[(1-e.res.base-step)&mask]))
			continue
		}
		e.pool.take(n)
		if len(e.sched) > 0 { // else no call: the members alone, the usual case (with the call made at every step, pubSteps and takeStep cost Regime/Fleet8PrefixEvents 822 instructions a request, 618 so; cachegrind, 2026-12-05)
			e.takeStep(step)
		}
	}
	pub.step = 0
	e.runAlloc = m
	if e.plan.Cohort > 0 {
		co.ahead = m
	}
	if e.res.on {
		e.res.calls++
	}
}

// pubAtOnce takes the blocks of the steps runAlloc+1 to m of a run of
// the cohort's members alone in one call, and reports that it did, when
// they are fewer than headRun, as allocThrough takes them where no event
// is published.
func (e *Engine) pubAtOnce(m int) bool {
	n := e.coGrow(e.runAlloc, m) // co.ahead is runAlloc
	if n >= e.pool.headRun() {
		return false
	}
	e.pool.take(n)
	e.runAlloc, e.co.ahead = m, m
	return true
}

// eachSteps is allocThrough's part for a run with a cohort when KV events
// are published (pubSteps, the whole of it) or the engine has a tier
// (tierSteps: the steps' stores, the members' first in each), which it
// reports as tierSteps does. (Out of allocThrough's line, which tests one
// flag for both: with the two tests inline, RunAtlas's allocThrough cost
// an instruction a call more, cachegrind, 2026-12-05.) It tries
// pubAtOnce before pubSteps, whose call it then saves (Regime/
// Fleet8PrefixEvents: 80 instructions a request in pubSteps with the
// test there).
func (e *Engine) eachSteps(m int) (done bool) {
	if e.pool.pub != nil {
		if len(e.sched) > 0 || !e.pubAtOnce(m) {
			e.pubSteps(m)
		}
		return true
	}
	return e.tierSteps(m)
}

// tierSteps is allocThrough's part for an engine with a tier: the
// stores of the run's steps up to m, and, when its later steps' plans
// look the waiting head up, the whole of it (allocTierSteps), which it
// reports. (One call, out of allocThrough's line: RunAtlas's
// allocThrough cost a instruction a call more with its two inline.)
func (e *Engine) tierSteps(m int) (done bool) {
	if e.refusedHead != nil {
		e.allocTierSteps(m)
		return true
	}
	e.storeRun(e.runAlloc, m)
	return false
}

// allocTierSteps is allocThrough for a run whose later steps' plans
// look the waiting head up in the tier (tierRuns): step by step, each
// step's blocks taken (from residues, or request by request), then the
// head's lookup (lookHead), then the step's stores (storeRun), in the
// order of a step-by-step engine's plan and its acceptance.
func (e *Engine) allocTierSteps(m int) {
	jumps := m-e.runAlloc >= storeJumps && !storeEachStep
	next := m + 1 // the next step with a store (jumps)
	if jumps {
		next = e.storeFrom(e.runAlloc, m) // lookHead changes no request's stores
	}
	mask := e.cfg.BlockSize - 1
	for step := e.runAlloc + 1; step <= m; step++ {
		if e.plan.Cohort > 0 { // the members first, as allocThrough takes them
			e.pool.take(e.coGrow(step-1, step)) // co.ahead is runAlloc
		}
		if e.res.on {
			// resBlocks(base+step) − resBlocks(base+step−1), the
			// requests counted at residue (1 − base − step) mod B, as
			// pubSteps takes them: two sums over every residue a step
			// took 1,533 instructions a request of Regime/Tiers
			// (cachegrind, allocTierSteps with what it inlines), the
			// one count 162.
			e.pool.take(int(e.res.count[(1-e.res.base-step)&mask]))
		} else {
			for _, s := range e.sched {
				if !s.aborted {
					e.take(s, e.need(s, s.computed+step*s.sched)) // a decode's sched is 1, a chunk's its tokens
				}
			}
		}
		e.lookHead(e.refusedHead)
		if !jumps {
			e.storeRun(step-1, step)
		} else if step == next {
			next = e.storeStep(step, m)
		}
	}
	e.runAlloc = m
	if e.plan.Cohort > 0 {
		e.co.ahead = m
	}
}

// runBlockSteps is the sum of the blocks held during each of the first j
// steps of the run in flight: during step m a request holds the blocks for
// its computed tokens + m, and the blocks held outside the run's own
// allocations (those it shares, counted once) stay as they are.
func (e *Engine) runBlockSteps(j int) int {
	other := e.pool.held()
	sum := 0
	if e.plan.Cohort > 0 {
		other -= e.coBlocks(e.co.ahead)
		if e.thruSkip { // the finishers' blocks past their last steps were not taken (through.go)
			other += e.thru.skipped
		}
		sum += e.coBlockSteps(j)
	}
	if e.resBefore > 0 { // a reservation inside the run
		sum += e.resCorrect(j)
	}
	if e.res.on {
		base := e.res.base
		other -= e.resBlocks(base + e.runAlloc)
		return j*other + sum + e.resBlockSteps(base, base+j)
	}
	if len(e.plan.Batch.Prefill) > 0 { // a run of chunks (the loop below is a decode run's)
		for _, s := range e.sched {
			if !s.aborted {
				other -= s.blocks()
				sum += e.chunkBlockSteps(s.computed, s.sched, j) // a decode's chunk is its token
			}
		}
		return j*other + sum
	}
	b := e.cfg.BlockSize
	for _, s := range e.sched {
		if s.aborted {
			continue
		}
		other -= s.blocks()
		sum += blockSum(s.computed+j, b) - blockSum(s.computed, b)
	}
	return j*other + sum
}

// chunkBlockSteps is Σ_{m=1..j} ⌈(c + m·n) / BlockSize⌉: the blocks a
// prompt at c computed tokens holds over the next j steps of a run, a
// chunk of n tokens a step. A chunk of whole blocks (the chunk cap a
// multiple of BlockSize, as 256 of 16) adds n / BlockSize blocks a step.
func (e *Engine) chunkBlockSteps(c, n, j int) int {
	if b := e.cfg.BlockSize; n%b == 0 {
		return j*e.blocksFor(c) + n/b*(j*(j+1)/2)
	}
	sum := 0
	for m := 1; m <= j; m++ {
		sum += e.blocksFor(c + m*n)
	}
	return sum
}

// decoded advances s, scheduled as a plain decode (no drafts) in each of
// the plan's steps, by those steps: each computes its last token and
// samples the next. It reports whether s emitted its last token. With agg
// the run kept its blocks in aggregate, and s's count of them is written.
func (e *Engine) decoded(s *seq, agg bool) bool {
	k := e.plan.Steps
	s.computed += k
	s.known += k
	s.emitted += k
	s.look = int32(max(int(s.look), k) - k)
	s.sched = 0
	if agg { // it holds the blocks of its computed tokens (allocThrough)
		s.anon = e.blocksFor(s.computed) - s.held
	}
	e.outstanding -= k
	em := Emit{Ref: s.req.Ref, Tokens: k, First: s.emitted == k} // none before: a mixed move's prompt (mixed.go), or a step's
	em.Done = s.emitted >= s.req.Output
	e.emit(s, em)
	return em.Done
}

// syncTo is Runner.SyncTo (runner.go), which documents it.
func (e *Engine) syncTo(t time.Duration) {
	if e.strict {
		e.checkSync(t)
	}
	// syncRun's body, which did not inline here, with its no-op told
	// apart without a division: the steps that start before t are those
	// whose blocks are taken already (started(t) <= runAlloc) when t is
	// no later than the start of the first step not taken, as it mostly
	// is when a router reads every replica at every arrival
	// (sim's BenchmarkRunFleet64: about one call in ten takes blocks).
	if e.inFlight && e.lazy && t > e.plan.Start+time.Duration(e.runAlloc)*e.plan.StepTime {
		e.allocThrough(e.started(t))
	}
}

// syncRun brings the run in flight up to instant t (SyncTo, unchecked: Abort
// and CompleteUntil call it).
func (e *Engine) syncRun(t time.Duration) {
	if e.inFlight && e.lazy {
		e.allocThrough(e.started(t))
	} else if e.specRunning() { // a speculative run (specrun.go)
		e.specTake(e.sc.done + e.started(t))
	}
}

// completeUntil is Runner.CompleteUntil (runner.go), which documents it.
func (e *Engine) completeUntil(t time.Duration) (*Outcome, error) {
	if e.strict {
		e.checkCollect("CompleteUntil", t)
	}
	if !e.inFlight {
		return nil, ErrNoStepInFlight
	}
	p := &e.plan
	if t >= p.End {
		return e.Complete(p.End)
	}
	e.syncRun(t)
	e.out.Emitted = e.out.Emitted[:0]
	if e.out.Drafts != nil {
		e.out.Drafts = e.out.Drafts[:0]
	}
	j, end := 0, p.Start
	if first := p.Start + e.lead() + p.StepTime; t >= first { // the first step ended (it lasts StepTime + lead)
		j = int((t-first)/p.StepTime) + 1
		end = first + time.Duration(j-1)*p.StepTime
	}
	e.out.Steps, e.out.End = j, end
	e.beginOutcome(&e.out, j, p.Start, e.out.End)
	e.out.BlockSteps = 0
	e.out.Decodes, e.out.Chunks = len(p.Batch.Decode)+p.Cohort, len(p.Batch.Prefill)
	if j == 0 {
		return &e.out, nil
	}
	if e.specRunning() { // a speculative run (specrun.go)
		return e.specCollect(j)
	}
	if e.mixed {
		e.collectFirst() // before the blocks and tokens below move
		e.listFirst(j)
	}
	e.out.BlockSteps = e.runBlockSteps(j)
	e.shape(j)
	next := 0
	if e.record {
		next = e.out.Shape.Used[j-1]
		for _, s := range e.sched {
			next += ceilDiv(s.computed+1+j, e.cfg.BlockSize) - ceilDiv(s.computed+j, e.cfg.BlockSize)
		}
	}
	// j >= 1 steps ended and at least one did not: only a run of identical
	// steps (none finishing, none sampling a prompt's first token, before
	// its last) has several steps.
	// None finishes but in a run through finishes (through.go), whose
	// finishers leave here: the run goes on.
	if fin := e.completeCohort(j, false); len(fin) > 0 {
		for _, s := range fin {
			e.drop(s)
			e.release(s)
		}
		e.live -= len(fin)
		p.Cohort = e.co.n
	}
	for _, s := range e.sched {
		if s.aborted {
			panic("engine: invariant run-shape broken: a run of several steps holds an aborted request")
		}
		if !s.decoding { // a chunk of its prompt a step
			e.outstanding -= s.left()
			s.computed += j * s.sched
			e.outstanding += s.left()
			continue
		}
		s.computed += j
		s.known += j
		s.emitted += j
		e.outstanding -= j
		e.emit(s, Emit{Ref: s.req.Ref, Tokens: j, First: s.emitted == j}) // a mixed move's prompt (mixed.go) emits its first
	}
	for i := range p.Batch.Decode {
		p.Batch.Decode[i] += j
	}
	for i := range p.Batch.Prefill {
		p.Batch.Prefill[i].Context += j * p.Batch.Prefill[i].NewTokens
	}
	p.Start = e.out.End
	p.Steps -= j
	e.runAlloc -= j
	e.res.base += j
	e.shiftShape(j, next)
	if e.thruAt != noFinish {
		e.setThruAt()
	}
	return &e.out, nil
}

// admits reports whether the plan in flight admitted a request (its
// first step did, in a run of chunks).
func (e *Engine) admits() bool {
	for _, s := range e.sched {
		if s.admitted == e.move+1 {
			return true
		}
	}
	return false
}

// truncate is Runner.Truncate (runner.go), which documents it.
func (e *Engine) truncate(t time.Duration) (inFlight bool, end time.Duration, err error) {
	if e.strict {
		e.checkCollect("Truncate", t)
	}
	if !e.inFlight {
		return false, 0, nil
	}
	p := &e.plan
	keep := e.started(t)
	if keep >= p.Steps {
		return true, p.End, nil
	}
	e.pendAt = 0 // the step that was to reserve is dropped (reservein.go)
	if !e.lazy || keep == 0 && e.admits() {
		if e.specRunning() { // a speculative run (specrun.go): not lazy
			return e.specTruncate(keep)
		}
		return true, p.End, fmt.Errorf("engine: Truncate at %v would drop a step that admits or preempts (planned at %v)", t, p.Start)
	}
	if keep > 0 && keep < e.runAlloc {
		// Its blocks were taken for steps that started by a later instant
		// (SyncTo, CompleteUntil, an earlier Truncate): time went back.
		return true, p.End, fmt.Errorf("engine: Truncate at %v, before an instant the run was already brought to (%d of its steps had started)", t, e.runAlloc)
	}
	e.allocThrough(keep)
	if e.record {
		e.cachedAt = e.cachedAt[:min(len(e.cachedAt), keep)]
	}
	if keep == 0 {
		e.settleResidues() // trim below reads each request's blocks
		e.truncateCohort()
	}
	p.End = p.Start + e.lead() + time.Duration(keep)*p.StepTime // keep >= 1 with a lead: its first step admits
	p.Steps = keep
	e.runAlloc = keep
	if e.thruAt >= p.End { // its first finish inside was dropped, or is now the last step's (or none: noFinish is 0)
		e.thruAt = noFinish
	}
	if keep == 0 {
		e.inFlight, e.lazy = false, false
		for _, s := range e.sched {
			if s.aborted {
				e.recycle(s)
				continue
			}
			e.trim(s) // nothing to give back unless its first step was allocated
			s.sched, s.decoding = 0, false
		}
		e.sched = e.sched[:0]
		return false, p.End, nil
	}
	return true, p.End, nil
}
