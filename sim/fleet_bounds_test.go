package sim

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// A million replicas ran 70 s to 1.84 GB with no output (examples/routing
// -replicas 1000000): the fleet is now refused at once, with one error
// rather than one per replica, before anything is allocated for it.
func TestFleetSizeIsBounded(t *testing.T) {
	// Sequential: it measures the bytes the process allocates, which
	// tests running beside it would add to (processCounters).
	reps := Copies(1_000_000, ReplicaConfig{Engine: engine.Config{KVBlocks: -1}})
	cfg := Config{Fleet: Fleet{Replicas: reps}}
	const want = "sim: Fleet.Replicas has 1000000 replicas, more than MaxReplicas (10000): every replica is allocated when the run starts, about 6 KB each, whatever it holds"
	assert.EqualError(t, cfg.Validate(), want)

	src, err := workload.NewPoisson(1, 2, 10, workload.Fixed(2000, 200))
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err = Run(cfg, src, nil)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	assert.EqualError(t, err, want)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated refusing the fleet")
	assert.Less(t, elapsed, 2*time.Second)

	// The bound itself is a fleet like any other.
	assert.NoError(t, Config{Fleet: Fleet{Replicas: Copies(MaxReplicas, ReplicaConfig{})}}.Validate())
	assert.EqualError(t, Config{Fleet: Fleet{Replicas: Copies(MaxReplicas+1, ReplicaConfig{})}}.Validate(),
		"sim: Fleet.Replicas has 10001 replicas, more than MaxReplicas (10000): every replica is allocated when the run starts, about 6 KB each, whatever it holds")
}

// A fleet at the bound is allocated once, in place: appending each
// replica to a growing slice allocated 16 KB a replica (161 MB for
// 10,000, 56 % of the setup at 50,000), building them in one slice
// allocates 5.8 KB, the size Fleet's documentation and Validate's
// message state.
func TestFleetSetupAllocatesEachReplicaOnce(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(MaxReplicas, ReplicaConfig{})}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := newRunner(cfg, &list{}, nil)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, r.reps, MaxReplicas)
	perReplica := (after.TotalAlloc - before.TotalAlloc) / MaxReplicas
	assert.Less(t, perReplica, uint64(7<<10), "bytes allocated a replica at setup")
	assert.Greater(t, perReplica, uint64(5<<10), "bytes allocated a replica at setup: the documented 6 KB")
}

// Frontends each keep a view of every replica: 10¹² of them ran out of
// memory allocating those views.
func TestFrontendsAreBounded(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}), Frontends: 1e12}}
	const want = "sim: Fleet.Frontends must be <= MaxFrontends (256): each keeps its own view of every replica, got 1000000000000"
	assert.EqualError(t, cfg.Validate(), want)
	src, err := workload.NewPoisson(1, 2, 10, workload.Fixed(2000, 200))
	require.NoError(t, err)
	_, err = Run(cfg, src, nil)
	assert.EqualError(t, err, want)
	cfg.Fleet.Frontends = MaxFrontends
	assert.NoError(t, cfg.Validate())
}

// Durations the run adds to an instant are bounded: a Timeout of
// math.MaxInt64 timed out every request at once, Timeout = MaxInt64 − 1 s
// hung, and a Horizon of 2⁶² measured nothing (its end, Horizon + Drain,
// overflowed).
func TestDurationsAreBounded(t *testing.T) {
	big := time.Duration(math.MaxInt64)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Timeout: big},
			"sim: Timeout must be <= MaxDuration (876000h0m0s, a hundred years: an arrival plus it must stay within time.Duration), got 2562047h47m16.854775807s"},
		{Config{Timeout: big - time.Second},
			"sim: Timeout must be <= MaxDuration (876000h0m0s, a hundred years: an arrival plus it must stay within time.Duration), got 2562047h47m15.854775807s"},
		{Config{Window: Window{Horizon: 1 << 62}},
			"sim: Window.Horizon must be <= MaxDuration (876000h0m0s, a hundred years: the window's end must stay within time.Duration), got 1281023h53m38.427387904s"},
		{Config{Window: Window{Horizon: 100 * time.Second, Drain: big}},
			"sim: Window.Drain must be <= MaxDuration (876000h0m0s, a hundred years: the window's end must stay within time.Duration), got 2562047h47m16.854775807s"},
		{Config{Window: Window{Warmup: big - 1, Horizon: big}},
			"sim: Window.Warmup must be <= MaxDuration (876000h0m0s, a hundred years: the window's end must stay within time.Duration), got 2562047h47m16.854775806s\n" +
				"sim: Window.Horizon must be <= MaxDuration (876000h0m0s, a hundred years: the window's end must stay within time.Duration), got 2562047h47m16.854775807s"},
	} {
		assert.EqualError(t, c.cfg.Validate(), c.want)
	}
	// At the bound a run measures what it is offered, and a timeout that
	// long never fires.
	src, err := workload.NewPoisson(1, 2, 50, workload.Fixed(2000, 200))
	require.NoError(t, err)
	sum, err := Run(Config{Timeout: MaxDuration, Window: Window{Horizon: MaxDuration, Drain: MaxDuration}}, src, nil)
	require.NoError(t, err)
	assert.Equal(t, 50, sum.Offered)
	assert.Equal(t, 50, sum.Status[StatusOK])
}

// An engine count above its bound is refused through the Config, naming
// the field, alone or in a fleet: KVBlocks = 2³¹ used to panic on the
// first step.
func TestEngineBoundsThroughTheConfig(t *testing.T) {
	cfg := Config{Engine: engine.Config{KVBlocks: 1 << 31}}
	assert.EqualError(t, cfg.Validate(), "engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 2147483648")
	src, err := workload.NewPoisson(1, 2, 10, workload.Fixed(2000, 200))
	require.NoError(t, err)
	_, err = Run(cfg, src, nil)
	assert.EqualError(t, err, "engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 2147483648")
	fleet := Config{Fleet: Fleet{Replicas: []ReplicaConfig{{}, {Engine: engine.Config{KVBlocks: 1 << 31}}}}}
	assert.EqualError(t, fleet.Validate(), "sim: Fleet.Replicas[1]: engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 2147483648")
}

// Copies of a negative count is an empty fleet, refused by name; it
// panicked (makeslice: len out of range).
func TestCopiesOfNoneIsAnEmptyFleet(t *testing.T) {
	for _, n := range []int{0, -1, math.MinInt} {
		reps := Copies(n, ReplicaConfig{})
		require.NotNil(t, reps)
		assert.Empty(t, reps)
		assert.EqualError(t, Config{Fleet: Fleet{Replicas: reps}}.Validate(),
			"sim: Fleet.Replicas is empty: a fleet needs at least one replica (leave it nil for one replica configured by Engine and Model)")
	}
}

// A warm-up prompt is bounded as a request is (engine.MaxTokens).
func TestWarmPromptIsBounded(t *testing.T) {
	w := workload.Request{InputTokens: 1 << 40, PrefixHashes: []uint64{1}, PrefixBlockTokens: 1 << 40}
	assert.EqualError(t, Config{Warm: []workload.Request{w}}.Validate(),
		"sim: Warm[0].InputTokens must be <= engine.MaxTokens (2147483647), as a request's, got 1099511627776")
	w.InputTokens, w.PrefixBlockTokens = engine.MaxTokens, 512
	assert.NoError(t, Config{Warm: []workload.Request{w}}.Validate())
}
