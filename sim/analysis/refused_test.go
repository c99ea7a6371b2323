package analysis

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
)

// Issue 32: a configuration whose requests can never fit in KV labelled
// every load "overloaded" although the replica served nothing and held
// nothing: each request was refused at arrival. Such a load is Refused,
// and its utilisation raises no 1/(1−ρ) warning.
func TestSaturationRefusedWhenEveryRequestIsRejected(t *testing.T) {
	s := atlasSweep()
	s.Config.Engine = engine.Config{KVBlocks: 1} // 16 tokens: no 2,000-token prompt fits
	s.Grid = Grid{Loads: []float64{0.5, 3.5}}
	s.Reps = 2
	s.Capacity = 0.5
	c, err := s.Run()
	require.NoError(t, err)
	for _, p := range c.Points {
		assert.Equal(t, Refused, p.Saturation, "load %v", p.Load)
		assert.Equal(t, "refused", p.Saturation.String())
		assert.Zero(t, p.Attainment.Center)
		assert.Equal(t, 2*p.Load, p.Utilisation)
		assert.NotContains(t, fmt.Sprint(p.Warnings), "1/(1−ρ)", "load %v", p.Load)
		for _, r := range p.Runs {
			assert.Positive(t, r.Offered)
			assert.Equal(t, r.Offered, r.Count(sim.StatusRejected))
		}
	}
	assert.Equal(t, "Saturation(4)", Saturation(4).String())
}

// Issue 32: a sweep of one replication printed a zero-width "95 %"
// knee interval, [1.734, 1.734]: its points have no attainment interval,
// and the crossings fell back to the centre. One replication gives the
// knee and no interval.
func TestKneeOfOneReplicationHasNoInterval(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1, 2, 3.5}}
	for _, reps := range []int{1, 2} {
		s.Reps = reps
		c, err := s.Run()
		require.NoError(t, err)
		k := c.Knee
		require.True(t, k.Found, "reps %d", reps)
		assert.Equal(t, reps, k.Load.N)
		assert.Greater(t, k.Load.Center, 1.0)
		assert.Less(t, k.Load.Center, 3.5)
		if reps == 1 {
			assert.True(t, math.IsNaN(k.Load.Lo) && math.IsNaN(k.Load.Hi), "no interval from one replication: %v", k.Load)
			assert.Contains(t, k.Load.String(), "(n=1, no interval)")
			h := c.Headroom(1)
			assert.True(t, math.IsNaN(h.Abs.Lo) && math.IsNaN(h.Rel.Hi), "the headroom has none either")
			continue
		}
		assert.Less(t, k.Load.Lo, k.Load.Hi, "two replications give an interval of some width")
	}
}
