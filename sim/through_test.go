package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/require"
)

// Runs through finishes (runThrough; engine's through.go) are the runs
// that end at the first finish (noThrough, the twin) and the step-by-step
// run, to the byte: every record and the summary, over random single
// replicas fed by Poisson arrivals, with timeouts, KV pressure (few
// blocks: preemptions), sequence and token caps, warm-ups, a backlog
// bound, ITL bounds that the steps pass in either series, injected
// errors, a bounded waiting queue, outputs capped at MaxModelLen, block
// sizes, and horizons and fleets (where the runner does not ask for such
// runs: held all the same). Enough of
// the scenarios must finish requests inside runs (runner.insides).
func TestRunsThroughFinishesAreStepwise(t *testing.T) {
	t.Parallel()
	checkThrough(t, 300, 41, func(rng *rand.Rand, seed uint64) (Config, func() workload.Source) {
		cfg, lengths, rate, n := throughScenario(rng, seed)
		if rng.IntN(8) == 0 {
			cfg.Fleet = Fleet{Replicas: Copies(2+rng.IntN(3), ReplicaConfig{Engine: cfg.Engine}), Router: LeastLoaded{}}
			cfg.Engine = engine.Config{}
		}
		return cfg, func() workload.Source { return poisson(t, seed+1, rate, n, lengths) }
	})
}

// Runs through finishes on a replica whose prefix cache holds blocks
// (engine's through.go: skipBlocks, dropThrough) are the runs that end at
// the first finish and the step-by-step run, to the byte: the scenarios
// of TestRunsThroughFinishesAreStepwise, their prompts behind shared
// prefixes (groups of them, reused with a probability, by Zipf's law
// or not), under KV pressure in half of them, so that the runs evict
// cached blocks that later arrivals would have found. 40 scenarios,
// 100 under SERVESIM_LONG=1: the 100 took 20 s, sim's longest quick test.
func TestRunsThroughCachedFinishesAreStepwise(t *testing.T) {
	t.Parallel()
	checkThrough(t, testlong.Int(t, 40, 100), 45, func(rng *rand.Rand, seed uint64) (Config, func() workload.Source) {
		cfg, lengths, rate, n := throughScenario(rng, seed)
		if rng.IntN(2) == 0 {
			cfg.Engine.KVBlocks = 150 + rng.IntN(600)
		}
		prefix := workload.PrefixReuse{Groups: 1 + rng.IntN(12), PrefixTokens: 16 * (1 + rng.IntN(60)),
			Probability: 0.3 + 0.7*rng.Float64(), BlockTokens: 16}
		if rng.IntN(3) == 0 {
			prefix.Zipf = 0.8
		}
		return cfg, func() workload.Source {
			g, err := workload.NewSynthetic(workload.Synthetic{Seed: seed + 1, Count: n,
				Arrival: workload.Arrival{Rate: rate}, Lengths: lengths, Prefix: prefix})
			require.NoError(t, err)
			return g
		}
	})
}

// throughScenario draws a single replica's configuration, its requests'
// lengths, their Poisson rate and count for the tests of runs through
// finishes.
func throughScenario(rng *rand.Rand, seed uint64) (Config, workload.Joint, float64, int) {
	cfg := Config{}
	rate, n := 0.5+4*rng.Float64(), 40+rng.IntN(160)
	out := workload.Uniform{Center: 20 + rng.IntN(200), RangeRatio: rng.Float64()}
	lengths := workload.Independent{Input: workload.Uniform{Center: 100 + rng.IntN(1500), RangeRatio: 0.9}, Output: out}
	if rng.IntN(4) == 0 {
		cfg.Engine.KVBlocks = 200 + rng.IntN(600)
	}
	if rng.IntN(4) == 0 {
		cfg.Engine.MaxSeqs = 2 + rng.IntN(12)
	}
	if rng.IntN(5) == 0 {
		cfg.Engine.MaxBatchedTokens = 256 + rng.IntN(2048)
	}
	if rng.IntN(3) == 0 {
		cfg.Timeout = time.Duration(1+rng.IntN(20)) * time.Second
	}
	if rng.IntN(3) == 0 {
		cfg.Window.Warmup = time.Duration(rng.IntN(20)) * time.Second
	}
	if rng.IntN(6) == 0 {
		cfg.Window.Horizon = cfg.Window.Warmup + time.Duration(5+rng.IntN(40))*time.Second
	}
	if rng.IntN(6) == 0 {
		cfg.MaxBacklog = 5 + rng.IntN(30)
	}
	if rng.IntN(4) == 0 {
		cfg.SLO.ITL = time.Duration(5+rng.IntN(40)) * time.Millisecond
	}
	if rng.IntN(6) == 0 {
		cfg.SLO.ITLSeries = PerToken
	}
	if rng.IntN(6) == 0 {
		cfg.ErrorRate, cfg.Seed = 0.1, seed
	}
	if rng.IntN(8) == 0 {
		cfg.Engine.MaxWaiting = 1 + rng.IntN(6)
	}
	if rng.IntN(8) == 0 {
		cfg.Engine.MaxModelLen = 600 + rng.IntN(1200) // caps some outputs
	}
	if rng.IntN(8) == 0 {
		cfg.Engine.BlockSize = 8 << rng.IntN(3)
	}
	return cfg, lengths, rate, n
}

// checkThrough runs cases scenarios that scenario draws (a fifth with -short)
// with runs through finishes, with noThrough (the twin) and Stepwise, and
// holds the three to the same bytes; more than a quarter of them must
// finish requests inside runs (runner.insides).
func checkThrough(t *testing.T, cases int, salt uint64, scenario func(*rand.Rand, uint64) (Config, func() workload.Source)) {
	if testing.Short() {
		cases /= 5
	}
	through := 0
	for seed := range uint64(cases) {
		cfg, src := scenario(rand.New(rand.NewPCG(seed, salt)), seed)
		t.Run("", func(t *testing.T) {
			text, r := runChecked(t, cfg, src())
			twin, _ := runCheckedWith(t, cfg, src(), twins{noThrough: true})
			sameBytes(t, twin, text)
			step := cfg
			step.Stepwise = true
			stepText, _ := runChecked(t, step, src())
			sameBytes(t, stepText, text)
			if r.insides > 0 {
				through++
			}
		})
		if t.Failed() {
			t.Logf("seed %d: %+v", seed, cfg)
			return
		}
	}
	t.Logf("%d of %d scenarios finished requests inside runs", through, cases)
	require.Greater(t, through, cases/4, "too few scenarios finished requests inside runs")
}
