package stats_test

import (
	"fmt"

	"github.com/servesim/servesim/sim/stats"
)

// A sorted sample's Dist, and the mean of replications with its interval.
func Example() {
	ttft := []float64{80, 95, 110, 120, 150, 400} // ms, sorted
	d := stats.DistOf(ttft, stats.LinearInterpolation)
	fmt.Printf("n=%d median=%.1f p90=%.1f max=%.0f\n", d.N, d.Median, d.P90, d.Max)

	goodput := []float64{9.8, 10.1, 10.4, 9.9, 10.0} // one a replication
	fmt.Println(stats.MeanInterval(goodput, 0.95))
	// Output:
	// n=6 median=115.0 p90=275.0 max=400
	// 10.04 [9.754, 10.33]
}

// A Sketch answers percentiles within its relative accuracy whatever the
// number of values, in memory that grows with their range, not their
// count; two sketches merge into the sketch of both.
func ExampleSketch() {
	a, _ := stats.NewSketch(0.01)
	b, _ := stats.NewSketch(0.01)
	for i := 1; i <= 100_000; i++ {
		if i%2 == 0 {
			a.Add(float64(i))
		} else {
			b.Add(float64(i))
		}
	}
	_ = a.Merge(b)
	fmt.Printf("n %d, p50 %.0f (exact 50000.5), p99 %.0f (exact 99000.01), max %.0f\n",
		a.N(), a.Quantile(stats.LinearInterpolation, 0.5), a.Quantile(stats.LinearInterpolation, 0.99), a.Dist(stats.LinearInterpolation).Max)
	// Output:
	// n 100000, p50 49529 (exact 50000.5), p99 99741 (exact 99000.01), max 100000
}
