package kvtier

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeySetIsAMap holds keySet to a map cleared at each reset: calls of
// few and many keys, drawn from small ranges so that most calls give
// some keys twice (and 0, whose slot is the zero value's), across the
// stamp's wrap and the array's growth.
func TestKeySetIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s keySet
	dups := 0
	for call := range 3000 {
		if call == 1500 {
			s.gen = math.MaxUint32 - 2 // the stamp wraps in three calls
		}
		n := 1 + rng.IntN(40)
		if call%100 == 0 {
			n = 1 + rng.IntN(2000)
		}
		span := uint64(1 + rng.IntN(3*n))
		s.reset(n)
		want := map[uint64]bool{}
		for range n {
			k := rng.Uint64N(span)
			if call%7 == 0 {
				k <<= 40 // keys that share their low bits
			}
			_, had := want[k]
			want[k] = true
			if had {
				dups++
			}
			require.Equal(t, !had, s.add(k), "call %d: add(%d)", call, k)
		}
	}
	require.Greater(t, dups, 10000, "keys given twice in one call")
	require.NotZero(t, s.gen, "the stamp wrapped to 1, never 0")
}

// TestKeySetWrapsClean: when the stamp wraps, slots stamped long before
// (by the first reset, the stamp the wrap comes back to) are not taken
// for this call's.
func TestKeySetWrapsClean(t *testing.T) {
	var s keySet
	s.reset(10)
	for k := range uint64(10) {
		require.True(t, s.add(k))
	}
	s.gen = math.MaxUint32
	s.reset(10) // the wrap
	require.True(t, s.add(100))
	s.reset(10)
	for k := range uint64(10) {
		require.True(t, s.add(k), "key %d, added before the wrap", k)
	}
}
