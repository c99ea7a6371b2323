package sim_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// The half-hour of ExampleSchedule (Atlas TP4, 1,000 tokens in and 200
// out, 2 then 6 then 2 requests/s, ten minutes each) under SLOHeadroom:
// one replica to start, HPA's behaviour, a 90 s cold start. It holds the
// TTFT p99 of the last minute's ends under the SLO's 600 ms, so it moves
// only once misses have been made: a burst at 2 requests/s adds a second
// replica; the step breaks the two, and the joins (at most doubling what
// serves, a cold start apart) come too late for its first minutes, whose
// attainment falls to 0.47; the stale misses of the lookback then ask for
// 8 replicas where 3 serve 6 requests/s; and it leaves one at a time,
// HPA's 300 s down window apart, so that it still holds 6 when the
// half-hour ends. Against the static fleet of 3 (attainment 1.000, 1.50
// replica-hours, 14.97 per million good output tokens at 12 a
// replica-hour) it gives up attainment and pays 2.51 replica-hours.
func ExampleSLOHeadroom() {
	cfg := sim.Config{
		Fleet: sim.Fleet{Replicas: sim.Copies(1, sim.ReplicaConfig{}), Autoscale: sim.Autoscale{
			Policy:    sim.SLOHeadroom{},
			Max:       8,
			Behavior:  sim.HPABehavior(),
			ColdStart: sim.ColdStart{Load: 60 * time.Second, Capture: 30 * time.Second},
		}},
		Window: sim.Window{Horizon: 30 * time.Minute},
	}
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 10 * time.Minute, Rate: 2}, {Duration: 10 * time.Minute, Rate: 6}, {Duration: 10 * time.Minute, Rate: 2}}}
	src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	sc := sum.Scale
	fmt.Printf("attainment %.3f, replica-hours %.2f (warming %.3f), joins %d, leaves %d, cost per M good tokens %.2f\n",
		sum.Attainment, sc.ReplicaHours, sc.Warming, sc.Joins, sc.Leaves, 12*sc.ReplicaHours/float64(sum.GoodTokens)*1e6)
	var fleet, att []string
	ended, good := 0, 0
	for _, s := range sc.Timeline {
		ended, good = ended+s.Ended, good+s.Good
		if s.At%(2*time.Minute) == 0 {
			fleet = append(fleet, fmt.Sprint(s.Desired))
			att = append(att, fmt.Sprintf("%.2f", float64(good)/float64(ended)))
			ended, good = 0, 0
		}
	}
	fmt.Printf("%-26s%s\n", "fleet every 2 min:", strings.Join(fleet, "    "))
	fmt.Printf("%-26s%s\n", "attainment of each 2 min:", strings.Join(att, " "))
	// Output:
	// attainment 0.939, replica-hours 2.51 (warming 0.175), joins 7, leaves 2, cost per M good tokens 26.69
	// fleet every 2 min:        1    1    2    2    2    8    8    8    8    7    7    7    6    6    6
	// attainment of each 2 min: 1.00 1.00 0.91 1.00 1.00 0.47 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00 1.00
}
