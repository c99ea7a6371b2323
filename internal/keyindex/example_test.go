package keyindex_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/keyindex"
)

// An Index answers as a map[uint64]int32 would: here a prefix cache's
// block keys and the blocks that hold them.
func Example() {
	var t keyindex.Index // the zero value is empty
	t.Put(0xa1, 7)
	added := t.AddNew([]uint64{0xa1, 0xb2, 0xc3}, 10, nil) // 0xa1 is held
	fmt.Printf("added %x\n", added)
	for _, k := range []uint64{0xa1, 0xb2, 0xc3, 0xd4} {
		id, ok := t.Get(k)
		fmt.Println(id, ok)
	}
	fmt.Println(t.Missing([]uint64{0xd4, 0xe5, 0xb2, 0xf6}))
	t.Del(0xb2)
	fmt.Println(t.Len())
	// Output:
	// added [b2 c3]
	// 7 true
	// 10 true
	// 11 true
	// 0 false
	// 2
	// 2
}
