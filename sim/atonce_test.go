package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// A step end that plans at once (stepEnd: nothing else at its instant,
// no client's request to send, no other replica queued) plans what the
// loop's planQueued would plan next in the same pass: the twin
// (planAtOnce off) queues every such plan, and both must give the same
// bytes, and the stepwise run's, on closed-loop clients whose next
// request comes at the finish's very instant (no think time), a
// client-side MaxConcurrency whose queued requests are sent then
// (sendWaiting), with a queue at the replicas too, fleets whose step
// ends meet, the scenarios of the mixed moves' twin tests (single
// replicas and fleets) and the default's workload. The fast runs must
// plan at once in most scenarios (atOnce), or this tests nothing. The
// end kept in the set while it plans at once (keepEndAtOnce; atOnce past removedAtOnce)
// has its twin too: the end removed, then set.
func TestStepEndPlansAtOnceIsTheQueuedPlan(t *testing.T) {
	t.Parallel()
	lengths := workload.Independent{Input: workload.Uniform{Center: 600, RangeRatio: 0.9}, Output: workload.Uniform{Center: 120, RangeRatio: 0.9}}
	clients := func(n int, think time.Duration) func() workload.Source {
		return func() workload.Source {
			pool, err := workload.NewClients(workload.Clients{Seed: 3, Clients: n, Requests: 400, Lengths: lengths,
				Think: workload.Think{Mean: think}})
			require.NoError(t, err)
			return pool
		}
	}
	fleet := func(router Router) Fleet {
		return Fleet{Replicas: Copies(3, ReplicaConfig{}), Router: router}
	}
	type scenario struct {
		cfg Config
		src func() workload.Source
	}
	cases := map[string]scenario{
		"clients, no think time":  {Config{}, clients(40, 0)},
		"clients, few blocks":     {Config{Engine: engine.Config{KVBlocks: 300}}, clients(16, 0)},
		"clients, fleet, random":  {Config{Fleet: fleet(Random{})}, clients(24, 0)},
		"clients, least loaded":   {Config{Fleet: fleet(LeastLoaded{})}, clients(24, 0)},
		"clients, think, timeout": {Config{Timeout: 6 * time.Second}, clients(40, 90*time.Millisecond)},
		"max concurrency": {Config{MaxConcurrency: 24}, func() workload.Source {
			return poisson(t, 2, 8, 500, workload.Fixed(600, 100))
		}},
		"max concurrency, fleet": {Config{MaxConcurrency: 60, Fleet: fleet(LeastLoaded{})}, func() workload.Source {
			return poisson(t, 3, 20, 600, workload.Fixed(600, 100))
		}},
		"max concurrency, queue at the replica": {Config{MaxConcurrency: 40, Engine: engine.Config{MaxSeqs: 16, MaxBatchedTokens: 800}}, func() workload.Source {
			return poisson(t, 4, 30, 500, workload.Independent{Input: workload.Uniform{Center: 500, RangeRatio: 0.9}, Output: workload.Uniform{Center: 60, RangeRatio: 0.9}})
		}},
		"max concurrency, queue at the replicas": {Config{MaxConcurrency: 60, Fleet: Fleet{Replicas: Copies(3, ReplicaConfig{Engine: engine.Config{MaxSeqs: 12, MaxBatchedTokens: 700}}), Router: LeastLoaded{}}}, func() workload.Source {
			return poisson(t, 5, 60, 600, workload.Independent{Input: workload.Uniform{Center: 500, RangeRatio: 0.9}, Output: workload.Uniform{Center: 60, RangeRatio: 0.9}})
		}},
		"atlas": {Config{}, func() workload.Source {
			return poisson(t, 1, 2.4, 600, workload.Fixed(2000, 200))
		}},
	}
	for seed := range uint64(12) {
		cfg, src := mixedScenario(t, seed)
		cases["mixed "+string(rune('a'+seed))] = scenario{cfg, src}
		cfg, src = mixedFleetScenario(t, seed)
		cases["mixed fleet "+string(rune('a'+seed))] = scenario{cfg, src}
	}
	total, plans, kept := 0, 0, 0
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			text, r := runChecked(t, c.cfg, c.src())
			twin, tr := runCheckedWith(t, c.cfg, c.src(), twins{noPlanAtOnce: true})
			require.Zero(t, tr.atOnce)
			sameBytes(t, twin, text)
			removed, kr := runCheckedWith(t, c.cfg, c.src(), twins{noKeepEndAtOnce: true})
			require.Equal(t, kr.atOnce, kr.removedAtOnce, "the twin removes every end")
			require.Equal(t, r.atOnce, kr.atOnce, "the end kept in place or removed, the same step ends plan at once")
			sameBytes(t, removed, text)
			step := c.cfg
			step.Stepwise = true
			stepText, sr := runChecked(t, step, c.src())
			require.Zero(t, sr.atOnce, "the stepwise twin queues every plan")
			sameBytes(t, stepText, text)
			total++
			if r.atOnce > 0 {
				plans++
			}
			if r.atOnce > r.removedAtOnce {
				kept++
			}
		})
	}
	require.Greater(t, plans, total*3/4, "too few scenarios planned at once at a step end")
	require.Greater(t, kept, total/2, "too few scenarios kept a step end in place")
}
