package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestOneEndIsSmall holds a single replica that keeps its step end as
// the one end (stepEnds.one) to the same run with the end kept as a
// small fleet's are (twins.smallOneEnd), byte for byte, every record and
// the summary, the checked runs holding each replica's end to its
// engine's move at every event (checkEnds): over the random scenarios
// (a single replica, fleets, autoscalers adding replicas) and the
// regimes' small workloads.
func TestOneEndIsSmall(t *testing.T) {
	t.Parallel()
	one := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		b, br, err := runSourceScenarioWith(cfg, src(), twins{smallOneEnd: true})
		require.NoError(t, err, name)
		require.False(t, br.ends.one, name)
		sameBytes(t, b.text, a.text)
		if ar.ends.one {
			one++
		}
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d runs of a single replica kept as the one end", one)
	require.Positive(t, one)
}
