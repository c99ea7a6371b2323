package sharedtraces

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dir is ../shared/traces beside the module root, wherever in the module
// the test runs.
func TestDir(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(wd)) // internal/sharedtraces
	assert.Equal(t, filepath.Join(root, "..", "shared", "traces"), Dir())
	assert.Equal(t, "internal/sharedtraces", packagePath())
}

// A test that needs a missing trace skips, and the note names it and says
// why, in one line.
func TestMissingTraceSkipsAndIsNamed(t *testing.T) {
	defer func(saved []string) { skipped.tests = saved }(skipped.tests)
	skipped.tests = nil

	var path string
	t.Run("needs_it", func(t *testing.T) {
		path = Path(t, "no-such-trace.csv")
		t.Error("Path returned for a missing trace instead of skipping")
	})
	assert.Empty(t, path)
	assert.Equal(t, []string{"TestMissingTraceSkipsAndIsNamed/needs_it"}, skipped.tests)
	assert.Equal(t, "note: internal/sharedtraces: 1 test skipped: "+filepath.Join("..", "shared", "traces")+
		" (the real Azure and Mooncake traces) is not beside the repository: TestMissingTraceSkipsAndIsNamed/needs_it", Note())
}
