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

// TestSketchBucketsAreEachValues: a sketch counts every value in the
// bucket the definition gives it, and its moments are Welford's in the
// order added, whether or not the value repeats the one before (AddN
// counts a repeat in the bucket it found last, without the table):
// samples of runs of equal values (worst gaps, TPOTs), values that come
// back after others, zeros and +Inf between them (which leave the last
// bucket as it was), counts of several, and a merge between.
func TestSketchBucketsAreEachValues(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for c := range 200 {
		s := newSketch()
		want := map[int]uint64{}
		var zero, inf, n, finite uint64
		var mean, m2 float64
		pool := make([]float64, 1+r.IntN(40))
		for i := range pool {
			pool[i] = math.Exp(r.Float64()*30 - 10)
		}
		add := func(x float64, k int) {
			s.AddN(x, k)
			n += uint64(k)
			switch {
			case math.IsInf(x, 1):
				inf += uint64(k)
				return
			case !(x >= sketchZero):
				zero += uint64(k)
				x = 0
			default:
				want[s.indexByDefinition(x)] += uint64(k)
			}
			finite += uint64(k)
			d, nf := x-mean, float64(k)
			mean += d * nf / float64(int64(finite))
			m2 += d * (x - mean) * nf
		}
		for range 2_000 {
			x := pool[r.IntN(len(pool))]
			switch u := r.IntN(100); {
			case u < 5:
				x = 0
			case u < 7:
				x = math.Inf(1)
			case u < 10:
				x = math.Nextafter(x, math.Inf(1)) // a neighbour of a value seen
			}
			k := 1
			if r.IntN(8) == 0 {
				k = 1 + r.IntN(5)
			}
			for range 1 + r.IntN(4) { // a run of equal values
				add(x, k)
			}
			if c%10 == 0 && r.IntN(500) == 0 { // a merge clears nothing the sketch keeps
				o := newSketch()
				o.Add(pool[0])
				require.NoError(t, s.Merge(o))
				n++
				want[s.indexByDefinition(pool[0])]++
				d := pool[0] - mean
				finite++
				m2 += d * d * float64(finite-1) / float64(finite)
				mean += d / float64(finite)
			}
		}
		got := map[int]uint64{}
		for j, v := range s.bins {
			if v > 0 {
				got[s.offset+j] = v
			}
		}
		require.Equal(t, want, got, "case %d: buckets", c)
		require.Equal(t, [4]uint64{n, zero, inf, finite}, [4]uint64{s.n, s.zero, s.inf, s.finite}, "case %d: counts", c)
		require.Equal(t, math.Float64bits(mean), math.Float64bits(s.mean), "case %d: mean", c)
		require.Equal(t, math.Float64bits(m2), math.Float64bits(s.m2), "case %d: m2", c)
	}
}
