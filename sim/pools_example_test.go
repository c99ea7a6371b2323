package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// A disaggregated fleet: one Atlas TP4 replica prefills for three that
// decode, every prompt's KV crossing a 50 GB/s link. TTFT ends at the
// prefill replica; the decode replicas' steps hold no prefill, so every
// gap after a request's first is the pure 45 ms decode step.
func ExamplePrefillPool() {
	cfg := sim.Config{
		Fleet: sim.Fleet{Replicas: sim.Copies(3, sim.ReplicaConfig{}), Router: sim.LeastLoaded{},
			Prefill: sim.PrefillPool{Replicas: sim.Copies(1, sim.ReplicaConfig{}), Link: sim.Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond}}},
		Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute},
	}
	src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Duration: 20 * time.Minute,
		Arrival: workload.Arrival{Rate: 4}, Lengths: workload.Fixed(2000, 200)})
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	d := sum.Disagg
	fmt.Printf("attainment %.3f, TTFT p50 %.1f ms, ITL p50 %.0f ms\n", sum.Attainment, sum.TTFT.Median, sum.ITL.Median)
	fmt.Printf("remote %.2f, prefill busy %.2f, decode busy %.2f\n", d.RemoteShare, d.PrefillBusy, d.DecodeBusy)
	fmt.Printf("transfer p50 %.3f ms, first ITL p50 %.1f ms, link utilisation %.4f\n", d.Transfer.Median, d.FirstITL.Median, d.LinkUtilisation)
	// Output:
	// attainment 1.000, TTFT p50 90.0 ms, ITL p50 45 ms
	// remote 1.00, prefill busy 0.35, decode busy 1.00
	// transfer p50 3.297 ms, first ITL p50 113.5 ms, link utilisation 0.0127
}
