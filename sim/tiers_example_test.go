package sim_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// Four Atlas TP4 replicas behind RoundRobin serve prompts of 500 tokens
// behind the fleet's high-reuse prefixes of 4,096 tokens, each replica
// with a small HBM cache (6,000 blocks of 16 tokens) and a host tier of
// 20,000 blocks on a 50 GB/s PCIe link: the prefixes HBM evicts survive
// in host memory, and a later request loads them back (4,096 tokens ×
// 80 KiB = 336 MB, 6.7 ms) instead of recomputing them. The median TTFT
// halves.
func ExampleHostTier() {
	run := func(host sim.HostTier) sim.Summary {
		cfg := sim.Config{
			Fleet:  sim.Fleet{Replicas: sim.Copies(4, sim.ReplicaConfig{Engine: engine.Config{KVBlocks: 6000}}), HostTier: host},
			Window: sim.Window{Warmup: time.Minute, Horizon: 6 * time.Minute},
		}
		src, _ := workload.NewSynthetic(workload.Synthetic{Seed: 1, Duration: 10 * time.Minute,
			Arrival: workload.Arrival{Rate: 4}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
		sum, err := sim.Run(cfg, src, nil)
		if err != nil {
			panic(err)
		}
		return sum
	}
	sum := run(sim.HostTier{})
	fmt.Printf("no tier: attainment %.3f, TTFT p50 %.1f ms\n", sum.Attainment, sum.TTFT.Median)
	sum = run(sim.HostTier{Blocks: 20000, Link: sim.Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond}})
	ts := sum.Tiers
	fmt.Printf("host tier: attainment %.3f, TTFT p50 %.1f ms\n", sum.Attainment, sum.TTFT.Median)
	fmt.Printf("prompt tokens found: HBM %.3f, host %.3f\n", ts.HBMHit, ts.HostHit)
	fmt.Printf("loads %d, load p50 %.2f ms, TTFT share loading %.4f, PCIe utilisation %.5f\n",
		ts.Loads, ts.LoadWait.Median, ts.TTFTShareLoading, ts.HostUtilisation)
	// Output:
	// no tier: attainment 1.000, TTFT p50 371.6 ms
	// host tier: attainment 1.000, TTFT p50 168.3 ms
	// prompt tokens found: HBM 0.232, host 0.247
	// loads 338, load p50 6.73 ms, TTFT share loading 0.0076, PCIe utilisation 0.00185
}
