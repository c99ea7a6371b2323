package sim

import (
	"math/bits"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// checkedPrefixes is PrefixAffinity that, at every arrival, holds
// View.longestCached, which PrefixAffinity reads (ApproxView's trees
// matched in one loop, only those of the arrival's first unit), to
// longestOfEach, CachedPrefix asked of each replica in turn, with each
// replica as the least held, and ApproxView's roots to its trees
// (requireRoots). Both only read, so the run routes as PrefixAffinity
// alone does.
type checkedPrefixes struct {
	PrefixAffinity
	t      *testing.T
	asked  *int
	approx *int
	lacked *int // replicas left unasked through ExactView (lackRoots)
	// ranged: arrivals whose heldRange was held to heldRangeEach;
	// counted: of those, the ones lackRoots' counts answered.
	ranged, counted *int
	cut             *int // arrivals whose path exactLongest cut before their fresh ids
	bare            *int // arrivals with no prefix ids and no view to ask (ExactView)
}

func (c checkedPrefixes) Route(r *workload.Request, v *View) int {
	if m := v.r.roots; m != nil && len(r.PrefixHashes) > 0 && r.PrefixBlockTokens >= m.maxB {
		*c.lacked += bits.OnesCount64(m.lack.get(r.PrefixHashes[0]))
		ids := r.PrefixHashes
		if k := ascend.Each(ids); r.PrefixTwoRuns.Two() && k < len(ids) && m.given && ids[0] <= m.top && ids[k] > m.top {
			*c.cut++ // lackRoots.fresh cuts its path
		}
	}
	for k := range v.Replicas() { // heldRange's count, against the engine's
		e := v.r.reps[v.at(k)].eng
		require.Equal(c.t, e.Waiting()+e.Running(), v.r.reps[v.at(k)].held, "arrival %d, replica %d: requests held", v.Routed(), v.at(k))
		if m := v.r.roots; m != nil {
			require.Equal(c.t, int32(v.r.reps[v.at(k)].held), m.count[v.at(k)], "arrival %d, replica %d: lackRoots' count", v.Routed(), v.at(k))
		}
	}
	if m := v.r.roots; m != nil && v.r.cfg.Fleet.SignalDelay <= 0 && v.idx == nil {
		*c.ranged++
		if v.n == len(m.count) {
			*c.counted++
		}
		least, lo, hi := heldRangeEach(v.r.reps[v.lo : v.lo+v.n])
		gl, glo, ghi := v.heldRange()
		require.Equal(c.t, [3]int{least, lo, hi}, [3]int{gl, glo, ghi}, "arrival %d: heldRange", v.Routed())
	}
	if v.r.cache == nil && len(r.PrefixHashes) == 0 {
		*c.bare++ // longestCached answers without asking a replica
	}
	for least := range v.Replicas() {
		best, longest := v.longestCached(least)
		wantBest, wantLongest := longestOfEach(v, least)
		require.Equal(c.t, [2]int{wantBest, wantLongest}, [2]int{best, longest}, "arrival %d, least %d: longestCached, longestOfEach", v.Routed(), least)
	}
	*c.asked++
	if a, ok := v.r.cache.(*approxState); ok {
		*c.approx++
		requireRoots(c.t, a)
	}
	return c.PrefixAffinity.Route(r, v)
}

// requireRoots holds approxState.roots to the trees: each unit that
// begins an edge from a tree's root, with the bits of exactly the
// replicas whose trees hold one.
func requireRoots(t *testing.T, a *approxState) {
	if a.roots == nil {
		require.Greater(t, len(a.block), maxRootBits, "roots kept up to %d replicas", maxRootBits)
		return
	}
	for f, row := range a.trees {
		want := map[uint64]uint64{}
		for i := range row {
			row[i].edges[0].kids.each(func(k uint64, _ int32) { want[k] |= 1 << i })
		}
		got := map[uint64]uint64{}
		a.roots[f].each(func(k, b uint64) { got[k] = b })
		require.Equal(t, want, got, "router instance %d's roots", f)
	}
}

// TestCachedPrefixesAreEach runs the random scenarios whose fleet routes
// by PrefixAffinity (every view, autoscaled fleets, several frontends,
// two block sizes among them) with checkedPrefixes in its place, and in
// its prefill pool's, with the scenario's view and again with ApproxView.
func TestCachedPrefixesAreEach(t *testing.T) {
	t.Parallel()
	asked, approx, pools, runs, lacked, ranged, counted, cut, bare := 0, 0, 0, 0, 0, 0, 0, 0, 0
	for seed := range uint64(1_500) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		pa, ok := cfg.Fleet.Router.(PrefixAffinity)
		if !ok {
			continue
		}
		// Its own view, then ApproxView's tree, pruned now and then.
		tree := ApproxView{MaxTreeSize: 64 * int(1+seed%5), EvictionInterval: time.Duration(1+seed%3) * 200 * time.Millisecond}
		for _, view := range []CacheView{pa.View, tree} {
			pa.View = view
			cfg.Fleet.Router = checkedPrefixes{PrefixAffinity: pa, t: t, asked: &asked, approx: &approx, lacked: &lacked, ranged: &ranged, counted: &counted, cut: &cut, bare: &bare}
			if cfg.Fleet.Prefill.On() { // a pool's view, of the fleet's replicas after the decoders
				cfg.Fleet.Prefill.Router = checkedPrefixes{PrefixAffinity: pa, t: t, asked: &pools, approx: &approx, lacked: &lacked, ranged: &ranged, counted: &counted, cut: &cut, bare: &bare}
			}
			_, err := runScenario(cfg, reqs, recordsSteps(data))
			require.NoError(t, err)
			runs++
		}
	}
	// The fleet's shared-prefix workload (BenchmarkRunFleet64's) on 16
	// replicas through ExactView, their pools small enough to evict
	// parts of the groups' prefixes, every replica once the least held;
	// and warmed with the first arrivals' groups, which no request gave
	// a replica before they arrive (lackRoots.top counts them).
	src := sharedPrefix(t, 16, 2, 800)
	var warm []workload.Request
	for g := src(); len(warm) < 8; {
		r, err := g.Next()
		require.NoError(t, err)
		warm = append(warm, workload.Request{InputTokens: 4096, PrefixHashes: r.PrefixHashes[:256], PrefixBlockTokens: 16})
	}
	for _, kv := range []int{600, 2_000, 0, -1} {
		pa := PrefixAffinity{BalanceAbs: 1 + max(kv, 0)%7}
		cfg := Config{Fleet: Fleet{Replicas: Copies(16, ReplicaConfig{Engine: engine.Config{KVBlocks: max(kv, 0)}}),
			Router: checkedPrefixes{PrefixAffinity: pa, t: t, asked: &asked, approx: &approx, lacked: &lacked, ranged: &ranged, counted: &counted, cut: &cut, bare: &bare}}}
		run := src
		if kv < 0 {
			cfg.Warm, run = warm, sharedPrefix(t, 16, 2, 40) // its pools kept by blocks (engine.Warm): slower to ask
		}
		_, err := Run(cfg, run(), nil)
		require.NoError(t, err)
		runs++
	}
	// The Atlas workload (no prefix ids) through ExactView, on 16
	// replicas (lackRoots) and on 65 (none): longestCached answers
	// without asking a replica.
	for _, n := range []int{16, maxRootBits + 1} {
		atlas := Config{Fleet: Fleet{Replicas: Copies(n, ReplicaConfig{}),
			Router: checkedPrefixes{PrefixAffinity: PrefixAffinity{}, t: t, asked: &asked, approx: &approx, lacked: &lacked, ranged: &ranged, counted: &counted, cut: &cut, bare: &bare}}}
		_, err := Run(atlas, poisson(t, 1, float64(n)*2.4, 800, workload.Fixed(2000, 200)), nil)
		require.NoError(t, err)
		runs++
	}
	t.Logf("%d runs, %d arrivals checked and %d in prefill pools, %d of them through ApproxView; %d replicas left unasked through ExactView; %d held ranges checked, %d of them counted; %d paths cut; %d without prefix ids or a view", runs, asked, pools, approx, lacked, ranged, counted, cut, bare)
	require.Greater(t, approx, 1_000)
	require.Greater(t, bare, 1_500, "arrivals longestCached answers without asking a replica")
	require.Greater(t, counted, 2_000)
	require.Greater(t, ranged-counted, 100)
	require.Greater(t, cut, 2_000)
	require.Greater(t, lacked, 1_000)
	require.Greater(t, pools, 100)
}

// loadPrefixAffinity is PrefixAffinity as it read the loads before
// View.held: the whole Load, its replica's run synced to the instant
// first (SyncTo).
type loadPrefixAffinity struct{ PrefixAffinity }

func (l loadPrefixAffinity) Route(r *workload.Request, v *View) int {
	p := l.WithDefaults()
	n := v.Replicas()
	least, lo, hi := 0, v.Load(0).Held(), v.Load(0).Held()
	for i := 1; i < n; i++ {
		h := v.Load(i).Held()
		if h < lo {
			least, lo = i, h
		}
		hi = max(hi, h)
	}
	if hi-lo > p.BalanceAbs && float64(hi) > float64(lo)*p.BalanceRel {
		return least
	}
	best, longest := least, 0
	for i := range n {
		c := v.CachedPrefix(i)
		if c > longest || (c == longest && c > 0 && v.Load(i).Held() < v.Load(best).Held()) {
			best, longest = i, c
		}
	}
	if r.InputTokens > 0 && float64(longest)/float64(r.InputTokens) > p.CacheThreshold {
		return best
	}
	return least
}

// TestHeldIsTheLoads holds PrefixAffinity, which reads a replica's held
// requests alone (View.held, no SyncTo) and every replica's cached
// prefix at once (View.longestCached), to loadPrefixAffinity, on the
// random scenarios whose fleet routes by PrefixAffinity, with their own
// view and again with ApproxView (which syncs no replica itself), and
// in their prefill pools: both runs fast, the same bytes. Each run is
// also held to twins.noHeldEach (View.each), byte for byte.
func TestHeldIsTheLoads(t *testing.T) {
	t.Parallel()
	runs, pools, kept, calm := 0, 0, 0, 0
	for seed := range uint64(4_000) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		pa, ok := cfg.Fleet.Router.(PrefixAffinity)
		if !ok || cfg.Fleet.SignalDelay > 0 { // the stale signals read the whole Load either way
			continue
		}
		tree := ApproxView{MaxTreeSize: 64 * int(1+seed%5), EvictionInterval: time.Duration(1+seed%3) * 200 * time.Millisecond}
		if seed%4 != 0 { // thresholds of their own (a router's copy keeps them: routing.prefix)
			pa.CacheThreshold, pa.BalanceAbs, pa.BalanceRel = []float64{0.3, 0.5, 0.8}[seed%3], int(1+seed%3), 1+float64(seed%5)/8
		}
		for _, view := range []CacheView{pa.View, tree} {
			pa.View = view
			fast, slow := cfg, cfg
			fast.Fleet.Router, slow.Fleet.Router = pa, loadPrefixAffinity{pa}
			if cfg.Fleet.Prefill.On() {
				fast.Fleet.Prefill.Router, slow.Fleet.Prefill.Router = pa, loadPrefixAffinity{pa}
				pools++
			}
			sameScenario(t, data, reqs, fast, slow)
			runs++
			// View.each, the fleet's replicas kept for heldRange at
			// the start, against heldRange's tests at every arrival
			// (twins.noHeldEach), and the runner's direct call of its
			// copy of the router against Route through the Router
			// interface (twins.routerCall), some with steps.
			steps := seed%3 == 0
			a, r, err := runScenarioWith(fast, reqs, twins{}, steps)
			require.NoError(t, err)
			if r.view.each != nil {
				kept++
			}
			require.NotNil(t, r.prefix, "the router called directly")
			b, rb, err := runScenarioWith(fast, reqs, twins{noHeldEach: true, routerCall: true}, steps)
			require.NoError(t, err)
			require.Nil(t, rb.view.each, "the twin keeps none")
			require.Nil(t, rb.prefix, "the twin calls Route")
			sameBytes(t, b.text, a.text)
			// The balance test skipped while the fleet is calm
			// (runner.calm) against its read at every arrival
			// (twins.balanceEach).
			if r.view.each != nil {
				if r.calmUntil > 0 {
					calm++
				}
				c, rc, err := runScenarioWith(fast, reqs, twins{balanceEach: true}, steps)
				require.NoError(t, err)
				require.Zero(t, rc.calmUntil, "the twin reads at every arrival")
				sameBytes(t, c.text, a.text)
			}
		}
	}
	t.Logf("%d runs routed by PrefixAffinity, %d of them with a prefill pool, %d with the replicas kept (View.each), %d of those calm at the end", runs, pools, kept, calm)
	require.Greater(t, runs, 300)
	require.Greater(t, pools, 20)
	require.Greater(t, kept, 50)
	require.Greater(t, calm, 25)
}
