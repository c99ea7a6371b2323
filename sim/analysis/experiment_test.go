package analysis

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

func abExperiment(b sim.Config) Experiment {
	a := sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	b.Window = a.Window
	return Experiment{
		Hypothesis: Hypothesis{Claim: "B raises goodput by at least 5 %", Metric: MetricGoodput, Threshold: 0.05},
		A:          a, B: b,
		Workload: atlasWorkload,
		Loads:    []float64{1, 2, 2.4},
		Blocks:   6,
	}
}

// An A/A experiment (B identical to A) is never "improved": with common
// random numbers every paired difference is exactly zero.
func TestAAIsNeverImproved(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		x := abExperiment(sim.Config{})
		x.BaseSeed = seed
		res, err := x.Run()
		require.NoError(t, err)
		assert.Equal(t, NotImproved, res.Verdict)
		for _, l := range res.Loads {
			assert.Equal(t, 0.0, l.Improvement.Center)
			assert.Equal(t, NotImproved, l.Verdict)
		}
	}
}

// A B that is better by construction (a 35 ms decode step instead of 45 ms)
// wins big past A's knee, where A collapses, and not at a light load where
// both carry every request (goodput = offered): the boundary says so. The
// headline covers the loads at or below A's knee (1 and 2 req/s), where the
// gain is under the 5 % threshold; the +37 % past it is reported apart
// (issue 10: a headline over every load was "improved", carried by it).
func TestFasterDecodeWinsPastTheKneeOnly(t *testing.T) {
	x := abExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	res, err := x.Run()
	require.NoError(t, err)
	assert.Equal(t, 2.0, res.BaselineKnee)
	assert.Contains(t, res.Regime, "at or below the baseline's knee")
	assert.Equal(t, NotImproved, res.Verdict, "%+v", res)
	assert.Equal(t, Improved, res.PastVerdict, "%+v", res)
	assert.Equal(t, NotImproved, res.Loads[0].Verdict, "at 1 req/s both meet the SLO: %+v", res.Loads[0])
	assert.Equal(t, Improved, res.Loads[2].Verdict, "at 2.4 req/s A is past its knee: %+v", res.Loads[2])
	assert.Contains(t, res.Boundary(), "B beats the threshold at 2.4")
	t.Log(res.Boundary())

	x.AllLoads = true
	res, err = x.Run()
	require.NoError(t, err)
	assert.Equal(t, Improved, res.Verdict, "over every load, the collapse carries the headline")
	assert.Zero(t, res.PastImprovement.N)
	assert.Equal(t, NoMeasured, res.PastVerdict)
}

func TestExperimentValidate(t *testing.T) {
	_, err := Experiment{}.Run()
	require.Error(t, err)
	for _, field := range []string{"Metric", "Workload", "Loads"} {
		assert.ErrorContains(t, err, field)
	}
	x := abExperiment(sim.Config{})
	x.Blocks = 1
	assert.ErrorContains(t, x.Validate(), "Blocks")
}
