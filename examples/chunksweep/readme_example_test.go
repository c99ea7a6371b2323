package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// The dial-sweep example, as docs/examples.md prints it ("chunksweep:
// dial sweeps and the step timeline"): the chapter's workload, no chunk
// cap against a 512-token cap, on the same seeds.
func Example_dialSweep() {
	res, err := analysis.DialSweep{
		Sweep: analysis.Sweep{
			Config:   sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute}},
			Workload: analysis.Poisson(workload.Fixed(2000, 200)),
			Grid:     analysis.Grid{Loads: []float64{1.4, 1.6, 1.8, 2.0, 2.2, 2.4}},
		},
		Dial: analysis.DialChunkCap, Values: []float64{0, 512}, Probe: 1, // Values[0] is the baseline
	}.Run()
	if err != nil {
		panic(err)
	}
	for i, v := range res.Values {
		k, d := res.Curves[i].Knee.Load, res.KneeDiff[i]
		fmt.Printf("chunk cap %3v: knee %.2f [%.2f, %.2f] req/s, paired difference %+.2f [%+.2f, %+.2f], ITL p99 %.1f ms at 1 req/s\n",
			v, k.Center, k.Lo, k.Hi, d.Center, d.Lo, d.Hi, res.Probe[i].ITL.P99.Center)
	}
	// Output:
	// chunk cap   0: knee 2.01 [1.91, 2.16] req/s, paired difference +0.00 [+0.00, +0.00], ITL p99 135.0 ms at 1 req/s
	// chunk cap 512: knee 1.72 [1.65, 1.87] req/s, paired difference -0.28 [-0.31, -0.25], ITL p99 100.8 ms at 1 req/s
}

// docs/examples.md shows Example_dialSweep's body as it is here.
func TestDocsShowTheDialSweepExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "\tres, err := analysis.DialSweep{")
	end := strings.Index(s, "\t// Output:")
	require.True(t, start > 0 && end > start)
	var body strings.Builder
	for _, line := range strings.SplitAfter(s[start:end], "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.True(t, strings.Contains(string(doc), "```go\n"+body.String()+"```\n"), "docs/examples.md must show Example_dialSweep's body exactly:\n%s", body.String())
}

// docs/examples.md quotes Example_dialSweep's output in its prose: each
// figure must be in the Output comment above and in the page.
func TestDocsQuoteTheDialSweepExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	for _, fig := range []string{"2.01 [1.91, 2.16]", "1.72 [1.65, 1.87]", "-0.28 [-0.31, -0.25]"} {
		assert.True(t, strings.Contains(string(src), fig), "Example_dialSweep's output no longer prints %s: update docs/examples.md and this list", fig)
		assert.True(t, strings.Contains(prose(doc), fig), "docs/examples.md must quote Example_dialSweep's %s", fig)
	}
	assert.Equal(t, "a -0.28 [1.65, 1.87] 100977", prose([]byte("a  −0.28\n[1.65,\n1.87] 100,977")))
}

// prose is a Markdown file's text as one line, with "−" as "-" and no
// thousands separators, so that a figure wrapped or typeset in it reads
// as the program prints it.
func prose(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	s = strings.ReplaceAll(s, "−", "-")
	return thousands.ReplaceAllString(s, "$1$2")
}

var thousands = regexp.MustCompile(`(\d),(\d{3})`)
