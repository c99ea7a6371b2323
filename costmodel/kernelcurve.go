package costmodel

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/interp"
)

// kernelCurve is the time of a set of kernels over one count (the step's
// tokens or its sequences), made non-decreasing and interpolated linearly
// between the profiled counts (gonum's PiecewiseLinear). Below the first
// count it holds the first value; beyond the last it continues at the
// slope of the last doubling (from half the last count to the last),
// which is steadier than the last segment's on a noisy profile.
//
// Kernel times are not monotone as profiled: a GEMM at 48 tokens can pick
// a faster tile than at 32, and three-iteration means carry noise. A
// Model must never price more work as faster, so the summed curve is
// replaced by its isotonic regression (pool adjacent violators): the
// non-decreasing curve closest to it in least squares. lifted and lowered
// say how far that moved it.
type kernelCurve struct {
	name, unit string
	lo, hi     float64 // profiled range of the count
	last       float64 // µs at hi
	slope      float64 // µs per unit beyond hi, >= 0
	pred       interp.PiecewiseLinear
	single     float64 // the value when only one count was profiled
	n          int
	// lifted and lowered are the largest changes isotonic regression made
	// to one profiled value, µs.
	lifted, lowered float64
}

// newKernelCurve sums curves (each a kernel's points, a kernel listed
// twice counting twice) at every count any of them profiled; no curve is
// no time.
func newKernelCurve(name, unit string, curves [][]KernelPoint) kernelCurve {
	if len(curves) == 0 {
		return kernelCurve{name: name, unit: unit}
	}
	var xs []float64
	for _, c := range curves {
		for _, p := range c {
			xs = append(xs, float64(p.X))
		}
	}
	slices.Sort(xs)
	xs = slices.Compact(xs)
	ys := make([]float64, len(xs))
	for _, c := range curves {
		k := rawCurve(c)
		for i, x := range xs {
			ys[i] += k.at(x)
		}
	}
	return monotoneCurve(name, unit, xs, ys)
}

// monotoneCurve compiles the points (xs strictly increasing) after
// isotonic regression.
func monotoneCurve(name, unit string, xs, ys []float64) kernelCurve {
	fit := isotonic(ys)
	c := kernelCurve{name: name, unit: unit, lo: xs[0], hi: xs[len(xs)-1], last: fit[len(fit)-1], n: len(xs)}
	for i := range ys {
		c.lifted = max(c.lifted, fit[i]-ys[i])
		c.lowered = max(c.lowered, ys[i]-fit[i])
	}
	if len(xs) == 1 {
		c.single = fit[0]
		return c
	}
	_ = c.pred.Fit(xs, fit) // xs strictly increasing, at least two: never fails
	half := max(c.hi/2, c.lo)
	c.slope = (c.last - c.pred.Predict(half)) / (c.hi - half)
	return c
}

// at is the curve's time at x, µs, and whether x lies beyond the profiled
// counts.
func (c *kernelCurve) at(x float64) (us float64, out bool) {
	switch {
	case c.n == 0:
		return 0, false
	case c.n == 1:
		return c.single, x > c.hi
	case x > c.hi:
		return c.last + c.slope*(x-c.hi), true
	case x < c.lo:
		return c.pred.Predict(c.lo), false
	}
	return c.pred.Predict(x), false
}

func (c *kernelCurve) warning(x float64) string {
	return fmt.Sprintf("costmodel: Profile %s read at %v %s, beyond the profiled %v–%v; extrapolated at the last doubling's slope", c.name, x, c.unit, c.lo, c.hi)
}

// piecewise is one kernel's raw curve, for summing with others at their
// counts: linear between points, held outside them.
type piecewise struct{ xs, ys []float64 }

func rawCurve(ps []KernelPoint) piecewise {
	var p piecewise
	for _, q := range ps {
		p.xs, p.ys = append(p.xs, float64(q.X)), append(p.ys, q.Us)
	}
	return p
}

func (p piecewise) at(x float64) float64 {
	i, t := bracket(p.xs, x)
	if t == 0 {
		return p.ys[i]
	}
	return p.ys[i] + t*(p.ys[i+1]-p.ys[i])
}

// bracket finds x among the increasing xs: x lies at xs[i] + t·(xs[i+1] −
// xs[i]) with t in [0, 1), or t = 0 at the ends, where x is clamped to
// the nearest end.
func bracket(xs []float64, x float64) (i int, t float64) { return bracketFrom(xs, x, nil) }

// bracketFrom is bracket with the lower bound (the first index whose value
// is at least x) found by a walk from *near, which it then holds; by a
// binary search when near is nil.
func bracketFrom(xs []float64, x float64, near *int) (i int, t float64) {
	n := len(xs)
	if n == 1 || x <= xs[0] {
		return 0, 0
	}
	if x >= xs[n-1] {
		return n - 1, 0
	}
	if near == nil {
		i, _ = slices.BinarySearch(xs, x)
	} else {
		i = min(max(*near, 1), n-1) // xs[0] < x < xs[n-1]: the bound is in [1, n-1]
		for xs[i] < x {
			i++
		}
		for xs[i-1] >= x {
			i--
		}
		*near = i
	}
	if xs[i] == x {
		return i, 0
	}
	i--
	return i, (x - xs[i]) / (xs[i+1] - xs[i])
}

// isotonic is the non-decreasing sequence closest to ys in least squares
// (pool adjacent violators): each run of values that falls is replaced by
// its mean.
func isotonic(ys []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	blocks := make([]block, 0, len(ys))
	for _, y := range ys {
		blocks = append(blocks, block{y, 1})
		for len(blocks) > 1 {
			a, b := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/float64(a.n) <= b.sum/float64(b.n) {
				break
			}
			blocks = blocks[:len(blocks)-1]
			blocks[len(blocks)-1] = block{a.sum + b.sum, a.n + b.n}
		}
	}
	out := make([]float64, 0, len(ys))
	for _, b := range blocks {
		for range b.n {
			out = append(out, b.sum/float64(b.n))
		}
	}
	return out
}

// finite reports whether v is a finite number.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
