package sim

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// allRouters are the built-in routers, by name.
var allRouters = []struct {
	name string
	r    Router
}{
	{"RoundRobin", RoundRobin{}}, {"Random", Random{}}, {"LeastLoaded", LeastLoaded{}},
	{"PowerOfTwo", PowerOfTwo{}}, {"PrefixAffinity", PrefixAffinity{}}, {"ConsistentHash", ConsistentHash{}},
}

// sharedWorkload is Poisson arrivals of 500-token suffixes behind the
// fleet's high-reuse prefixes (4,096 tokens, Zipf-popular), 200-token
// answers.
var sharedWorkload = workloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
	return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: 2 * time.Hour,
		Arrival: workload.Arrival{Rate: rate}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
})

// workloadFunc builds a run's source at a rate from a seed, as
// analysis.WorkloadFunc does (package sim's tests cannot import it).
type workloadFunc func(rate float64, seed uint64) (workload.Source, error)

// runText runs cfg on a workload and returns every record and the summary
// as text.
func runText(t *testing.T, cfg Config, w workloadFunc, rate float64, seed uint64) ([]byte, Summary) {
	t.Helper()
	src, err := w(rate, seed)
	require.NoError(t, err)
	var buf bytes.Buffer
	cfg.Seed = seed
	sum, err := Run(cfg, src, ObserverFunc(func(r *Record) { fmt.Fprintf(&buf, "%+v\n", *r) }))
	require.NoError(t, err)
	fmt.Fprintf(&buf, "%+v\n", sum)
	return buf.Bytes(), sum
}

// A fleet of one replica, whatever its router, is the single replica Run
// simulated before fleets: the same bytes.
func TestFleetOfOneIsTheReplica(t *testing.T) {
	base := Config{Timeout: 30 * time.Second, ErrorRate: 0.01, Window: Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}}
	want, _ := runText(t, base, sharedWorkload, 2.5, 4)
	for _, r := range allRouters {
		t.Run(r.name, func(t *testing.T) {
			cfg := base
			cfg.Fleet = Fleet{Replicas: Copies(1, ReplicaConfig{}), Router: r.r}
			got, _ := runText(t, cfg, sharedWorkload, 2.5, 4)
			sameBytes(t, want, got)
		})
	}
}

// Same seed, same bytes, for every router on a fleet of 4.
func TestFleetIsDeterministic(t *testing.T) {
	for _, r := range allRouters {
		t.Run(r.name, func(t *testing.T) {
			cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: r.r}, Window: Window{Horizon: 120 * time.Second}}
			a, _ := runText(t, cfg, sharedWorkload, 9, 2)
			b, _ := runText(t, cfg, sharedWorkload, 9, 2)
			sameBytes(t, a, b)
		})
	}
}

// A router's work is visible in the records: every request of a fleet run
// names its replica, and round robin deals them out evenly.
func TestRoundRobinDealsEvenly(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{})}, Window: Window{Horizon: 120 * time.Second}}
	src, err := atlasWorkload(8, 1)
	require.NoError(t, err)
	count := [4]int{}
	sum, err := Run(cfg, src, ObserverFunc(func(r *Record) { count[r.Replica]++ }))
	require.NoError(t, err)
	for i := 1; i < 4; i++ {
		assert.InDelta(t, count[0], count[i], 1, "arrivals dealt in turn")
	}
	require.Len(t, sum.Replicas, 4)
	assert.InDelta(t, 1, sum.Imbalance.Requests, 0.02)
}

// At high reuse the cache-aware router sends requests where their prefix is
// cached: the fleet's prefix hit rate is well above round robin's, which
// scatters every prefix over every replica.
func TestPrefixAffinityFindsTheCache(t *testing.T) {
	hit := map[string]float64{}
	for _, r := range []Router{RoundRobin{}, PrefixAffinity{}} {
		cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: r}, Window: Window{Warmup: 60 * time.Second, Horizon: 300 * time.Second}}
		_, sum := runText(t, cfg, sharedWorkload, 8, 1)
		name := fmt.Sprintf("%T", r)
		hit[name] = float64(sum.Cached) / float64(sum.InputTokens)
		t.Logf("%s: prefix hit rate %.3f, goodput %.2f req/s, imbalance %+v", name, hit[name], sum.Goodput, sum.Imbalance)
	}
	assert.Greater(t, hit["sim.PrefixAffinity"], hit["sim.RoundRobin"]+0.1)
}

// Stale signals herd: four gateway instances routing to the least loaded
// replica on numbers refreshed every 2 s, each seeing only its own
// decisions since, send their requests to the same replica that looked
// idle at the refresh; the bursts show in the TTFT tail and the
// attainment, against fresh signals on the same requests. (The herd is
// transient: the window-averaged imbalance, reported, hardly moves.) A
// delay shorter than any gap between arrivals is fresh signals, byte for
// byte.
func TestStaleSignalsHerd(t *testing.T) {
	docs := workloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: time.Hour, Arrival: workload.Arrival{Rate: rate}, Lengths: workload.AtlasDocuments()})
	})
	run := func(delay time.Duration, seed uint64) ([]byte, Summary) {
		cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: LeastLoaded{}, SignalDelay: delay, Frontends: 4},
			Window: Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
		return runText(t, cfg, docs, 6, seed)
	}
	for seed := range uint64(3) {
		fresh, freshSum := run(0, seed)
		tiny, _ := run(time.Nanosecond, seed)
		sameBytes(t, fresh, tiny)
		_, stale := run(2*time.Second, seed)
		t.Logf("seed %d: fresh TTFT p99 %.0f ms, attainment %.3f, imbalance %+v; 2 s stale: %.0f ms, %.3f, %+v", seed,
			freshSum.TTFT.P99, freshSum.Attainment, freshSum.Imbalance, stale.TTFT.P99, stale.Attainment, stale.Imbalance)
		assert.Greater(t, stale.TTFT.P99, freshSum.TTFT.P99*1.05, "seed %d", seed)
		assert.Less(t, stale.Attainment, freshSum.Attainment, "seed %d", seed)
	}
}

// A fleet's nonsense is refused with the field named; a router that picks
// a replica that does not exist stops the run and is named.
func TestFleetValidation(t *testing.T) {
	for want, cfg := range map[string]Config{
		"Fleet.Replicas is empty":                               {Fleet: Fleet{Replicas: []ReplicaConfig{}}},
		"Fleet.SignalDelay must be >= 0":                        {Fleet: Fleet{SignalDelay: -time.Second}},
		"Fleet.Replicas[1]: engine: MaxSeqs must be >= 0":       {Fleet: Fleet{Replicas: []ReplicaConfig{{}, {Engine: engine.Config{MaxSeqs: -1}}}}},
		"with Fleet.Replicas set, configure each replica there": {Engine: engine.Config{MaxSeqs: 8}, Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{})}},
		"PrefixAffinity.CacheThreshold must be in [0, 1]":       {Fleet: Fleet{Router: PrefixAffinity{CacheThreshold: 2}}},
	} {
		assert.ErrorContains(t, cfg.Validate(), want)
	}
	src, err := atlasWorkload(2, 1)
	require.NoError(t, err)
	_, err = Run(Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Router: outOfRange{}}}, src, nil)
	assert.EqualError(t, err, "sim: router sim.outOfRange chose replica 2 of a fleet of 2 (indices 0 to 1)")
}

type outOfRange struct{}

func (outOfRange) Route(_ *workload.Request, v *View) int { return v.Replicas() }

// A heterogeneous fleet: an old and a new accelerator generation side by
// side, each with its own cost model. Least-loaded routing sends the faster
// replica more requests, and each replica's summary says so.
func TestHeterogeneousFleet(t *testing.T) {
	fast := ReplicaConfig{Model: costmodelFrozenFaster()}
	cfg := Config{Fleet: Fleet{Replicas: []ReplicaConfig{{}, fast}, Router: LeastLoaded{}}, Window: Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	_, sum := runText(t, cfg, atlasWorkload, 5, 2)
	require.Len(t, sum.Replicas, 2)
	assert.Greater(t, sum.Replicas[1].Offered, sum.Replicas[0].Offered, "the faster replica drains sooner, so it is less loaded more often")
	total := 0
	for _, r := range sum.Replicas {
		total += r.Offered
		assert.False(t, math.IsNaN(r.KVOccupancy))
		assert.Greater(t, r.Busy, 0.0)
		assert.LessOrEqual(t, r.Busy, 1.0)
	}
	assert.Equal(t, sum.Offered, total, "every measured request has one replica")
}

// costmodelFrozenFaster is a newer accelerator: a 30 ms decode step and
// prefill at two thirds of Atlas's cost.
func costmodelFrozenFaster() costmodel.Frozen {
	return costmodel.Frozen{DecodeStep: 30 * time.Millisecond, PrefillBase: 14 * time.Millisecond, PrefillPerToken: 23 * time.Microsecond}
}

// atlasWorkload is Poisson arrivals of 2,000-token prompts and 200-token
// answers, enough for 700 s at the rate.
var atlasWorkload = workloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
	return workload.NewPoisson(seed, rate, int(rate*700)+10, workload.Fixed(2000, 200))
})
