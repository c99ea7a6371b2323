package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestAreaByRequestIsEachEvent holds the integral of the requests in the
// system over the window taken by request (window.areaIn: sysIn, sysOut,
// systemArea) to the same run integrating it event by event
// (twins.areaEachEvent), byte for byte, every record and the summary
// (its mean in the system, a single replica's MeanHeld), and the exact
// integral itself, 128 bits, and the summaries Summarize recomputes from
// the records both ways (but an autoscaler's): over the random scenarios (windows with and
// without a horizon, drains, a detected warm-up, overloads with
// MaxBacklog, a concurrency cap, a gateway, timeouts, errors, fleets,
// prefill pools, autoscalers) and the regimes' small workloads.
func TestAreaByRequestIsEachEvent(t *testing.T) {
	t.Parallel()
	runs, held, open := 0, 0, 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		b, br, err := runSourceScenarioWith(cfg, src(), twins{areaEachEvent: true})
		require.NoError(t, err, name)
		require.False(t, br.openStarted, name)
		sameBytes(t, b.text, a.text)
		require.Equal(t, br.area, ar.systemArea(), name)
		require.Equal(t, br.area, br.systemArea(), name)
		runs++
		if ar.systemArea() != (wide{}) {
			held++
		}
		if ar.openStarted {
			open++
		}
		if ar.scale == nil { // Summarize takes the fleet as configured
			summarizedAlike(t, name, cfg, a.recs, twins{areaEachEvent: true})
		}
	}
	scenariosAndRegimes(t, check)
	t.Logf("%d runs, %d of them holding requests in the window, %d in an open window", runs, held, open)
	require.Greater(t, held, runs/2)
	require.Greater(t, open, runs/4)
}
