package engine

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/costmodel"
)

// The engine's fast paths, decided in one place.
//
// Each fast path computes what its slow twin computes, for less, under a
// condition of two kinds: one of configuration (the Config, the cost
// model, what the driver asked for with OmitStreaks and RecordSteps),
// decided here once, in New and in each setter that changes an input
// (decideFast), and one of state (a request waits, a prompt is mid-
// prefill), tested where the path runs. The hot code reads the decision
// as a field (co.on, omit, fast.runs, fast.residues, fast.cont,
// fast.joins, waiting.fcfs); FastPaths says which are on and why the
// others are off. docs/fastpaths.md has the table: each path, its
// conditions, its slow twin, the tests that hold the two equal, and what
// it saves.

// FastPath is one of the engine's fast paths and whether this engine's
// configuration lets it run (FastPaths).
type FastPath struct {
	// Name is the path's name, one of those listed at FastPaths.
	Name string
	// On reports whether the configuration lets the path run. An
	// engine whose path is on still takes it only when the state allows
	// (docs/fastpaths.md lists those conditions).
	On bool
	// Reason says why the path is off, each cause separated by "; ";
	// empty when it is on.
	Reason string
}

// The fast paths, in the order FastPaths lists them.
const (
	pathRuns     = iota // runs of identical decode steps (ScheduleUntil)
	pathResidues        // a run's blocks counted from residues (residues.go)
	pathCohort          // the decode cohort (cohort.go)
	pathContinue        // Continue at a step end (continue.go)
	pathStreaks         // omitted streaks (OmitStreaks, streak.go)
	pathJoins           // joins that do not cut a run (JoinChangesNothing)
	pathFCFSRun         // the FCFS run outside the waiting heap (waiting.go)
	pathChunks          // runs whose steps carry prefill chunks (run.go)
	pathReserves        // a Remote request reserved inside a run (reservein.go)
	numPaths
)

var pathNames = [numPaths]string{
	pathRuns:     "runs",
	pathResidues: "residues",
	pathCohort:   "cohort",
	pathContinue: "continue",
	pathStreaks:  "streaks",
	pathJoins:    "joins",
	pathFCFSRun:  "fcfs-run",
	pathChunks:   "chunks",
	pathReserves: "reserves",
}

// The reasons a fast path is off, as FastPath.Reason says them.
const (
	whySpeculative = "speculative decoding: drafts change tokens a step"
	whyNoOmit      = "the driver lists every emit (OmitStreaks off)"
	whyRecordCtx   = "steps are recorded (RecordSteps): each step lists every decode context"
	whyRecordBlock = "steps are recorded (RecordSteps): each step notes its cached blocks as it takes them"
	whyRecordWait  = "steps are recorded (RecordSteps): each step's shape carries the waiting queue's length"
	whyRecordChunk = "steps are recorded (RecordSteps): each step lists its prefill chunks' contexts"
	whyReadsEach   = "the model reads each decode context (not costmodel.DecodeSum)"
	whyReadsCtx    = "the model reads decode contexts (not costmodel.ContextFree)"
	whySlowTwin    = "turned off for the tests' slow twin"
	whyKVEvents    = "KV events are published (PublishKVEvents): each step's evictions carry its start"
	whyRemote      = "remote KV (Config.RemoteKV): a transfer lands between steps"
	whyTierShared  = "a KV tier that other engines call too (SetTier): a run's stores are offered as the driver brings it to an instant, not at its steps' starts"
	whyTierCohort  = "a KV tier with KV events published (SetTier, PublishKVEvents): a run's steps would take their blocks, stamp their events and offer their stores step by step"
	whyTierCont    = "a KV tier that other engines call too, or with remote KV (SetTier): a continued run offers its first step's stores as the driver brings it to an instant"
	whyTierReserve = "a KV tier (SetTier): a reservation inside a run is not held to the tier's step-by-step calls"
)

// fastPaths is the engine's decision, written only by decideFast. The
// paths the hot code reads have their flags here or in the state they
// serve (co.on for the cohort, omit for streaks, waiting.fcfs for the
// FCFS run).
type fastPaths struct {
	runs     bool // ScheduleUntil may plan a run of several steps (an engine without a tier)
	tierRuns bool // runs, with a tier: while no later step would look the waiting head up in it (tierRuns)
	chunks   bool // a run's steps may carry prefill chunks
	pubRuns  bool // a run may go on through decodes that cache blocks of shared output (runPublish)
	residues bool // a run's blocks may be counted from residues
	cont     bool // Continue may plan
	reserves bool // a Remote request added inside a run may be reserved at its next step (reservein.go)
	joins    bool // JoinChangesNothing may report true
	// verifySum: a speculative step's verified positions are priced from
	// their sum (price), under costmodel.Frozen, which reads only that.
	verifySum bool
	// oweAdmit: the blocks planChunked's running loop owes (the cohort's
	// and the inline decodes') are taken with its first admission's own,
	// in one take (schedule), unless that admission walks its hits (the
	// pool as the take leaves it) first; until then only free counts
	// are read, which tryAdmit's gate counts less the owed blocks
	// (scheduling.owe). Not with remote KV or a tier (their waiting loop
	// reserves), nor where a take is noted as it happens (stepAlloc).
	oweAdmit bool
	// takeApart (tests) turns oweAdmit off: the owed blocks taken at the
	// running loop's end.
	takeApart bool

	// contFast and joinsFast are cont and joins when strict mode is off,
	// false when it is on: the one flag Continue and JoinChangesNothing
	// test on their way in, so that strict mode costs them nothing more
	// (gateFast). contFast is false on a remote-KV engine too, whose
	// Continue looks at its landed requests first (continueRun), and
	// with a tier (continueTier).
	contFast, joinsFast bool

	omitAsked bool // the driver asked for OmitStreaks(true)
	noTwin    bool // tests: the slow twin (walkRuns): no residues, no cohort

	why [numPaths]string // why each path is off; "" when on
}

// decideFast decides which fast paths are on, from the configuration,
// the cost model and what the driver asked for. New calls it, and so does
// every setter that changes one of those (OmitStreaks, RecordSteps).
func (e *Engine) decideFast() {
	f := &e.fast
	e.stepAlloc = e.record || e.pool.pub != nil
	e.noteStep = e.record || e.tier != nil
	e.async = e.cfg.RemoteKV || e.tier != nil
	var why [numPaths][]string
	off := func(p int, reason string) {
		for _, r := range why[p] {
			if r == reason {
				return
			}
		}
		why[p] = append(why[p], reason)
	}
	spec := e.cfg.SpeculativeTokens > 0
	if spec {
		off(pathRuns, whySpeculative) // a step's tokens depend on its acceptance
		off(pathStreaks, whySpeculative)
	}
	if !f.omitAsked {
		off(pathStreaks, whyNoOmit)
	}
	if e.cfg.RemoteKV {
		// A Land changes the next plan like an arrival, so a driver cuts
		// a run at it (SyncTo, Land, Truncate) as at an arrival, and a
		// plan that reserves is one step (its transfers may land as it
		// starts; runLength). A join that changes nothing is not a
		// Land: joins stay off. Continue stays on: it declines while a
		// landed request waits to be admitted, and a Land among the
		// driver's events at the step end it planned at cuts the run
		// whole (Truncate), as an arrival there does. A landed request
		// is admitted by the plan after its Land and joins the cohort as
		// any admitted request does; its first emit here is listed (it
		// emitted in no move here before), not its first (Emit.First is
		// false), and the driver takes its gap from its last token.
		off(pathJoins, whyRemote)
	}
	if e.tier != nil {
		// A run hands the tier its later steps' stores as it takes their
		// blocks (allocThrough, storeRun), in the order a step-by-step
		// engine offers them, and only while no plan of its steps would
		// look the waiting head up in the tier (tierRuns): nothing else
		// this engine calls the tier with happens inside a run (a Land or
		// an Abort syncs the run first). That order is the tier's whole
		// order only when no other engine calls it (tierPrivate). The
		// cohort offers its members' stores, theirs first in each step,
		// at the steps whose decodes complete a block (coStore), but not
		// with KV events too. Continue stays on with a PrivateTier (not
		// with remote KV too): its run offers the stores of its first
		// step too as the driver brings it to an instant (continueTier).
		// Streaks and residues touch nothing the tier
		// sees. A join changes nothing under the rule joins keep (the
		// running list at MaxSeqs, or the waiting head the run was
		// planned with): a run with something waiting below MaxSeqs was
		// refused at that head (tierRuns), and each later step's lookup
		// stops there, never reaching the request that joined.
		if !e.tierPrivate {
			off(pathRuns, whyTierShared)
			off(pathJoins, whyTierShared)
		}
		if e.pool.pub != nil {
			off(pathCohort, whyTierCohort)
		}
		if !e.tierPrivate || e.cfg.RemoteKV || !contTier {
			off(pathContinue, whyTierCont)
		}
	}
	if !e.residuesServe() {
		off(pathResidues, fmt.Sprintf("BlockSize %d is not a power of two up to %d", e.cfg.BlockSize, maxResidueBlock))
	}
	if e.record {
		off(pathResidues, whyRecordBlock)
		off(pathJoins, whyRecordWait)
	}
	if f.noTwin {
		off(pathResidues, whySlowTwin)
	}
	// The cohort keeps its members' blocks as residue counts and its
	// outcomes count them as streaks: it needs both (but not the
	// recording's reason against residues, which is its own).
	for _, r := range why[pathStreaks] {
		off(pathCohort, r)
	}
	if !e.residuesServe() {
		off(pathCohort, why[pathResidues][0])
	}
	if !e.sumPriced {
		off(pathCohort, whyReadsEach)
	}
	if e.record {
		off(pathCohort, whyRecordCtx)
	}
	if spec {
		off(pathCohort, whySpeculative)
	}
	if f.noTwin {
		off(pathCohort, whySlowTwin)
	}
	// Continue plans the cohort's runs, priced by how many decode.
	for _, r := range why[pathCohort] {
		off(pathContinue, r)
	}
	if !e.ctxFree {
		off(pathContinue, whyReadsCtx)
	}
	// runLike turns path p off for the reasons runs are off, and for
	// recorded steps (recorded says why), whose steps are each noted as
	// they start.
	runLike := func(p int, recorded string) {
		for _, r := range why[pathRuns] {
			off(p, r)
		}
		if e.record {
			off(p, recorded)
		}
	}
	// A run of prefill chunks is a run, whose steps each take a chunk's
	// blocks and list its context. With KV events its blocks are taken,
	// and its prompts' shared blocks cached, step by step, each step's
	// events stamped with its start (takeStep), but not with a tier too
	// (allocTierSteps stamps no step).
	runLike(pathChunks, whyRecordChunk)
	if e.cfg.RemoteKV {
		off(pathChunks, whyRemote)
	}
	if e.tier != nil && e.pool.pub != nil {
		off(pathChunks, whyTierCohort)
	}
	// A reservation inside a run takes its blocks between two of the
	// run's steps, which the run takes together.
	runLike(pathReserves, whyRecordBlock)
	if e.pool.pub != nil {
		off(pathReserves, whyKVEvents)
	}
	if e.tier != nil {
		off(pathReserves, whyTierReserve) // no test holds ReserveInRun's stores and lookups to the tier's step-by-step calls
	}
	if _, ok := e.cfg.Policy.(FCFS); !ok {
		off(pathFCFSRun, fmt.Sprintf("policy %T is not FCFS: the waiting queue is one heap", e.cfg.Policy))
	}
	for p := range why {
		f.why[p] = strings.Join(why[p], "; ")
	}
	runs := why[pathRuns] == nil
	f.runs, f.tierRuns = runs && e.tier == nil, runs && e.tier != nil
	f.chunks = why[pathChunks] == nil
	// A run goes on through decodes that cache blocks of shared output
	// (runPublish) unless each step's caching is noted as it happens:
	// recorded steps note the cached blocks at each start, and KV events
	// carry their step.
	f.pubRuns = runs && !e.stepAlloc
	f.residues = why[pathResidues] == nil
	f.reserves = why[pathReserves] == nil
	f.cont = why[pathContinue] == nil
	_, frozen := e.model.(costmodel.Frozen)
	f.verifySum = spec && frozen && !f.noTwin
	f.oweAdmit = !e.async && !e.stepAlloc && !f.takeApart && !f.noTwin
	// The speculative cohort lists its members nowhere in the plan: a
	// driver that asked for OmitStreaks reads no listed decode, and
	// Frozen prices them by their sum (verifySum). Under FCFS a victim is
	// never a member; each of the others would have it list them.
	e.setSpecCohort(f.verifySum && f.omitAsked && !e.record && e.pool.pub == nil && e.tier == nil && !e.cfg.RemoteKV && e.fcfs)
	f.joins = why[pathJoins] == nil
	e.gateFast()
	e.omit = why[pathStreaks] == nil
	e.setCohort(why[pathCohort] == nil)
	e.co.each = e.pool.pub != nil || e.tier != nil
	e.waiting.setPolicy(e.cfg.Policy, why[pathFCFSRun] == nil)
	// Mixed moves (mixed.go), for a driver that asked: runs and the
	// cohort on, a model that reads no decode context, and none of a
	// tier, remote KV or recorded steps. With KV events, the later
	// steps' blocks are taken step by step (pubSteps), each step's
	// events stamped with its start, lead after the grid (kvPublisher.at):
	// Regime/Fleet8PrefixEvents, TestInstructionBudget, 13,096 then
	// 12,739 instructions a request.
	e.mixOK = e.mixAsked && f.runs && e.ctxFree && e.omit && e.co.on && e.tier == nil && !e.async && !e.record
	// Answers cached late (prefix.go, lateCache), for a driver that
	// asked: none of what could see a block cached before its release
	// (KV events, a tier, recorded steps), remote KV, speculative decoding
	// or runs through finishes (whose finishers' blocks go as through.go
	// counts them). Decided for the requests added from then on.
	e.late = e.lateAsk && e.cacheOn && e.pool.pub == nil && e.tier == nil && !e.async && !e.record && !spec && !e.thruOK
}

// gateFast sets the flags Continue and JoinChangesNothing test first:
// their fast path's, unless strict mode sends them to the checks.
func (e *Engine) gateFast() {
	e.fast.contFast = e.fast.cont && !e.strict && !e.cfg.RemoteKV && e.tier == nil
	e.fast.joinsFast = e.fast.joins && !e.strict
}

// FastPaths lists the engine's fast paths, each with whether its
// configuration lets it run and, when not, why:
//
//   - runs: a run of identical decode steps planned as one move
//     (Runner.ScheduleUntil);
//   - residues: a run's blocks counted from the residues of its
//     requests' tokens modulo BlockSize, not by walking them;
//   - cohort: the running requests in a decode streak kept in aggregate,
//     so that a step costs O(1) in them;
//   - continue: the cohort's next run planned at the step end before it
//     (Runner.Continue);
//   - streaks: outcomes that count the requests continuing a decode
//     streak instead of listing them (Runner.OmitStreaks);
//   - joins: a request that joins the waiting queue leaves the run in
//     flight uncut when it changes none of its steps (Runner.JoinChangesNothing);
//   - fcfs-run: under FCFS, the requests waiting in Add order kept in a
//     run outside the waiting queue's heap;
//   - chunks: a run whose steps carry prefill chunks too, each prompt
//     the same chunk a step, none its last;
//   - reserves: a Remote request added inside a run of decode steps
//     reserved at the run's next step start (Runner.ReserveLater,
//     Runner.ReserveInRun) rather than the run cut at the Add.
//
// The decision changes only with what New was given and with Runner.OmitStreaks
// and RecordSteps; docs/fastpaths.md says what each path saves, its slow
// twin, and the conditions of state under which it is taken.
func (e *Engine) FastPaths() []FastPath {
	paths := make([]FastPath, numPaths)
	for p := range paths {
		paths[p] = FastPath{Name: pathNames[p], On: e.fast.why[p] == "", Reason: e.fast.why[p]}
	}
	return paths
}
