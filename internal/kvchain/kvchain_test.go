package kvchain

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunIsFill holds Run's First and Keys to Fill (which the engine's
// TestChainRunIsMix holds to its mix, block by block).
func TestRunIsFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	for range 1_000 {
		c := Run{Parent: rng.Uint64(), ID: rng.Uint64N(1 << 40), Per: 1 + rng.IntN(4), B: 1 << rng.IntN(6), N: 1 + rng.IntN(40)}
		c.R = rng.IntN(c.Per)
		want := make([]uint64, c.N)
		last := Fill(want, c.Parent, c.ID, c.R, c.Per, c.B)
		got := make([]uint64, c.N+3)
		require.Equal(t, last, c.Keys(got))
		require.Equal(t, want, got[:c.N])
		require.Equal(t, want[0], c.First())
	}
}

// TestNextIsFillIDs holds Next, one key, to FillIDs of one id.
func TestNextIsFillIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 2))
	for range 1_000 {
		k, id := rng.Uint64(), rng.Uint64()
		want := make([]uint64, 1)
		FillIDs(want, k, []uint64{id})
		require.Equal(t, want[0], Next(k, id))
	}
}
