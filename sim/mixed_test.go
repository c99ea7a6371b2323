package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// A mixed move (engine's mixed.go: a step that prefills a prompt whole
// beside the decodes, planned with the decode run after it as one move)
// gives the bytes of the two moves it stands for (noMixed) and of the
// stepwise run, on random single replicas whose prompts often fit one
// chunk (and sometimes not: chunk caps, small token budgets), under
// arrivals that cut such moves inside their first step and after it (at
// rates from a trickle to overload, with sequence caps that keep the
// batch full or not), timeouts that abort requests inside them, KV
// pressure, warm-ups, horizons (where the runner asks for none), ITL
// bounds about the mixed step's length, and block sizes.
func TestMixedMovesAreStepwise(t *testing.T) {
	cases := 300
	if testing.Short() {
		cases = 60
	}
	mixed, through := 0, 0
	for seed := range uint64(cases) {
		cfg, src := mixedScenario(t, seed)
		t.Run("", func(t *testing.T) {
			mixes, insides := mixedTwins(t, cfg, src)
			if mixes > 0 {
				mixed++
			}
			if insides > 0 {
				through++
			}
		})
		if t.Failed() {
			t.Logf("seed %d: %+v", seed, cfg)
			return
		}
	}
	t.Logf("%d of %d scenarios ran mixed moves, %d finished requests inside them", mixed, cases, through)
	require.Greater(t, mixed, cases/2, "too few scenarios ran mixed moves")
	require.Greater(t, through, cases/4, "too few scenarios finished requests inside mixed moves")
}

// FuzzMixedMovesAreStepwise is TestMixedMovesAreStepwise's comparison
// on the scenario of any seed.
func FuzzMixedMovesAreStepwise(f *testing.F) {
	for seed := range uint64(4) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		cfg, src := mixedScenario(t, seed)
		mixedTwins(t, cfg, src)
	})
}

// mixedTwins runs cfg on src's requests with mixed moves, as their twin
// (noMixed) and stepwise, requires the same bytes of the three, and
// returns the mixed moves the first ran and the requests it finished
// inside them (moves that go on through finishes: finishMixed).
func mixedTwins(t *testing.T, cfg Config, src func() workload.Source) (int, int) {
	text, r := runChecked(t, cfg, src())
	plain, pr := runUnchecked(t, cfg, src()) // account's odd is firstOn itself, not checking's
	require.Equal(t, r.mixes, pr.mixes)
	sameBytes(t, plain, text)
	noMixed = true
	twin, tr := runChecked(t, cfg, src())
	noMixed = false
	require.Zero(t, tr.mixes)
	sameBytes(t, twin, text)
	step := cfg
	step.Stepwise = true
	stepText, _ := runChecked(t, step, src())
	sameBytes(t, stepText, text)
	return r.mixes, r.mixInsides
}

// runUnchecked is runChecked without the engines' checks, which change
// what account tests (runner.odd).
func runUnchecked(t *testing.T, cfg Config, src workload.Source) ([]byte, *runner) {
	t.Helper()
	var buf bytes.Buffer
	r, err := newRunner(cfg, src, ObserverFunc(func(rec *Record) { fmt.Fprintf(&buf, "%+v\n", *rec) }))
	require.NoError(t, err)
	require.NoError(t, r.loop())
	fmt.Fprintf(&buf, "%+v\n", r.summary())
	return buf.Bytes(), r
}

// mixedScenario is TestMixedMovesAreStepwise's random replica and
// workload for seed.
func mixedScenario(tb testing.TB, seed uint64) (Config, func() workload.Source) {
	rng := rand.New(rand.NewPCG(seed, 45))
	var cfg Config
	e := &cfg.Engine
	e.MaxSeqs = []int{0, 1 + rng.IntN(4), 4 + rng.IntN(28)}[rng.IntN(3)]
	switch rng.IntN(6) {
	case 0:
		e.ChunkCap = 64 + rng.IntN(512)
	case 1:
		e.MaxBatchedTokens = 128 + rng.IntN(1024)
	}
	if rng.IntN(4) == 0 {
		e.KVBlocks = 100 + rng.IntN(500)
	}
	if rng.IntN(6) == 0 {
		e.BlockSize = 8 << rng.IntN(3)
	}
	if rng.IntN(3) == 0 {
		cfg.Timeout = time.Duration(500+rng.IntN(8000)) * time.Millisecond
	}
	if rng.IntN(3) == 0 {
		cfg.Window.Warmup = time.Duration(rng.IntN(10)) * time.Second
	}
	if rng.IntN(8) == 0 {
		cfg.Window.Horizon = cfg.Window.Warmup + time.Duration(3+rng.IntN(20))*time.Second
	}
	if rng.IntN(3) == 0 {
		cfg.SLO.ITL = time.Duration(40+rng.IntN(120)) * time.Millisecond // about the mixed step's length
	}
	if rng.IntN(5) == 0 {
		cfg.SLO.ITLSeries = PerToken
	}
	if rng.IntN(6) == 0 {
		cfg.ErrorRate, cfg.Seed = 0.1, seed
	}
	rate := 0.2 + 8*rng.Float64()
	n := 30 + rng.IntN(150)
	lengths := workload.Independent{
		Input:  workload.Uniform{Center: 50 + rng.IntN(1200), RangeRatio: rng.Float64()},
		Output: workload.Uniform{Center: 2 + rng.IntN(120), RangeRatio: rng.Float64()},
	}
	return cfg, func() workload.Source { return poisson(tb, seed+7, rate, n, lengths) }
}
