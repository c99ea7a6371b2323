package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// TestFewestFirstIsByPosition holds exactOneSize's order (the replicas
// that may hold the arrival's group asked by the requests they hold, the
// fewest first, until one answers the whole path) to its twin, the
// replicas asked by position (exactByPosition; the noFewestFirst
// switch): BenchmarkRunFleet64's shared-prefix workload on 16 replicas
// through ExactView, with pools small enough to evict parts of the
// groups' prefixes and with room, and random fleets behind
// PrefixAffinity, run both ways, give the same bytes (the summary and
// every record). TestCachedPrefixesAreEach holds each arrival's answer
// to longestOfEach.
func TestFewestFirstIsByPosition(t *testing.T) {
	both := func(t *testing.T, cfg Config, src func() workload.Source) {
		t.Helper()
		a, _, err := runSourceScenario(cfg, src())
		require.NoError(t, err)
		noFewestFirst = true
		defer func() { noFewestFirst = false }()
		b, _, err := runSourceScenario(cfg, src())
		require.NoError(t, err)
		sameBytes(t, b.text, a.text)
	}
	for _, kv := range []int{600, 2_000, 0} {
		cfg := Config{Fleet: Fleet{Replicas: Copies(16, ReplicaConfig{Engine: engine.Config{KVBlocks: kv}}), Router: PrefixAffinity{BalanceAbs: 1 + kv%7}}}
		both(t, cfg, sharedPrefix(t, 16, 2, 400))
	}
	runs := 0
	for seed := range uint64(150) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		if _, ok := cfg.Fleet.Router.(PrefixAffinity); !ok {
			continue
		}
		both(t, cfg, func() workload.Source {
			src := append(list(nil), reqs...)
			return &src
		})
		runs++
	}
	require.Greater(t, runs, 20)
}
