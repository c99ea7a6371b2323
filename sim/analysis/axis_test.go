package analysis

import (
	"slices"
	"testing"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Concurrency axis sweeps client populations, whole numbers of
// clients, and labels its knee so. On Atlas (32 sequences a step) N <= 32
// clients with zero think time are all served at once; beyond, the 32
// slots serve 32 of every N requests at once and the other N − 32 wait for
// a whole request (about 8 s) and miss the 600 ms TTFT bound: attainment
// 32/N, which meets 0.95 up to N = 32/0.95 = 33.68. Bisection ends at 33
// met (0.970) and 34 missed (0.941), and the knee interpolates to 33.7.
func TestConcurrencyAxis(t *testing.T) {
	s := Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
		Workload: Clients(workload.Fixed(2000, 200)),
		Grid:     Grid{Start: 4, Factor: 2, Bisect: 6},
		Reps:     3,
		Axis:     Concurrency,
	}
	c, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, Concurrency, c.Axis)
	loads := []float64{}
	for _, p := range c.Points {
		loads = append(loads, p.Load)
		assert.Equal(t, float64(int(p.Load)), p.Load)
	}
	assert.True(t, slices.IsSorted(loads))
	require.True(t, c.Knee.Found, "%v %v", loads, c.Warnings)
	t.Logf("loads %v, knee %.3g clients, lastMet %v firstMiss %v", loads, c.Knee.Load.Center, c.Knee.LastMet, c.Knee.FirstMiss)
	assert.Equal(t, 33.0, c.Knee.LastMet)
	assert.Equal(t, 34.0, c.Knee.FirstMiss, "bisected to adjacent populations")
	assert.InDelta(t, 32/0.95, c.Knee.Load.Center, 0.05, "linear between 33 and 34")
	for _, p := range c.Points {
		if p.Load >= 32 && p.Load <= 34 {
			assert.InDelta(t, 32/p.Load, p.Attainment.Center, 0.002, "at %v clients", p.Load)
		}
	}
	assert.Equal(t, "clients", c.Axis.Unit())

	s.Grid = Grid{Loads: []float64{2.5}}
	assert.ErrorContains(t, s.Validate(), "whole number of clients")
	s.Grid, s.Capacity = Grid{Loads: []float64{2}}, 2.7
	assert.ErrorContains(t, s.Validate(), "Capacity is a rate")
}
