package lateanswers_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/lateanswers"
)

// A conversation's turn whose ids cover its 64-token prompt and its
// 40-token answer (a block of 16 tokens an id): with answers cached late,
// the engine holds none of the answer's blocks cached while it decodes,
// and all it computed (the 6 blocks of its first 103 tokens) once it
// finished, as it would have cached them one by one.
func Example() {
	e, err := engine.New(engine.Config{}, nil)
	if err != nil {
		panic(err)
	}
	lateanswers.Allow(e, true)
	ids := []uint64{1, 2, 3, 4, 5, 6, 7}
	err = e.Add(0, engine.Request{Ref: 1, Input: 64, Output: 40, Prefix: ids, PrefixBlockTokens: 16, PrefixCoversOutput: true})
	if err != nil {
		panic(err)
	}
	now := time.Duration(0)
	for step := 0; !e.Idle(); step++ {
		p, err := e.Schedule(now)
		if err != nil {
			panic(err)
		}
		if step == 20 {
			fmt.Println("cached while it decodes:", e.CachedBlocks())
		}
		if _, err := e.Complete(p.End); err != nil {
			panic(err)
		}
		now = p.End
	}
	fmt.Println("cached once it finished:", e.CachedBlocks())
	// Output:
	// cached while it decodes: 4
	// cached once it finished: 6
}
