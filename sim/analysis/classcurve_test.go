package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sweep of two classes has per-class points and knees: the batch class
// (TTFT 30 s) holds past the interactive class's knee, which binds first
// and sets the curve's own (every request judged by its class's SLO), and
// each class's offered rate is half the load (Poisson thinning).
func TestSweepHasClassKnees(t *testing.T) {
	c, err := Sweep{
		Config:   sim.Config{Classes: twoClasses(0), Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		Workload: twoClassWorkload,
		Grid:     Grid{Loads: []float64{1.5, 2, 2.2, 2.4, 2.6, 3}},
		Reps:     3,
	}.Run()
	require.NoError(t, err)
	require.Len(t, c.ClassKnees, 3)
	inter, batch, def := c.ClassKnees[0], c.ClassKnees[1], c.ClassKnees[2]
	assert.Equal(t, "interactive", inter.Name)
	assert.Equal(t, NoLoadMeasured, def.Knee.Censored, "no request of the default class")
	require.True(t, inter.Knee.Found)
	require.True(t, batch.Knee.Found)
	t.Logf("knees: interactive %v, batch %v, curve %v", inter.Knee.Load, batch.Knee.Load, c.Knee.Load)
	assert.Less(t, inter.Knee.Load.Center, batch.Knee.Load.Center)
	assert.LessOrEqual(t, c.Knee.Load.Center, batch.Knee.Load.Center)
	assert.Contains(t, c.Warnings, fmt.Sprintf(`class "interactive" binds first: its own attainment meets the 0.95 target up to %.4g req/s`, inter.Knee.Load.Center))
	for _, p := range c.Points {
		require.Len(t, p.Classes, 3)
		assert.InEpsilon(t, p.Load/2, p.Classes[0].Offered.Center, 0.1, "at %v req/s", p.Load)
		assert.True(t, p.Classes[2].Attainment.Center != p.Classes[2].Attainment.Center, "NaN for the empty default class")
	}
}
