package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// indexByDefinition is a sketch's bucket as DDSketch defines it.
func (s *Sketch) indexByDefinition(x float64) int {
	return int(math.Ceil(math.Log(x) / s.lnGamma))
}

// sketchIndexCheck fails unless index agrees with the definition at x.
func sketchIndexCheck(t *testing.T, s *Sketch, x float64) {
	if !(x >= sketchZero) || math.IsInf(x, 0) {
		return
	}
	require.Equal(t, s.indexByDefinition(x), s.index(x), "x = %v (%#x), accuracy %v", x, math.Float64bits(x), s.alpha)
}

// TestSketchIndexIsTheDefinition: the table's logarithm gives every value
// the bucket math.Log does — values spread over the whole range, every
// bucket boundary of the default accuracy and the ulps around it (where
// the table must defer to math.Log), powers of two, integers, the ends —
// at the default accuracy and at very fine and very coarse ones. The
// boundaries do reach math.Log.
func TestSketchIndexIsTheDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, alpha := range []float64{SketchAccuracy, 0.01, 1e-6, 1e-11, 0.5, 0.999} {
		s, err := NewSketch(alpha)
		require.NoError(t, err)
		for range 300_000 {
			sketchIndexCheck(t, s, math.Exp(r.Float64()*760-21)) // e^-21 ≈ 7.6e-10 to e^739
		}
		for _, x := range []float64{sketchZero, 1, 2, 1000, 45, 0.5, math.MaxFloat64, math.SmallestNonzeroFloat64 * (1 << 60)} {
			sketchIndexCheck(t, s, x)
			sketchIndexCheck(t, s, math.Nextafter(x, 0))
			sketchIndexCheck(t, s, math.Nextafter(x, math.Inf(1)))
		}
		for e := -29; e <= 1023; e++ {
			sketchIndexCheck(t, s, math.Ldexp(1, e))
		}
		for i := range 100_000 {
			sketchIndexCheck(t, s, float64(i))
		}
	}
	// Every bucket boundary of the default accuracy from 1e-9 to 1e9 ms,
	// and the eight floats either side of it.
	s := newSketch()
	deferred := 0
	for i := s.indexByDefinition(sketchZero); ; i++ {
		b := math.Exp(float64(i) * s.lnGamma)
		if b > 1e9 {
			break
		}
		x := b
		for range 8 {
			x = math.Nextafter(x, 0)
		}
		for range 17 {
			sketchIndexCheck(t, s, x)
			if _, ok := s.tableIndex(x); !ok {
				deferred++
			}
			x = math.Nextafter(x, math.Inf(1))
		}
	}
	require.Positive(t, deferred, "no value near a boundary reached math.Log")
	t.Logf("%d values next to a bucket boundary deferred to math.Log", deferred)
}

// FuzzSketchIndex holds the table's bucket to the definition at any float
// (by its bits) and accuracy.
func FuzzSketchIndex(f *testing.F) {
	f.Add(uint64(0x4046800000000000), 0.005) // 45
	f.Fuzz(func(t *testing.T, bits uint64, alpha float64) {
		s, err := NewSketch(alpha)
		if err != nil {
			return
		}
		sketchIndexCheck(t, s, math.Float64frombits(bits))
	})
}

// BenchmarkSketchAdd adds lognormal latencies (median 200 ms) to a
// sketch, as a summary past Config.ExactSamples does for each latency of
// each request.
func BenchmarkSketchAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = math.Exp(math.Log(200) + r.NormFloat64())
	}
	s := newSketch()
	i := 0
	for b.Loop() {
		s.Add(xs[i&4095])
		i++
	}
}
