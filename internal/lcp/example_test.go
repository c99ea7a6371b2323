package lcp_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/lcp"
)

// Two prompts that share a system prompt of 300 ids and then part.
func Example() {
	a := make([]uint64, 400)
	b := make([]uint64, 350)
	for i := range a {
		a[i] = uint64(i)
	}
	for i := range b {
		b[i] = uint64(i)
		if i >= 300 {
			b[i] += 10_000
		}
	}
	fmt.Println(lcp.Len(a, b), lcp.Len(a, a[:120]), lcp.Len(nil, a))
	// Output:
	// 300 120 0
}
