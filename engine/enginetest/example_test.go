package enginetest_test

import (
	"fmt"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/engine/enginetest"
)

// A driver wraps its engine in a Checker and calls the Checker where it
// called the engine: two requests, one aborted while its prompt is in
// flight, the other run to its end, every law checked after every call.
func Example() {
	e, _ := engine.New(engine.Config{ChunkCap: 256}, costmodel.Frozen{})
	c := enginetest.NewChecker(e)
	_ = c.Add(0, engine.Request{Ref: 1, Input: 300, Output: 3})
	_ = c.Add(0, engine.Request{Ref: 2, Input: 500, Output: 2})
	plan, _ := c.Schedule(0)
	fmt.Println("abort 2:", c.Abort(plan.Start, 2))
	for plan != nil {
		out, _ := c.Complete(plan.End)
		for _, em := range out.Emitted {
			fmt.Printf("%v: request %d emitted %d (first %v, done %v)\n", out.End, em.Ref, em.Tokens, em.First, em.Done)
		}
		plan, _ = c.Schedule(out.End)
	}
	fmt.Println("laws kept:", c.Finish() == nil)
	// Output:
	// abort 2: <nil>
	// 59.46ms: request 1 emitted 1 (first true, done false)
	// 104.46ms: request 1 emitted 1 (first false, done false)
	// 149.46ms: request 1 emitted 1 (first false, done true)
	// laws kept: true
}
