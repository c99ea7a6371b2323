package servesim_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs are the README and every page under docs/.
func docs(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return append([]string{"README.md"}, pages...)
}

// The README is a quick start: under 150 lines (issue 32).
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	assert.Less(t, lines, 150, "README.md has %d lines: move the detail into docs/", lines)
}

// A clone from a code host has nothing beside the repository: no page may
// send a reader to ../shared.
func TestDocsDoNotPointOutsideTheRepository(t *testing.T) {
	for _, path := range docs(t) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			assert.NotContains(t, line, "../shared", "%s:%d points outside the repository", path, i+1)
		}
	}
}

// link is a Markdown link that is not an image: [text](target).
var link = regexp.MustCompile(`(^|[^!])\[[^\]]*\]\(([^)\s]+)\)`)

// Every relative link of the README and docs/ names a file of the
// repository, and every #anchor a heading of the page it names. (Images
// are left out: docs/capacity-goodput.png is written by the charts.)
func TestDocsLinksResolve(t *testing.T) {
	for _, path := range docs(t) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.Join(filepath.Dir(path), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: %v", path, i+1, target, err)
						continue
					}
				}
				if anchor != "" && !hasAnchor(t, dest, anchor) {
					t.Errorf("%s:%d: link %s: %s has no heading with the anchor #%s", path, i+1, target, dest, anchor)
				}
			}
		}
	}
}

// hasAnchor reports whether a heading of the Markdown file has the anchor
// a code host gives it.
func hasAnchor(t *testing.T, path, anchor string) bool {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && slug(h) == anchor {
			return true
		}
	}
	return false
}

// slug is a heading's anchor as GitHub makes it: lower case, spaces to
// hyphens, other punctuation dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	assert.Equal(t, "capacity-the-main-job", slug("capacity: the main job"))
	assert.Equal(t, "the-atlas-tp4-replica", slug("The `Atlas` TP4 replica"))
	assert.True(t, link.MatchString("see [data](docs/data.md)."))
	assert.False(t, link.MatchString("![goodput curve](docs/capacity-goodput.png)"))
}
