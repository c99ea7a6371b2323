package sim

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// firstPeak looks at the last few peaks before it halves the rest: every
// answer is the binary search's over the whole stack, for stacks of every
// length up to 40 and moves before, on and after each peak's and between
// them, answers near the end and far from it.
func TestFirstPeakIsTheSearch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 55))
	for n := range 41 {
		for range 20 {
			st := streaks{peaks: make([]peak, n)}
			move := int64(rng.IntN(3))
			for i := range st.peaks {
				st.peaks[i] = peak{move: move, d: time.Duration(n - i)}
				move += 1 + int64(rng.IntN(4))
			}
			for from := int64(-1); from <= move+1; from++ {
				want := sort.Search(n, func(i int) bool { return st.peaks[i].move >= from })
				if got := st.firstPeak(from); got != want {
					t.Fatalf("%d peaks %v, from %d: firstPeak %d, the search %d", n, st.peaks, from, got, want)
				}
			}
		}
	}
}
