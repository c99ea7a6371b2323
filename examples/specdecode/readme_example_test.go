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
	"github.com/servesim/servesim/workload"
)

// The speculative decoding example, as docs/examples.md prints it
// ("specdecode: speculative decoding"): K = 4 drafts at α = 0.7 from a
// draft model at 2 ms a draft, one run at 1.5 req/s.
func Example_speculation() {
	cfg := sim.Config{
		Speculation: sim.Speculation{Tokens: 4, Acceptance: 0.7, DraftStep: 2 * time.Millisecond},
		Window:      sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute},
	}
	src, _ := workload.NewPoisson(1, 1.5, 1500, workload.Fixed(2000, 200))
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		panic(err)
	}
	sp := sum.Speculation // the mechanism's evidence, apart from the output
	fmt.Printf("%.3f ± %.3f tokens a step of 4 drafts (theory 2.773), %d of %d drafts accepted\n",
		sp.MeanAccepted, sp.MeanAcceptedSE, sp.Accepted, sp.Drafted)
	fmt.Printf("ITL p99 %.1f ms per chunk (vLLM), %.1f ms per token (retokenized); goodput %.2f req/s\n",
		sum.ITL.P99, sum.ITLRetokenized.P99, sum.Goodput)
	// Output:
	// 2.767 ± 0.007 tokens a step of 4 drafts (theory 2.773), 100900 of 227962 drafts accepted
	// ITL p99 144.3 ms per chunk (vLLM), 143.6 ms per token (retokenized); goodput 1.48 req/s
}

// docs/examples.md shows Example_speculation's body as it is here.
func TestDocsShowTheSpeculationExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "\tcfg := sim.Config{\n\t\tSpeculation")
	end := strings.Index(s, "\t// Output:")
	require.True(t, start > 0 && end > start)
	var body strings.Builder
	for _, line := range strings.SplitAfter(s[start:end], "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.True(t, strings.Contains(string(doc), "```go\n"+body.String()+"```\n"), "docs/examples.md must show Example_speculation's body exactly:\n%s", body.String())
}

// docs/examples.md quotes Example_speculation's output in its prose: each
// figure must be in the Output comment above and in the page.
func TestDocsQuoteTheSpeculationExample(t *testing.T) {
	src, err := os.ReadFile("readme_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	for _, fig := range []string{"2.767 ± 0.007 tokens a step", "100900 of 227962 drafts accepted", "ITL p99 144.3 ms per chunk", "143.6 ms per token"} {
		assert.True(t, strings.Contains(string(src), fig), "Example_speculation's output no longer prints %s: update docs/examples.md and this list", fig)
		assert.True(t, strings.Contains(prose(doc), fig), "docs/examples.md must quote Example_speculation's %s", fig)
	}
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
