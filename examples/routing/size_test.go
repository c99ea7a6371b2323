package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sizing and the sweep run the same fleet on the same seeds: at the
// sweep's last load that met the target, a fleet of -replicas runs the
// very runs of that sweep point, so its attainment is the point's,
// figure for figure, and the size is at most -replicas; at the first
// load that missed, -replicas misses with the point's attainment too,
// and the size is above it.
func TestSizingAgreesWithTheSweep(t *testing.T) {
	o, err := parse(nil, small)
	require.NoError(t, err)
	o.sizeReps = o.reps
	out, err := sweepLevel(levels[0], o)
	require.NoError(t, err)
	c := out.curves[0] // RoundRobin
	require.True(t, c.Knee.Found, c.Knee.Reason())
	for _, at := range []struct {
		load  float64
		meets bool
	}{{c.Knee.LastMet, true}, {c.Knee.FirstMiss, false}} {
		p := pointAt(c, at.load)
		require.NotNil(t, p, "load %v", at.load)
		o.sizeLoad = at.load
		res, err := sizing(levels[0], roundRobin, c, o).Run()
		require.NoError(t, err)
		var probed bool
		for _, pr := range res.Probes {
			if pr.Replicas == o.replicas {
				probed = true
				assert.Equal(t, p.Attainment, pr.Attainment, "at %v req/s, %d replicas: the sweep point's runs", at.load, o.replicas)
			}
		}
		assert.True(t, probed, "the search ran %d replicas: its guess is the load over the knee per replica", o.replicas)
		if at.meets {
			assert.LessOrEqual(t, res.Replicas, o.replicas, "at %v req/s", at.load)
		} else {
			assert.Greater(t, res.Replicas, o.replicas, "at %v req/s", at.load)
		}
	}
}
