package costmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pool adjacent violators: each falling run becomes its mean.
func TestIsotonicPoolsAdjacentViolators(t *testing.T) {
	assert.Equal(t, []float64{1, 2, 2, 2, 5}, isotonic([]float64{1, 3, 2, 1, 5}))
	assert.Equal(t, []float64{2, 2}, isotonic([]float64{3, 1}))
	assert.Equal(t, []float64{1, 2, 3}, isotonic([]float64{1, 2, 3}))
}

// A kernel curve holds below its first count, interpolates between, and
// beyond its last continues at the last doubling's slope.
func TestKernelCurve(t *testing.T) {
	c := newKernelCurve("k", "tokens", [][]KernelPoint{{{1, 10}, {2, 12}, {4, 11}, {8, 20}}, {{1, 1}, {8, 1}}})
	at := func(x float64) float64 { v, _ := c.at(x); return v }
	assert.Equal(t, 11.0, at(1), "the sum at 1 token")
	assert.Equal(t, 11.0, at(0.5), "held below")
	assert.Equal(t, 12.5, at(2), "2 and 4 pooled: 13 and 12 become 12.5")
	assert.Equal(t, 21.0, at(8))
	assert.InDelta(t, 12.5+0.5*(21-12.5)/4*2, at(5), 1e-12)
	v, out := c.at(16)
	assert.True(t, out)
	assert.InDelta(t, 21+8*(21-12.5)/4, v, 1e-12, "slope over 4–8 tokens")
	assert.Equal(t, 0.5, c.lowered)
	assert.Equal(t, 0.5, c.lifted)
}

// The valley transform is non-decreasing: flat below the line's minimum,
// a running maximum above.
func TestGridValley(t *testing.T) {
	g := newGrid4([4][]float64{{0}, {0}, {0, 1, 2, 3, 4, 5}, {0}})
	copy(g.v, []float64{1, 9, 5, 3, 4, 2.5})
	g.valley(axN, 1, func(int) bool { return true })
	assert.Equal(t, []float64{1, 2.5, 2.5, 2.5, 2.5, 2.5}, g.v, "the minimum is last: the whole line from n = 1 takes it")
	copy(g.v, []float64{1, 9, 5, 3, 4, 3.5})
	g.valley(axN, 1, func(int) bool { return true })
	assert.Equal(t, []float64{1, 3, 3, 3, 4, 4}, g.v)
}

// A cell the profile did not time is read along its own chunk's row
// before across chunks: chunk times step with tiles of query tokens.
func TestNaturalGridFillsAlongTheRowFirst(t *testing.T) {
	ps := []AttentionPoint{
		{PrefillChunk: 16, Decodes: 0, Us: 1},
		{PrefillChunk: 16, Decodes: 1, DecodeContext: 16, Us: 2},
		{PrefillChunk: 16, Decodes: 1, DecodeContext: 64, Us: 4},
		{PrefillChunk: 32, Decodes: 0, Us: 1},
		{PrefillChunk: 32, Decodes: 1, DecodeContext: 32, Us: 10}, // a tile step
		{Decodes: 1, DecodeContext: 16, Us: 1},
	}
	g, err := naturalGrid(ps)
	require.NoError(t, err)
	at := func(pc, kv float64) float64 {
		i, _ := bracket(g.axes[axPC], pc)
		m, _ := bracket(g.axes[axK], kv)
		l, _ := bracket(g.axes[axN], 1)
		return g.v[i*g.stride[0]+l*g.stride[2]+m]
	}
	assert.InDelta(t, 2+2.0/3, at(16, 32), 1e-12, "16 tokens at 32: between its own 16 and 64")
	assert.Equal(t, 10.0, at(32, 64), "32 tokens at 64: held along its row, nothing brackets it")
	assert.Equal(t, 10.0, at(32, 16), "32 tokens at 16: its row's nearest")
	assert.Equal(t, 0, g.missing())
}

// A profile without once-per-step kernels prices none.
func TestKernelCurveOfNoKernelsIsZero(t *testing.T) {
	c := newKernelCurve("k", "tokens", nil)
	v, out := c.at(100)
	assert.Zero(t, v)
	assert.False(t, out)
}
