package chart

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// The occupancy chart of one run renders; its samples are the changes of
// the replica's state, each at a step's start.
func TestOccupancyChartRenders(t *testing.T) {
	tl := &Timeline{}
	src, err := workload.NewPoisson(3, 1.9, 500, workload.Fixed(2000, 200))
	require.NoError(t, err)
	_, err = sim.Run(sim.Config{Engine: engine.Config{ChunkCap: 512}}, src, tl)
	require.NoError(t, err)
	require.Equal(t, 1, tl.Replicas())
	r := tl.reps[0]
	assert.Equal(t, 28672, r.blocks)
	assert.Greater(t, len(r.at), maxColumns, "a long run: drawn in columns")
	for i := 1; i < len(r.at); i++ {
		require.Greater(t, r.at[i], r.at[i-1])
	}
	ps, err := Occupancy(tl, 0)
	require.NoError(t, err)
	checkImages(t, "occupancy", ps, 650+472)
	var svg bytes.Buffer
	require.NoError(t, Write(&svg, SVG, ps))
	assert.True(t, strings.Contains(svg.String(), "waiting") && strings.Contains(svg.String(), "held by requests"))

	_, err = Occupancy(tl, 1)
	assert.ErrorContains(t, err, "no step of replica 1")
}

// Past maxColumns samples each column keeps its highest value.
func TestStepPointsKeepPeaks(t *testing.T) {
	n := 10 * maxColumns
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration(i) * time.Millisecond
	}
	of := func(i int) float64 {
		if i == 4321 {
			return 99
		}
		return float64(i % 3)
	}
	xys := stepPoints(at, of)
	assert.LessOrEqual(t, len(xys), maxColumns)
	peak := 0.0
	for _, xy := range xys {
		peak = math.Max(peak, xy.Y)
		assert.True(t, xy.Y == 2 || xy.Y == 99, "each column shows its highest value, got %v", xy.Y)
	}
	assert.Equal(t, 99.0, peak)
	assert.Len(t, stepPoints(at[:10], of), 10, "a short run is drawn sample by sample")
}
