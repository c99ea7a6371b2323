package accept_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/accept"
)

// A step that drafts four tokens at α = 0.5 accepts the first j drafts when
// a 53-bit uniform u falls below ⌈0.5^j·2⁵³⌉: half the draws accept at least
// one, a quarter at least two, and so on.
func Example() {
	below := accept.Thresholds(0.5, 4)
	start := accept.Starts(below)
	const one = uint64(1) << 53 // u/2⁵³ = 1
	for _, frac := range []float64{0.9, 0.4, 0.2, 0.1, 0.05, 0.01} {
		u := uint64(frac * float64(one))
		fmt.Printf("u/2⁵³ = %.2f: %d accepted\n", frac, accept.Accepted(u, below, start, 4))
	}
	// Output:
	// u/2⁵³ = 0.90: 0 accepted
	// u/2⁵³ = 0.40: 1 accepted
	// u/2⁵³ = 0.20: 2 accepted
	// u/2⁵³ = 0.10: 3 accepted
	// u/2⁵³ = 0.05: 4 accepted
	// u/2⁵³ = 0.01: 4 accepted
}
