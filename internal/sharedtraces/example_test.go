package sharedtraces_test

import (
	"fmt"
	"path/filepath"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// The traces are looked for in ../shared/traces beside the module's root,
// whichever package's test asks; Note is empty until a test went without
// one.
func Example() {
	dir := sharedtraces.Dir()
	fmt.Println(filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir))
	fmt.Printf("%q\n", sharedtraces.Note())
	// Output:
	// shared/traces
	// ""
}
