package analysis_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// How many Atlas TP4 replicas behind LeastLoaded carry 5 req/s of the
// chapter's 2,000/200-token requests with 20 % headroom at 95 %
// attainment, and what a million output tokens costs on them at an
// assumed $10 per replica-hour.
func ExampleSizing() {
	res, err := analysis.Sizing{
		Config:   sim.Config{Fleet: sim.Fleet{Router: sim.LeastLoaded{}}, Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)),
		Load:     5, Headroom: 0.2, Reps: 3, Price: 10,
	}.Run()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d replicas at %.1f req/s (seed range [%d, %d])\n", res.Replicas, res.Load, res.SeedLo, res.SeedHi)
	fmt.Printf("attainment %.3f; with one fewer %.3f\n", res.Attainment.Center, res.Below.Center)
	fmt.Printf("$%.2f per million output tokens; %d runs\n", res.CostPerMillion.Center, res.Runs)
	// Output:
	// 3 replicas at 6.0 req/s (seed range [3, 3])
	// attainment 0.998; with one fewer 0.000
	// $6.85 per million output tokens; 12 runs
}
