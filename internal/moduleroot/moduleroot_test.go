package moduleroot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// From this package's directory the module root is two levels up, and a
// directory without a go.mod above it gives the path back as it is.
func TestPath(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(wd))
	require.Equal(t, filepath.Join(root, "examples", "x.csv"), Path("examples/x.csv"))
	t.Chdir(t.TempDir())
	require.Equal(t, "examples/x.csv", Path("examples/x.csv"))
}
