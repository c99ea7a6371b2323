package sim_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// Half an hour of Atlas TP4 traffic, 1,000 tokens in and 200 out, that
// steps from 1 to 8 requests/s for ten minutes, behind a load-aware
// router, under llm-d's variant autoscaler's V1 saturation rule with
// its defaults and a 60 s cold start: the fleet's size at each minute.
// One replica carries 1 request/s with an empty queue. At the step the
// queue builds and WVA adds a replica, then waits for it to warm before
// the next (a model "in transition" does not scale). On Atlas the KV
// cache never nears 80 % (32 sequences hold 8 % of it), so the queue
// alone decides; and a full batch with an empty queue reads as room to
// spare, so during the peak the fleet also drops replicas when the
// queues empty, and grows again when they return. After the step down
// it shrinks a replica a tick to one. It pays for 0.92 replica-hours
// where a static fleet of four, sized for the peak, pays for 2, and 33 %
// of the requests meet the SLO where all do on the static fleet.
func ExampleKVSaturation() {
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 5 * time.Minute, Rate: 1}, {Duration: 10 * time.Minute, Rate: 8}, {Duration: 15 * time.Minute, Rate: 1}}}
	src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	cfg := sim.Config{
		Fleet: sim.Fleet{Router: sim.LeastLoaded{}, Replicas: sim.Copies(1, sim.ReplicaConfig{}),
			Autoscale: sim.Autoscale{Policy: sim.KVSaturation{}, Max: 8, ColdStart: sim.ColdStart{Load: 60 * time.Second}}},
		Window: sim.Window{Horizon: 30 * time.Minute},
	}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	// The static fleet sized for the peak, on the same arrivals.
	src, _ = workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	static := cfg
	static.Fleet.Replicas, static.Fleet.Autoscale = sim.Copies(4, sim.ReplicaConfig{}), sim.Autoscale{}
	fixed, err := sim.Run(static, src, nil)
	if err != nil {
		panic(err)
	}
	sc := sum.Scale
	var sizes []string
	for _, s := range sc.Timeline {
		if s.At%time.Minute == 0 {
			sizes = append(sizes, fmt.Sprint(s.Desired))
		}
	}
	fmt.Println("replicas at each minute:", strings.Join(sizes, " "))
	fmt.Printf("joins %d, leaves %d, peak %d\n", sc.Joins, sc.Leaves, sc.PeakReplicas)
	fmt.Printf("replica-hours %.3f (warming %.3f), attainment %.3f\n", sc.ReplicaHours, sc.Warming, sum.Attainment)
	fmt.Printf("static 4: replica-hours %.3f, attainment %.3f\n", 4*0.5, fixed.Attainment)
	// Output:
	// replicas at each minute: 1 1 1 1 1 2 3 4 5 5 3 3 4 2 3 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
	// joins 7, leaves 7, peak 5
	// replica-hours 0.921 (warming 0.117), attainment 0.328
	// static 4: replica-hours 2.000, attainment 1.000
}
