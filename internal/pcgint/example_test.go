package pcgint_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/servesim/servesim/internal/pcgint"
)

// The same draws as a Rand's IntN over the same generator.
func Example() {
	p, q := rand.NewPCG(1, 2), rand.NewPCG(1, 2)
	r := rand.New(q)
	for range 3 {
		fmt.Println(pcgint.IntN(p, 1000) == r.IntN(1000))
	}
	// Output:
	// true
	// true
	// true
}
