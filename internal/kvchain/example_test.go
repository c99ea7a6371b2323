package kvchain_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/kvchain"
)

// A run of four blocks, a block a prefix id (per 1), from id 500: Fill and
// FillIDs chain the same keys, and a Run names them without computing them.
func Example() {
	a := make([]uint64, 4)
	last := kvchain.Fill(a, 0, 500, 0, 1, 16)
	b := make([]uint64, 4)
	kvchain.FillIDs(b, 0, []uint64{500, 501, 502, 503})
	fmt.Printf("%016x\n", a)
	fmt.Println(last == a[3], a[0] == b[0] && a[3] == b[3])
	run := kvchain.Run{Parent: 0, ID: 500, R: 0, Per: 1, B: 16, N: 4}
	c := make([]uint64, 4)
	fmt.Println(run.Keys(c) == last, run.First() == a[0], c[2] == a[2])
	// Each key mixes the one before it: the same ids after another parent
	// chain other keys.
	d := make([]uint64, 4)
	kvchain.FillIDs(d, a[3], []uint64{500, 501, 502, 503})
	fmt.Println(d[0] == a[0])
	// Output:
	// [d804a7cb428869a4 43d7175b01d4ef18 dfbd7a4116f45370 8cf5be01d9a2d868]
	// true true
	// true true true
	// false
}
