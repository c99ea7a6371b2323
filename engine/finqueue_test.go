package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The finish queue gives its entries back in tick order, as a heap of
// them all would: pushes in order (the run), out of order (the heap) and
// mixed, popped a few at a time between pushes, long enough for the run to
// compact.
func TestFinQueueIsInTickOrder(t *testing.T) {
	for _, inOrder := range []float64{1, 0.9, 0.5, 0} {
		rng := rand.New(rand.NewPCG(7, uint64(inOrder*10)))
		var q finQueue
		var want []int // the ticks held, sorted
		last := 0
		s := &seq{}
		for range 20_000 {
			for range rng.IntN(4) {
				tick := last + rng.IntN(50)
				if rng.Float64() >= inOrder {
					tick = rng.IntN(last + 50)
				}
				last = max(last, tick)
				q.push(finEntry{tick: tick, s: s})
				want = append(want, tick)
			}
			slices.Sort(want)
			for range rng.IntN(4) {
				if q.len() == 0 {
					break
				}
				require.Equal(t, want[0], q.front().tick)
				require.Equal(t, want[0], q.pop().tick)
				want = want[1:]
			}
			require.Equal(t, len(want), q.len())
			all := q.all()
			ticks := make([]int, 0, len(all))
			for _, x := range all {
				ticks = append(ticks, x.tick)
			}
			slices.Sort(ticks)
			require.Equal(t, append([]int{}, want...), ticks)
		}
		if inOrder == 1 {
			require.Empty(t, q.heap, "pushes in order stay in the run")
		}
		require.Less(t, len(q.run), 64+4*len(want)+8, "the run is compacted")
	}
}
