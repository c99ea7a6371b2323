package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestReserveWithPendingIsTheCut holds a request handed to a decode
// replica whose run has a reservation pending at its next step, which
// that reservation takes too (engine's reserveWith), to the twin that
// cuts the run there and reserves both in the plan at the step's end
// (reserveAlone): the random scenarios (those with a prefill pool among
// them) and every regime's small workload, plus the Disagg regime at
// its budget's size and a fleet of two decode replicas of 2,400 and
// 3,000 blocks over a slower link, where handoffs crowd, summary and
// records byte for byte, those three also against Stepwise. Enough
// requests must be taken so.
func TestReserveWithPendingIsTheCut(t *testing.T) {
	t.Parallel()
	joins := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		ar, br := sameAsTwin(t, twins{reserveAlone: true}, name, cfg, src)
		if ar.pd != nil {
			require.Zero(t, br.pd.resJoins, name)
			joins += ar.pd.resJoins
		}
	}
	stepwise := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		a, _, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		cfg.Stepwise = true
		b, _, err := runSourceScenario(cfg, src())
		require.NoError(t, err, name)
		sameBytes(t, b.text, a.text)
	}
	scenariosAndRegimes(t, check)
	for _, rg := range regimes {
		if rg.name != "Disagg" {
			continue
		}
		cfg, src := rg.build(t, rg.requests)
		check(rg.name, cfg, src)
		stepwise(rg.name, cfg, src)
	}
	for _, blocks := range []int{2_400, 3_000} {
		cfg := disaggregated(2, 2, Link{Bandwidth: 5e9, Latency: 200 * time.Microsecond, Sharing: LinkFair})
		for i := range cfg.Fleet.Replicas {
			cfg.Fleet.Replicas[i].Engine.KVBlocks = blocks
		}
		src := func() workload.Source { return poisson(t, 3, 9, 600, workload.Fixed(2000, 200)) }
		check("crowded", cfg, src)
		stepwise("crowded", cfg, src)
	}
	t.Logf("%d requests taken into a reservation pending inside a run", joins)
	require.Greater(t, joins, 100)
}
