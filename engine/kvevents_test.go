package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/kvchain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type eventLog []KVEvent

func (l *eventLog) KVEvent(ev KVEvent) { *l = append(*l, ev) }

// runLog is an eventLog that takes runs too (KVEventRunSink), logging a
// run's events one by one: an engine publishing to it must log what it
// logs to an eventLog, so the twin tests give one of two twins a runLog.
type runLog eventLog

func (l *runLog) KVEvent(ev KVEvent) { *l = append(*l, ev) }

func (l *runLog) KVEvents(at time.Duration, keys []uint64, removed bool) {
	for _, k := range keys {
		*l = append(*l, KVEvent{At: at, Key: k, Removed: removed})
	}
}

// chainLog is a runLog that takes runs of stored blocks by name too
// (kvChainSink), logging each run's keys, computed (kvchain.Run.Keys),
// one by one: an engine publishing to it must log what it logs to an
// eventLog, so the twin tests give one of two twins a chainLog in some
// scenarios. It counts the blocks it took so (chained).
type chainLog struct {
	log     *runLog
	chained int
}

// lastFirstRemovals counts the removals chainLogs took in the blocks'
// order (kvRemovedSink), reversing them as they log them
// (TestKVEventsRunsAreSteps).
var lastFirstRemovals int

func (l *chainLog) KVEvent(ev KVEvent) { l.log.KVEvent(ev) }

func (l *chainLog) KVEvents(at time.Duration, keys []uint64, removed bool) {
	l.log.KVEvents(at, keys, removed)
}

func (l *chainLog) KVRemovedLastFirst(at time.Duration, keys []uint64) {
	for i := len(keys) - 1; i >= 0; i-- {
		l.log.KVEvent(KVEvent{At: at, Key: keys[i], Removed: true})
	}
	lastFirstRemovals += len(keys)
}

func (l *chainLog) KVStoredChain(at time.Duration, c kvchain.Run) {
	keys := make([]uint64, c.N)
	c.Keys(keys)
	l.log.KVEvents(at, keys, false)
	l.chained += c.N
}

// keysLog is a chainLog that asks for the keys of the runs it would
// take by name (kvChainKeysSink) once it has taken a removal, as sim's
// EventsView index does, logging them one by one: an engine publishing
// to it must log what it logs to an eventLog.
type keysLog struct {
	chainLog
	removals bool
}

// keyedBlocks counts the blocks keysLogs took by their keys
// (KVStoredChainKeys: TestKVEventsRunsAreSteps).
var keyedBlocks int

func (l *keysLog) KVEvent(ev KVEvent) {
	l.removals = l.removals || ev.Removed
	l.log.KVEvent(ev)
}

func (l *keysLog) KVEvents(at time.Duration, keys []uint64, removed bool) {
	l.removals = l.removals || removed && len(keys) > 0
	l.log.KVEvents(at, keys, removed)
}

func (l *keysLog) KVRemovedLastFirst(at time.Duration, keys []uint64) {
	l.removals = l.removals || len(keys) > 0
	l.chainLog.KVRemovedLastFirst(at, keys)
}

func (l *keysLog) ChainKeys() bool { return l.removals }

func (l *keysLog) KVStoredChainKeys(at time.Duration, keys []uint64) {
	l.log.KVEvents(at, keys, false)
	keyedBlocks += len(keys)
}

// publishTo makes e publish its KV events to log: one by one (how 0),
// in runs (1, runLog), in runs and chains (2, chainLog), or in runs and
// chains and, past the first removal, chains by their keys (3,
// keysLog).
func publishTo(e *Engine, log *eventLog, how int) *chainLog {
	switch how {
	case 1:
		e.PublishKVEvents((*runLog)(log))
	case 2:
		c := &chainLog{log: (*runLog)(log)}
		e.PublishKVEvents(c)
		return c
	case 3:
		c := &keysLog{chainLog: chainLog{log: (*runLog)(log)}}
		e.PublishKVEvents(c)
		return &c.chainLog
	default:
		e.PublishKVEvents(log)
	}
	return nil
}

// KV events by hand, on 40 blocks of 16 tokens. A's 64-token prompt is 4
// units of shared content: its step at 0 stores their 4 keys (stamped
// 0), which stay cached, free, when it leaves. B's 592-token prompt of
// its own needs 37 blocks: the 36 never used, then the head of the cached
// ones, A's last block (freed first): removed at B's step. B's first
// decode, planned as a run of decode steps, needs a 38th block at its
// first step (A's third block, removed at the run's start) and a 39th when
// its context passes 608 tokens, at the run's 17th step (A's second
// block, removed at Start + 16 × StepTime) and a 40th at its 33rd (A's
// first, at Start + 32 × StepTime), as a step-by-step engine would take
// them, though the run took them lazily (CompleteUntil).
func TestKVEventsByHand(t *testing.T) {
	e, err := New(Config{KVBlocks: 40, MaxBatchedTokens: 1024}, costmodel.Frozen{})
	require.NoError(t, err)
	var log eventLog
	e.PublishKVEvents(&log)
	for _, p := range e.FastPaths() {
		switch p.Name {
		case "reserves":
			assert.False(t, p.On, p.Name)
			assert.Contains(t, p.Reason, "KV events are published")
		case "residues", "cohort", "continue", "chunks":
			assert.NotContains(t, p.Reason, "KV events", p.Name)
		}
	}
	tiered, err := New(Config{KVBlocks: 40, MaxBatchedTokens: 1024}, costmodel.Frozen{})
	require.NoError(t, err)
	require.NoError(t, tiered.SetTier(newLRUTier(t, 16)))
	tiered.PublishKVEvents(&eventLog{})
	for _, p := range tiered.FastPaths() {
		if p.Name == "chunks" {
			assert.False(t, p.On)
			assert.Contains(t, p.Reason, whyTierCohort, "runs of chunks off with a tier and KV events")
		}
	}
	keys := e.BlockKeys(nil, []uint64{1, 2, 3, 4}, 16, 65)
	require.Len(t, keys, 4)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 64, Output: 1, Prefix: []uint64{1, 2, 3, 4}, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	want := eventLog{{0, keys[0], false}, {0, keys[1], false}, {0, keys[2], false}, {0, keys[3], false}}
	require.Equal(t, want, log)
	assert.Equal(t, 4, e.CachedBlocks())

	t1 := p.End + time.Second
	require.NoError(t, e.Add(t1, Request{Ref: 2, Input: 592, Output: 40}))
	p, err = e.Schedule(t1)
	require.NoError(t, err)
	want = append(want, KVEvent{t1, keys[3], true})
	require.Equal(t, want, log)
	_, err = e.Complete(p.End)
	require.NoError(t, err)

	r := e.Runner()
	t2 := p.End
	p, err = r.ScheduleUntil(t2, t2+time.Hour)
	require.NoError(t, err)
	require.Greater(t, p.Steps, 33, "a run of decode steps")
	want = append(want, KVEvent{t2, keys[2], true})
	require.Equal(t, want, log, "the run's first step took its block when planned")
	_, err = r.CompleteUntil(p.End - p.StepTime)
	require.NoError(t, err)
	want = append(want, KVEvent{t2 + 16*p.StepTime, keys[1], true}, KVEvent{t2 + 32*p.StepTime, keys[0], true})
	assert.Equal(t, want, log)
	require.NoError(t, e.Check())
}

// The order of a step's stores and evictions when the decode cohort takes
// its members' blocks and a decode outside it caches a block of shared
// output, by hand: 7 blocks of 16 tokens, the Priority policy. A (23
// tokens, priority 0) and S (40, priority 9, its answer shared content)
// are admitted at the first step, X (24, priority 0, its answer shared)
// at the second, after them in the running list; from the third step on
// all three are the cohort. At the 10th step S's context reaches 48
// tokens and asks for a 4th block where none is free (A 2, S 3, X 2):
// the walk preempts S, its own victim, which frees its 3 cached blocks,
// and X, behind it, sits the step out (under FCFS the tail, X, would be
// the victim). At the 11th, A rejoins the cohort
// and X, which did not decode in the last step, does not: A's context
// reaches 32 tokens and takes a block, evicting one of S's, and X's
// decode (context 31) completes its second block, which it caches. The
// walk plans X's decode, and so its store, before it takes the step's
// blocks, A's included: the store is published first, then the removal,
// both stamped with the step's start, and the cohort's engine must
// publish them in that order (planChunked takes the members' blocks with
// the inline decodes', owed, after those cached theirs).
func TestKVEventsStoreBeforeTheCohortsEviction(t *testing.T) {
	cfg := Config{KVBlocks: 7, BlockSize: 16, MaxBatchedTokens: 1024, MaxSeqs: 8, Policy: Priority{}}
	var logs [2]eventLog
	var es [2]*Engine
	for i := range es {
		e, err := New(cfg, costmodel.Frozen{})
		require.NoError(t, err)
		e.PublishKVEvents(&logs[i])
		e.Runner().OmitStreaks(true)
		es[i] = e
	}
	walkRuns(es[1])
	for _, p := range es[0].FastPaths() {
		if p.Name == "cohort" {
			require.True(t, p.On, p.Reason)
		}
	}
	a := Request{Ref: 1, Input: 23, Output: 100}
	s := Request{Ref: 2, Input: 40, Output: 30, Priority: 9, Prefix: seqIDs(200, 5), PrefixBlockTokens: 16, PrefixCoversOutput: true}
	x := Request{Ref: 3, Input: 24, Output: 50, Prefix: seqIDs(300, 5), PrefixBlockTokens: 16, PrefixCoversOutput: true}
	var now time.Duration
	var storeX, removeS KVEvent // X's second block stored, and the removal in its step
	for step := 1; step <= 11; step++ {
		for i, e := range es {
			switch step {
			case 1:
				require.NoError(t, e.Add(now, a))
				require.NoError(t, e.Add(now, s))
			case 2:
				require.NoError(t, e.Add(now, x))
			}
			before := len(logs[i])
			p, err := e.Schedule(now)
			require.NoError(t, err)
			if i == 0 {
				switch step {
				case 10:
					require.Equal(t, []int32{2}, p.Preempted, "S preempted, its own victim")
				case 11:
					require.Equal(t, 1, p.Cohort, "A in the cohort, X not")
					require.Len(t, p.Batch.Decode, 1, "X decodes outside the cohort")
					ev := logs[i][before:]
					require.GreaterOrEqual(t, len(ev), 2, "%+v", ev)
					storeX, removeS = ev[0], ev[1]
				}
			}
			_, err = e.Complete(p.End)
			require.NoError(t, err)
			require.NoError(t, e.Check())
			if i == 1 {
				now = p.End
			}
		}
		require.Equal(t, logs[1], logs[0], "the KV events, cohort then walk, through step %d", step)
	}
	xKeys, sKeys := es[0].BlockKeys(nil, x.Prefix, 16, 33), es[0].BlockKeys(nil, s.Prefix, 16, 49)
	assert.Equal(t, KVEvent{storeX.At, xKeys[1], false}, storeX, "X's second block stored first")
	assert.Equal(t, KVEvent{storeX.At, sKeys[2], true}, removeS, "then S's last block, freed first, evicted in the same step")
}

// The KV events of runs are those of the steps planned one by one, at
// every step end: random engines with small pools, chunk caps and
// budgets that chunk prompts, shared prefixes (answers among them) and
// the Priority policy (chunkRunConfig), publishing KV events, driven in
// runs — of decodes, of prefill chunks whose prompts cache their shared
// blocks as they go (takeStep), and, with streaks omitted half the time
// (the decode cohort), continued at every move's end (Continue, whose
// plan takes its first step's blocks lazily) — and step by step by their
// slow twin (walkRuns), must publish the same events, stamped alike, by
// every step end (SyncTo inside a run), and read and admit the same.
func TestKVEventsRunsAreSteps(t *testing.T) {
	runsChunked, runsChunkPub, runsContinued, runsContinuedCut, quietSyncs = 0, 0, 0, 0, 0
	events := 0
	lastFirstRemovals, keyedBlocks = 0, 0
	for seed := range uint64(400) {
		rng, cfg, model, adds := chunkRunScenario(seed, 4141041, true)
		cuts := rand.New(rand.NewPCG(seed, 41))
		o := timelineOpts{cont: true, omit: rng.IntN(2) == 0, cut: func() bool { return cuts.IntN(3) == 0 }}
		slow := eventsTimeline(t, cfg, model, adds, o, false, 0)
		how := rng.IntN(3)
		if how == 2 && seed%2 == 1 {
			how = 3 // chains by their keys past the first removal
		}
		fast := eventsTimeline(t, cfg, model, adds, o, true, how)
		events += strings.Count(slow, "{") // an event's braces
		require.Equal(t, slow, fast, "seed %d, %+v, streaks omitted %v", seed, cfg, o.omit)
	}
	t.Logf("%d runs of prefill chunks, %d caching shared content, %d continued runs (%d cut at their start and planned again); %d KV events compared; %d syncs of quiet runs; %d removals taken in the blocks' order; %d blocks stored by their keys", runsChunked, runsChunkPub, runsContinued, runsContinuedCut, events, quietSyncs, lastFirstRemovals, keyedBlocks)
	assert.Positive(t, lastFirstRemovals, "the scenarios no longer evict runs of blocks to a chainLog (kvRemovedSink)")
	assert.Positive(t, keyedBlocks, "the scenarios no longer store runs by their keys to a keysLog (kvChainKeysSink)")
	assert.Greater(t, quietSyncs, 1000, "the scenarios no longer sync quiet runs (quietRun)")
	assert.Greater(t, runsChunked, 200, "the scenarios no longer plan runs of prefill chunks")
	assert.Positive(t, runsChunkPub, "the scenarios no longer plan runs of chunks that cache shared content")
	assert.Greater(t, runsContinued, 200, "the scenarios no longer continue runs")
	assert.Greater(t, runsContinuedCut, 50, "the scenarios no longer cut continued runs at their start")
}

// eventsTimeline is the timeline of an engine of cfg and model publishing
// its KV events, written down with them (timelineWith, o's options): the
// slow twin's step by step, or with fast the engine's in runs, its sink
// taking runs of events too with runs 1 (runLog), and runs of stored
// blocks by name with 2 (chainLog).
func eventsTimeline(t *testing.T, cfg Config, model costmodel.Model, adds map[time.Duration][]Request, o timelineOpts, fast bool, runs int) string {
	t.Helper()
	e, err := New(cfg, model)
	require.NoError(t, err)
	if !fast {
		walkRuns(e)
	}
	var log eventLog
	publishTo(e, &log, runs)
	e.Runner().SetStrict(true)
	o.events = &log
	return timelineWith(t, e, fast, adds, o)
}
