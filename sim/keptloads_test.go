package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// TestKeptLoadsAreEachLoad holds leastKept (send's LeastLoaded choice
// read off the loads the replicas of a fleet past mixedFleetMax keep
// until their engines change) to its twin, every engine's load read at
// every arrival (twins.eachLoad: leastEach): the same bytes, every
// record (each names its replica) and the summary, on the random
// scenarios whose fleet routes by LeastLoaded, its replicas repeated
// past mixedFleetMax, and on fleets of 64 (BenchmarkRunFleet64's atlas
// workload at a small size, which plans mixed moves; with KV pressure,
// which preempts and so raises a load inside a run; with chunked
// prompts; with a client timeout, which aborts and plans no mixed
// move). The kept runs are checked
// (checkEngines), where send holds each arrival's choice to
// leastEach's (mixedrun.Least in a fleet of mixed moves).
func TestKeptLoadsAreEachLoad(t *testing.T) {
	t.Parallel()
	kept, mixed := 0, 0
	for seed := range uint64(1_500) {
		data := randomScenario(seed)
		cfg, reqs := decodeScenario(data)
		if _, ok := cfg.Fleet.Router.(LeastLoaded); !ok || len(cfg.Fleet.Replicas) == 0 || cfg.Fleet.Autoscale.On() {
			continue
		}
		// The fleet's replicas repeated past mixedFleetMax, which keeps
		// loads (the scenarios' fleets are smaller).
		reps := cfg.Fleet.Replicas
		for len(cfg.Fleet.Replicas) <= mixedFleetMax {
			cfg.Fleet.Replicas = append(cfg.Fleet.Replicas, reps...)
		}
		fast, r, err := runScenarioWith(cfg, reqs, twins{}, recordsSteps(data))
		require.NoError(t, err)
		slow, rs, err := runScenarioWith(cfg, reqs, twins{eachLoad: true}, recordsSteps(data))
		require.NoError(t, err)
		require.False(t, rs.keptLoads, "the switch turns the loads kept off")
		if r.keptLoads {
			kept++
			if r.mixes > 0 {
				mixed++
			}
		}
		sameBytes(t, slow.text, fast.text)
	}
	t.Logf("%d random scenarios routed by the loads kept, %d of them planning mixed moves", kept, mixed)
	require.Greater(t, kept, 25)

	atlas := func(n int) func() workload.Source {
		return func() workload.Source {
			g, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: n, Arrival: workload.Arrival{Rate: 64 * 2.4},
				Lengths: workload.Fixed(2000, 200)})
			require.NoError(t, err)
			return g
		}
	}
	fleet := Fleet{Replicas: Copies(64, ReplicaConfig{}), Router: LeastLoaded{}}
	chunked := Fleet{Replicas: Copies(64, ReplicaConfig{Engine: engine.Config{MaxBatchedTokens: 768}}), Router: LeastLoaded{}}
	pressed := Fleet{Replicas: Copies(64, ReplicaConfig{Engine: engine.Config{KVBlocks: 400}}), Router: LeastLoaded{}}
	for _, c := range []struct {
		name  string
		cfg   Config
		n     int
		mixes bool // it must plan mixed moves
	}{
		{"atlas", Config{Fleet: fleet}, 5_000, true},
		{"pressure", Config{Fleet: pressed}, 1_500, true},
		{"chunked", Config{Fleet: chunked}, 1_500, false},
		{"timeout", Config{Fleet: fleet, Timeout: 8 * time.Second}, 1_500, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fast, r := runCheckedWith(t, c.cfg, atlas(c.n)(), twins{})
			require.True(t, r.keptLoads, "the fleet reads the loads kept")
			if c.mixes {
				require.Positive(t, r.mixes, "the fleet plans mixed moves")
			}
			slow, _ := runCheckedWith(t, c.cfg, atlas(c.n)(), twins{eachLoad: true})
			sameBytes(t, slow, fast)
		})
	}
}
