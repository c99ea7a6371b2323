package joinerr_test

import (
	"errors"
	"fmt"

	"github.com/servesim/servesim/internal/joinerr"
)

// Three replications, two of which failed alike.
func Example() {
	absurd := errors.New("workload: rate 1e9 needs more requests than fit")
	fmt.Println(joinerr.Distinct([]error{absurd, nil, absurd}))
	fmt.Println(joinerr.Distinct([]error{nil, nil}))
	// Output:
	// workload: rate 1e9 needs more requests than fit (in 2 replications)
	// <nil>
}
