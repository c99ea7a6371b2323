package costmodel_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The restore bounds of Atlas TP4's KV tiers: host memory over each
// accelerator's 50 GB/s PCIe path, and a store shared by 8 replicas over
// one 12.5 GB/s (100 GbE) link. The host tier restores a token 21× faster
// than the replica computes it; the store, with every replica restoring
// at once, 6× slower: a prefix recomputes sooner than it restores.
func ExampleTiers_Estimate() {
	x := costmodel.Tiers{
		Replica:  costmodel.AtlasTP4(),
		Host:     costmodel.TierLink{Bandwidth: 50e9, Latency: 100 * time.Microsecond},
		Shared:   costmodel.TierLink{Bandwidth: 12.5e9, Latency: time.Millisecond},
		Replicas: 8,
	}
	e, err := x.Estimate()
	if err != nil {
		panic(err)
	}
	for _, f := range e.Figures() {
		fmt.Printf("%-33s %9.6g %s\n", f.Name, f.Value, f.Unit)
	}
	fmt.Println("host pays:", e.Host.Pays)
	fmt.Println("shared store pays:", e.Shared.Pays)
	fmt.Println(e.Shared.Ratio.Basis)
	// Output:
	// prefill marginal rate               28571.4 tokens/s
	// host restore bound                   610352 tokens/s
	// host restore / recompute            21.3623 ×
	// host break-even prefix              2.99746 tokens
	// shared-store restore bound          4768.37 tokens/s
	// shared-store restore / recompute   0.166893 ×
	// host pays: true
	// shared store pays: false
	// 4768.37 tokens/s restored / 28571.4 tokens/s recomputed: restoring a token (0.2097 ms) is no faster than computing it (0.035 ms): at every prefix length recomputing is faster
}
