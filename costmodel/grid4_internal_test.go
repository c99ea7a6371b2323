package costmodel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// atWalk is grid4.at as first written, the slow twin: every one of the 16
// corners, its weight multiplied axis by axis.
func (g *grid4) atWalk(x0, x1, x2, x3 float64) float64 {
	cs := [4]coord{g.coord(0, x0), g.coord(1, x1), g.coord(2, x2), g.coord(3, x3)}
	sum := 0.0
	for corner := range 16 {
		w, idx := 1.0, 0
		for a, c := range cs {
			switch {
			case corner>>a&1 == 0:
				w *= 1 - c.t
				idx += c.i * g.stride[a]
			case c.t == 0:
				w = 0
			default:
				w *= c.t
				idx += (c.i + 1) * g.stride[a]
			}
		}
		if w != 0 {
			sum += w * g.v[idx]
		}
	}
	return sum * cs[0].scale * cs[1].scale * cs[2].scale * cs[3].scale
}

// TestGrid4AtIsTheWalk: the lookup that skips the corners of weight 0
// reads every grid at every point as the walk of all 16 does, bit for
// bit: on the axes, between them, beyond their ends, at grid points
// (fractions 0) and next to them.
func TestGrid4AtIsTheWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		var axes [4][]float64
		for a := range axes {
			n := 1 + r.IntN(6)
			xs := []float64{0}
			for len(xs) < n {
				xs = append(xs, xs[len(xs)-1]+float64(1+r.IntN(300))*r.Float64())
			}
			axes[a] = slices.Compact(xs)
		}
		g := newGrid4(axes)
		for i := range g.v {
			g.v[i] = r.Float64() * 1000
			if r.IntN(8) == 0 {
				g.v[i] = 0
			}
		}
		pick := func(a int) float64 {
			xs := axes[a]
			x := xs[r.IntN(len(xs))]
			switch r.IntN(5) {
			case 0:
				return x // a grid point
			case 1:
				return math.Nextafter(x, math.Inf(1))
			case 2:
				return x * 2.5 // often beyond the last
			default:
				return r.Float64() * (xs[len(xs)-1] + 1)
			}
		}
		for range 500 {
			x := [4]float64{pick(0), pick(1), pick(2), pick(3)}
			want := g.atWalk(x[0], x[1], x[2], x[3])
			require.Equal(t, math.Float64bits(want), math.Float64bits(g.at(x[0], x[1], x[2], x[3])), "%v", x)
		}
	}
}

// TestBracketFromIsBracket: the walk from any starting index finds the
// cell and fraction the binary search does.
func TestBracketFromIsBracket(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		xs := []float64{float64(r.IntN(5))}
		for n := 1 + r.IntN(12); len(xs) < n; {
			xs = append(xs, xs[len(xs)-1]+float64(1+r.IntN(4)))
		}
		near := r.IntN(len(xs)+3) - 1
		for range 20 {
			x := float64(r.IntN(int(xs[len(xs)-1])+4)) - 1
			if r.IntN(3) == 0 {
				x += r.Float64()
			}
			wi, wt := bracket(xs, x)
			gi, gt := bracketFrom(xs, x, &near)
			require.Equal(t, wi, gi, "%v at %v", xs, x)
			require.Equal(t, math.Float64bits(wt), math.Float64bits(gt), "%v at %v", xs, x)
		}
	}
}
