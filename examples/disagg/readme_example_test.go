package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/examples.md shows sim's ExamplePrefillPool body and output as they
// are ("disagg: prefill/decode disaggregation").
func TestDocsShowThePrefillPoolExample(t *testing.T) {
	src, err := os.ReadFile("../../sim/pools_example_test.go")
	require.NoError(t, err)
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	s := string(src)
	start := strings.Index(s, "\tcfg := sim.Config{\n")
	end := strings.Index(s, "\t// Output:")
	require.True(t, start > 0 && end > start)
	var body strings.Builder
	for _, line := range strings.SplitAfter(s[start:end], "\n") {
		body.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.True(t, strings.Contains(string(doc), "```go\n"+body.String()+"```\n"), "docs/examples.md must show ExamplePrefillPool's body exactly:\n%s", body.String())
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(s[end+len("\t// Output:"):strings.LastIndex(s, "}")]), "\n") {
		out.WriteString("    " + strings.TrimPrefix(strings.TrimSpace(line), "// ") + "\n")
	}
	assert.Contains(t, string(doc), out.String(), "docs/examples.md must show ExamplePrefillPool's output")
}
