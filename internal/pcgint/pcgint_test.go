package pcgint

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestIntNIsRandIntN holds IntN to math/rand/v2's IntN over the same
// generator, draw by draw, the generators' states compared after each:
// bounds of every size, powers of two (a mask), and bounds past 2⁶²
// whose draws are often rejected and drawn again (Lemire's multiply,
// its low word below the threshold), which it requires.
func TestIntNIsRandIntN(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 2))
	bounds := []int{1, 2, 3, 7, 8, 1000, 1024, 6_000, 1 << 20, 1<<20 + 1, 1<<40 + 3, 1 << 62, 1<<62 + 1, 3 << 61, math.MaxInt64, math.MaxInt64 - 1}
	for range 300 {
		bounds = append(bounds, 1+rng.IntN(1<<uint(1+rng.IntN(62))))
	}
	for range 20 {
		bounds = append(bounds, 1+rng.IntN(math.MaxInt64-1))
	}
	rejected := 0
	for i, n := range bounds {
		p, q := rand.NewPCG(uint64(i), 3), rand.NewPCG(uint64(i), 3)
		r := rand.New(q)
		for k := range 1000 {
			if got, want := IntN(p, n), r.IntN(n); got != want {
				t.Fatalf("IntN(%d), draw %d: %d, the Rand's %d", n, k, got, want)
			}
			if *p != *q {
				t.Fatalf("IntN(%d), draw %d: the generators part", n, k)
			}
		}
		if n > 1<<62 && n&(n-1) != 0 {
			// The rejections of a third generator's draws, counted.
			g := rand.NewPCG(uint64(i), 3)
			for range 1000 {
				if _, lo := bits.Mul64(g.Uint64(), uint64(n)); lo < -uint64(n)%uint64(n) {
					rejected++
				}
			}
		}
	}
	if rejected < 100 {
		t.Fatalf("%d draws rejected, want 100 or more", rejected)
	}
}
