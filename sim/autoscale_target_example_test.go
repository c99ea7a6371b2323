package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// HPA on vllm:num_requests_running (TargetUtilisation, 27 running per
// replica, HPA's default behaviour, a 60 s cold start) follows a load
// step on Atlas TP4 replicas: 1.5 requests/s of 1,000 tokens in and 200
// out (L = λW ≈ 15 in flight: one replica), 6.5/s for ten minutes from
// 10 min (L ≈ 65: more than two replicas' 64 slots), then 1.5/s again.
//
// At the step's first tick the replica, pinned at its 32 slots (> 1.1 ×
// 27), asks for a second; while it warms HPA counts it at 0, 32/2 < 27,
// and asks for no more (its guard against a second wave). Each replica
// that comes up is filled at once by the queue built meanwhile, so the
// fleet climbs to 3 and then to 4, one more than the load needs once
// the backlog is gone. After the step the 300 s down window holds 4 until
// the last tick that asked for it is 300 s old, then 3 until 25 min, then
// 1. Cold starts and the backlog cost attainment over the step: 0.789
// over the run, for 1.185 replica-hours, 0.05 of them warming (3 × 60 s).
func ExampleTargetUtilisation() {
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 10 * time.Minute, Rate: 1.5}, {Duration: 10 * time.Minute, Rate: 6.5}, {Duration: 15 * time.Minute, Rate: 1.5}}}
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	if err != nil {
		panic(err)
	}
	cfg := sim.Config{
		Fleet: sim.Fleet{Replicas: sim.Copies(1, sim.ReplicaConfig{}), Autoscale: sim.Autoscale{
			Policy:    sim.TargetUtilisation{Metric: sim.MetricRunning, Target: 27},
			Max:       8,
			Behavior:  sim.HPABehavior(),
			ColdStart: sim.ColdStart{Load: 60 * time.Second},
		}},
		Window: sim.Window{Horizon: 35 * time.Minute},
	}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	sc := sum.Scale
	for _, s := range sc.Timeline {
		switch s.At {
		case 5 * time.Minute, 10*time.Minute + 30*time.Second, 11*time.Minute + 30*time.Second, 13 * time.Minute, 15 * time.Minute, 22 * time.Minute, 30 * time.Minute:
			fmt.Printf("%-6v %d serving, %d warming, %d draining\n", s.At, s.Serving, s.Warming, s.Draining)
		}
	}
	fmt.Printf("replica-hours %.3f (warming %.3f), peak %d, attainment %.3f\n", sc.ReplicaHours, sc.Warming, sc.PeakReplicas, sum.Attainment)
	// Output:
	// 5m0s   1 serving, 0 warming, 0 draining
	// 10m30s 1 serving, 1 warming, 0 draining
	// 11m30s 2 serving, 1 warming, 0 draining
	// 13m0s  3 serving, 0 warming, 0 draining
	// 15m0s  4 serving, 0 warming, 0 draining
	// 22m0s  3 serving, 0 warming, 0 draining
	// 30m0s  1 serving, 0 warming, 0 draining
	// replica-hours 1.185 (warming 0.050), peak 4, attainment 0.789
}
