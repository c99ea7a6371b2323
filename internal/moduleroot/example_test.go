package moduleroot_test

import (
	"fmt"
	"path/filepath"

	"github.com/servesim/servesim/internal/moduleroot"
)

// The sample examples/sizing and examples/autoscale read by default,
// found from wherever in the clone the command runs.
func ExamplePath() {
	p := moduleroot.Path("examples/tracereplay/testdata/azure_conv_sample.csv")
	fmt.Println(filepath.IsAbs(p), filepath.Base(p))
	// Output: true azure_conv_sample.csv
}
