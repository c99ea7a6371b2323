package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A point whose runs measured nothing takes no part in the knee, and says
// so; the knee comes from the points that measured something.
func TestEmptyPointsTakeNoPartInTheKnee(t *testing.T) {
	sweep := Sweep{
		Config:   sim.Config{Window: sim.Window{Horizon: 2 * time.Second}},
		Workload: Poisson(workload.Fixed(2000, 200)),
		Grid:     Grid{Loads: []float64{0.001, 0.002}},
		Reps:     3,
	}
	c, err := sweep.Run()
	require.NoError(t, err)
	for _, p := range c.Points {
		require.True(t, p.NoMeasured(), "load %v measured %v", p.Load, p.Runs[0].Offered)
		assert.True(t, math.IsNaN(p.Attainment.Center))
		assert.Contains(t, p.Warnings, "no measured requests: no attainment, and no part in the knee")
	}
	assert.False(t, c.Knee.Found)
	assert.Equal(t, NoLoadMeasured, c.Knee.Censored)
	assert.Equal(t, "no load measured any request: no knee", c.Knee.Reason())
}

// An experiment whose windows measured nothing has no verdict (it said
// "not improved" from two zeros), and an open window is refused at once
// instead of running for ever (issue 8, bugs 3 and 4).
func TestExperimentWithoutDataHasNoVerdict(t *testing.T) {
	x := abExperiment(sim.Config{})
	x.A.Window = sim.Window{Horizon: time.Millisecond}
	x.B.Window = x.A.Window
	x.Loads = []float64{0.5}
	x.Blocks = 3
	res, err := x.Run()
	require.NoError(t, err)
	assert.Equal(t, NoMeasured, res.Verdict)
	assert.Equal(t, "no measured requests", res.Verdict.String())
	assert.Equal(t, NoMeasured, res.Loads[0].Verdict)
	assert.Zero(t, res.Improvement.N)
	assert.Equal(t, "no measured requests at 0.5 req/s", res.Boundary())

	x = abExperiment(sim.Config{})
	x.A.Window.Horizon = 0
	x.B.Window.Horizon = 0
	err = x.Validate()
	assert.ErrorContains(t, err, "Experiment.A.Window.Horizon must be set")
	assert.ErrorContains(t, err, "Experiment.B.Window.Horizon must be set")
}
