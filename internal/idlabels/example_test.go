package idlabels_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/idlabels"
)

// Two streams that number their blocks differently but share the same ones
// get the same labels.
func Example() {
	var a, b idlabels.Labels
	fmt.Println(a.Of([]uint64{70, 71, 70}), a.Of([]uint64{71, 90}))
	fmt.Println(b.Of([]uint64{5, 9, 5}), b.Of([]uint64{9, 2}))
	// Output:
	// [0 1 0] [1 2]
	// [0 1 0] [1 2]
}
