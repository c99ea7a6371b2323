package lcp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLenIsTheFirstDifference holds Len to the first index where a and b
// differ, over random slices that share random beginnings (long ones
// too, whose difference Len finds a chunk at a time).
func TestLenIsTheFirstDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 2_000 {
		a := make([]uint64, rng.IntN(40+k%3*300)) // two in three past several chunks
		for i := range a {
			a[i] = rng.Uint64N(3)
		}
		b := append([]uint64(nil), a[:rng.IntN(len(a)+1)]...)
		for range rng.IntN(5 + k%3*40) {
			b = append(b, rng.Uint64N(3))
		}
		want := 0
		for want < len(a) && want < len(b) && a[want] == b[want] {
			want++
		}
		require.Equal(t, want, Len(a, b), "%v %v", a, b)
		require.Equal(t, want, Len(b, a))
	}
	require.Equal(t, 0, Len(nil, []uint64{1}))
}
