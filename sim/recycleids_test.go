package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// TestRecycledIDsAreFresh holds a run whose requests' prefix ids are
// handed back to their Generator at their end (recycleIDs: a later
// prompt of the group takes the array) to the same run with every
// prompt's ids in an array of its own (twins.noRecycleIDs), byte for
// byte, every record, step and summary: random shared-prefix workloads
// (groups, Zipf or uniform, private prompts, drawn lengths so that a
// kept array may be too short, block sizes) on one replica or a fleet
// behind each built-in router (PrefixAffinity through the exact, the
// approximate and the events view), with KV pressure and preemption,
// chunk caps, client deadlines, signal delays, Stepwise; and the two
// regimes' own workloads (Fleet8PrefixApprox's, RunFleet64's prefix
// behind PrefixAffinity). A user's router, a gateway, a prefill pool and
// an autoscaler take the copy (checked).
func TestRecycledIDsAreFresh(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(53, 7))
	runs := 24
	if testing.Short() {
		runs = 8
	}
	var scenarios []recycleScenario
	for range runs {
		scenarios = append(scenarios, randomRecycle(rng))
	}
	high := workload.Synthetic{Seed: 1, Count: 400, Arrival: workload.Arrival{Rate: 16}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse}
	scenarios = append(scenarios,
		recycleScenario{Config{Fleet: Fleet{Replicas: Copies(8, ReplicaConfig{}), Router: PrefixAffinity{View: ApproxView{}}}}, high},
		recycleScenario{Config{Fleet: Fleet{Replicas: Copies(16, ReplicaConfig{}), Router: PrefixAffinity{}}}, high},
		recycleScenario{Config{}, workload.Synthetic{Seed: 1, Count: 300, Arrival: workload.Arrival{Rate: 2}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse}},
	)
	recycled := 0
	for i, sc := range scenarios {
		src := func() workload.Source {
			g, err := workload.NewSynthetic(sc.wcfg)
			require.NoError(t, err)
			return g
		}
		steps := i%3 == 0
		a, r, err := runSourceScenario(sc.cfg, src(), steps)
		require.NoError(t, err, "scenario %d", i)
		if r.recycle != nil {
			recycled++
			assert.Positive(t, r.recycled, "scenario %d hands ids back", i)
		}
		b, rb, err := runSourceScenarioWith(sc.cfg, src(), twins{noRecycleIDs: true}, steps)
		require.NoError(t, err)
		require.Nil(t, rb.recycle, "the twin hands none back")
		sameBytes(t, b.text, a.text)
	}
	assert.Greater(t, recycled, len(scenarios)*2/3, "most runs hand ids back")

	// Those that may not: a user's router, a gateway, a prefill pool, an
	// autoscaler.
	g := func() workload.Source {
		s, err := workload.NewSynthetic(high)
		require.NoError(t, err)
		return s
	}
	for i, cfg := range []Config{
		{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: loadPrefixAffinity{}}},
		{Gateway: Gateway{Limit: ConcurrencyLimit{PerReplica: 4, Queue: 8}}},
		{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Prefill: PrefillPool{Replicas: Copies(1, ReplicaConfig{})}}},
		{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{Policy: Schedule{Steps: []ReplicaStep{{Duration: time.Hour, Replicas: 2}}}, Max: 2}}},
	} {
		r, err := newRunnerWith(cfg, g(), nil, twins{})
		require.NoError(t, err, "config %d", i)
		assert.Nil(t, r.recycle, "config %d hands no ids back", i)
	}
}

// randomRecycle is a random shared-prefix Generator's workload and a
// replica or fleet to run it.
func randomRecycle(rng *rand.Rand) (s recycleScenario) {
	prefix := workload.PrefixReuse{Groups: 1 + rng.IntN(40), PrefixTokens: rng.IntN(3_000), Probability: []float64{1, 1, 0.9, rng.Float64()}[rng.IntN(4)],
		BlockTokens: []int{16, 16, 32, 100, 512}[rng.IntN(5)]}
	if rng.IntN(3) == 0 {
		prefix.Zipf = 2 * rng.Float64()
	}
	lengths := workload.Joint(workload.Fixed(1+rng.IntN(800), 1+rng.IntN(300)))
	if rng.IntN(2) == 0 {
		lengths = workload.Independent{Input: randomLength(rng, 800), Output: randomLength(rng, 300)}
	}
	s.wcfg = workload.Synthetic{Seed: rng.Uint64(), Count: 80 + rng.IntN(250), Arrival: workload.Arrival{Rate: 0.5 + 12*rng.Float64()},
		Lengths: lengths, Prefix: prefix}
	ecfg := engine.Config{BlockSize: []int{0, 16, 32}[rng.IntN(3)]}
	if rng.IntN(3) == 0 {
		ecfg.KVBlocks = 400 + rng.IntN(1_500) // preemption
	}
	if rng.IntN(3) == 0 {
		ecfg.ChunkCap = 64 + rng.IntN(512)
	}
	if rng.IntN(4) == 0 {
		ecfg.MaxSeqs = 1 + rng.IntN(16)
	}
	cfg := Config{Seed: rng.Uint64(), Engine: ecfg, Stepwise: rng.IntN(6) == 0}
	if rng.IntN(4) == 0 {
		cfg.Timeout = time.Duration(1+rng.IntN(60)) * time.Second
	}
	if n := rng.IntN(4); n > 0 {
		routers := []Router{RoundRobin{}, Random{}, LeastLoaded{}, PowerOfTwo{}, ConsistentHash{},
			PrefixAffinity{}, PrefixAffinity{View: ApproxView{}}, PrefixAffinity{View: EventsView{Lag: 50 * time.Millisecond}}}
		cfg.Engine = engine.Config{}
		cfg.Fleet = Fleet{Replicas: Copies(1+n*2, ReplicaConfig{Engine: ecfg}), Router: routers[rng.IntN(len(routers))]}
		if rng.IntN(4) == 0 {
			cfg.Fleet.SignalDelay = time.Duration(1+rng.IntN(500)) * time.Millisecond
		}
	}
	s.cfg = cfg
	return s
}

// recycleScenario is a Generator's workload and the system it runs on.
type recycleScenario struct {
	cfg  Config
	wcfg workload.Synthetic
}
