package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
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

// Two request classes with SLOs of their own, half interactive (TTFT
// 600 ms) and half batch (TTFT 30 s), at 2.2 req/s on Atlas TP4 with
// interactive requests first (engine.Priority), and a client that keeps
// at most 36 requests in flight, as vLLM's bench serve --max-concurrency.
// TTFT counts from the send, as vLLM's does: the seconds a request waits
// client-side for a slot are the client wait, reported apart.
func ExampleConfig_classes() {
	cfg := sim.Config{
		Engine:         engine.Config{Policy: engine.Priority{}},
		MaxConcurrency: 36,
		Classes: []sim.Class{
			{Name: "interactive", SLO: sim.SLO{TTFT: 600 * time.Millisecond}, Priority: -1},
			{Name: "batch", SLO: sim.SLO{TTFT: 30 * time.Second}},
		},
		Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second},
	}
	src, err := analysis.ClassMix(
		analysis.Part{Class: "interactive", Share: 1, Lengths: workload.Fixed(2000, 200)},
		analysis.Part{Class: "batch", Share: 1, Lengths: workload.Fixed(2000, 200)},
	).Source(2.2, 1)
	if err != nil {
		panic(err)
	}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	for _, c := range sum.Classes {
		fmt.Printf("%-11s offered %4d  attainment %.3f  TTFT p99 %6.0f ms\n", c.Name, c.Offered, c.Attainment, c.TTFT.P99)
	}
	fmt.Printf("client wait p99 %.0f ms\n", sum.ClientWait.P99)
	// Output:
	// interactive offered  545  attainment 0.982  TTFT p99    748 ms
	// batch       offered  599  attainment 1.000  TTFT p99   4366 ms
	// default     offered    0  attainment NaN  TTFT p99    NaN ms
	// client wait p99 4200 ms
}
