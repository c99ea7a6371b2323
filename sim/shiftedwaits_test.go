package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// TestShiftedWaitsAreTheSorts holds a disaggregated fleet's summary that
// reads its KVWaits off its sorted first gaps (disagg.shiftedDists) to
// the twin that sorts each sample (twins.sortEachWait), summary and
// records byte for byte: the random scenarios (those with a prefill
// pool among them), every regime's small workload, the Disagg regime at
// its budget's size, and fleets where the shift holds or breaks: prompts
// of one length or of several, decode replicas crowded enough to
// preempt, a window that closes before every landed request is
// decoded, and samples past ExactSamples. Enough summaries must take
// each way.
func TestShiftedWaitsAreTheSorts(t *testing.T) {
	t.Parallel()
	shifted, sorted := 0, 0
	check := func(name string, cfg Config, src func() workload.Source) {
		t.Helper()
		ar, br := sameAsTwin(t, twins{sortEachWait: true}, name, cfg, src)
		if ar.pd != nil {
			require.False(t, br.pd.shifted, name)
			if ar.pd.shifted {
				shifted++
			} else {
				sorted++
			}
		}
	}
	scenariosAndRegimes(t, check)
	rg := regimeNamed(t, "Disagg")
	cfg, src := rg.build(t, rg.requests)
	check(rg.name, cfg, src)
	cfg.ExactSamples = 500
	check(rg.name+" sketched", cfg, src)
	link := Link{Bandwidth: 5e9, Latency: 200 * time.Microsecond, Sharing: LinkFair}
	for _, blocks := range []int{2_400, 3_000, 0} {
		for _, lengths := range []workload.Joint{workload.Fixed(2000, 200), workload.Fixed(600, 60)} {
			cfg := disaggregated(2, 2, link)
			for i := range cfg.Fleet.Replicas {
				cfg.Fleet.Replicas[i].Engine.KVBlocks = blocks
			}
			src := func() workload.Source { return poisson(t, 3, 9, 600, lengths) }
			check("crowded", cfg, src)
			cfg.Window = Window{Warmup: 10 * time.Second, Horizon: 40 * time.Second, Drain: time.Second}
			check("window", cfg, src)
		}
	}
	t.Logf("%d summaries read the KVWaits off the first gaps, %d sorted each", shifted, sorted)
	require.Greater(t, shifted, 5)
	require.Greater(t, sorted, 5)
}
