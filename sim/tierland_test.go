package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTierLandingsInsideRunsAreStepwise: a host link of 200 MB/s under
// Regime/Tiers' workload makes loads land inside runs, and at the
// instants of continued runs, which the landing cuts (landTier, as an
// arrival): byte for byte what a step a move gives (Stepwise). Until
// issue 41's twenty-seventh round a landing left the run whole, and
// this workload differed with 6,000 host blocks.
func TestTierLandingsInsideRunsAreStepwise(t *testing.T) {
	t.Parallel()
	for _, rg := range regimes {
		if rg.name != "Tiers" {
			continue
		}
		for _, blocks := range []int{600, 6_000} {
			cfg, src := rg.build(t, 300)
			cfg.Fleet.HostTier.Blocks, cfg.Fleet.HostTier.Link.Bandwidth = blocks, 2e8
			a, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			cfg.Stepwise = true
			b, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			sameBytes(t, b.text, a.text)
		}
	}
}
