package ascend_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/ascend"
)

// A synthetic prompt's ids: its group's shared prefix (ids 100 to 103, one
// more each), then its own fresh ids. Len finds where the shared run ends;
// Two finds the same by bisection, for ids that promise at most two runs.
func Example() {
	prompt := []uint64{100, 101, 102, 103, 900, 901, 902}
	fmt.Println(ascend.Len(prompt), ascend.Each(prompt))
	k, ok := ascend.Two(prompt, 4)
	fmt.Println(k, ok)
	other := []uint64{100, 101, 102, 103, 500, 501}
	fmt.Println(ascend.Common(prompt, other, 4))
	// Output:
	// 4 4
	// 4 true
	// 4
}
