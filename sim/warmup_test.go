package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// burstThenPoisson: 150 requests at once at t = 0 (a cold start after an
// outage, say), then Poisson arrivals at 1.5 req/s.
type burstThenPoisson struct {
	n    int
	tail workload.Source
}

func (b *burstThenPoisson) Next() (workload.Request, error) {
	if b.n < 150 {
		b.n++
		return workload.Request{ID: uint64(1_000_000 + b.n), InputTokens: 2000, OutputTokens: 200}, nil
	}
	return b.tail.Next()
}

// A run that starts with a burst has a transient: the first requests queue
// behind it. With DetectWarmup the summary reports where MSER-5 began the
// window, counts only requests from there, and keeps Little's law over the
// truncated window.
func TestDetectedWarmupIsReported(t *testing.T) {
	source := func() workload.Source {
		tail, err := workload.NewPoisson(4, 1.5, 4000, workload.Fixed(2000, 200))
		require.NoError(t, err)
		return &burstThenPoisson{tail: tail}
	}
	cfg := Config{Window: Window{Horizon: 2500 * time.Second, DetectWarmup: true}}
	s, err := Run(cfg, source(), nil)
	require.NoError(t, err)
	assert.True(t, s.Warmup.Detected)
	assert.Equal(t, "MSER-5", s.Warmup.Method)
	t.Logf("warm-up %+v offered %d window %v", s.Warmup, s.Offered, s.Window)
	assert.Greater(t, s.Warmup.Truncated, 150, "the burst and the queue behind it are cut")
	assert.Greater(t, s.Warmup.Start, time.Duration(0))
	assert.Equal(t, cfg.Horizon-s.Warmup.Start, s.Window)
	assertLittle(t, s)
	assert.Less(t, s.TTFT.P99, 1000.0, "what remains is the steady state")

	cfg.DetectWarmup = false
	d, err := Run(cfg, source(), nil)
	require.NoError(t, err)
	assert.Equal(t, WarmupReport{Method: "declared"}, d.Warmup)
	assert.Equal(t, s.Offered+s.Warmup.Truncated, d.Offered, "detection only truncates the same eligible requests")
	assert.Greater(t, d.TTFT.P99, 10_000.0, "without it the burst dominates the tail")
}
