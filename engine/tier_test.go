package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/kvtier"
)

// lruTier is a Tier over one kvtier.LRU, as vLLM's CPU offloading
// connector: write-through, inclusive, the request's keys touched on every
// lookup, a load's keys pinned until it ends. It checks what the engine
// asks of it: a load is of keys it holds and finds, a release ends a load.
type lruTier struct {
	t       testing.TB
	l       *kvtier.LRU
	loads   map[int32][]uint64
	stores  []uint64 // every key stored, in order
	offered int      // keys offered, stored or not
	evicted []uint64
}

func newLRUTier(t testing.TB, blocks int) *lruTier {
	l, err := kvtier.New(kvtier.Config{Blocks: blocks})
	require.NoError(t, err)
	return &lruTier{t: t, l: l, loads: map[int32][]uint64{}}
}

func (x *lruTier) Store(keys, chain []uint64) bool {
	x.offered += len(keys)
	fresh := false
	for _, k := range keys {
		fresh = fresh || !x.l.Contains(k)
	}
	var ok bool
	x.evicted, _, ok = x.l.Insert(keys, x.evicted[:0])
	if ok {
		x.stores = append(x.stores, keys...)
		if fresh {
			x.l.Touch(chain)
		}
	}
	return ok
}

func (x *lruTier) Find(keys []uint64, hbm int) (int, bool) {
	n := 0
	for _, k := range keys[hbm:] {
		if !x.l.Lookup(k) {
			break
		}
		if x.l.Pinned(k) {
			return 0, true
		}
		n++
	}
	x.l.Touch(keys)
	return n, false
}

func (x *lruTier) Load(ref int32, keys []uint64) {
	if _, ok := x.loads[ref]; ok {
		x.t.Errorf("request %d loads twice", ref)
	}
	for _, k := range keys {
		if !x.l.Pin(k) {
			x.t.Errorf("request %d loads key %x, which the tier does not hold", ref, k)
		}
	}
	x.loads[ref] = append([]uint64(nil), keys...)
}

func (x *lruTier) Release(ref int32) {
	keys, ok := x.loads[ref]
	if !ok {
		x.t.Errorf("release of request %d, which loads nothing", ref)
	}
	for _, k := range keys {
		if !x.l.Unpin(k) {
			x.t.Errorf("request %d releases key %x, not pinned", ref, k)
		}
	}
	delete(x.loads, ref)
}

// logTier is an lruTier that writes down every call, in order, and says
// it is private (PrivateTier): only its engine calls it.
type logTier struct {
	*lruTier
	log   strings.Builder
	calls int
}

func (x *logTier) Private() bool { return true }

func (x *logTier) Store(keys, chain []uint64) bool {
	ok := x.lruTier.Store(keys, chain)
	x.note("store %x chain %x: %v", keys, chain, ok)
	return ok
}

func (x *logTier) Find(keys []uint64, hbm int) (int, bool) {
	n, busy := x.lruTier.Find(keys, hbm)
	x.note("find %x from %d: %d %v", keys, hbm, n, busy)
	return n, busy
}

func (x *logTier) Load(ref int32, keys []uint64) {
	x.lruTier.Load(ref, keys)
	x.note("load %d %x", ref, keys)
}

func (x *logTier) Release(ref int32) {
	x.lruTier.Release(ref)
	x.note("release %d", ref)
}

func (x *logTier) note(format string, args ...any) {
	x.calls++
	fmt.Fprintf(&x.log, format+"\n", args...)
}

// TestTierRunsAreSteps: with a private tier (PrivateTier), runs of
// decode steps and of prefill chunks hand the tier each later step's
// stores as they take its blocks (storeRun), and stop where a later
// step's plan would look the waiting head up in it: random engines with
// small pools (HBM evicts, so prompts load back from the tier), tiers of
// 0 to 96 blocks (they refuse and evict), conversations whose turns share
// a prefix, chunk caps and Priority, each driven both ways, make the same
// calls to the tier in the same order (every store's keys and chain,
// every lookup, load and release), the same count of them by every step
// end (SyncTo), and admit, land and emit at the same instants.
func TestTierRunsAreSteps(t *testing.T) { tierRunsAreSteps(t, false) }

// TestTierCohortRunsAreSteps is TestTierRunsAreSteps with streaks left
// out of the outcomes (OmitStreaks), so that the decode cohort is kept
// where the block size and the model let it: the fast engine's members
// offer their stores from the cohort (coStore), in single steps and in
// runs (storeRun, allocTierSteps), and the slow twin (walkRuns: no
// cohort) walks every step. The tier sees the same calls in the same
// order, and both admit, reserve and land at the same instants and
// read the same at every step end (the tokens of streaks are left out of
// the outcomes).
func TestTierCohortRunsAreSteps(t *testing.T) {
	runsCohortStored = 0
	tierRunsAreSteps(t, true)
	t.Logf("%d cohort runs offered stores in their later steps", runsCohortStored)
	assert.Greater(t, runsCohortStored, 100, "the scenarios no longer plan cohort runs that store")
}

// TestTierContinueIsSteps is TestTierCohortRunsAreSteps with the fast
// engine's runs continued at every move's end (Continue, which a
// PrivateTier lets plan: continueTier), cut at their start a third of
// the time (as a driver does for an event at that instant, a landing
// among them) and planned again, and with sequence caps of one to
// three a third of the time, so that requests wait at MaxSeqs: the
// tier sees the same calls in the same order as the walk's (walkRuns,
// step by step; a continued run offers its first step's stores as it
// is brought to an instant, where ScheduleUntil's plan offers them at
// once), and both admit, reserve, land and read the same. The twin,
// contTier off (Continue declines: every plan ScheduleUntil's), must
// read the same too. More than 300 runs must be continued (1,056), 50
// of them while requests wait at MaxSeqs (386), and 4 with tier loads
// landed (10).
func TestTierContinueIsSteps(t *testing.T) {
	runsContinued, runsContinuedWaiting, runsContinuedCut, runsContinuedLanded = 0, 0, 0, 0
	tierRunsAreStepsWith(t, true, true)
	t.Logf("%d continued runs, %d of them while requests waited, %d with tier loads landed, %d cut at their start", runsContinued, runsContinuedWaiting, runsContinuedLanded, runsContinuedCut)
	assert.Greater(t, runsContinued, 300, "the scenarios no longer continue runs with a tier")
	assert.Greater(t, runsContinuedWaiting, 50, "the scenarios no longer continue runs with a tier at MaxSeqs while requests wait")
	assert.Greater(t, runsContinuedLanded, 4, "the scenarios no longer continue runs at MaxSeqs with tier loads landed")
}

// tierRunsAreSteps is TestTierRunsAreSteps, with streaks omitted and the
// slow twin walking (walkRuns) when omit is set.
func tierRunsAreSteps(t *testing.T, omit bool) { tierRunsAreStepsWith(t, omit, false) }

// tierRunsAreStepsWith is tierRunsAreSteps, the fast engine's runs
// continued (TestTierContinueIsSteps) when cont is set.
func tierRunsAreStepsWith(t *testing.T, omit, cont bool) {
	runsStored = 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 43))
		cfg, model := chunkRunConfig(rng, 16)
		if cont && rng.IntN(3) == 0 {
			cfg.MaxSeqs = 1 + rng.IntN(3) // requests wait at the cap (admitsNone)
		}
		tierBlocks := rng.IntN(4) * 32
		adds := map[time.Duration][]Request{}
		for i := range 2 + rng.IntN(14) {
			at := time.Duration(rng.IntN(30)) * 200 * time.Millisecond // apart: a step spans no two instants
			r := Request{Ref: int32(i), Input: 1 + rng.IntN(min(200, cfg.KVBlocks*cfg.BlockSize/2)), Output: 1 + rng.IntN(60), Priority: rng.IntN(3)}
			if rng.IntN(3) != 0 && r.Input >= 8 { // a turn of one of two conversations
				for j := range r.Input / 8 {
					r.Prefix = append(r.Prefix, uint64(rng.IntN(2)*100+j))
				}
				r.PrefixBlockTokens = 8
			}
			adds[at] = append(adds[at], r)
		}
		delay := func(ref int32) time.Duration { return time.Duration(1+int(ref)%5) * 7 * time.Millisecond }
		run := func(fast bool) (string, string) {
			cuts := rand.New(rand.NewPCG(seed, 62))
			e, err := New(cfg, model)
			require.NoError(t, err)
			e.Runner().SetStrict(true)
			if omit {
				e.Runner().OmitStreaks(true)
				if !fast {
					walkRuns(e)
				}
			}
			tier := &logTier{lruTier: newLRUTier(t, tierBlocks)}
			require.NoError(t, e.SetTier(tier))
			line := timelineWith(t, e, fast, adds, timelineOpts{delay: delay, cont: cont, cut: func() bool { return cuts.IntN(3) == 0 }})
			if omit { // an outcome lists a streak's tokens only at its ends: the tokens are not compared
				line = regexp.MustCompile(`(?m)^.*: token .*\n`).ReplaceAllString(line, "")
			}
			return line, tier.log.String()
		}
		wantLine, wantLog := run(false)
		gotLine, gotLog := run(true)
		require.Equal(t, wantLog, gotLog, "seed %d, %+v: the tier's calls", seed, cfg)
		require.Equal(t, wantLine, gotLine, "seed %d, %+v", seed, cfg)
		if cont && seed%4 == 0 { // the twin: Continue off (contTier)
			contTier = false
			twinLine, twinLog := run(true)
			contTier = true
			require.Equal(t, wantLog, twinLog, "seed %d, %+v: the tier's calls, contTier off", seed, cfg)
			require.Equal(t, wantLine, twinLine, "seed %d, %+v, contTier off", seed, cfg)
		}
	}
	t.Logf("%d runs offered stores in their later steps", runsStored)
	assert.Greater(t, runsStored, 300, "the scenarios no longer plan runs that store")
}

// TestTierRunsAreStepsEachStep is TestTierRunsAreSteps (and
// TestTierCohortRunsAreSteps) with storeRun's
// slow twin (storeEachStep): every request tried at every step of a run,
// where storeRun jumps to the steps that store (storeFrom, storeStep).
func TestTierRunsAreStepsEachStep(t *testing.T) {
	storeEachStep = true
	defer func() { storeEachStep = false }()
	TestTierRunsAreSteps(t)
	tierRunsAreSteps(t, true) // the cohort's stores too (coStore at every step)
}

// TestTierCohortMembersLeaveMidList: the cohort's members listed for
// their stores by residue (coStores) leave it partway through a list.
// Requests come in waves, each wave's prompts of one length modulo the
// block size (4, 8 or 16), so that they join the cohort at one step and
// share a residue's list, with outputs of random lengths, so that a
// member listed early finishes while one listed after it decodes on:
// the next run's coNext meets an entry no longer in before one that is
// (coNextPastOut counts the steps it found so), and must not drop the
// list. The tier's calls (every store's keys and chain, every lookup,
// load and release, by every step end) and the timeline are the walk's
// (walkRuns: no cohort), as in TestTierCohortRunsAreSteps, whose
// scenarios put few members on a list and did not catch coNext testing
// a list's first entry only (sim's tier tests did).
func TestTierCohortMembersLeaveMidList(t *testing.T) {
	coNextPastOut.Store(0)
	runsCohortStored = 0
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 4141))
		b := []int{4, 8, 16}[rng.IntN(3)]
		cfg := Config{BlockSize: b, KVBlocks: 64 + rng.IntN(400), MaxSeqs: 4 + rng.IntN(12), MaxBatchedTokens: 256 + rng.IntN(1024)}
		if rng.IntN(4) == 0 {
			cfg.Policy = Priority{}
		}
		tierBlocks := []int{8, 64, 1024}[rng.IntN(3)] // the smallest refuses: members lag
		adds := map[time.Duration][]Request{}
		ref := int32(0)
		for w := range 2 + rng.IntN(4) {
			at := time.Duration(w*(1+rng.IntN(40))) * 50 * time.Millisecond
			in := 1 + rng.IntN(3*b) // the wave's length modulo b
			for range 2 + rng.IntN(8) {
				r := Request{Ref: ref, Input: in + b*rng.IntN(6), Output: 1 + rng.IntN(12*b), Priority: rng.IntN(2)}
				if rng.IntN(3) == 0 && r.Input >= b { // a shared first block or more: some find it in the tier
					for j := range r.Input / b {
						r.Prefix = append(r.Prefix, uint64(1000*(1+rng.IntN(2))+j))
					}
					r.PrefixBlockTokens = b
				}
				adds[at] = append(adds[at], r)
				ref++
			}
		}
		delay := func(ref int32) time.Duration { return time.Duration(1+int(ref)%3) * 5 * time.Millisecond }
		run := func(fast bool) (string, string) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.Runner().SetStrict(true)
			e.Runner().OmitStreaks(true)
			if !fast {
				walkRuns(e)
			}
			tier := &logTier{lruTier: newLRUTier(t, tierBlocks)}
			require.NoError(t, e.SetTier(tier))
			line := timelineWith(t, e, fast, adds, timelineOpts{delay: delay, omit: true, noSync: true})
			return line, tier.log.String()
		}
		wantLine, wantLog := run(false)
		gotLine, gotLog := run(true)
		require.Equal(t, wantLog, gotLog, "seed %d, %+v: the tier's calls", seed, cfg)
		require.Equal(t, wantLine, gotLine, "seed %d, %+v", seed, cfg)
	}
	t.Logf("%d steps found by a member listed after one that left; %d cohort runs stored", coNextPastOut.Load(), runsCohortStored)
	assert.Greater(t, coNextPastOut.Load(), int64(50), "the scenarios no longer list members after ones that left")
}

// TestTierLoadThenPrefillTheRest: on a replica of 10 blocks of 16 tokens,
// request 1 (70 prompt tokens whose first 64 are shared content, 2 output)
// runs and stores its 4 full blocks of prompt in the tier (the decode
// completes no block: 71 tokens); request 2 (159 tokens, 10 blocks) then
// evicts all of them from HBM. Request 3, with request 1's prompt, finds
// nothing in HBM and its 4 blocks in the tier: an empty step (1 µs)
// reserves ⌈64/16⌉ = 4 blocks for them (5 fit under the gate for its 70
// tokens, and takes 4, as vLLM) and asks no budget; nothing runs until the load lands, and the
// next plan prefills its last 6 tokens at context 64, first scheduled
// with 0 tokens from HBM.
func TestTierLoadThenPrefillTheRest(t *testing.T) {
	e, err := New(Config{KVBlocks: 10, BlockSize: 16}, nil)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	prefix := []uint64{11, 12, 13, 14}
	run := func(now time.Duration) time.Duration {
		for {
			p, err := e.Schedule(now)
			require.NoError(t, err)
			if p == nil {
				return now
			}
			_, err = e.Complete(p.End)
			require.NoError(t, err)
			checked(t, e, "a step")
			now = p.End
		}
	}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 70, Output: 2, Prefix: prefix, PrefixBlockTokens: 16}))
	now := run(0)
	require.Len(t, tier.stores, 4, "its 4 full prompt blocks, offered once")
	require.NoError(t, e.Add(now, Request{Ref: 2, Input: 159, Output: 1}))
	now = run(now)
	require.Equal(t, 0, e.CachedBlocks(), "request 2 took every block")
	assert.Len(t, tier.stores, 4+9, "request 2's own 9 full blocks are written through too")

	require.NoError(t, e.Add(now, Request{Ref: 3, Input: 70, Output: 2, Prefix: prefix, PrefixBlockTokens: 16}))
	p, err := e.Schedule(now)
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, []Reservation{{Ref: 3, Tokens: 64, Cached: 0, Tier: true}}, p.Reserved)
	assert.Equal(t, time.Microsecond, p.StepTime, "a reserve-only step is empty")
	assert.Empty(t, p.Started)
	assert.Equal(t, 10-4, e.FreeBlocks(), "blocks for the 64 loaded tokens only, as vLLM (5 fit under the gate)")
	assert.Equal(t, 1, e.Waiting(), "a request loading counts as waiting")
	assert.Equal(t, tier.stores[:4], tier.loads[3], "the keys request 1 stored")
	checked(t, e, "the reservation")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	require.Nil(t, p, "nothing runs before the load lands")

	land := now + 5*time.Millisecond
	require.NoError(t, e.Land(land, 3))
	assert.Empty(t, tier.loads, "released at landing")
	assert.Equal(t, 4, e.CachedBlocks(), "its loaded blocks are cached at landing")
	assert.Equal(t, 6+2, e.Outstanding(0), "6 prompt tokens to prefill, 2 to emit")
	checked(t, e, "Land")
	require.ErrorIs(t, e.Land(land, 3), ErrNotReserved)
	p, err = e.Schedule(land)
	require.NoError(t, err)
	require.NotNil(t, p)
	assert.Equal(t, []int32{3}, p.Started)
	assert.Equal(t, []int{0}, p.Cached, "no token from HBM")
	require.Len(t, p.Batch.Prefill, 1)
	assert.Equal(t, 6, p.Batch.Prefill[0].NewTokens)
	assert.Equal(t, 64, p.Batch.Prefill[0].Context)
	sc, ok := e.Scheduled(nil)
	require.True(t, ok)
	assert.Equal(t, []Scheduled{{Ref: 3, Tokens: 6, Computed: 64, Cached: 0, Kind: ScheduledNew}}, sc)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	run(p.End)
	assert.Len(t, tier.stores, 4+9, "request 3 offers nothing: it loaded its full blocks")
	assert.True(t, e.Idle())
	checked(t, e, "the end")
}

// TestTierBusySkipsAndTheLoopGoesOn: requests 3 and 4 share a prefix the
// tier holds and HBM lost; request 5 has none. In one plan, request 3
// reserves the load, request 4 finds the blocks being loaded and is
// skipped (vLLM's "ask again later"), and request 5 is admitted behind
// it. Request 4 waits at the queue's front; once 3 landed, it finds the
// blocks in HBM and loads nothing.
func TestTierBusySkipsAndTheLoopGoesOn(t *testing.T) {
	e, err := New(Config{KVBlocks: 40, BlockSize: 16}, nil)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	prefix := []uint64{21, 22, 23, 24}
	keys := PrefixKeys(nil, prefix, 16, 70, 16)
	tier.Store(keys, keys)
	for ref := int32(3); ref <= 5; ref++ {
		r := Request{Ref: ref, Input: 70, Output: 3, Prefix: prefix, PrefixBlockTokens: 16}
		if ref == 5 {
			r.Prefix = nil
		}
		require.NoError(t, e.Add(0, r))
	}
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 3, Tokens: 64, Tier: true}}, p.Reserved)
	assert.Equal(t, []int32{5}, p.Started, "the loop went on past the skipped request")
	assert.Equal(t, 2, e.Waiting(), "request 4 waiting, request 3 loading")
	assert.Equal(t, int32(4), e.waiting.peek().req.Ref, "the skipped request is back at the front")
	checked(t, e, "the plan")
	require.NoError(t, e.Land(time.Millisecond, 3))
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	assert.Empty(t, p.Reserved, "request 4 finds its blocks in HBM")
	assert.Equal(t, []int32{3, 4}, p.Started, "the landed request first")
	assert.Equal(t, []int{0, 64}, p.Cached)
	checked(t, e, "the second plan")
}

// TestTierAbortWhileLoading: an abort of a request whose load is in
// flight releases the tier's pins and frees its blocks at once; a later
// Land of it is refused.
func TestTierAbortWhileLoading(t *testing.T) {
	e, err := New(Config{KVBlocks: 40, BlockSize: 16}, nil)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	prefix := []uint64{31, 32, 33}
	keys := PrefixKeys(nil, prefix, 16, 60, 16)
	tier.Store(keys, keys)
	require.NoError(t, e.Add(0, Request{Ref: 9, Input: 60, Output: 3, Prefix: prefix, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 9, Tokens: 48, Tier: true}}, p.Reserved)
	assert.Equal(t, 37, e.FreeBlocks(), "the blocks of its 48 loaded tokens")
	require.NoError(t, e.Abort(time.Microsecond/2, 9))
	assert.Empty(t, tier.loads)
	assert.Equal(t, 40, e.FreeBlocks())
	checked(t, e, "the abort")
	require.ErrorIs(t, e.Land(time.Millisecond, 9), ErrNotReserved)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	assert.True(t, e.Idle())
}

// TestTierNeedsThePrefixCache: a tier is keyed by the prefix cache's
// keys; with the cache off SetTier refuses it.
func TestTierNeedsThePrefixCache(t *testing.T) {
	e, err := New(Config{DisablePrefixCache: true}, nil)
	require.NoError(t, err)
	require.ErrorContains(t, e.SetTier(newLRUTier(t, 1)), "PrefixCache")
}

// TestTierFastPathsOff: a tier turns reservations inside runs off,
// runs (with runs of chunks), joins and Continue unless it is a
// PrivateTier that says only its engine calls it, and the cohort with KV
// events published, and says why.
func TestTierFastPathsOff(t *testing.T) {
	for _, private := range []bool{false, true} {
		e, err := New(Config{}, nil)
		require.NoError(t, err)
		e.Runner().OmitStreaks(true)
		var tier Tier = newLRUTier(t, 1)
		if private {
			tier = &logTier{lruTier: newLRUTier(t, 1)}
		}
		require.NoError(t, e.SetTier(tier))
		off := map[string]bool{"continue": !private, "reserves": true, "joins": !private, "runs": !private, "chunks": !private}
		for _, f := range e.FastPaths() {
			assert.Equal(t, !off[f.Name], f.On, "%s, private %v", f.Name, private)
			if off[f.Name] {
				assert.Contains(t, f.Reason, "KV tier", f.Name)
			}
		}
		e.PublishKVEvents(&eventLog{})
		for _, f := range e.FastPaths() {
			if f.Name == "cohort" {
				assert.False(t, f.On)
				assert.Contains(t, f.Reason, "KV tier with KV events")
			}
		}
	}
}

// TestZeroTierIsNoTier: an engine with a tier of no room plans every step
// as an engine without one, step by step (Schedule plans one step), on
// random workloads with shared prefixes, conversations, KV pressure,
// aborts, Priority and chunking off: the tier's waiting loop (admitAsync)
// is the engine's own when the tier never holds a block.
func TestZeroTierIsNoTier(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 39))
		cfg := Config{KVBlocks: 20 + rng.IntN(200), BlockSize: []int{4, 16}[rng.IntN(2)], MaxSeqs: 1 + rng.IntN(8),
			MaxBatchedTokens: 64 + rng.IntN(512), DisableChunkedPrefill: rng.IntN(5) == 0, Watermark: float64(rng.IntN(3)) / 50}
		if rng.IntN(2) == 0 {
			cfg.Policy = Priority{}
		}
		a, err := New(cfg, nil)
		require.NoError(t, err)
		b, _ := New(cfg, nil)
		tier := newLRUTier(t, 0)
		require.NoError(t, a.SetTier(tier))
		var now time.Duration
		var next int32
		var inFlight *Plan
		for i := 0; i < 400 || !a.Idle(); i++ {
			require.Less(t, i, 100000, "seed %d: does not drain", seed)
			switch op := rng.IntN(6); {
			case op < 2 && i < 400:
				r := Request{Ref: next, Input: 1 + rng.IntN(300), Output: 1 + rng.IntN(40), Priority: rng.IntN(3),
					Prefix: []uint64{uint64(rng.IntN(3)), uint64(rng.IntN(4))}, PrefixBlockTokens: 16}
				next++
				ea, eb := a.Add(now, r), b.Add(now, r)
				require.Equal(t, eb, ea, "seed %d: Add", seed)
			case op == 2 && i < 400:
				ref := next - 1 - int32(rng.IntN(4))
				require.Equal(t, b.Abort(now, ref), a.Abort(now, ref), "seed %d: Abort", seed)
			default:
				if inFlight == nil {
					pa, err := a.Schedule(now)
					require.NoError(t, err)
					pb, _ := b.Schedule(now)
					require.Equal(t, planShape(b, pb), planShape(a, pa), "seed %d: step %d", seed, i)
					if pa == nil {
						now += time.Millisecond
						continue
					}
					inFlight = pa
				} else {
					oa, err := a.Complete(inFlight.End)
					require.NoError(t, err)
					ob, _ := b.Complete(inFlight.End)
					require.True(t, reflect.DeepEqual(ob, oa), "seed %d: outcome", seed)
					now, inFlight = inFlight.End, nil
				}
			}
			require.NoError(t, a.Check(), "seed %d", seed)
			require.Equal(t, state(b, now), state(a, now), "seed %d", seed)
		}
		assert.Positive(t, tier.offered, "seed %d: the tier was offered blocks", seed)
		assert.Zero(t, tier.l.Len())
	}
}

// TestTierCountsStores: the tier is offered each full block of a
// request's known sequence once, prompt and output (vLLM stores up to
// min(computed + scheduled, num_tokens)): a request of 40 prompt and 30
// output tokens at block 16 ends with 69 tokens in KV (its last token is
// emitted, never computed), so 4 full blocks.
func TestTierCountsStores(t *testing.T) {
	e, err := New(Config{BlockSize: 16, MaxBatchedTokens: 16, MaxSeqs: 1}, nil)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 40, Output: 30}))
	var now time.Duration
	for {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			break
		}
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		now = p.End
	}
	assert.Len(t, tier.stores, 69/16)
	seen := map[uint64]bool{}
	for _, k := range tier.stores {
		require.False(t, seen[k], fmt.Sprintf("key %x offered twice", k))
		seen[k] = true
	}
}

// TestTierUnstall: vLLM's rule (a load takes its loaded tokens' blocks,
// the rest at admission) can stall a replica with nothing running. On 10
// blocks of 16 tokens, request 1 (150 tokens: 10 blocks under the gate)
// and request 2 (90 tokens: 6) each load a 64-token prefix from the tier
// (4 blocks each); once both landed, request 1 lacks 6 blocks and 2 are
// free, request 2 holding 4, and nothing runs to free any. The engine
// returns request 2 to the queue (its loaded blocks stay cached, free),
// admits request 1 with a prefill of its last 86 tokens; request 1's
// blocks, all ten, evict request 2's prefix from HBM, and request 2 loads
// it again from the tier once request 1 is done.
func TestTierUnstall(t *testing.T) {
	e, err := New(Config{KVBlocks: 10, BlockSize: 16}, nil)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	p1, p2 := []uint64{41, 42, 43, 44}, []uint64{51, 52, 53, 54}
	for _, p := range [][]uint64{p1, p2} {
		keys := PrefixKeys(nil, p, 16, 80, 16)
		require.True(t, tier.Store(keys, keys))
	}
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 150, Output: 2, Prefix: p1, PrefixBlockTokens: 16}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 90, Output: 2, Prefix: p2, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 1, Tokens: 64, Tier: true}, {Ref: 2, Tokens: 64, Tier: true}}, p.Reserved)
	assert.Equal(t, 2, e.FreeBlocks())
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	require.NoError(t, e.Land(p.End, 1))
	require.NoError(t, e.Land(p.End, 2))
	checked(t, e, "both landed")
	p, err = e.Schedule(p.End)
	require.NoError(t, err)
	require.NotNil(t, p, "a stalled replica moves on")
	assert.Equal(t, 1, e.stalls)
	assert.Equal(t, []int32{1}, p.Started)
	assert.Equal(t, []costmodel.Chunk{{NewTokens: 86, Context: 64}}, p.Batch.Prefill)
	assert.Equal(t, 1, e.Waiting(), "request 2 waits in the queue again")
	checked(t, e, "the unstalled plan")
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	now, seen := p.End, false
	for {
		p, err = e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			break
		}
		if len(p.Started) > 0 && p.Started[0] == 2 {
			seen = true
		}
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		now = p.End
		for _, r := range p.Reserved {
			require.Equal(t, Reservation{Ref: 2, Tokens: 64, Tier: true}, r, "request 1 took every block: request 2 loads again")
			require.NoError(t, e.Land(now, r.Ref))
		}
		checked(t, e, "a step")
	}
	assert.True(t, seen)
	assert.True(t, e.Idle())
}

// setTier is a tier that holds what it is given and forgets on demand;
// Find answers the leading run it holds; loads pin nothing.
type setTier struct {
	held   map[uint64]bool
	stores []uint64
}

func (x *setTier) Store(keys, _ []uint64) bool {
	for _, k := range keys {
		x.stores = append(x.stores, k)
		x.held[k] = true
	}
	return true
}

func (x *setTier) Find(keys []uint64, hbm int) (int, bool) {
	n := 0
	for _, k := range keys[hbm:] {
		if !x.held[k] {
			break
		}
		n++
	}
	return n, false
}

func (x *setTier) Load(int32, []uint64) {}
func (x *setTier) Release(int32)        {}

// TestTierReoffersAfterAPreemption: a request that loads from the tier
// after a preemption offers again the blocks past those it loaded, as
// vLLM's update_state_after_alloc resets next_stored_block_idx to the
// blocks the request holds (offloading/scheduler.py:564-568), so a block
// the tier lost since its first store is stored again. Request 1 (40
// prompt and 60 output tokens, every block shared content) stores blocks
// 0 to 3, is preempted by request 2 of higher priority, the tier loses
// its block 3, and once it resumed (loading blocks 0 to 2 after its HBM
// hits) and recomputed block 3, block 3 is offered again. The
// differential harness against vLLM found it (o3, step 670).
func TestTierReoffersAfterAPreemption(t *testing.T) {
	e, err := New(Config{KVBlocks: 10, BlockSize: 16, MaxSeqs: 8, MaxBatchedTokens: 2048, Policy: Priority{}}, nil)
	require.NoError(t, err)
	tr := &setTier{held: map[uint64]bool{}}
	require.NoError(t, e.SetTier(tr))
	ids := []uint64{100, 101, 102, 103, 104, 105}
	r1 := Request{Ref: 1, Input: 40, Output: 60, Priority: 5, Prefix: ids, PrefixBlockTokens: 16, PrefixCoversOutput: true}
	chain := PrefixKeys(nil, ids, 16, 101, 16)
	var now time.Duration
	step := func() *Plan {
		p, err := e.Schedule(now)
		require.NoError(t, err)
		if p == nil {
			return nil
		}
		_, err = e.Complete(p.End)
		require.NoError(t, err)
		now = p.End
		for _, r := range p.Reserved {
			require.NoError(t, e.Land(now, r.Ref))
		}
		checked(t, e, "a step")
		return p
	}
	require.NoError(t, e.Add(now, r1))
	for len(tr.stores) < 4 {
		step()
	}
	require.Equal(t, chain[:4], tr.stores)
	require.NoError(t, e.Add(now, Request{Ref: 2, Input: 64, Output: 60, Priority: 0}))
	for preempted := false; !preempted; {
		p := step()
		require.NotNil(t, p)
		for _, r := range p.Preempted {
			preempted = preempted || r == 1
		}
	}
	delete(tr.held, chain[3]) // the tier evicted it
	before := len(tr.stores)
	for step() != nil {
	}
	assert.Contains(t, tr.stores[before:], chain[3], "block 3 offered again after the resumed request recomputed it")
	assert.True(t, tr.held[chain[3]])
	assert.True(t, e.Idle())
}

// TestTierLoadOfARefusedPlan: a plan its model prices at no time is
// refused (ErrBadStepTime), and with it the tier loads it reserved: the
// tier's pins are released, the request waits again without blocks, and
// the next plan reserves the same load.
func TestTierLoadOfARefusedPlan(t *testing.T) {
	broken := true
	m := costmodel.Func(func(b costmodel.Batch) time.Duration {
		if broken {
			return 0
		}
		return costmodel.Frozen{}.StepTime(b)
	})
	e, err := New(Config{KVBlocks: 100, BlockSize: 16}, m)
	require.NoError(t, err)
	tier := newLRUTier(t, 100)
	require.NoError(t, e.SetTier(tier))
	prefix := []uint64{61, 62, 63}
	keys := PrefixKeys(nil, prefix, 16, 60, 16)
	tier.Store(keys, keys)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 30, Output: 2}))
	require.NoError(t, e.Add(0, Request{Ref: 2, Input: 60, Output: 3, Prefix: prefix, PrefixBlockTokens: 16}))
	_, err = e.Schedule(0)
	require.ErrorIs(t, err, ErrBadStepTime)
	assert.Empty(t, tier.loads, "the refused plan's load released")
	assert.Equal(t, 0, e.Reserved())
	assert.Equal(t, 100, e.FreeBlocks())
	checked(t, e, "a refused plan")
	broken = false
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 2, Tokens: 48, Tier: true}}, p.Reserved)
	assert.Equal(t, keys, tier.loads[2])
	checked(t, e, "the plan again")
}

// TestTierContinueAfterRefusedHeadAborts: a continued tier run forgets
// the waiting head the last plan refused (continueTier clears
// refusedHead). Request 1 decodes on a replica of 8 blocks of 16 tokens;
// request 2 (100 prompt tokens of shared content, 7 blocks) comes and
// is refused, so ScheduleUntil's runs look it up at every step
// (headRefused, allocTierSteps); it is aborted inside such a run, which
// is cut there, and at the step end Continue plans the decode run with
// nothing waiting. Request 3 then comes inside that run, in the seq
// request 2 left (newSeq), and the run is cut at its arrival (Add, then
// Truncate, which brings the run's lazy steps up to there: allocThrough). A
// stale refusedHead would look request 3 up in the tier at each of those
// steps, where the step-by-step engine, nothing waiting, looks nobody up:
// the tier's calls and the timeline are those of contTier off (every
// plan ScheduleUntil's) and of the walk (walkRuns).
func TestTierContinueAfterRefusedHeadAborts(t *testing.T) {
	prefix := []uint64{21, 22, 23, 24, 25, 26}
	head := func(ref int32) Request {
		return Request{Ref: ref, Input: 100, Output: 5, Prefix: prefix, PrefixBlockTokens: 16}
	}
	type event struct {
		at    time.Duration
		add   *Request
		abort int32
	}
	b, c := head(2), head(3)
	run := func(fast bool) (string, string, int) {
		e, err := New(Config{KVBlocks: 8, BlockSize: 16, MaxSeqs: 4}, nil)
		require.NoError(t, err)
		e.Runner().SetStrict(true)
		e.Runner().OmitStreaks(true) // Continue's cohort
		if !fast {
			walkRuns(e)
		}
		tier := &logTier{lruTier: newLRUTier(t, 64)}
		require.NoError(t, e.SetTier(tier))
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 40, Output: 400}))
		evs := []event{{at: 30*time.Millisecond + 123, add: &b}, {at: 200*time.Millisecond + 77, abort: 2}, {at: 400*time.Millisecond + 51, add: &c}}
		var line strings.Builder
		apply := func(ev event) {
			if ev.add != nil {
				require.NoError(t, e.Add(ev.at, *ev.add))
				fmt.Fprintf(&line, "%v: add %d\n", ev.at, ev.add.Ref)
			} else {
				require.NoError(t, e.Abort(ev.at, ev.abort))
				fmt.Fprintf(&line, "%v: abort %d\n", ev.at, ev.abort)
			}
		}
		note := func(o *Outcome) {
			for _, m := range o.Emitted {
				if m.First || m.Done {
					fmt.Fprintf(&line, "%v: %d first %v done %v\n", o.End, m.Ref, m.First, m.Done)
				}
			}
		}
		var now time.Duration
		var p *Plan
		completed, continued := false, 0
		for range 100000 {
			if p == nil {
				until := time.Hour
				if len(evs) > 0 {
					until = evs[0].at
				}
				if !fast {
					until = now
				}
				if fast && completed {
					if p = e.Runner().Continue(now, until); p != nil {
						continued++
					}
				}
				if p == nil {
					p, err = e.Runner().ScheduleUntil(now, until)
					require.NoError(t, err)
				}
				completed = false
				if p == nil {
					if len(evs) == 0 {
						break
					}
					now = evs[0].at
					apply(evs[0])
					evs = evs[1:]
					continue
				}
				for _, ref := range p.Started {
					fmt.Fprintf(&line, "%v: admit %d\n", p.Start, ref)
				}
				for _, r := range p.Reserved {
					fmt.Fprintf(&line, "%v: reserve %d\n", p.Start, r.Ref)
				}
			}
			if len(evs) > 0 && evs[0].at < p.End { // inside the move: collect, apply, cut
				ev := evs[0]
				evs = evs[1:]
				if ev.add == nil {
					o, err := e.Runner().CompleteUntil(ev.at)
					require.NoError(t, err)
					note(o)
				}
				apply(ev)
				inFlight, end, err := e.Runner().Truncate(ev.at)
				require.NoError(t, err)
				if !inFlight { // every step started at or after ev.at: nothing left to collect
					p, now = nil, ev.at
					continue
				}
				p.End = end
				continue
			}
			o, err := e.Complete(p.End)
			require.NoError(t, err)
			note(o)
			now, p, completed = p.End, nil, true
			require.NoError(t, e.Check())
		}
		require.Empty(t, evs)
		return line.String(), tier.log.String(), continued
	}
	wantLine, wantLog, _ := run(false)
	gotLine, gotLog, continued := run(true)
	contTier = false
	twinLine, twinLog, _ := run(true)
	contTier = true
	require.Contains(t, wantLog, "find", "request 2 is looked up in the tier")
	require.Equal(t, wantLog, gotLog, "the tier's calls")
	require.Equal(t, wantLine, gotLine)
	require.Equal(t, wantLog, twinLog, "the tier's calls, contTier off")
	require.Equal(t, wantLine, twinLine, "contTier off")
	require.Greater(t, continued, 0)
	t.Logf("%d runs continued", continued)
}
