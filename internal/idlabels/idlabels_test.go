package idlabels

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLabelsByFirstAppearance(t *testing.T) {
	var a, b Labels
	assert.Equal(t, []uint64{0, 1, 2, 1}, a.Of([]uint64{7, 9, 3, 9}))
	assert.Equal(t, []uint64{0, 3, 2}, a.Of([]uint64{7, 40, 3}))
	// Renumbered the same ids give the same labels; merged ones do not.
	assert.Equal(t, []uint64{0, 1, 2, 1}, b.Of([]uint64{1, 2, 3, 2}))
	assert.Equal(t, []uint64{0, 3, 2}, b.Of([]uint64{1, 4, 3}))
	var c Labels
	assert.NotEqual(t, []uint64{0, 1, 2, 1}, c.Of([]uint64{1, 1, 3, 1}))
}
