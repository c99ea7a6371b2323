package costmodel_test

import (
	"fmt"
	"io"
	"os"

	"github.com/servesim/servesim/costmodel"
)

// The shape alternatives agree with Frozen at the operating point (32
// decodes at 2,000 context) and on the lone chunks they hold, and part
// from it elsewhere.
func ExampleAtlasShapes() {
	printShapes(os.Stdout)
	// Output:
	// step, ms                    frozen    atlas-linear  atlas-roofline  atlas-profiled
	// decode 1 × 2,000             45.00           20.78           39.32           23.81
	// decode 32 × 2,000            45.00           45.00           45.00           45.00
	// decode 64 × 8,000            45.00          105.18           86.04          182.40
	// prefill 256                  28.96           28.96           39.16           28.96
	// prefill 2,048                91.68           91.68           92.16           91.68
	// 31 × 2,000 + 256             73.96           53.18           44.84           50.15
}

// printShapes prints the table of ExampleAtlasShapes, which docs/atlas.md
// quotes.
func printShapes(w io.Writer) {
	shapes := []struct {
		name string
		b    costmodel.Batch
	}{
		{"decode 1 × 2,000", decodes(1, 2000)},
		{"decode 32 × 2,000", decodes(32, 2000)},
		{"decode 64 × 8,000", decodes(64, 8000)},
		{"prefill 256", prefill(256)},
		{"prefill 2,048", prefill(2048)},
		{"31 × 2,000 + 256", mixed(31, 2000, 256)},
	}
	models := append([]costmodel.NamedModel{{Name: "frozen", Model: costmodel.Frozen{}}}, costmodel.AtlasShapes()...)
	fmt.Fprintf(w, "%-18s", "step, ms")
	for _, m := range models {
		fmt.Fprintf(w, "%16s", m.Name)
	}
	fmt.Fprintln(w)
	for _, s := range shapes {
		fmt.Fprintf(w, "%-18s", s.name)
		for _, m := range models {
			fmt.Fprintf(w, "%16.2f", float64(m.Model.StepTime(s.b))/1e6)
		}
		fmt.Fprintln(w)
	}
}
