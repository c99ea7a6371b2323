package analysis_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// Goodput retained past the knee, with and without a gateway: the Atlas
// TP4 replica alone keeps almost nothing at 1.5× its knee and nothing at
// 2× (its queue grows until every request misses); behind a gateway that
// sheds while more than one request waits (llm-d's saturation detector
// at queue depth 1), it keeps most of its peak goodput there, the shed
// requests counted as misses.
func ExampleRetained() {
	for _, c := range []struct {
		name string
		gw   sim.Gateway
	}{
		{"no gateway", sim.Gateway{}},
		{"shed at queue depth 1", sim.Gateway{Shed: sim.Saturation{QueueDepth: 1}}},
	} {
		curve, err := analysis.Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: 20 * time.Second, Horizon: 140 * time.Second}, Gateway: c.gw},
			Workload: analysis.Poisson(workload.Fixed(2000, 200)),
			Grid:     analysis.Grid{Loads: []float64{1, 2, 3, 4}, PastKnee: true},
			Reps:     2,
		}.Run()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: knee %.2f req/s, peak %.2f good req/s\n", c.name, curve.Knee.Load.Center, curve.Peak.Goodput.Center)
		for _, r := range curve.Retained {
			fmt.Println("  " + r.String())
		}
	}
	// Output:
	// no gateway: knee 1.97 req/s, peak 1.89 good req/s
	//   goodput at 1.5× the knee (2.948 req/s): 0.0574 of the peak (0.1083 good req/s)
	//   goodput at 2× the knee (3.931 req/s): 0 of the peak (0 good req/s)
	// shed at queue depth 1: knee 2.08 req/s, peak 2.17 good req/s
	//   goodput at 1.5× the knee (3.118 req/s): 0.975 of the peak (2.121 good req/s)
	//   goodput at 2× the knee (4.157 req/s): 0.833 of the peak (1.812 good req/s)
}
