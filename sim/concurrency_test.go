package sim

import (
	"fmt"
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
