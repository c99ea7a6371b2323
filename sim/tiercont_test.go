package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTierContinueIsQueuedPlans holds the replicas with tiers that
// continue runs at their step ends (engine's continueTier, which a host
// tier alone lets plan) to the same runs planning every step end with
// ScheduleUntil after the instant's events (twins.tierNoContinue), byte
// for byte, and the host tiers' counters and sizes (tiersAreTheTwin's
// scenarios and regimes, Regime/Tiers' workload among them, over a slow
// host link too, whose loads land at the instants of continued runs and
// inside them). Runs must be continued with tiers (942).
func TestTierContinueIsQueuedPlans(t *testing.T) {
	t.Parallel()
	tiersAreTheTwinRuns(t, twins{tierNoContinue: true}, "runs continued with tiers", func(ar, br *runner) int {
		for i := range br.reps {
			require.False(t, br.reps[i].continues && br.reps[i].tiered, "the twin continues")
		}
		return ar.continued
	})
}
