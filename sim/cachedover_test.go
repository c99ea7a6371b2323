package sim

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCachedOverIsTheQuotient holds PrefixAffinity.cachedOver, which
// asks 2·longest > input at the default threshold, to the quotient
// longest/input in floats (cachedOverQuotient), at every threshold's
// field: around one half, on small prompts whole, and on random ones up
// to 2^52 tokens.
func TestCachedOverIsTheQuotient(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 55))
	for _, field := range []float64{0, DefaultCacheThreshold, 0.25, 0.7, 1} {
		p := PrefixAffinity{CacheThreshold: field}
		check := func(longest, input int) {
			require.Equal(t, cachedOverQuotient(longest, input, p.cacheThreshold()), p.cachedOver(longest, input),
				"threshold %v, %d of %d tokens cached", field, longest, input)
		}
		for input := 1; input <= 600; input++ {
			for longest := 0; longest <= input; longest++ {
				check(longest, input)
			}
		}
		for range 200_000 {
			input := 1 + rng.IntN(1<<52)
			if rng.IntN(2) == 0 {
				input = 1<<52 - rng.IntN(4)
			}
			half := input / 2
			for _, longest := range []int{0, half - 1, half, half + 1, rng.IntN(input + 1), input} {
				if longest >= 0 && longest <= input {
					check(longest, input)
				}
			}
		}
	}
}
