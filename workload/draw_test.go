package workload

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestDrawIsSample holds a conversation's draws (draw.sample, a
// Uniform's bounds worked out once) to the Length's Sample, draw by draw
// from one stream, for Uniforms of every kind of bounds (one value,
// bounds clamped to 1, wide and narrow ranges) and lengths of other
// kinds, which sample through the Length.
func TestDrawIsSample(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 1))
	lengths := []Length{Uniform{Center: 1}, Uniform{Center: 1, RangeRatio: 0.9}, Uniform{Center: 2, RangeRatio: 2},
		Constant{Tokens: 7}, LogNormalMean(600, 0.5)}
	for range 200 {
		lengths = append(lengths, Uniform{Center: 1 + rng.IntN(5000), RangeRatio: rng.Float64() * 1.5})
	}
	uniforms := 0
	for i, l := range lengths {
		d := newDraw(l)
		if d.uniform {
			uniforms++
		}
		var a streamCell
		a.on(uint64(i), 2)
		b := rand.New(rand.NewPCG(uint64(i), 2))
		for k := range 500 {
			if got, want := d.sample(&a), l.Sample(b); got != want {
				t.Fatalf("%v: draw %d is %d, Sample's %d", l, k, got, want)
			}
		}
	}
	if uniforms != len(lengths)-2 {
		t.Fatalf("%d of the lengths drawn as Uniforms, want %d", uniforms, len(lengths)-2)
	}
}

// TestIntNIsRandIntN holds intN to math/rand/v2's IntN over the same
// generator, draw by draw: for bounds of every size, powers of two (a
// mask), and bounds past 2⁶² whose draws are often rejected and drawn
// again (Lemire's multiply, its low word below the threshold), which it
// requires.
func TestIntNIsRandIntN(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 2))
	bounds := []int{1, 2, 3, 7, 8, 1 << 20, 1<<62 + 1, 3 << 61, math.MaxInt64, math.MaxInt64 - 1}
	for range 300 {
		bounds = append(bounds, 1+rng.IntN(1<<uint(1+rng.IntN(62))))
	}
	rejected := 0
	for i, n := range bounds {
		p, q := rand.NewPCG(uint64(i), 3), rand.NewPCG(uint64(i), 3)
		r := rand.New(q)
		for k := range 400 {
			if got, want := intN(p, n), r.IntN(n); got != want {
				t.Fatalf("IntN(%d), draw %d: %d, the Rand's %d", n, k, got, want)
			}
			if *p != *q {
				t.Fatalf("IntN(%d), draw %d: the generators part", n, k)
			}
		}
		if n > 1<<62 && n&(n-1) != 0 {
			// Count the rejections of a third generator's draws.
			g := rand.NewPCG(uint64(i), 3)
			for range 400 {
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
