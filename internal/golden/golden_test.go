package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	require.NoError(t, os.WriteFile(path, []byte("a\n"), 0o644))
	assert.NoError(t, Compare(path, []byte("a\n")))
	assert.ErrorContains(t, Compare(path, []byte("b\n")), "differs from "+path)
	assert.ErrorContains(t, Compare(filepath.Join(t.TempDir(), "none"), nil), "-update creates it")
	Check(t, path, []byte("a\n"))
}

func ExampleCompare() {
	dir, _ := os.MkdirTemp("", "golden")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "report.golden")
	os.WriteFile(path, []byte("knee 2.01 req/s\n"), 0o644)
	fmt.Println(Compare(path, []byte("knee 2.01 req/s\n")))
	fmt.Println(Compare(path, []byte("knee 1.90 req/s\n")) != nil)
	// Output:
	// <nil>
	// true
}
