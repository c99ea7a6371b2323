package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summaryOf is a run that offered n requests over a 100 s window, good of
// them good.
func summaryOf(n, good int) sim.Summary {
	return sim.Summary{Window: 100 * time.Second, Offered: n, Good: good,
		Goodput: float64(good) / 100, Attainment: float64(good) / float64(n)}
}

// Retained by hand. Attainment 1, 1, 0.5 at 2, 4, 6 req/s crosses 0.95
// at 4 + (1 − 0.95)/(1 − 0.5)·2 = 4.2 req/s; the peak goodput is 4 req/s
// (at 4). Past the knee are 6.3 and 8.4 req/s: not run on the grid
// {2, 4, 6, 8}, so no number; run at 6.3 (goodput 3.15) and 8.4 (0.84),
// they retain 3.15/4 = 0.7875 and 0.84/4 = 0.21 of the peak.
func TestRetainedPastTheKneeByHand(t *testing.T) {
	s := Sweep{Reps: 2}
	at := map[float64]sim.Summary{
		2: summaryOf(200, 200), 4: summaryOf(400, 400), 6: summaryOf(600, 300), 8: summaryOf(800, 160),
		6.3: summaryOf(630, 315), 8.4: summaryOf(840, 84),
	}
	curve := func(loads ...float64) *Curve {
		runs := make([][]sim.Summary, len(loads))
		for i, l := range loads {
			runs[i] = []sim.Summary{at[l], at[l]}
		}
		c, err := s.CurveOf(loads, runs)
		require.NoError(t, err)
		return c
	}
	grid := curve(2, 4, 6, 8)
	require.True(t, grid.Knee.Found)
	require.InDelta(t, 4.2, grid.Knee.Load.Center, 1e-12)
	require.Len(t, grid.Retained, 2)
	for i, r := range grid.Retained {
		assert.Equal(t, PastKnee[i], r.Multiple)
		assert.InDelta(t, PastKnee[i]*4.2, r.Load, 1e-12)
		assert.False(t, r.Measured, "%g× the knee was not run", r.Multiple)
		assert.True(t, math.IsNaN(r.Share), "no number, not a guess")
		assert.Contains(t, r.String(), "not run")
	}
	assert.Equal(t, []float64{grid.Retained[0].Load, grid.Retained[1].Load}, grid.pastKneeLoads())

	// The loads past the knee as the sweep computes them (1.5 × 4.2 is
	// 6.300000000000001 in floating point; the match allows 1e-9).
	full := curve(2, 4, 6, 6.3, 8, 8.4)
	require.InDelta(t, 4.2, full.Knee.Load.Center, 1e-12, "points past the first miss leave the knee")
	assert.Equal(t, 4.0, full.Peak.Goodput.Center)
	want := []float64{3.15 / 4, 0.84 / 4}
	for i, r := range full.Retained {
		require.True(t, r.Measured, "%g× the knee", r.Multiple)
		assert.InDelta(t, want[i], r.Share, 1e-12)
	}
	assert.Equal(t, "goodput at 1.5× the knee (6.3 req/s): 0.787 of the peak (3.15 good req/s)", full.Retained[0].String())
	assert.Empty(t, full.pastKneeLoads())

	// No knee inside the sweep: nothing past it.
	met := curve(2, 4)
	assert.False(t, met.Knee.Found)
	assert.True(t, math.IsNaN(met.Retained[0].Load))
	assert.Contains(t, met.Retained[0].String(), "no knee")
}

// Grid.PastKnee runs the loads past the knee once it is known: the
// curve's Retained are measured, and the loads are 1.5× and 2× its knee.
func TestSweepRunsPastTheKnee(t *testing.T) {
	s := Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 20 * time.Second, Horizon: 140 * time.Second}},
		Workload: atlasWorkload, Grid: Grid{Loads: []float64{1, 2, 3, 4}, PastKnee: true}, Reps: 2,
	}
	c, err := s.Run()
	require.NoError(t, err)
	require.True(t, c.Knee.Found)
	for _, r := range c.Retained {
		require.True(t, r.Measured, r.String())
		assert.InDelta(t, r.Multiple*c.Knee.Load.Center, r.Load, 1e-9)
		assert.GreaterOrEqual(t, r.Share, 0.0)
		assert.LessOrEqual(t, r.Share, 1.0)
		t.Log(r)
	}
	assert.Len(t, c.Points, 6)
}
