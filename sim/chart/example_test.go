package chart_test

import (
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/workload"
)

// Sweep the Atlas TP4 replica and draw its goodput curve, with the knee,
// the peak, the collapse and the headroom from an operating load of
// 1.5 req/s, as a PNG.
func ExampleGoodput() {
	c, err := analysis.Sweep{
		Config: sim.Config{Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}},
		Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*700)+10, workload.Fixed(2000, 200))
		}),
		Grid: analysis.Grid{Start: 0.5},
		Reps: 4,
	}.Run()
	if err != nil {
		panic(err)
	}
	p, err := chart.Goodput(c, 1.5)
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "chart")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "goodput.png")
	if err := chart.Save(path, p); err != nil {
		panic(err)
	}
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	img, err := png.DecodeConfig(f)
	if err != nil {
		panic(err)
	}
	fmt.Printf("goodput.png: %d × %d pixels; knee %.2f req/s\n", img.Width, img.Height, c.Knee.Load.Center)
	// Output:
	// goodput.png: 1063 × 767 pixels; knee 2.03 req/s
}
