package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// Run the Atlas TP4 replica (the zero Config) under Poisson arrivals of
// 2,000-token prompts with 200-token answers, and read goodput off the
// summary.
func Example() {
	src, err := workload.NewPoisson(1, 2, 2000, workload.Fixed(2000, 200))
	if err != nil {
		panic(err)
	}
	cfg := sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 900 * time.Second}}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("offered %d, good %d, attainment %.3f\n", sum.Offered, sum.Good, sum.Attainment)
	fmt.Printf("goodput %.2f req/s, TTFT p99 %.0f ms, ITL p99 %.0f ms\n", sum.Goodput, sum.TTFT.P99, sum.ITL.P99)
	// Output:
	// offered 1649, good 1552, attainment 0.941
	// goodput 1.85 req/s, TTFT p99 3009 ms, ITL p99 135 ms
}
