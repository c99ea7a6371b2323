package accept

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThresholdsArePowers holds the acceptor's integer thresholds
// to the exact compares they stand for, u/2⁵³ < α^j (big.Rat), and the
// first to the float draw a draft was before, uniform(p) < alpha: at the
// edges (the draws next to each threshold, α of 0 and 1, α not a
// multiple of 2⁻⁵³, α whose powers fall below 2⁻⁵³) and at random.
func TestThresholdsArePowers(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 7))
	alphas := []float64{0, 1, 0.7, 0.5, 1e-17, 1e-5, math.Nextafter(1, 0), 0.1 + 0x1p-60, 0x1p-1074}
	for range 200 {
		alphas = append(alphas, rng.Float64())
	}
	const k = 9
	for _, alpha := range alphas {
		below := Thresholds(alpha, k)
		require.Len(t, below, k)
		pow := new(big.Rat).SetInt64(1)
		for j := 1; j <= k; j++ {
			pow.Mul(pow, new(big.Rat).SetFloat64(alpha))
			th := below[j-1]
			require.LessOrEqual(t, th, uint64(1<<53))
			if j > 1 {
				require.LessOrEqual(t, th, below[j-2], "thresholds do not rise")
			}
			us := []uint64{0, 1, 1<<53 - 1, th, th - 1, th + 1}
			for range 50 {
				us = append(us, rng.Uint64()>>11)
			}
			for _, u := range us {
				if u >= 1<<53 {
					continue
				}
				want := new(big.Rat).SetFrac(new(big.Int).SetUint64(u), new(big.Int).Lsh(big.NewInt(1), 53)).Cmp(pow) < 0
				if got := u < th; got != want {
					t.Fatalf("alpha %v, j %d, u %d: integer draw %v, exact u/2⁵³ < α^j %v", alpha, j, u, got, want)
				}
				if j == 1 && (float64(u)/(1<<53) < alpha) != want {
					t.Fatalf("alpha %v, u %d: the float draw is not the exact one", alpha, u)
				}
			}
		}
	}
}

// TestStartsSkipOnlyAccepted holds accepted's compares from the
// start its table gives to its twin's, every compare from the first
// draft (a table of zeros): the same drafts accepted, for u next to
// every threshold and every bucket's edges, and at random.
func TestStartsSkipOnlyAccepted(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 17))
	var zero [256]uint8
	alphas := []float64{0, 1, 0.7, 0.5, 0.9, 1e-17, math.Nextafter(1, 0), 0x1p-3, 0x1p-3 + 0x1p-50}
	for range 100 {
		alphas = append(alphas, rng.Float64())
	}
	for _, alpha := range alphas {
		k := 1 + rng.IntN(12)
		below := Thresholds(alpha, k)
		start := Starts(below)
		us := []uint64{0, 1<<53 - 1}
		for _, th := range below {
			us = append(us, th-1, th, th+1)
		}
		for b := range uint64(256) {
			us = append(us, b<<45, b<<45+1, (b+1)<<45-1)
		}
		for range 500 {
			us = append(us, rng.Uint64()>>11)
		}
		for _, u := range us {
			if u >= 1<<53 {
				continue
			}
			for d := 0; d <= k; d++ {
				if got, want := Accepted(u, below, start, d), Accepted(u, below, &zero, d); got != want {
					t.Fatalf("alpha %v, K %d, u %d, %d drafts: %d accepted from the table's start, %d from the first draft", alpha, k, u, d, got, want)
				}
			}
		}
	}
}

// FuzzAcceptedFromStarts holds Accepted from Starts' table (its exact
// buckets make no compare), and IID's Accepted, to their twin, every
// compare from the first draft (a table of zeros), for any α, K, draw
// and drafts.
func FuzzAcceptedFromStarts(f *testing.F) {
	f.Add(0.7, uint8(1), uint64(6305039478318693)<<11, uint8(1))
	f.Add(0.5, uint8(9), uint64(1)<<52, uint8(9))
	f.Add(1.0, uint8(3), uint64(0), uint8(2))
	f.Fuzz(func(t *testing.T, alpha float64, k uint8, u uint64, drafted uint8) {
		if !(alpha >= 0 && alpha <= 1) || k == 0 {
			t.Skip()
		}
		below := Thresholds(alpha, int(k))
		u >>= 11
		d := int(drafted) % (int(k) + 1)
		var zero [256]uint8
		want := Accepted(u, below, &zero, d)
		if got := Accepted(u, below, Starts(below), d); got != want {
			t.Fatalf("alpha %v, K %d, u %d, %d drafts: %d accepted from the table, %d from the first draft", alpha, k, u, d, got, want)
		}
		if got := NewIID(nil, alpha, int(k)).Accepted(u, d); got != want {
			t.Fatalf("alpha %v, K %d, u %d, %d drafts: %d accepted by IID.Accepted, %d from the first draft", alpha, k, u, d, got, want)
		}
	})
}

// TestPCGIsRandPCG holds PCG to math/rand/v2's: seeded alike, they draw
// the same values, drawn by Uint64 and by Next (it fails with a constant
// of step or next changed, or the state's words swapped).
func TestPCGIsRandPCG(t *testing.T) {
	seeds := rand.New(rand.NewPCG(46, 1))
	for range 200 {
		s1, s2 := seeds.Uint64(), seeds.Uint64()
		if seeds.IntN(4) == 0 {
			s1, s2 = uint64(seeds.IntN(3)), uint64(seeds.IntN(3)) // small seeds: 0, 1, 2
		}
		want := rand.NewPCG(s1, s2)
		got := NewPCG(s1, s2)
		var re PCG
		re.Seed(s1, s2)
		hi, lo := s1, s2
		for i := range 1000 {
			w := want.Uint64()
			if g := got.Uint64(); g != w {
				t.Fatalf("seed (%d, %d), draw %d: %#x, rand.PCG %#x", s1, s2, i, g, w)
			}
			if g := re.Uint64(); g != w {
				t.Fatalf("seeded (%d, %d), draw %d: %#x, rand.PCG %#x", s1, s2, i, g, w)
			}
			var g uint64
			if hi, lo, g = Next(hi, lo); g != w || (PCG{hi, lo}) != got {
				t.Fatalf("seed (%d, %d), draw %d by Next: %#x, state %#x, %#x; rand.PCG %#x, state %#x, %#x", s1, s2, i, g, hi, lo, w, got.Hi, got.Lo)
			}
		}
	}
}
