package stats

import (
	"math"

	"github.com/servesim/servesim/internal/fsum"
)

// Dist summarises one latency metric in milliseconds, the way vLLM's bench
// serve reports it (mean, median, population std, percentiles): in a
// sim.Summary, over the measured requests that completed ok.
type Dist struct {
	N      int
	Mean   float64
	Std    float64 // population standard deviation, as numpy's np.std
	Median float64
	P90    float64
	P95    float64
	P99    float64
	Max    float64
	// RelErr is 0 when the percentiles are exact, and otherwise the
	// relative error they are within: more values were summarised than
	// were kept exactly (sim's Config.ExactSamples), by a Sketch (N, Mean,
	// Std and Max stay exact).
	RelErr float64
}

// DistOf summarises x, sorted ascending, its percentiles by m: every
// figure but N is NaN for an empty x.
func DistOf(x []float64, m Method) Dist {
	if len(x) == 0 {
		return Dist{Mean: math.NaN(), Std: math.NaN(), Median: math.NaN(), P90: math.NaN(), P95: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	}
	// Values all zero (x sorted: its ends are) have mean and deviation
	// +0, as PopMeanStdDev computes them (its sums begin at +0, and +0
	// plus ±0 is +0), without its two passes: a run's client waits
	// without a gateway or a concurrency bound, 20,000 zeros in
	// BenchmarkRunAtlas (5,928 then 5,912 instructions a request, the
	// budget test's count; TestDistOfZerosIsPopMeanStdDev).
	var mean, std float64
	if x[0] != 0 || x[len(x)-1] != 0 {
		mean, std = fsum.PopMeanStdDev(x)
	}
	return Dist{
		N: len(x), Mean: mean, Std: std,
		Median: m.Quantile(0.5, x), P90: m.Quantile(0.9, x), P95: m.Quantile(0.95, x), P99: m.Quantile(0.99, x),
		Max: x[len(x)-1],
	}
}
