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

// TestIDsInPlaceAreCopied holds a run whose conversations' ids are
// extended in place (idsInPlace) to the same run with them copied a
// turn (twins.noIDsInPlace), byte for byte, every record, step and summary,
// over random single replicas (the only runs that take the path) with
// multi-turn conversations: shared system prompts or none, lengths with
// and without bounds (arrays cut with room, or grown), context windows,
// block sizes, KV pressure with preemption, chunk caps, MaxSeqs, and
// now and then Stepwise or KeepTokens. A fleet routes, and takes the
// copy (checked).
func TestIDsInPlaceAreCopied(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(50, 11))
	inPlace, cached := 0, 0
	runs := 40
	if testing.Short() {
		runs = 10
	}
	for i := range runs {
		wcfg, ecfg := randomChat(rng)
		cfg := Config{Seed: rng.Uint64(), Engine: ecfg, Stepwise: rng.IntN(6) == 0, KeepTokens: rng.IntN(6) == 0}
		fleet := rng.IntN(8) == 0
		if fleet {
			cfg.Engine, cfg.Fleet = engine.Config{}, Fleet{Replicas: Copies(2, ReplicaConfig{Engine: ecfg}), Router: LeastLoaded{}}
		}
		src := chatSources(t, wcfg)
		a, r, err := runSourceScenario(cfg, src(), true)
		require.NoError(t, err, "scenario %d", i)
		_, ok := r.fill.(interface{ IDsInPlace() })
		require.True(t, ok, "a ChatSource takes the route")
		assert.Equal(t, fleet, r.routes, "a fleet routes, one replica does not")
		if !r.routes {
			inPlace++
		}
		if a.sum.Cached > 0 {
			cached++
		}
		b, _, err := runSourceScenarioWith(cfg, src(), twins{noIDsInPlace: true}, true)
		require.NoError(t, err)
		sameBytes(t, b.text, a.text)
	}
	assert.Greater(t, inPlace, runs/2, "most runs extend ids in place")
	assert.Greater(t, cached, runs/3, "most runs find cached prefixes")
}

// TestMoreIsEachPull holds a run that asks a closed-loop source's More
// after each request it pulls (moreReady) to the same run draining its
// NextInto until ErrWaiting (twins.eachPull), byte for byte, every
// record, step and summary, over random multi-turn conversations
// (randomChat: KV pressure, chunk caps, MaxSeqs, context windows) on one
// replica or a fleet, now and then with injected errors and client
// deadlines (turns that fail end their conversations), MaxConcurrency
// (turns waiting client-side), a measured window, Stepwise, and a
// schedule of arrivals that ends before every conversation started.
func TestMoreIsEachPull(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(55, 3))
	runs := 40
	if testing.Short() {
		runs = 10
	}
	failed := 0
	for i := range runs {
		wcfg, ecfg := randomChat(rng)
		if rng.IntN(5) == 0 {
			wcfg.Arrival.Schedule = workload.Schedule{Steps: []workload.RateStep{{Duration: time.Duration(2+rng.IntN(20)) * time.Second, Rate: 0.2 + rng.Float64()}}}
		}
		cfg := Config{Seed: rng.Uint64(), Engine: ecfg, Stepwise: rng.IntN(6) == 0}
		if rng.IntN(3) == 0 {
			cfg.ErrorRate = 0.2 * rng.Float64()
		}
		if rng.IntN(3) == 0 {
			cfg.Timeout = time.Duration(5+rng.IntN(60)) * time.Second
		}
		if rng.IntN(4) == 0 {
			cfg.MaxConcurrency = 1 + rng.IntN(4)
		}
		if rng.IntN(4) == 0 {
			cfg.Warmup, cfg.Horizon = time.Duration(rng.IntN(10))*time.Second, time.Duration(10+rng.IntN(60))*time.Second
		}
		if rng.IntN(6) == 0 {
			cfg.Engine, cfg.Fleet = engine.Config{}, Fleet{Replicas: Copies(2, ReplicaConfig{Engine: ecfg}), Router: LeastLoaded{}}
		}
		src := chatSources(t, wcfg)
		a, r, err := runSourceScenario(cfg, src(), true)
		require.NoError(t, err, "scenario %d", i)
		require.NotNil(t, r.more, "a ChatSource tells when it has more")
		b, rb, err := runSourceScenarioWith(cfg, src(), twins{eachPull: true}, true)
		require.NoError(t, err)
		require.Nil(t, rb.more)
		sameBytes(t, b.text, a.text)
		if a.sum.Offered > a.sum.Good {
			failed++
		}
	}
	assert.Greater(t, failed, runs/10, "runs whose turns fail")
}

// randomChat is a random multi-turn conversation workload and an engine
// for it: shared system prompts or none, lengths with and without bounds,
// context windows, ids of 16 to 512 tokens, block sizes, KV pressure
// with preemption, chunk caps, MaxSeqs.
func randomChat(rng *rand.Rand) (workload.Conversations, engine.Config) {
	lengths := func(center int) workload.Length { return randomLength(rng, center) }
	wcfg := workload.Conversations{Seed: rng.Uint64(), Count: 5 + rng.IntN(15), Arrival: workload.Arrival{Rate: 0.1 + rng.Float64()},
		Turns: workload.Uniform{Center: 1 + rng.IntN(8), RangeRatio: rng.Float64()}, FirstInput: lengths(800),
		UserInput: lengths(300), Output: lengths(300), Think: workload.Think{Mean: time.Duration(rng.IntN(20)) * time.Second, Exponential: rng.IntN(2) == 0}}
	if rng.IntN(4) == 0 {
		wcfg.MaxInput = 1_000 + rng.IntN(4_000)
	}
	if rng.IntN(5) > 0 {
		wcfg.Prefix = workload.PrefixReuse{Groups: 1 + rng.IntN(16), PrefixTokens: rng.IntN(1_500), Probability: rng.Float64(),
			BlockTokens: []int{16, 16, 32, 100, 512}[rng.IntN(5)]}
	}
	ecfg := engine.Config{BlockSize: []int{0, 16, 32}[rng.IntN(3)]}
	if rng.IntN(3) == 0 {
		ecfg.KVBlocks = 300 + rng.IntN(1_500) // preemption
	}
	if rng.IntN(3) == 0 {
		ecfg.ChunkCap = 64 + rng.IntN(512)
	}
	if rng.IntN(3) == 0 {
		ecfg.MaxSeqs = 1 + rng.IntN(16)
	}
	return wcfg, ecfg
}

// chatSources is a constructor of wcfg's source, a new one each call
// (each run consumes its own).
func chatSources(t *testing.T, wcfg workload.Conversations) func() workload.Source {
	return func() workload.Source {
		s, err := workload.NewConversations(wcfg)
		require.NoError(t, err)
		return s
	}
}

// randomLength is a random length distribution about center tokens:
// constant, log-normal or uniform.
func randomLength(rng *rand.Rand, center int) workload.Length {
	switch rng.IntN(4) {
	case 0:
		return workload.Constant{Tokens: 1 + rng.IntN(center)}
	case 1:
		return workload.LogNormalMean(float64(center), 0.5)
	default:
		return workload.Uniform{Center: 1 + rng.IntN(center), RangeRatio: rng.Float64()}
	}
}
