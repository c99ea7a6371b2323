package sim

import (
	"testing"
	"time"

	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Below the bound nothing changes: the default bound is far above any
// backlog of a load the replica sustains, and a negative bound is none.
func TestBacklogBoundLeavesSteadyRunsAlone(t *testing.T) {
	cfg := Config{Window: Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	a := runBytes(t, 3, cfg)
	cfg.MaxBacklog = -1
	sameBytes(t, a, runBytes(t, 3, cfg))
	assert.Contains(t, string(a), "Overloaded:false")
}

// Issue 8, bug 5: an absurd load must not hold every queued request until
// the horizon (about 1 KB each: 2.4 GB at 1,000 req/s). Once the replica
// holds more than MaxBacklog requests the run stops, the requests held end
// unfinished, and the summary says Overloaded; the runner never holds more
// than the bound.
func TestOverloadStopsTheRun(t *testing.T) {
	cfg := Config{MaxBacklog: 500, Window: Window{Warmup: 100 * time.Millisecond, Horizon: 600 * time.Second}}
	src := poisson(t, 1, 1000, 10_000_000, workload.Fixed(2000, 200))
	statuses := map[Status]int{}
	r, err := newRunner(cfg, src, ObserverFunc(func(rec *Record) { statuses[rec.Status]++ }))
	require.NoError(t, err)
	require.NoError(t, r.loop())
	sum := r.summary()
	assert.True(t, sum.Overloaded)
	assert.LessOrEqual(t, len(r.slots), 502, "the runner holds no more than the bound")
	assert.Equal(t, 501, statuses[StatusUnfinished], "the arrival that passed the bound and the 500 before it")
	// At 1,000 req/s the bound is passed about half a second in: the
	// window ends at the stop.
	assert.InDelta(t, 0.5, sum.Stopped.Seconds(), 0.1)
	assert.Equal(t, sum.Stopped-100*time.Millisecond, sum.Window)
	assert.Equal(t, sum.Offered, sum.Good+sum.Misses.Total())
	assert.Less(t, sum.Attainment, 0.05)
	assert.Equal(t, 501, sum.HeldAtEnd)

}
