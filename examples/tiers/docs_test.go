package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/testlong"
)

// docs/examples.md quotes the study's output at its defaults ("tiers:
// KV tiers below HBM"): every indented line of the section but the
// command is a line of the output. It runs the study at its defaults
// (about 3 minutes on 2 cores), so only with SERVESIM_LONG=1.
func TestDocsQuoteTheDefaults(t *testing.T) {
	testlong.Skip(t, "runs the study at its defaults")
	doc, err := os.ReadFile("../../docs/examples.md")
	require.NoError(t, err)
	s := string(doc)
	start := strings.Index(s, "\n## tiers: ")
	require.Positive(t, start, "docs/examples.md has a tiers section")
	s = s[start+1:]
	s = s[:strings.Index(s, "\n## ")]
	var quoted []string
	for _, line := range strings.Split(s, "\n") {
		if q, ok := strings.CutPrefix(line, "    "); ok && !strings.HasPrefix(q, "go run ") {
			quoted = append(quoted, q)
		}
	}
	require.NotEmpty(t, quoted, "the tiers section quotes the output in an indented block")

	var out bytes.Buffer
	require.NoError(t, run(&out, nil))
	lines := strings.Split(out.String(), "\n")
	for _, q := range quoted {
		assert.Contains(t, lines, q, "docs/examples.md quotes a line the study does not print at its defaults")
	}
}
