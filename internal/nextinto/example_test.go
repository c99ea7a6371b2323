package nextinto_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/nextinto"
	"github.com/servesim/servesim/workload"
)

// into is the route's method, as sim's runner asserts it.
type into interface {
	NextInto(*workload.Request) error
}

// A Generator has the route: it writes each request into one slot, in
// place, until io.EOF; the same generator behind a Source of the user's
// has none (the runner calls its Next).
func Example() {
	g, err := workload.NewPoisson(1, 10, 3, workload.Fixed(100, 10))
	if err != nil {
		panic(err)
	}
	fill, ok := nextinto.Of(g).(into)
	fmt.Println("a Generator has the route:", ok)
	var slot workload.Request
	for fill.NextInto(&slot) == nil {
		fmt.Println("request", slot.ID, slot.InputTokens, "in,", slot.OutputTokens, "out")
	}
	_, ok = nextinto.Of(struct{ workload.Source }{g}).(into)
	fmt.Println("a user's Source has it:", ok)
	// Output:
	// a Generator has the route: true
	// request 0 100 in, 10 out
	// request 1 100 in, 10 out
	// request 2 100 in, 10 out
	// a user's Source has it: false
}
