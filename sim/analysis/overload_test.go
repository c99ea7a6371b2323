package analysis

import (
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 8, bug 5: a sweep labels a point whose runs passed
// Config.MaxBacklog overloaded and says why, and an overloaded point is
// past the knee.
func TestOverloadedPointsAndTheKnee(t *testing.T) {
	cfg := sim.Config{MaxBacklog: 500, Window: sim.Window{Warmup: 100 * time.Millisecond, Horizon: 600 * time.Second}}
	// A sweep labels the point overloaded and says why.
	c, err := Sweep{Config: cfg, Workload: Poisson(workload.Fixed(2000, 200)), Grid: Grid{Loads: []float64{1000}}, Reps: 2}.Run()
	require.NoError(t, err)
	assert.Equal(t, Overloaded, c.Points[0].Saturation)
	assert.Contains(t, c.Points[0].Warnings, "overloaded: 2 of 2 replications passed Config.MaxBacklog and stopped early")

	// An overloaded point that measured nothing (the bound was passed
	// inside the warm-up) is past the knee, not "no evidence": with a
	// steady point below it, the knee lies between them.
	cfg.Window.Warmup = 60 * time.Second
	c, err = Sweep{Config: cfg, Workload: Poisson(workload.Fixed(2000, 200)), Grid: Grid{Loads: []float64{0.5, 1000}}, Reps: 2}.Run()
	require.NoError(t, err)
	require.False(t, c.Points[1].NoMeasured())
	assert.Zero(t, c.Points[1].Runs[0].Offered)
	assert.Zero(t, c.Points[1].Attainment.Center, "stopped before its window: attainment 0, not NaN")
	assert.True(t, c.Knee.Found, c.Knee.Reason())
	assert.Contains(t, c.Warnings, "the knee is interpolated between 0.5 and 1000 req/s, more than a factor 2 apart: add loads between them")
	assert.Equal(t, 0.5, c.Knee.LastMet)
	assert.Equal(t, 1000.0, c.Knee.FirstMiss)
}
