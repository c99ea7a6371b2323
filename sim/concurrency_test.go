package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// keepRecords collects every record, without its tokens.
func keepRecords(recs *[]Record) Observer {
	return ObserverFunc(func(r *Record) {
		k := *r
		k.Tokens = nil
		*recs = append(*recs, k)
	})
}

// A cap no run reaches is no cap: the same records, the same summary.
func TestAnUnreachedCapIsNoCap(t *testing.T) {
	run := func(limit int) string {
		var recs []Record
		cfg := Config{MaxConcurrency: limit, Window: Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}}
		sum, err := Run(cfg, poisson(t, 7, 2, 1000, workload.Fixed(2000, 200)), keepRecords(&recs))
		require.NoError(t, err)
		return fmt.Sprintf("%+v\n%+v", recs, sum)
	}
	assert.Equal(t, run(0), run(1<<30))
}

// Cap 1 on Atlas: every request is served alone, so every 2,000-token
// prompt's TTFT is its prefill alone, 20 + 0.035 × 2,000 = 90 ms, however
// long it waited client-side; its E2E is 90 + 199 × 45 = 9,045 ms; and one
// request is always in flight, so by Little's law the throughput is
// 1 / 9.045 s = 0.1106 req/s, while the arrivals (1 req/s) wait in the
// client's queue (Summary.ClientWait).
func TestCapOneServesOneAtATime(t *testing.T) {
	var recs []Record
	cfg := Config{MaxConcurrency: 1, Window: Window{Warmup: 100 * time.Second, Horizon: 3100 * time.Second}}
	sum, err := Run(cfg, poisson(t, 3, 1, 4000, workload.Fixed(2000, 200)), keepRecords(&recs))
	require.NoError(t, err)
	ok := 0
	for _, r := range recs {
		if r.Status != StatusOK {
			continue
		}
		ok++
		require.Equal(t, 90*time.Millisecond, r.TTFT(), "request %d", r.ID)
		require.Equal(t, 9045*time.Millisecond, r.E2E(), "request %d", r.ID)
		require.GreaterOrEqual(t, r.Arrival, r.Scheduled)
	}
	require.Greater(t, ok, 300)
	assert.InDelta(t, 90, sum.TTFT.Max, 1e-9)
	assert.InEpsilon(t, 1/9.045, sum.RequestThroughput, 0.005, "Little: one in flight, 9.045 s each")
	assert.Greater(t, sum.ClientWait.Median, 60_000.0, "the queue grows by 0.89 requests a second")
	assert.False(t, sum.Overloaded)
}

// An infinite rate (every request due at instant 0) with cap N is N
// closed-loop clients with zero think time: the k-th request sent is the
// k-th the clients issue, at the same instant, and is served alike.
func TestInfiniteRateWithCapIsClosedLoop(t *testing.T) {
	const n, total = 8, 400
	lengths := workload.Independent{Input: workload.Uniform{Center: 2000, RangeRatio: 0.9}, Output: workload.Uniform{Center: 200, RangeRatio: 0.9}}
	pool, err := workload.NewClients(workload.Clients{Seed: 5, Clients: n, Requests: total, Lengths: lengths})
	require.NoError(t, err)
	var closed []Record
	closedSum, err := Run(Config{}, pool, keepRecords(&closed))
	require.NoError(t, err)
	require.Len(t, closed, total)

	src := make(list, total)
	byID := map[uint64]Record{}
	for _, r := range closed {
		src[r.ID] = workload.Request{ID: r.ID, InputTokens: r.Input, OutputTokens: r.Output}
		byID[r.ID] = r
	}
	var capped []Record
	cappedSum, err := Run(Config{MaxConcurrency: n}, &src, keepRecords(&capped))
	require.NoError(t, err)
	require.Len(t, capped, total)
	for _, r := range capped {
		c := byID[r.ID]
		require.Equal(t, c.Arrival, r.Arrival, "request %d is sent when a client would send it", r.ID)
		assert.Equal(t, r.Arrival, r.Scheduled+(r.Arrival-r.Scheduled))
		r.Scheduled, c.Scheduled = 0, 0
		require.Equal(t, c, r, "request %d", r.ID)
	}
	assert.Greater(t, cappedSum.ClientWait.Max, 0.0)
	cappedSum.ClientWait, closedSum.ClientWait = stats.Dist{}, stats.Dist{}
	cappedSum.Samples, closedSum.Samples = Samples{}, Samples{}
	assert.Equal(t, fmt.Sprintf("%+v", closedSum), fmt.Sprintf("%+v", cappedSum))
}

// A cap-bound run stopped by its window leaves the requests still waiting
// client-side unfinished and never sent, saying why.
func TestWaitingClientSideAtTheStop(t *testing.T) {
	var recs []Record
	cfg := Config{MaxConcurrency: 2, Window: Window{Horizon: 20 * time.Second}}
	sum, err := Run(cfg, poisson(t, 1, 5, 100, workload.Fixed(2000, 200)), keepRecords(&recs))
	require.NoError(t, err)
	waiting := 0
	for _, r := range recs {
		if !r.Sent {
			waiting++
			assert.Equal(t, StatusUnfinished, r.Status)
			assert.Contains(t, r.Reason, "waiting client-side for a slot")
			assert.Equal(t, r.Scheduled, r.Arrival)
		}
	}
	assert.Greater(t, waiting, 50)
	assert.Equal(t, sum.Offered, sum.Count(StatusOK)+sum.Count(StatusUnfinished))
}

// The Concurrency axis sweeps client populations, whole numbers of
// clients, and labels its knee so. On Atlas (32 sequences a step) N <= 32
// clients with zero think time are all served at once; beyond, the 32
// slots serve 32 of every N requests at once and the other N − 32 wait for
// a whole request (about 8 s) and miss the 600 ms TTFT bound: attainment
// 32/N, which meets 0.95 up to N = 32/0.95 = 33.68. Bisection ends at 33
// met (0.970) and 34 missed (0.941), and the knee interpolates to 33.7.
func TestConcurrencyAxis(t *testing.T) {
	s := Sweep{
		Config:   Config{Window: Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
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
