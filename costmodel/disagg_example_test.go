package costmodel_test

import (
	"fmt"

	"github.com/servesim/servesim/costmodel"
)

// The disaggregated bounds of Atlas TP4 in both pools, joined by a
// 50 GB/s link, and the split of a fleet of four against four co-located
// replicas.
func ExampleDisaggregated_Estimate() {
	d := costmodel.Disaggregated{Prefill: costmodel.AtlasTP4(), Decode: costmodel.AtlasTP4(), LinkBandwidth: 50e9}
	e, err := d.Estimate()
	if err != nil {
		panic(err)
	}
	for _, f := range e.Figures() {
		fmt.Printf("%-34s %6.4g %s\n", f.Name, f.Value, f.Unit)
	}
	splits, err := e.Split(4)
	if err != nil {
		panic(err)
	}
	for _, s := range splits {
		fmt.Printf("%s: %.4g req/s, %s\n", s.Capacity.Name, s.Capacity.Value, s.Capacity.Basis)
	}
	fmt.Printf("4 co-located: %.4g req/s\n", 4*e.CoLocated.Value)
	// Output:
	// prefill-pool capacity               11.17 prompts/s
	// decode-pool capacity                3.573 req/s
	// KV transfer time                    3.277 ms
	// transfer bound per prefill replica  305.2 req/s
	// balancing P:D ratio                0.3199 prefill per decode replica
	// balanced capacity per replica       2.707 req/s
	// co-located serving capacity         2.694 req/s
	// 1P:3D fleet capacity: 10.72 req/s, min(1 × 11.17, 3 × 3.573, 1 × 305.2 links) req/s: the decode pool binds
	// 4 co-located: 10.77 req/s
}
