package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// TestKeptLoadsAreEachLoad holds leastKept (send's LeastLoaded choice
// read off the loads the replicas keep until their engines change) to
// its twin, every engine's load read at every arrival (twins.eachLoad:
// leastOutstanding): the same bytes, every record (each names its
// replica) and the summary, on the random scenarios whose fleet routes
// by LeastLoaded and on fleets of 64 (BenchmarkRunFleet64's atlas
// workload at a small size; with KV pressure, which preempts and so
// raises a load inside a run; with a client timeout, which aborts). The
// kept runs are checked (checkEngines), where send holds each arrival's
// choice to leastOutstanding's.
func TestKeptLoadsAreEachLoad(t *testing.T) {
	t.Parallel()
	kept := 0
	for seed := range uint64(1_500) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		if _, ok := cfg.Fleet.Router.(LeastLoaded); !ok {
			continue
		}
		fast, r, err := runScenarioWith(cfg, reqs, twins{}, recordsSteps(data))
		require.NoError(t, err)
		slow, rs, err := runScenarioWith(cfg, reqs, twins{eachLoad: true}, recordsSteps(data))
		require.NoError(t, err)
		require.False(t, rs.keptLoads, "the switch turns the loads kept off")
		if r.keptLoads {
			kept++
		}
		sameBytes(t, slow.text, fast.text)
	}
	t.Logf("%d random scenarios routed by the loads kept", kept)
	require.Greater(t, kept, 40)

	atlas := func(n int) func() workload.Source {
		return func() workload.Source {
			g, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: n, Arrival: workload.Arrival{Rate: 64 * 2.4},
				Lengths: workload.Fixed(2000, 200)})
			require.NoError(t, err)
			return g
		}
	}
	fleet := Fleet{Replicas: Copies(64, ReplicaConfig{}), Router: LeastLoaded{}}
	pressed := Fleet{Replicas: Copies(64, ReplicaConfig{Engine: engine.Config{KVBlocks: 400}}), Router: LeastLoaded{}}
	for _, c := range []struct {
		name string
		cfg  Config
		n    int
	}{
		{"atlas", Config{Fleet: fleet}, 1_500},
		{"pressure", Config{Fleet: pressed}, 1_500},
		{"timeout", Config{Fleet: fleet, Timeout: 8 * time.Second}, 1_500},
	} {
		t.Run(c.name, func(t *testing.T) {
			fast, r, err := runSourceScenarioWith(c.cfg, atlas(c.n)(), twins{})
			require.NoError(t, err)
			require.True(t, r.keptLoads, "the fleet reads the loads kept")
			slow, _, err := runSourceScenarioWith(c.cfg, atlas(c.n)(), twins{eachLoad: true})
			require.NoError(t, err)
			sameBytes(t, slow.text, fast.text)
		})
	}
}
