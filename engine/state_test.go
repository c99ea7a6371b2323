package engine

import (
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// New builds each group of the Engine's state from the Config and the
// model: the block size's shift and the watermark (kvState), the
// residue counts (runState) and what the model says of its prices
// (priceCache).
func TestNewBuildsEachGroup(t *testing.T) {
	e, err := New(Config{BlockSize: 32, KVBlocks: 1000, Watermark: 0.05}, costmodel.Frozen{})
	require.NoError(t, err)
	assert.Equal(t, 5, e.shift)
	assert.Equal(t, 32, e.blockSize)
	assert.Equal(t, 50, e.wmBlocks)
	assert.Equal(t, 1000, e.pool.free())
	assert.True(t, e.cacheOn)
	assert.Len(t, e.res.count, 32)
	assert.True(t, e.ctxFree, "Frozen reads no decode context")
	assert.Equal(t, 45*time.Millisecond, e.price1, "Frozen's decode step")
	assert.Equal(t, 7, e.blocksFor(193))

	// A block size no shift serves: blocks by division, no residue counts.
	e, err = New(Config{BlockSize: 48, KVBlocks: 1000, DisablePrefixCache: true}, costmodel.Frozen{})
	require.NoError(t, err)
	assert.Equal(t, -1, e.shift)
	assert.Nil(t, e.res.count)
	assert.False(t, e.cacheOn)
	assert.Equal(t, 5, e.blocksFor(193))

	// A power of two above maxResidueBlock: a shift, but no counts.
	e, err = New(Config{BlockSize: 128, KVBlocks: 1000}, costmodel.Frozen{})
	require.NoError(t, err)
	assert.Equal(t, 7, e.shift)
	assert.Nil(t, e.res.count)
	assert.Equal(t, 2, e.blocksFor(129))
}
