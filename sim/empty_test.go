package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An empty window has no attainment: 0 good of 0 offered is not "the SLO
// was missed". Issue 8, bug 3: at 0.001 req/s the capacity report said the
// SLO was missed although no request was measured. Nor does a window whose
// measured requests were all still in flight when the run stopped.
func TestEmptyWindowHasNoAttainment(t *testing.T) {
	reqs := list{{ID: 1, Arrival: 20 * time.Second, InputTokens: 100, OutputTokens: 10}}
	sum, err := Run(Config{Window: Window{Warmup: time.Second, Horizon: 10 * time.Second}}, &reqs, nil)
	require.NoError(t, err)
	assert.True(t, sum.NoMeasured())
	assert.Zero(t, sum.Offered)
	assert.True(t, math.IsNaN(sum.Attainment), "attainment %v", sum.Attainment)
	assert.Equal(t, 9*time.Second, sum.Window)

	// One measured request of 2,000/200 tokens takes about 9 s; the run
	// stops at Horizon + Drain = 2 s with it in flight.
	reqs = list{{ID: 1, Arrival: 0, InputTokens: 2000, OutputTokens: 200}}
	sum, err = Run(Config{Window: Window{Horizon: time.Second}}, &reqs, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Offered)
	assert.Equal(t, 1, sum.Count(StatusUnfinished))
	assert.True(t, sum.NoMeasured())
	assert.True(t, math.IsNaN(sum.Attainment))
}

// An open window whose warm-up outlasts every request is empty, not
// negative (it was -warm-up + last event).
func TestOpenWindowIsNeverNegative(t *testing.T) {
	reqs := list{{ID: 1, Arrival: 0, InputTokens: 100, OutputTokens: 10}}
	sum, err := Run(Config{Window: Window{Warmup: time.Hour}}, &reqs, nil)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), sum.Window)
	assert.True(t, sum.NoMeasured())
	assert.True(t, math.IsNaN(sum.Attainment))
}
