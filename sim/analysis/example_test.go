package analysis_test

import (
	"fmt"
	"time"

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
