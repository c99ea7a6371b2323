package kvtier_test

import (
	"fmt"

	"github.com/servesim/servesim/kvtier"
)

// A host tier of 4 blocks under vLLM's write-through rule: a request's
// chain is stored and touched so its head is the most recent; the next
// store evicts the least recent unpinned blocks.
func Example() {
	host, err := kvtier.New(kvtier.Config{Blocks: 4})
	if err != nil {
		panic(err)
	}
	chain := []uint64{11, 12, 13}
	host.Insert(chain, nil)
	host.Touch(chain) // 13 least recent, 11 most recent
	host.Pin(13)      // a load of block 13 in flight
	evicted, anon, ok := host.Insert([]uint64{21, 22}, nil)
	fmt.Println(evicted, anon, ok)
	fmt.Println(host.Lookup(11), host.Lookup(12), host.Len())
	fmt.Printf("%+v\n", host.Counters())
	// Output:
	// [12] 0 true
	// true false 4
	// {Hits:1 Misses:1 Evictions:1 Dropped:0}
}
