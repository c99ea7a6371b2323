package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	stores  []uint64 // every key offered, in order
	evicted []uint64
}

func newLRUTier(t testing.TB, blocks int) *lruTier {
	l, err := kvtier.New(kvtier.Config{Blocks: blocks})
	require.NoError(t, err)
	return &lruTier{t: t, l: l, loads: map[int32][]uint64{}}
}

func (x *lruTier) Store(key uint64) {
	x.stores = append(x.stores, key)
	x.evicted, _, _ = x.l.Insert([]uint64{key}, x.evicted[:0])
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

// TestTierLoadThenPrefillTheRest: on a replica of 10 blocks of 16 tokens,
// request 1 (70 prompt tokens whose first 64 are shared content, 2 output)
// runs and stores its 4 full blocks of prompt in the tier (the decode
// completes no block: 71 tokens); request 2 (159 tokens, 10 blocks) then
// evicts all of them from HBM. Request 3, with request 1's prompt, finds
// nothing in HBM and its 4 blocks in the tier: an empty step (1 µs)
// reserves ⌈64/16⌉ = 4 blocks for them (5 fit under the gate for its 70
// tokens, and holds them) and asks no budget; nothing runs until the load lands, and the
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
	assert.Equal(t, 10-5, e.FreeBlocks(), "blocks for its 70 tokens, which its admission's gate counts")
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
	for _, k := range PrefixKeys(nil, prefix, 16, 70, 16) {
		tier.Store(k)
	}
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
	for _, k := range PrefixKeys(nil, prefix, 16, 60, 16) {
		tier.Store(k)
	}
	require.NoError(t, e.Add(0, Request{Ref: 9, Input: 60, Output: 3, Prefix: prefix, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	assert.Equal(t, []Reservation{{Ref: 9, Tokens: 48, Tier: true}}, p.Reserved)
	assert.Equal(t, 36, e.FreeBlocks(), "the blocks of its 60 tokens")
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

// TestTierFastPathsOff: a tier turns every fast path but the FCFS run off,
// and says why.
func TestTierFastPathsOff(t *testing.T) {
	e, err := New(Config{}, nil)
	require.NoError(t, err)
	require.NoError(t, e.SetTier(newLRUTier(t, 1)))
	for _, f := range e.FastPaths() {
		if f.Name == "fcfs-run" {
			assert.True(t, f.On)
			continue
		}
		assert.False(t, f.On, f.Name)
		assert.Contains(t, f.Reason, "KV tier", f.Name)
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
					require.Equal(t, planShape(pb), planShape(pa), "seed %d: step %d", seed, i)
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
		assert.NotEmpty(t, tier.stores, "seed %d: the tier was offered blocks", seed)
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
