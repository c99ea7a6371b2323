package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// A decode streak's member whose last tokens are the streak's last move
// (lastMove: one a step, every gap the step) is accounted with the
// streak's totals, not emit's gaps: its record, the ITL histograms and
// the window's tokens are step by step's, byte for byte, with ITL bounds
// under the decode step (every gap over, in either series), a model
// whose steps vary with the batch (the moves' peaks), a window that
// leaves some tokens out, sketched gaps and a fleet. Each fast run took
// lastMove, so each case tests it.
func TestStreakLastMovesAreStepwise(t *testing.T) {
	lengths := workload.Independent{Input: workload.Uniform{Center: 600, RangeRatio: 0.9}, Output: workload.Uniform{Center: 60, RangeRatio: 0.9}}
	src := func(rate float64) func() workload.Source {
		return func() workload.Source { return poisson(t, 7, rate, 300, lengths) }
	}
	tight := SLO{TTFT: time.Second, ITL: 40 * time.Millisecond}
	cases := map[string]struct {
		cfg Config
		src func() workload.Source
	}{
		"every gap over":            {Config{SLO: tight}, src(3)},
		"every gap over, per token": {Config{SLO: SLO{TTFT: time.Second, ITL: 40 * time.Millisecond, ITLSeries: PerToken}}, src(3)},
		"mixed steps over":          {Config{SLO: SLO{TTFT: time.Second, ITL: 60 * time.Millisecond}}, src(6)},
		"steps that vary":           {Config{SLO: SLO{TTFT: time.Second, ITL: 30 * time.Millisecond}, Model: costmodel.AtlasLinear()}, src(4)},
		"window":                    {Config{SLO: tight, Window: Window{Warmup: 10 * time.Second, Horizon: 60 * time.Second}}, src(4)},
		"sketched":                  {Config{SLO: tight, ExactSamples: 3}, src(4)},
		"fleet":                     {Config{SLO: tight, Fleet: Fleet{Replicas: Copies(3, ReplicaConfig{Engine: engine.Config{KVBlocks: 2000}}), Router: Random{}}}, src(9)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			n, none := runTwins(t, c.cfg, c.src, func(r *runner) int { return r.lastMoves })
			require.Positive(t, n, "no member's last move was the streak's")
			require.Zero(t, none, "the step-by-step twin keeps no streaks")
		})
	}
}
