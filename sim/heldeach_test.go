package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHeldEachIsTheTests holds View.each, the fleet's replicas kept for
// heldRange at the start, to heldRange choosing how to read them at
// every arrival (twins.noHeldEach), byte for byte, on the random
// scenarios whose fleet routes by PrefixAffinity (with each view, and
// ApproxView), some with steps.
func TestHeldEachIsTheTests(t *testing.T) {
	t.Parallel()
	runs, kept := 0, 0
	for seed := range uint64(2_000) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		pa, ok := cfg.Fleet.Router.(PrefixAffinity)
		if !ok {
			continue
		}
		for _, view := range []CacheView{pa.View, ApproxView{}} {
			pa.View = view
			cfg.Fleet.Router = pa
			steps := seed%3 == 0
			a, r, err := runScenarioWith(cfg, reqs, twins{}, steps)
			require.NoError(t, err)
			if r.view.each != nil {
				kept++
			}
			b, rb, err := runScenarioWith(cfg, reqs, twins{noHeldEach: true}, steps)
			require.NoError(t, err)
			require.Nil(t, rb.view.each, "the twin keeps none")
			sameBytes(t, b.text, a.text)
			runs++
		}
	}
	t.Logf("%d runs routed by PrefixAffinity, %d with the replicas kept", runs, kept)
	require.Greater(t, kept, 50)
}
