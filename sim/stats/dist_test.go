package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/servesim/servesim/internal/fsum"
	"github.com/stretchr/testify/require"
)

// DistOf's figures for a sample of zeros (+0, −0, or both) are those
// of its twin, which takes the mean and deviation from
// fsum.PopMeanStdDev whatever the values, bit for bit; and so are a
// sorted sample's with a zero at one end only.
func TestDistOfZerosIsPopMeanStdDev(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	negZero := math.Copysign(0, -1)
	for _, n := range []int{1, 2, 3, 7, 16, 17, 33, 100, 20_000} {
		for _, kind := range []string{"+0", "-0", "±0", "0 then more", "less then 0"} {
			x := make([]float64, n)
			for i := range x {
				switch kind {
				case "-0":
					x[i] = negZero
				case "±0":
					if rng.IntN(2) == 0 {
						x[i] = negZero
					}
				case "0 then more":
					if i > 0 {
						x[i] = float64(i) * 0.1
					}
				case "less then 0":
					if i < n-1 {
						x[i] = -float64(n-i) * 0.1
					}
				}
			}
			for _, m := range []Method{LinearInterpolation, InvertedCDF} {
				got, want := DistOf(x, m), distOfEach(x, m)
				for _, f := range [][2]float64{{got.Mean, want.Mean}, {got.Std, want.Std}, {got.Median, want.Median},
					{got.P90, want.P90}, {got.P95, want.P95}, {got.P99, want.P99}, {got.Max, want.Max}} {
					require.Equal(t, math.Float64bits(f[1]), math.Float64bits(f[0]), "%s, %d values, %v: %+v against %+v", kind, n, m, got, want)
				}
				require.Equal(t, want.N, got.N)
			}
		}
	}
}

// distOfEach is DistOf with the mean and deviation always from
// fsum.PopMeanStdDev (its slow twin).
func distOfEach(x []float64, m Method) Dist {
	d := DistOf(x, m)
	d.Mean, d.Std = fsum.PopMeanStdDev(x)
	return d
}
