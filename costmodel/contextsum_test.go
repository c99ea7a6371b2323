package costmodel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContextSumIsTheFloatSum: the integer fast path of contextSum gives
// the float sum in order, bit for bit, on ordinary contexts and on
// contexts that leave it (negative, 2³² and beyond, sums past 2⁵³).
func TestContextSumIsTheFloatSum(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	draw := []func() int{
		func() int { return r.IntN(200_000) },
		func() int { return r.IntN(1 << 32) },
		func() int { return 1<<32 - 1 - r.IntN(3) },
		func() int { return 1<<32 + r.IntN(3) },
		func() int { return -r.IntN(1000) },
		func() int { return math.MaxInt - r.IntN(1000) },
		func() int { return 1<<53 + r.IntN(7) },
	}
	for range 20_000 {
		c := make([]int, r.IntN(300))
		for i := range c {
			c[i] = draw[0]()
			if r.IntN(10) == 0 {
				c[i] = draw[r.IntN(len(draw))]()
			}
		}
		require.Equal(t, math.Float64bits(floatSum(c)), math.Float64bits(contextSum(c)), "%v", c)
	}
	// Many contexts just below 2³²: the partial sums pass 2⁵³ only with
	// 2²¹ of them, which take the float loop.
	c := make([]int, 1<<21)
	for i := range c {
		c[i] = 1<<32 - 1
	}
	require.Equal(t, math.Float64bits(floatSum(c)), math.Float64bits(contextSum(c)))
	require.Equal(t, math.Float64bits(floatSum(c[:1<<21-1])), math.Float64bits(contextSum(c[:1<<21-1])))
}
