package analysis

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A curve whose replications sketched falls back to intervals across the
// replications' own percentiles, and says so.
func TestSweepPastExactSamplesSaysSo(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1.5}}
	s.Reps = 3
	exact, err := s.Run()
	require.NoError(t, err)
	s.Config.ExactSamples = 100
	sk, err := s.Run()
	require.NoError(t, err)
	e, p := exact.Points[0], sk.Points[0]
	assert.Equal(t, e.Goodput, p.Goodput)
	assert.Equal(t, e.Attainment, p.Attainment)
	assert.InEpsilon(t, e.TTFT.P99.Center, p.TTFT.P99.Center, 0.1, "pooled against mean of replications")
	assert.Equal(t, 3, p.TTFT.P99.N, "an interval across the three replications")
	assert.False(t, math.IsNaN(p.TTFT.P99.Lo))
	joined := fmt.Sprint(p.Warnings)
	assert.Contains(t, joined, "from a sketch")
	assert.Contains(t, joined, "0.5 %")
	assert.NotContains(t, fmt.Sprint(e.Warnings), "sketch")
}
