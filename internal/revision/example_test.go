package revision_test

import (
	"fmt"

	"github.com/servesim/servesim/internal/revision"
)

// The analysis revision of this build: the sources of the packages that
// registered (none in this test binary but what it imports).
func Example() {
	fmt.Println(len(revision.Files()), len(revision.Hash()))
	// Output:
	// 0 41
}
