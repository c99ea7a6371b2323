package fsum

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
)

// placed copies x into one array twice: once starting on a 16-byte
// boundary and once starting 8 bytes off one.
func placed(x []float64) (aligned, off []float64) {
	at := func(boundary bool) []float64 {
		buf := make([]float64, len(x)+1)
		o := 0
		if (uintptr(unsafe.Pointer(&buf[0]))%16 == 0) != boundary {
			o = 1
		}
		return append(buf[o:o], x...)
	}
	return at(true), at(false)
}

func onAMD64(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("note: gonum's assembly sum is amd64's; on %s it adds in index order, which fsum does not claim to match", runtime.GOARCH)
	}
}

// TestGonumsSumDependsOnAlignment is why the package exists: the same
// four values sum to 2 from an aligned array and to 1 from one 8 bytes
// off, in gonum's floats.Sum, and to 2 from either in Sum.
func TestGonumsSumDependsOnAlignment(t *testing.T) {
	onAMD64(t)
	aligned, off := placed([]float64{1e16, 1, -1e16, 1})
	require.Equal(t, 2.0, floats.Sum(aligned))
	require.Equal(t, 1.0, floats.Sum(off))
	require.Equal(t, 2.0, Sum(aligned))
	require.Equal(t, 2.0, Sum(off))
}

// randomValues is n values over many magnitudes and both signs, whose
// sums round differently in different orders.
func randomValues(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(33)-16))
	}
	return x
}

// TestSumIsGonumsAligned holds Sum to gonum's floats.Sum of an aligned
// array, bit for bit, and to itself at the other alignment, for every
// length to 100 (every path through the tails) and some long ones.
func TestSumIsGonumsAligned(t *testing.T) {
	onAMD64(t)
	rng := rand.New(rand.NewPCG(3, 4))
	differs := 0
	for k := range 3_000 {
		n := k % 101
		if k%50 == 0 {
			n = 1_000 + rng.IntN(5_000)
		}
		aligned, off := placed(randomValues(rng, n))
		want := floats.Sum(aligned)
		require.Equal(t, math.Float64bits(want), math.Float64bits(Sum(aligned)), "n=%d", n)
		require.Equal(t, math.Float64bits(want), math.Float64bits(Sum(off)), "n=%d, 8 bytes off", n)
		if math.Float64bits(floats.Sum(off)) != math.Float64bits(want) {
			differs++
		}
	}
	// Most of these random arrays sum differently in gonum off the
	// boundary: the test is about them.
	require.Greater(t, differs, 1_000)
}

// TestMeansAreGonums holds MeanStdDev, PopMeanStdDev and RSquared to
// gonum's stat functions of an aligned array, bit for bit, and to
// themselves at the other alignment.
func TestMeansAreGonums(t *testing.T) {
	onAMD64(t)
	rng := rand.New(rand.NewPCG(5, 6))
	bits := func(a, b float64) [2]uint64 { return [2]uint64{math.Float64bits(a), math.Float64bits(b)} }
	for k := range 1_000 {
		n := 1 + k%40
		x := randomValues(rng, n)
		for i := range x {
			x[i] = 100 + x[i]*1e-12 // a spread small beside the mean, where the order shows
		}
		aligned, off := placed(x)
		m, s := stat.MeanStdDev(aligned, nil)
		require.Equal(t, bits(m, s), bits(MeanStdDev(aligned)), "n=%d", n)
		require.Equal(t, bits(m, s), bits(MeanStdDev(off)), "n=%d", n)
		m, s = stat.PopMeanStdDev(aligned, nil)
		require.Equal(t, bits(m, s), bits(PopMeanStdDev(aligned)), "n=%d", n)
		require.Equal(t, bits(m, s), bits(PopMeanStdDev(off)), "n=%d", n)
		est := randomValues(rng, n)
		for i := range est {
			est[i] = aligned[i] + est[i]*1e-13
		}
		r := stat.RSquaredFrom(est, aligned, nil)
		require.Equal(t, math.Float64bits(r), math.Float64bits(RSquared(est, aligned)), "n=%d", n)
		require.Equal(t, math.Float64bits(r), math.Float64bits(RSquared(est, off)), "n=%d", n)
	}
	m, s := MeanStdDev(nil)
	require.True(t, math.IsNaN(m) && math.IsNaN(s))
	m, s = MeanStdDev([]float64{4})
	require.Equal(t, 4.0, m)
	require.True(t, math.IsNaN(s))
	m, s = PopMeanStdDev([]float64{1, 3})
	require.Equal(t, [2]float64{2, 1}, [2]float64{m, s})
}
