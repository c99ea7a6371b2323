package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestQuickSettleIsSettle holds a host tier's store that skips an empty
// settle, and a settle of one note that skips coverLater (quickSettle),
// to the same runs settling always through coverLater
// (twins.settleEach), byte for byte, every record and the summary: over
// the random scenarios (host tiers of 32 to 96 blocks, full after a few
// requests), the regimes' small workloads, and Regime/Tiers' workload
// with host tiers small enough to fill within its first hundreds of
// requests, every store past the fill evicting.
func TestQuickSettleIsSettle(t *testing.T) {
	t.Parallel()
	tw := twins{settleEach: true}
	filled := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		b, br, err := runSourceScenarioWith(cfg, src(), tw)
		require.NoError(t, err, name)
		sameBytes(t, b.text, a.text)
		if ar.tiers == nil {
			return
		}
		for i := range ar.tiers.ports {
			p, q := &ar.tiers.ports[i], &br.tiers.ports[i]
			require.False(t, p.settleEach)
			require.True(t, q.settleEach)
			if p.lazy && p.host != nil && p.host.Counters().Evictions > 0 {
				filled++ // its stores past the fill took quickSettle
			}
		}
	}
	scenariosAndRegimes(t, check)
	for _, rg := range regimes {
		if rg.name != "Tiers" {
			continue
		}
		for _, blocks := range []int{2_000, 6_000, 20_000} {
			cfg, src := rg.build(t, 300)
			cfg.Fleet.HostTier.Blocks = blocks
			check(rg.name, cfg, src)
		}
	}
	t.Logf("%d lazy host tiers filled", filled)
	require.Positive(t, filled)
}
