package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestIdleLinkIsNotArmed holds a disaggregated fleet's landings that
// leave their link idle, and do not arm it again (land), to the twin
// that arms it after every landing (armEachLanding): the random
// scenarios (those with a prefill pool among them) and every regime's
// small workload, plus a fleet whose transfers share a slow link (LinkFair
// and LinkFIFO, so that landings leave others in flight), summary and
// records byte for byte. Enough landings must leave their link idle.
func TestIdleLinkIsNotArmed(t *testing.T) {
	t.Parallel()
	idle, disagg := 0, 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, ar, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		b, br, err := runSourceScenarioWith(cfg, src(), twins{armEachLanding: true})
		require.NoError(t, err, name)
		sameBytes(t, b.text, a.text)
		if ar.pd != nil {
			require.Zero(t, br.pd.idleLanded, name)
			idle += ar.pd.idleLanded
			disagg++
		}
	}
	scenariosAndRegimes(t, check)
	for _, sharing := range []LinkSharing{LinkFair, LinkFIFO} {
		cfg := disaggregated(2, 2, Link{Bandwidth: 2e8, Latency: time.Millisecond, Sharing: sharing})
		src, err := sharedWorkload(5, 2)
		require.NoError(t, err)
		var reqs list
		for {
			r, err := src.Next()
			if err != nil || r.Arrival > 20*time.Second {
				break
			}
			reqs = append(reqs, r)
		}
		check(sharing.String(), cfg, func() workload.Source { s := append(list(nil), reqs...); return &s })
	}
	t.Logf("%d disaggregated runs, %d landings left their link idle", disagg, idle)
	require.Greater(t, disagg, 20)
	require.Greater(t, idle, 300)
}
