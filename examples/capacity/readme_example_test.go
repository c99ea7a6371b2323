package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textBlocks returns the lines of every ```text block of a Markdown file:
// the program output the README and docs/ quote.
func textBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && line == "```text":
			in = true
		case in && line == "```":
			in = false
		case in:
			lines = append(lines, line)
		}
	}
	require.False(t, in, "%s: a ```text block is not closed", path)
	return lines
}

// The README, docs/examples.md and docs/atlas.md quote go run
// ./examples/capacity at its defaults (the estimate's bounds, the knee,
// its model range, peak, collapse and headroom): each quoted line must be
// a line the program prints.
func TestDocsQuoteTheDefaultRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-out", ""}))
	printed := map[string]bool{}
	for _, line := range strings.Split(out.String(), "\n") {
		printed[line] = true
	}
	for _, path := range []string{"../../README.md", "../../docs/examples.md", "../../docs/atlas.md"} {
		quoted := textBlocks(t, path)
		require.NotEmpty(t, quoted, "%s quotes no output of the default run in a ```text block", path)
		for _, line := range quoted {
			assert.True(t, printed[line], "%s quotes a line go run ./examples/capacity does not print:\n%s\n\nit prints:\n%s", path, line, out.String())
		}
	}
	// The README's figures in prose and its caption.
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.Contains(t, out.String(), "knee       2.010 req/s [1.923, 2.133]")
	assert.Contains(t, string(readme), "the knee at 2.01 req/s")
}

func TestTextBlocks(t *testing.T) {
	path := t.TempDir() + "/x.md"
	require.NoError(t, os.WriteFile(path, []byte("a\n```text\nknee 1\n  range 2\n```\nb\n```go\nx\n```\n```text\nc\n```\n"), 0o600))
	assert.Equal(t, []string{"knee 1", "  range 2", "c"}, textBlocks(t, path))
}
