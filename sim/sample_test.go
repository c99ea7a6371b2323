package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSampleChunks: a sample's exact values come back in add order across
// chunk boundaries, and after a first gathering; past the limit they all
// go to the sketch, the earlier ones first.
func TestSampleChunks(t *testing.T) {
	const n = 3*sampleChunk + 17
	var s sample
	for i := range n {
		s.add(time.Duration(i), 10*sampleChunk)
	}
	x := s.values()
	require.Len(t, x, n)
	for i, v := range x {
		require.Equal(t, time.Duration(i), v)
	}
	assert.Equal(t, x, s.values(), "gathering twice changes nothing")
	for i := n; i < n+sampleChunk+1; i++ {
		s.add(time.Duration(i), 10*sampleChunk)
	}
	x = s.values()
	require.Len(t, x, n+sampleChunk+1)
	for i, v := range x {
		require.Equal(t, time.Duration(i), v)
	}

	// Past the limit: every value is counted once by the sketch, in order
	// (the Welford mean of 0..k-1 is (k-1)/2, the maximum k-1).
	var t2 sample
	const limit = sampleChunk + 5
	for i := range 2 * limit {
		t2.add(time.Duration(i)*time.Millisecond, limit)
	}
	require.NotNil(t, t2.sk)
	assert.Nil(t, t2.values())
	assert.Equal(t, 2*limit, t2.sk.N())
	d := t2.sk.Dist(Linear)
	assert.InDelta(t, float64(2*limit-1)/2, d.Mean, 1e-9)
	assert.Equal(t, float64(2*limit-1), d.Max)

	var empty sample
	assert.Nil(t, empty.values())
	got, d0 := empty.summarise(Linear, new(scratch))
	assert.Nil(t, got)
	assert.Zero(t, d0.N)
}

// A sample holds exactly limit values exactly, whatever the limit's place
// among the chunks, and sketches them all at the next: the chunk being
// filled never has room past the limit.
func TestSampleLimit(t *testing.T) {
	for _, limit := range []int{1, 3, sampleChunk - 1, sampleChunk, sampleChunk + 1, 2 * sampleChunk} {
		var s sample
		for i := range limit {
			s.add(time.Duration(i), limit)
		}
		require.Nil(t, s.sk, "limit %d", limit)
		x := s.values()
		require.Len(t, x, limit)
		for i, v := range x {
			require.Equal(t, time.Duration(i), v)
		}
		s.add(time.Duration(limit)*time.Millisecond, limit)
		require.NotNil(t, s.sk, "limit %d: one more sketches", limit)
		assert.Equal(t, limit+1, s.sk.N())
		assert.Equal(t, float64(limit), s.sk.Dist(Linear).Max, "the sketch takes milliseconds")

		var u sample // the same, never gathered before the limit
		for i := range limit + 1 {
			u.add(time.Duration(i), limit)
		}
		require.NotNil(t, u.sk, "limit %d", limit)
		assert.Equal(t, limit+1, u.sk.N())
	}
}
