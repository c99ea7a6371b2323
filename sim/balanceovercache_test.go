package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// countedBalance is PrefixAffinity that counts the arrivals its balance
// test sends to the least loaded replica while another holds a cached
// prefix over its cache threshold: the arrivals a router that lost its
// balance thresholds, or read a stale balance, would send elsewhere.
type countedBalance struct {
	PrefixAffinity
	over *int
}

func (c countedBalance) Route(r *workload.Request, v *View) int {
	p := c.WithDefaults()
	least, lo, hi := v.heldRange()
	if hi-lo > p.BalanceAbs && float64(hi) > float64(lo)*p.BalanceRel {
		if best, longest := v.longestCached(least); best != least && r.InputTokens > 0 && float64(longest)/float64(r.InputTokens) > p.CacheThreshold {
			*c.over++
		}
	}
	return c.PrefixAffinity.Route(r, v)
}

// TestBalanceOverCache runs fleets behind PrefixAffinity with balance
// thresholds of their own on a workload of a few long shared prompts at
// a high rate, so that the affinity piles requests onto the replicas
// holding them and the balance test often overrules a cached prefix over
// the threshold (countedBalance counts those arrivals), and holds the
// runner's own copy of the router, called directly (routing.prefix),
// with the replicas kept (View.each: ApproxView) and its balance test
// skipped while calm (runner.calm), or the counts lackRoots keeps
// (ExactView), to loadPrefixAffinity, which reads every
// replica's whole Load at every arrival and is called through Router,
// and to the twins (routerCall, balanceEach), byte for byte. The
// random scenarios of TestHeldIsTheLoads seldom hit a cache while out
// of balance: a copy of the router without its balance thresholds, or
// a balance test skipped for good, passed them.
func TestBalanceOverCache(t *testing.T) {
	t.Parallel()
	over := 0
	for k, pa := range []PrefixAffinity{
		{BalanceAbs: 2, BalanceRel: 1.2},
		{BalanceAbs: 3, BalanceRel: 1.5, CacheThreshold: 0.3},
		{BalanceAbs: 1, BalanceRel: 1.1, View: ApproxView{}},
		{BalanceAbs: 4, BalanceRel: 1.25, CacheThreshold: 0.6, View: ApproxView{}},
	} {
		for seed := range uint64(2) {
			src := func() workload.Source {
				g, err := workload.NewSynthetic(workload.Synthetic{Seed: seed + 1, Count: 300, Arrival: workload.Arrival{Rate: 12},
					Lengths: workload.Fixed(128, 60), Prefix: workload.PrefixReuse{Groups: 64, PrefixTokens: 1024, Probability: 1, BlockTokens: 16}})
				require.NoError(t, err)
				return g
			}
			cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{})}}
			n := 0
			cfg.Fleet.Router = countedBalance{pa, &n}
			_, _, err := runSourceScenarioWith(cfg, src(), twins{})
			require.NoError(t, err)
			require.Greater(t, n, 10, "router %d, seed %d: arrivals sent by the balance test from a cached prefix", k, seed)
			over += n
			cfg.Fleet.Router = pa
			a, r, err := runSourceScenarioWith(cfg, src(), twins{}, seed == 0)
			require.NoError(t, err)
			require.NotNil(t, r.prefix, "the router called directly")
			if pa.View == nil {
				require.NotNil(t, r.roots, "ExactView's counts kept (lackRoots)")
			} else {
				require.NotNil(t, r.view.each, "the replicas kept")
			}
			cfg.Fleet.Router = loadPrefixAffinity{pa}
			b, _, err := runSourceScenarioWith(cfg, src(), twins{}, seed == 0)
			require.NoError(t, err)
			sameBytes(t, b.text, a.text)
			cfg.Fleet.Router = pa
			c, _, err := runSourceScenarioWith(cfg, src(), twins{routerCall: true, balanceEach: true}, seed == 0)
			require.NoError(t, err)
			sameBytes(t, c.text, a.text)
		}
	}
	t.Logf("%d arrivals sent to the least loaded over a cached prefix", over)
}
