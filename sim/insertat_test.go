package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestInsertAtIsInsert holds ApproxView's insert of a routed arrival's
// units from where the router's match of that tree stopped
// (approxState.routed's insertAt) to its twin, the walk from the root
// (insert; the noInsertAt switch): random fleets behind PrefixAffinity
// through trees pruned now and then (TestCachedPrefixesAreEach's), and
// Fleet8PrefixApprox's workload, run both ways, give the same bytes (the
// summary and every record) and leave every tree with the same nodes,
// stamps and size.
func TestInsertAtIsInsert(t *testing.T) { approxTwins(t, &noInsertAt) }

// TestRunEdgesAreIDs holds ApproxView's run edges (an edge of one run
// of consecutive ids kept as its first id and length) to their twin,
// every edge's ids kept (the noRunEdges switch), as TestInsertAtIsInsert
// holds insertAt: the same bytes, and every tree the same nodes, stamps
// and size. TestTreeEqualsRefTree holds both to refTree.
func TestRunEdgesAreIDs(t *testing.T) { approxTwins(t, &noRunEdges) }

// approxTwins runs random fleets behind PrefixAffinity through trees
// pruned now and then (TestCachedPrefixesAreEach's), and
// Fleet8PrefixApprox's workload, with the switch twin off and on, and
// requires the same bytes (the summary and every record) and every
// tree left with the same nodes, stamps and size.
func approxTwins(t *testing.T, twin *bool) {
	runs, runEdges := 0, 0
	both := func(t *testing.T, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ra, err := runSourceScenario(cfg, src())
		require.NoError(t, err)
		*twin = true
		defer func() { *twin = false }()
		b, rb, err := runSourceScenario(cfg, src())
		require.NoError(t, err)
		sameBytes(t, b.text, a.text)
		ta, tb := ra.cache.(*approxState).trees, rb.cache.(*approxState).trees
		require.Equal(t, len(tb), len(ta))
		for f := range tb {
			require.Equal(t, len(tb[f]), len(ta[f]))
			for i := range tb[f] {
				require.Equal(t, tb[f][i].size, ta[f][i].size, "frontend %d replica %d", f, i)
				require.Equal(t, tb[f][i].nodes(), ta[f][i].nodes(), "frontend %d replica %d", f, i)
				for _, x := range ta[f][i].edges {
					if x.n > 0 && x.ids == nil {
						runEdges++
					}
				}
			}
		}
	}
	for seed := range uint64(200) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		pa, ok := cfg.Fleet.Router.(PrefixAffinity)
		if !ok {
			continue
		}
		pa.View = ApproxView{MaxTreeSize: 64 * int(1+seed%5), EvictionInterval: time.Duration(1+seed%3) * 200 * time.Millisecond}
		cfg.Fleet.Router = pa
		if cfg.Fleet.Prefill.On() {
			cfg.Fleet.Prefill.Router = pa
		}
		both(t, cfg, func() workload.Source {
			src := append(list(nil), reqs...)
			return &src
		})
		runs++
	}
	require.Greater(t, runs, 25)
	for _, rg := range regimes {
		if rg.name == "Fleet8PrefixApprox" {
			cfg, src := rg.build(t, 200)
			both(t, cfg, src)
			runs++
		}
	}
	require.Greater(t, runs, 26, "Fleet8PrefixApprox")
	require.Greater(t, runEdges, 50, "run edges")
}

// TestInsertAtOnlyOnceAnArrival routes one arrival twice to the tree
// its router matched (a run never does: each placement is an arrival of
// its own), the second time with the tree changed by the first: the
// kept walk is void then, and both inserts leave the tree as the walks
// from the root do (noInsertAt). It fails with routed's void of the
// kept walk dropped.
func TestInsertAtOnlyOnceAnArrival(t *testing.T) {
	grow := func(twin bool) *tree {
		noInsertAt = twin
		defer func() { noInsertAt = false }()
		s, err := ApproxView{}.state(&runner{replicas: replicas{reps: make([]replica, 1)}, routing: routing{signals: make([]signals, 1)}})
		require.NoError(t, err)
		a := s.(*approxState)
		a.block[0] = 16 // read from no engine
		r := &runner{}
		r.now = time.Second
		a.routed(r, 0, &workload.Request{InputTokens: 100, PrefixHashes: []uint64{1, 2, 3, 4}, PrefixBlockTokens: 16})
		r.routed++
		r.now = 2 * time.Second
		req := &workload.Request{InputTokens: 100, PrefixHashes: []uint64{1, 2, 3, 4, 5, 6}, PrefixBlockTokens: 16}
		require.Equal(t, 64, a.cached(r, 0, req))
		a.routed(r, 0, req)
		a.routed(r, 0, req)
		return &a.trees[0][0]
	}
	fast, slow := grow(false), grow(true)
	require.Equal(t, slow.size, fast.size)
	require.Equal(t, slow.nodes(), fast.nodes())
	require.Equal(t, 96, fast.size)
}
