package analysis_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// Sweep the Atlas TP4 replica's offered load and read the knee off the
// curve: the highest load whose SLO attainment meets 0.95, with its
// interval over seeded replications.
func Example() {
	c, err := analysis.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 30 * time.Second, Horizon: 300 * time.Second}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)),
		Grid:     analysis.Grid{Loads: []float64{1, 1.5, 2, 2.5, 3}},
		Reps:     3,
	}.Run()
	if err != nil {
		panic(err)
	}
	for _, p := range c.Points {
		fmt.Printf("%.1f req/s: attainment %.3f, %v\n", p.Load, p.Attainment.Center, p.Saturation)
	}
	fmt.Printf("knee %.2f req/s\n", c.Knee.Load.Center)
	// Output:
	// 1.0 req/s: attainment 1.000, stable
	// 1.5 req/s: attainment 1.000, stable
	// 2.0 req/s: attainment 0.947, stable
	// 2.5 req/s: attainment 0.600, stable
	// 3.0 req/s: attainment 0.004, backlogged
	// knee 1.97 req/s
}

// A workload of two request classes with SLOs of their own, half
// interactive (TTFT 600 ms) and half batch (TTFT 30 s), at 2.2 req/s on
// Atlas TP4 with interactive requests first (engine.Priority), and a
// client that keeps at most 36 requests in flight, as vLLM's bench serve
// --max-concurrency. TTFT counts from the send, as vLLM's does: the
// seconds a request waits client-side for a slot are the client wait,
// reported apart.
func ExampleClassMix() {
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
