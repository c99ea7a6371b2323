package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// runsChunked counts the runs timeline saw whose steps carry prefill
// chunks, so that a test can say its scenarios planned them; runsStored
// those whose later steps offered the tier stores (a logTier's calls grew
// between the plan and its end), and runsCohortStored those of them with
// a decode cohort; runsChunkPub those of runsChunked whose prompts cache
// blocks of shared content in their later steps (chunkPub), runsPubSpent
// those of them with requests waiting below MaxSeqs (budgetSpent).
var runsChunked, runsStored, runsCohortStored, runsChunkPub, runsPubSpent int

// runsContinued counts the runs a timeline with cont continued.
var runsContinued int

// runsContinuedWaiting counts the runs a timeline with cont continued
// while requests waited (at MaxSeqs: admitsNone).
var runsContinuedWaiting int

// runsContinuedCut counts the continued runs a timeline with cut cut at
// their start.
var runsContinuedCut int

// runsContinuedLanded counts the runs a timeline with cont continued
// with a tier's landed loads waiting (at MaxSeqs: continueTier).
var runsContinuedLanded int

// quietSyncs counts the SyncTo calls a timeline with KV events made
// while its run was quiet (quietRun), each held to publish nothing.
var quietSyncs int

// headsLetIn counts the steps timeline planned alone, with fast set,
// only because the budget was left and a request waited below MaxSeqs
// (chunksDeclined), whose next step, with no arrival between, admitted
// that waiting head: steps after which a run of chunks that cached its
// prompts' shared blocks would have passed an admission.
var headsLetIn int

// timeline drives e until it is idle — advancing runs of identical
// steps in one move when fast is set, step by step otherwise — adding
// each of adds once the clock reaches its instant, and writes down every
// admission and every token with its instant, then what a router reads
// (Outstanding, FreeBlocks after SyncTo) at every step end, inside a run
// too, so that the two ways of driving can be compared line for line.
func timeline(t *testing.T, e *Engine, fast bool, adds map[time.Duration][]Request) string {
	t.Helper()
	return timelineLands(t, e, fast, adds, nil)
}

// timelineLands is timeline for an engine whose plans may reserve blocks
// for KV that lands later (a tier's loads): the reservation of request
// ref lands delay(ref) after its plan's start, an event as an arrival is
// (a run extends past neither; one due inside a move lands at its end,
// before the arrivals due there).
func timelineLands(t *testing.T, e *Engine, fast bool, adds map[time.Duration][]Request, delay func(ref int32) time.Duration) string {
	t.Helper()
	return timelineWith(t, e, fast, adds, timelineOpts{delay: delay})
}

// timelineOpts is what timelineWith does beyond timeline: delay is
// timelineLands'; events, the log e publishes its KV events to, is
// written down at every step end (inside a run too, after SyncTo) with
// the events published by then, and emptied; with cont, a fast
// timeline has e continue its run (Continue) at every move's end,
// before ScheduleUntil; with omit, e omits streaks (OmitStreaks, as the
// decode cohort needs), and the tokens, which an outcome then lists
// differently in a run and step by step, are not written down.
type timelineOpts struct {
	delay  func(ref int32) time.Duration
	events *eventLog
	cont   bool
	omit   bool
	cut    func() bool // with cont: whether to cut a continued run at its start (Truncate), as a driver does for an event at that instant, and plan it again
	// noSync collects each run at its end only, with no SyncTo inside
	// it, as sim's single replica does: a run's later steps' tier
	// stores are then offered at the collection, several steps a call
	// (storeRun's jumps: storeFrom, storeStep, coNext), where a SyncTo
	// at every step end offers them a step at a time. What a router
	// reads is then not written down.
	noSync bool
}

// timelineWith is timeline, doing what o says too.
func timelineWith(t *testing.T, e *Engine, fast bool, adds map[time.Duration][]Request, o timelineOpts) string {
	t.Helper()
	delay := o.delay
	if o.omit {
		e.Runner().OmitStreaks(true)
	}
	events := func() string { // the events published since the last call
		if o.events == nil {
			return ""
		}
		s := fmt.Sprintf(", events %v", *o.events)
		*o.events = (*o.events)[:0]
		return s
	}
	completed := false // the last move was completed at now (Continue's rule)

	var b, reads strings.Builder // tokens and admissions; what a router reads at each step end
	var now, blockTime time.Duration
	lands := map[int32]time.Duration{} // the reservations in flight, by the instant each lands
	var head int32 = -1                // the waiting head of a step chunksDeclined kept alone (headsLetIn)
	pending := func(now time.Duration) (next time.Duration, ok bool) {
		for at := range adds {
			if at > now && (!ok || at < next) {
				next, ok = at, true
			}
		}
		for _, at := range lands {
			if at > now && (!ok || at < next) {
				next, ok = at, true
			}
		}
		return next, ok
	}
	land := func(end time.Duration) { // the landings due by end, in Ref order
		var due []int32
		for ref, at := range lands {
			if at <= end {
				due = append(due, ref)
			}
		}
		slices.Sort(due)
		if len(due) > 0 {
			head = -1
		}
		for _, ref := range due {
			delete(lands, ref)
			require.NoError(t, e.Land(end, ref))
			fmt.Fprintf(&b, "%v: land %d\n", end, ref)
		}
	}
	for at, rs := range adds {
		if at == 0 {
			for _, r := range rs {
				require.NoError(t, e.Add(0, r))
			}
		}
	}
	for steps := 0; steps < 100000; steps++ {
		until := now
		if next, ok := pending(now); fast && ok {
			until = next
		} else if fast {
			until = time.Hour
		}
		var p *Plan
		if fast && o.cont && completed {
			if p = e.Runner().Continue(now, until); p != nil {
				runsContinued++
				if e.waiting.len() > 0 {
					runsContinuedWaiting++
				}
				if e.tier != nil && len(e.landed) > 0 {
					runsContinuedLanded++
				}
				if o.cut != nil && o.cut() { // dropped whole: as if never planned, no event published
					busy, _, err := e.Runner().Truncate(now)
					require.NoError(t, err)
					require.False(t, busy, "a continued run cut at its start")
					runsContinuedCut++
					p = nil
				}
			}
		}
		completed = false
		if p == nil {
			var err error
			p, err = e.Runner().ScheduleUntil(now, until)
			require.NoError(t, err)
		}
		if p == nil {
			next, ok := pending(now)
			if !ok {
				fmt.Fprintf(&b, "KV block·time %v\n", blockTime)
				return b.String() + reads.String()
			}
			now, head = next, -1
			land(now)
			for _, r := range adds[now] {
				require.NoError(t, e.Add(now, r))
			}
			continue
		}
		for _, ref := range p.Started {
			fmt.Fprintf(&b, "%v: admit %d\n", p.Start, ref)
		}
		if head >= 0 && slices.Contains(p.Started, head) {
			headsLetIn++
		}
		head = -1
		if fast && p.Steps == 1 && chunksDeclined(e) {
			head = e.waiting.peek().req.Ref
		}
		for _, r := range p.Reserved {
			fmt.Fprintf(&b, "%v: reserve %d\n", p.Start, r.Ref)
			lands[r.Ref] = p.Start + delay(r.Ref)
		}
		if p.Steps > 1 && len(p.Batch.Prefill) > 0 {
			runsChunked++
			if e.chunkPub {
				runsChunkPub++
				if e.waiting.len() > 0 && !e.AtSeqCap() {
					runsPubSpent++
				}
			}
		}
		calls := tierCalls(e)
		start, d := p.Start, p.StepTime
		for i := 1; i < p.Steps && !o.noSync; i++ { // what a router reads at each step end inside a run (SyncTo first)
			at := start + time.Duration(i)*d
			quiet, n := o.events != nil && e.quietRun(), 0 // a quiet run's SyncTo publishes nothing (quietRun, sim's EventsView leaves it out)
			if quiet {
				n = len(*o.events)
			}
			e.Runner().SyncTo(at)
			if quiet {
				quietSyncs++
				require.Len(t, *o.events, n, "%v: a quiet run's SyncTo published events", at)
			}
			fmt.Fprintf(&reads, "%v: outstanding %d, free %d, cached %d%s%s\n", at, e.Outstanding(at), e.FreeBlocks(), e.CachedBlocks(), tierReads(e), events())
		}
		out, err := e.Complete(p.End)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		completed = true
		if out.Steps > 1 && tierCalls(e) > calls {
			runsStored++
			if p.Cohort > 0 {
				runsCohortStored++
			}
		}
		blockTime += time.Duration(out.BlockSteps) * p.StepTime
		if !o.noSync {
			fmt.Fprintf(&reads, "%v: outstanding %d, free %d, cached %d%s%s\n", p.End, e.Outstanding(p.End), e.FreeBlocks(), e.CachedBlocks(), tierReads(e), events())
		}
		for i := range out.Steps { // one line per step, whichever way it was planned
			for _, em := range out.Emitted {
				if !o.omit && i >= out.Steps-em.Tokens {
					fmt.Fprintf(&b, "%v: token %d\n", start+time.Duration(i+1)*d, em.Ref)
				}
			}
		}
		// Landings and arrivals due inside the move happen when it ends
		// (a run never extends past one: until is the next).
		land(p.End)
		for at, rs := range adds {
			if at > now && at <= p.End {
				head = -1
				for _, r := range rs {
					require.NoError(t, e.Add(p.End, r))
				}
			}
		}
		now = p.End
	}
	t.Fatal("engine not idle after 100,000 steps")
	return ""
}

// chunksDeclined reports whether the step e planned alone was a step of
// chunks that a run would have gone on from had budgetSpent, or the test
// of the waiting queue before it in chunksPublish, said yes: a prompt
// with blocks of shared content left to cache and chunks after this one
// that are not its last, no other reason to stop (lastOne, preemptions,
// a decode caching shared output, remote KV or a tier), a request
// waiting below MaxSeqs and the budget left.
func chunksDeclined(e *Engine) bool {
	if !e.fast.chunks || !e.fast.pubRuns || e.lastOne || len(e.plan.Preempted) > 0 || e.pubRun > 0 || e.async {
		return false
	}
	if e.waiting.len() == 0 || e.AtSeqCap() || e.budgetSpent() {
		return false
	}
	for _, s := range e.sched {
		if !s.decoding && s.held < s.shared && s.known-s.computed > 2*s.sched {
			return true
		}
	}
	return false
}

// tierReads is what timelineLands notes of e's tier at a step end: the
// calls it has had (a logTier's), none without one.
func tierReads(e *Engine) string {
	if _, ok := e.tier.(*logTier); ok {
		return fmt.Sprintf(", tier calls %d", tierCalls(e))
	}
	return ""
}

// tierCalls is the calls e's tier has had, if it is a logTier.
func tierCalls(e *Engine) int {
	if x, ok := e.tier.(*logTier); ok {
		return x.calls
	}
	return 0
}

// Issue 8, bug 2: a run of decode steps may evict cached blocks the
// waiting queue's head would reference only if that cannot let the head
// in. Here D decodes in a 7-block cache while W waits beside the cached
// blocks of A's prompt, which it would reference. When the cache worked
// in 2-block units, D's decode evicting one unit for one block cut W's
// hits and let it in at once, stepwise, while a run planned over all of
// D's steps never looked at W again (it came in 225 ms late). Freed last
// first, a chain loses its deepest block first: the head needs one block
// more and pins one less, and its admission never gets easier. Freed first
// to last (the order servesim used before), runs must stop at every step
// while anything waits.
func TestRunDoesNotEvictPastAnAdmission(t *testing.T) {
	cfg := Config{BlockSize: 4, KVBlocks: 7, MaxBatchedTokens: 32, MaxSeqs: 4, ChunkCap: 8}
	adds := map[time.Duration][]Request{
		0: {
			{Ref: 1, Input: 16, Output: 1, Prefix: []uint64{1, 2}, PrefixBlockTokens: 8}, // A
			{Ref: 2, Input: 4, Output: 14}, // D
		},
		100 * time.Millisecond: {{Ref: 3, Input: 24, Output: 5, Prefix: []uint64{1, 2, 3}, PrefixBlockTokens: 8}}, // W
	}
	for _, headFirst := range []bool{false, true} {
		run := func(fast bool) string {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.headFirst = headFirst
			return timeline(t, e, fast, adds)
		}
		slow := run(false)
		assert.Equal(t, slow, run(true), "freed first to last: %v", headFirst)
		assert.Contains(t, slow, "admit 3")
	}
}

// chunkContext prices a step like Frozen plus 1 ms per 64 tokens of
// prefill context: a run of chunks is cut where its price moves.
var chunkContext = costmodel.Func(func(b costmodel.Batch) time.Duration {
	ctx := 0
	for _, c := range b.Prefill {
		ctx += c.Context
	}
	return costmodel.Frozen{}.StepTime(b) + time.Duration(ctx/64)*time.Millisecond
})

// Runs of steps that carry prefill chunks (fast.chunks: a prompt asks
// the same chunk a step, capped by ChunkCap or by the budget) are the
// steps planned one by one: random engines with small pools (preempting),
// chunk caps and budgets that chunk prompts, shared prefixes and the
// Priority policy, each driven both ways, admit and emit at the same
// instants and hold the same KV block·time, under Frozen and under a
// model that reads the chunks' contexts. Strict mode holds every refusal
// of a waiting head without its walk (tryAdmit) to the walk's gate.
func TestChunkRunsAreSteps(t *testing.T) {
	runsChunked, runsChunkPub, runsPubSpent = 0, 0, 0
	gated := 0
	for seed := range uint64(400) {
		_, cfg, model, adds := chunkRunScenario(seed, 41, false)
		run := func(fast bool) string {
			e, err := New(cfg, model)
			require.NoError(t, err)
			e.Runner().SetStrict(true) // and tryAdmit's refusals without a walk checked against it (checkGate)
			defer func() { gated += e.gated }()
			return timeline(t, e, fast, adds)
		}
		require.Equal(t, run(false), run(true), "seed %d, %+v", seed, cfg)
	}
	t.Logf("%d runs of prefill chunks, %d caching shared content (%d past a waiting head, the budget spent); %d heads with hits refused without the walk", runsChunked, runsChunkPub, runsPubSpent, gated)
	assert.Greater(t, runsChunked, 400, "the scenarios no longer plan runs of prefill chunks")
	assert.Positive(t, runsChunkPub, "the scenarios no longer plan runs of chunks that cache shared content")
	assert.Positive(t, runsPubSpent, "the scenarios no longer plan runs of chunks that cache shared content past a waiting head")
	assert.Positive(t, gated, "the scenarios no longer refuse a preempted head whose own blocks are cached")
}

// A run of chunks whose prompt caches blocks of shared content as it goes
// (chunksPublish) must not pass a step at which the waiting head, which
// shares that content, would be admitted step by step. Here a prompt P
// of about the whole pool prefills in chunks of 8 tokens (ChunkCap) into
// blocks of 6 or 16, and H, as long as the pool and with P's prefix, comes
// in while it does: H's gate counts its whole prompt less its hits, P's
// cached blocks, so it fits only at the steps after which P holds no
// partly filled block (its cached blocks are all it holds). The step
// before, a chunk that leaves a block partly filled, refuses H with the
// budget left: a run from there (were budgetSpent, or chunksPublish's test
// of the waiting queue, to say yes) would cache P's next block without
// looking at H again, and admit it late. A quarter of the engines have a
// budget of one chunk, which P spends: runs that do go on past H, as its
// plans never look at it (budgetSpent).
//
// This fails when budgetSpent always says yes, or chunksPublish goes on
// whatever waits: TestChunkRunsAreSteps passes under both.
func TestChunkRunsStopBeforeAHeadTheyLetIn(t *testing.T) {
	runsChunkPub, runsPubSpent, headsLetIn = 0, 0, 0
	keys := make([]uint64, 128) // the shared content: P's and H's prefixes are its first ids
	for j := range keys {
		keys[j] = uint64(j + 1)
	}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 4141))
		bs, kv := []int{6, 16}[rng.IntN(2)], 12+rng.IntN(20)
		cfg := Config{BlockSize: bs, KVBlocks: kv, MaxSeqs: 2 + rng.IntN(3), ChunkCap: 8, MaxBatchedTokens: 9 + rng.IntN(40)}
		if rng.IntN(4) == 0 {
			cfg.MaxBatchedTokens = cfg.ChunkCap
		}
		pin := (kv-rng.IntN(3))*bs - 1 - rng.IntN(bs-1)                // kv-2 to kv blocks, shorter than MaxModelLen (the pool)
		hin := kv*bs - 1 - rng.IntN(bs-1)                              // kv blocks
		at := time.Duration(1+rng.IntN(pin/8)) * 20 * time.Millisecond // while P prefills (Frozen: ~20 ms a chunk)
		adds := map[time.Duration][]Request{
			0:  {{Ref: 0, Input: pin, Output: 1 + rng.IntN(20), Prefix: keys[:pin/8], PrefixBlockTokens: 8}},
			at: {{Ref: 1, Input: hin, Output: 1 + rng.IntN(20), Prefix: keys[:hin/8], PrefixBlockTokens: 8}},
		}
		run := func(fast bool) string {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.Runner().SetStrict(true)
			return timeline(t, e, fast, adds)
		}
		require.Equal(t, run(false), run(true), "seed %d, %+v, H at %v", seed, cfg, at)
	}
	t.Logf("%d runs of chunks caching shared content (%d past a waiting head, the budget spent); %d heads admitted at the step after a step of chunks kept alone", runsChunkPub, runsPubSpent, headsLetIn)
	assert.Positive(t, headsLetIn, "the scenarios no longer admit a head right after a step of chunks kept alone")
	assert.Positive(t, runsPubSpent, "the scenarios no longer plan runs of chunks that cache shared content past a waiting head")
}

// chunkRunScenario is scenario seed of a test of runs of chunks (its
// stream of draws stream): an engine of chunkRunConfig, with 8 blocks or
// more, and chunkRunAdds' requests; and the draws, for more.
func chunkRunScenario(seed, stream uint64, answers bool) (*rand.Rand, Config, costmodel.Model, map[time.Duration][]Request) {
	rng := rand.New(rand.NewPCG(seed, stream))
	cfg, model := chunkRunConfig(rng, 8)
	return rng, cfg, model, chunkRunAdds(rng, cfg, answers)
}

// chunkRunAdds draws 2 to 13 requests for an engine of chunkRunConfig,
// each added at one of 20 instants 300 ms apart (a step spans no two:
// timeline adds those of one instant in map order), a third of them with
// a prompt of shared content, two prefixes' first ids; with answers,
// half of them, over their answers too, a third of those with answers
// shared (PrefixCoversOutput).
func chunkRunAdds(rng *rand.Rand, cfg Config, answers bool) map[time.Duration][]Request {
	adds := map[time.Duration][]Request{}
	for i := range 2 + rng.IntN(12) {
		at := time.Duration(rng.IntN(20)) * 300 * time.Millisecond
		r := Request{Ref: int32(i), Input: 1 + rng.IntN(min(200, cfg.KVBlocks*cfg.BlockSize/2)), Output: 1 + rng.IntN(40), Priority: rng.IntN(3)}
		shared, units := false, r.Input/8
		if answers {
			shared, units = rng.IntN(2) == 0, (r.Input+r.Output)/8
		} else {
			shared = rng.IntN(3) == 0
		}
		if shared && r.Input >= 8 {
			for j := range units {
				r.Prefix = append(r.Prefix, uint64(rng.IntN(2)*100+j))
			}
			r.PrefixBlockTokens = 8
			if answers {
				r.PrefixCoversOutput = rng.IntN(3) == 0
			}
		}
		adds[at] = append(adds[at], r)
	}
	return adds
}

// chunkRunConfig draws an engine whose prompts are chunked, for the
// tests of runs of chunks: a small pool of at least blocks blocks, a
// chunk cap and a budget that chunk prompts, sometimes Priority, and
// Frozen (a run's steps cost its first's) or, a third of the time, a
// model whose price moves as the chunks go deeper.
func chunkRunConfig(rng *rand.Rand, blocks int) (Config, costmodel.Model) {
	cfg := Config{BlockSize: []int{4, 16, 6}[rng.IntN(3)], KVBlocks: blocks + rng.IntN(120),
		MaxSeqs: 1 + rng.IntN(8), MaxBatchedTokens: 16 + rng.IntN(120), ChunkCap: []int{0, 8, 16, 32}[rng.IntN(4)]}
	if cfg.ChunkCap > cfg.MaxBatchedTokens {
		cfg.ChunkCap = 0
	}
	if rng.IntN(4) == 0 {
		cfg.Policy = Priority{}
	}
	var model costmodel.Model
	if rng.IntN(3) == 0 {
		model = chunkContext
	}
	return cfg, model
}

// Issue 8, bug 1, at the engine: CompleteUntil ends the steps of a run that
// ended by an instant, as if each had been completed alone, and keeps the
// rest in flight; an abort is only accepted in the run's last step.
func TestCompleteUntilSettlesARun(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 2000, Output: 50}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 2000, Output: 60}))
	p, err := e.Schedule(0) // 2,000 + 48 tokens of the budget
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = e.Schedule(p.End) // request 1 decodes, request 2 ends its prompt
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	start := p.End
	p, err = e.Runner().ScheduleUntil(start, start+time.Hour)
	require.NoError(t, err)
	require.Equal(t, 48, p.Steps, "a run until request 1's last token")
	d := p.StepTime
	require.Equal(t, 45*time.Millisecond, d)

	assert.ErrorIs(t, e.Abort(start+10*d+d/2, 1), ErrUnsettledRun, "ten steps ended first")

	o, err := e.Runner().CompleteUntil(start + 10*d + d/2) // inside the 11th step
	require.NoError(t, err)
	assert.Equal(t, 10, o.Steps)
	assert.Equal(t, start+10*d, o.End)
	assert.Equal(t, []Emit{{Ref: 1, Tokens: 10}, {Ref: 2, Tokens: 10}}, o.Emitted)
	assert.Equal(t, 38, p.Steps)
	assert.Equal(t, start+10*d, p.Start)
	assert.Equal(t, start+48*d, p.End)
	assert.Equal(t, []int{2011, 2010}, p.Batch.Decode, "contexts of the next step to run")
	require.NoError(t, e.Check())

	o, err = e.Runner().CompleteUntil(start + 10*d + d/2) // nothing more has ended
	require.NoError(t, err)
	assert.Zero(t, o.Steps)
	assert.Empty(t, o.Emitted)

	o, err = e.Runner().CompleteUntil(start + 47*d) // up to the last step
	require.NoError(t, err)
	assert.Equal(t, 37, o.Steps)
	require.Equal(t, 1, p.Steps)
	require.NoError(t, e.Abort(start+47*d+1, 1), "the last step may be aborted")
	require.NoError(t, e.Check())
	o, err = e.Complete(p.End)
	require.NoError(t, err)
	assert.Equal(t, []Emit{{Ref: 2, Tokens: 1}}, o.Emitted, "the aborted request's last step is discarded")
	assert.Equal(t, 1, o.Steps)
	require.NoError(t, e.Check())
}

// A run is cut where something happens inside it: Truncate keeps the step
// in flight and drops the ones that had not started, so a request added at
// that instant is weighed when the next step is planned, as step by step.
// The blocks of a run are taken step by step (SyncTo), never ahead.
func TestTruncateDropsTheStepsNotStarted(t *testing.T) {
	cfg := Config{BlockSize: 4, KVBlocks: 64}
	e, err := New(cfg, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 8, Output: 40}))
	p, _ := step(t, e, 0) // the prompt: 8 tokens in 2 blocks, first token
	start := p.End
	p, err = e.Runner().ScheduleUntil(start, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 39, p.Steps)
	d := p.StepTime
	free := e.FreeBlocks()
	assert.Equal(t, 61, free, "only the first step's block is taken: 9 tokens in 3 blocks")
	e.Runner().SyncTo(start + 10*d + 1) // 11 steps have started: 8 + 1 + 11 = 20 tokens
	assert.Equal(t, 64-5, e.FreeBlocks())
	require.NoError(t, e.Check())

	at := start + 10*d + d/2 // inside the 11th step
	o, err := e.Runner().CompleteUntil(at)
	require.NoError(t, err)
	assert.Equal(t, 10, o.Steps)
	inFlight, end, err := e.Runner().Truncate(at)
	require.NoError(t, err)
	assert.True(t, inFlight)
	assert.Equal(t, start+11*d, end)
	assert.Equal(t, 1, p.Steps)
	require.NoError(t, e.Check())
	require.NoError(t, e.Add(at, Request{Ref: 2, Input: 8, Output: 20}))
	o, err = e.Complete(end)
	require.NoError(t, err)
	assert.Equal(t, []Emit{{Ref: 1, Tokens: 1}}, o.Emitted)
	p, err = e.Runner().ScheduleUntil(end, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, []int32{2}, p.Started, "the request added inside the run is admitted next")

	// Cut exactly at a step's start, the run has nothing left in flight.
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = e.Runner().ScheduleUntil(p.End, time.Hour)
	require.NoError(t, err)
	require.Greater(t, p.Steps, 3)
	at = p.Start + 3*p.StepTime
	_, err = e.Runner().CompleteUntil(at)
	require.NoError(t, err)
	inFlight, _, err = e.Runner().Truncate(at)
	require.NoError(t, err)
	assert.False(t, inFlight)
	assert.False(t, e.Busy())
	require.NoError(t, e.Check())
	_, _, err = e.Runner().Truncate(at + d)
	assert.NoError(t, err, "nothing in flight: nothing to cut")
}

// A run cut at t without collecting its ended steps first reports them
// with the step in flight, as one move: the same tokens, block-steps and
// end as CompleteUntil(t) then Complete, and the engine is left in the same
// state (the next plan admits the request added at t either way).
func TestTruncateWithUncollectedSteps(t *testing.T) {
	cfg := Config{BlockSize: 4, KVBlocks: 64}
	type result struct {
		tokens     map[int32]int
		blockSteps int
		end        time.Duration
		next       string
	}
	cut := func(collect bool) result {
		e, err := New(cfg, nil)
		require.NoError(t, err)
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 8, Output: 40}))
		require.NoError(t, e.Add(0, Request{Ref: 3, Input: 5, Output: 30}))
		p, _ := step(t, e, 0)
		p, err = e.Runner().ScheduleUntil(p.End, time.Hour)
		require.NoError(t, err)
		require.Greater(t, p.Steps, 12)
		at := p.Start + 10*p.StepTime + p.StepTime/2 // inside the 11th step
		res := result{tokens: map[int32]int{}}
		if collect {
			o, err := e.Runner().CompleteUntil(at)
			require.NoError(t, err)
			require.Equal(t, 10, o.Steps)
			res.blockSteps += o.BlockSteps
			for _, em := range o.Emitted {
				res.tokens[em.Ref] += em.Tokens
			}
		}
		inFlight, end, err := e.Runner().Truncate(at)
		require.NoError(t, err)
		require.True(t, inFlight)
		require.NoError(t, e.Check())
		require.NoError(t, e.Add(at, Request{Ref: 2, Input: 8, Output: 20}))
		o, err := e.Complete(end)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		if !collect {
			assert.Equal(t, 11, o.Steps, "the ended steps and the one in flight, as one move")
		}
		res.blockSteps += o.BlockSteps
		for _, em := range o.Emitted {
			res.tokens[em.Ref] += em.Tokens
		}
		res.end = o.End
		p, err = e.Runner().ScheduleUntil(end, time.Hour)
		require.NoError(t, err)
		res.next = fmt.Sprintf("%+v free %d", *p, e.FreeBlocks())
		return res
	}
	collected, uncollected := cut(true), cut(false)
	assert.Equal(t, map[int32]int{1: 11, 3: 11}, collected.tokens)
	assert.Equal(t, collected, uncollected)
}

// A driver that cuts a run at an instant before one it already brought the
// run to (time going back) gets an error, not blocks held for steps the
// run no longer has.
func TestTruncateRefusesToGoBack(t *testing.T) {
	e, err := New(Config{BlockSize: 4, KVBlocks: 64}, nil)
	require.NoError(t, err)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 8, Output: 40}))
	p, _ := step(t, e, 0)
	p, err = e.Runner().ScheduleUntil(p.End, time.Hour)
	require.NoError(t, err)
	start, d := p.Start, p.StepTime
	_, _, err = e.Runner().Truncate(start + 15*d + d/2) // 16 steps started
	require.NoError(t, err)
	_, _, err = e.Runner().Truncate(start + d/2)
	require.ErrorContains(t, err, "16 of its steps had started")
	require.NoError(t, e.Check())
	o, err := e.Complete(p.End)
	require.NoError(t, err)
	assert.Equal(t, 16, o.Steps)
	require.NoError(t, e.Check())
}
