package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// sortFloats sorts like slices.Sort: lognormal latencies, values with
// repeats, negatives, infinities, a NaN (the fallback), short slices.
func TestSortFloatsIsSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func() float64{
		"lognormal": func() float64 { return math.Exp(rng.NormFloat64()*1.5 + 5) },
		"repeats":   func() float64 { return float64(rng.IntN(40)) * 12.5 },
		"signed":    func() float64 { return rng.NormFloat64() * 1e3 },
		"infinite": func() float64 {
			if rng.IntN(10) == 0 {
				return math.Inf(1 - 2*rng.IntN(2))
			}
			return rng.Float64()
		},
		"constant": func() float64 { return 600 },
		"zeros": func() float64 { // a -0 among +0s: slices.Sort's order of equal values
			if rng.IntN(100) == 0 {
				return math.Copysign(0, -1)
			}
			return float64(rng.IntN(2)) * 0.5
		},
	}
	var buf []float64
	for name, gen := range gens {
		for _, n := range []int{0, 1, 511, 512, 513, 20_000} {
			x := make([]float64, n)
			for i := range x {
				x[i] = gen()
			}
			want := slices.Clone(x)
			slices.Sort(want)
			buf = sortFloats(x, buf)
			require.Equal(t, bitsOf(want), bitsOf(x), "%s, %d values (bit for bit: a -0 is not a +0)", name, n)
		}
	}
	x := []float64{3, math.NaN(), 1}
	for range 600 {
		x = append(x, rng.Float64())
	}
	want := slices.Clone(x)
	slices.Sort(want)
	sortFloats(x, nil)
	require.Equal(t, math.Float64bits(want[0]), math.Float64bits(x[0]), "a NaN sorts first, as slices.Sort puts it")
	require.Equal(t, want[1:], x[1:])
}

// BenchmarkSortFloats compares the radix sort with slices.Sort on a
// summary's 20,000 lognormal latencies.
func BenchmarkSortFloats(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 20_000)
	for i := range x {
		x[i] = math.Exp(rng.NormFloat64()*1.5 + 5)
	}
	y := make([]float64, len(x))
	b.Run("radix", func(b *testing.B) {
		var buf []float64
		for b.Loop() {
			copy(y, x)
			buf = sortFloats(y, buf)
		}
	})
	b.Run("slices", func(b *testing.B) {
		for b.Loop() {
			copy(y, x)
			slices.Sort(y)
		}
	})
}

func bitsOf(x []float64) []uint64 {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	return b
}
