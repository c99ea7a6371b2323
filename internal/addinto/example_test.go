package addinto_test

import (
	"fmt"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/addinto"
)

// A driver writes each request into the engine's record of it, zero, and
// commits it: Engine.Add of the request written, with the next request's
// record back. A request Add refuses is refused the same way.
func Example() {
	next := addinto.Next.(func(*engine.Engine) *engine.Request)
	commit := addinto.Commit.(func(*engine.Engine, time.Duration) (*engine.Request, error))
	e, err := engine.New(engine.Config{KVBlocks: 100}, nil)
	if err != nil {
		panic(err)
	}
	q := next(e)
	for ref, input := range []int{100, 0, 300} {
		q.Ref, q.Input, q.Output = int32(ref), input, 10
		q, err = commit(e, 0)
		fmt.Printf("request %d: %v; the next record is zero: %v\n", ref, err, q.Ref == 0 && q.Input == 0 && q.Output == 0)
	}
	fmt.Println("waiting:", e.Waiting())
	// Output:
	// request 0: <nil>; the next record is zero: true
	// request 1: engine: request needs Input > 0, Output > 0 and no Deadline before its Arrival: Input 0, Output 10; the next record is zero: true
	// request 2: <nil>; the next record is zero: true
	// waiting: 2
}
