package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCohortCounts holds the cohort's O(1) block counts to their sums
// over residues and to the sums over the members themselves, for random
// members, clocks and run lengths at every block size the cohort serves.
func TestCohortCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bs := range []int{1, 2, 4, 16, 64} {
		e, err := New(Config{BlockSize: bs}, nil)
		require.NoError(t, err)
		e.Runner().OmitStreaks(true)
		require.True(t, e.co.on)
		for range 200 {
			e.co = cohort{on: true, count: e.co.count, suf: new(sufs), mask: e.co.mask}
			clear(e.co.count)
			e.co.tick = rng.IntN(1 << 20)
			var computed []int // each member's computed tokens now
			for range rng.IntN(40) {
				c := rng.IntN(5000)
				computed = append(computed, c)
				e.countMember(c-e.co.tick, 1)
			}
			for range rng.IntN(len(computed) + 1) { // leaves, from any residue
				i := rng.IntN(len(computed))
				e.countMember(computed[i]-e.co.tick, -1)
				computed = append(computed[:i], computed[i+1:]...)
			}
			for _, j := range []int{0, 1, 2, bs - 1, bs, bs + 1, 3*bs + 2, rng.IntN(1000)} {
				if j < 0 {
					continue
				}
				want, held := 0, 0
				for _, c := range computed {
					want += blockSum(c+j, bs) - blockSum(c, bs)
					held += e.blocksFor(c + j)
				}
				require.Equal(t, want, e.coBlockSteps(j), "block size %d, tick %d, j %d", bs, e.co.tick, j)
				require.Equal(t, want, e.coBlockStepsWalk(j), "block size %d, tick %d, j %d", bs, e.co.tick, j)
				require.Equal(t, held, e.coBlocks(j), "block size %d, tick %d, j %d", bs, e.co.tick, j)
				require.Equal(t, e.coGrow(j, j+1), e.coStep(j+1), "block size %d, tick %d, step %d", bs, e.co.tick, j+1)
				for _, i := range []int{0, 1, j / 2, j} {
					require.Equal(t, e.coBlocks(j)-e.coBlocks(i), e.coGrow(i, j), "block size %d, tick %d, %d to %d", bs, e.co.tick, i, j)
				}
			}
		}
	}
}

// coBlockStepsWalk is coBlockSteps summed over the residues, O(B).
func (e *Engine) coBlockStepsWalk(j int) int {
	co := &e.co
	bs := e.cfg.BlockSize
	a, b := co.tick>>e.shift, co.tick&(bs-1)
	sum := j * (co.q + co.suf.n(0)*a)
	for r, n := range co.count {
		if n != 0 {
			sum += int(n) * (e.blockSum(r+b+j) - e.blockSum(r+b))
		}
	}
	return sum
}
