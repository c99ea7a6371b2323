package servesim_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// A design reviewer's test: the Atlas TP4 replica under Poisson arrivals of
// 2,000-token prompts and 200-token answers must keep 95 % of requests
// within TTFT ≤ 600 ms and every ITL ≤ 150 ms up to about 2 req/s.
func TestAtlasKnee(t *testing.T) {
	sweep := sim.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute}},
		Workload: sim.Poisson(workload.Fixed(2000, 200)),
		Grid:     sim.Grid{Start: 0.5},
	}
	curve, err := sweep.Run()
	require.NoError(t, err)
	knee := curve.Knee.Load // req/s, with a 95 % interval over 5 seeded replications
	require.True(t, curve.Knee.Found)
	assert.InDelta(t, 2.0, knee.Center, 0.2)
	assert.True(t, knee.Lo > 1.7 && knee.Hi < 2.4, "knee %v", knee)
}

// The README shows TestAtlasKnee as it is; this keeps the two the same.
func TestREADMEShowsTheReviewerTest(t *testing.T) {
	src, err := os.ReadFile("atlas_test.go")
	require.NoError(t, err)
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "func TestAtlasKnee")
	end := start + strings.Index(s[start:], "\n}\n") + 3
	assert.Contains(t, string(readme), s[start:end], "README.md must show TestAtlasKnee exactly as atlas_test.go has it")
}
