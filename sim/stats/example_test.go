package stats_test

import (
	"fmt"

	"github.com/servesim/servesim/sim/stats"
)

// A sorted sample's Dist, and the mean of replications with its interval.
func Example() {
	ttft := []float64{80, 95, 110, 120, 150, 400} // ms, sorted
	d := stats.DistOf(ttft, stats.Linear)
	fmt.Printf("n=%d median=%.1f p90=%.1f max=%.0f\n", d.N, d.Median, d.P90, d.Max)

	goodput := []float64{9.8, 10.1, 10.4, 9.9, 10.0} // one a replication
	fmt.Println(stats.MeanInterval(goodput, 0.95))
	// Output:
	// n=6 median=115.0 p90=275.0 max=400
	// 10.04 [9.754, 10.33]
}
