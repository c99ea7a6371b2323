package workload

import (
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
