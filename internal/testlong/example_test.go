package testlong_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/testlong"
)

// The long tests run when the environment variable is set:
//
//	SERVESIM_LONG=1 go test ./...
//
// A test asks for its size with testlong.Int(t, short, long), or skips
// itself unless long with testlong.Skip(t, why).
func Example() {
	fmt.Println(testlong.Env + "=1")
	// Output:
	// SERVESIM_LONG=1
}
