package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine/enginetest"
	"github.com/servesim/servesim/internal/golden"
)

// TestScripts replays engine/testdata/*.txt with enginetest.RunScript,
// which documents the commands (config, add, abort, step): each step
// printed as a line of what the scheduler decided, the engine held to
// the basic contract's laws (enginetest.Checker) and its invariants
// (Check) after every command. The output must equal the .golden file
// beside the script (go test ./engine -run Scripts -update rewrites
// them).
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			out, err := enginetest.RunScript(f)
			require.NoError(t, err)
			golden.Check(t, strings.TrimSuffix(f, ".txt")+".golden", []byte(out))
		})
	}
}
