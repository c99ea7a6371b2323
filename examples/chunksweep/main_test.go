package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report is pinned by a golden file run with small arguments; run
// `go test ./examples/chunksweep -update` after a deliberate change.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-chunks", "256,1024", "-reps", "2", "-blocks", "3", "-horizon", "6m"}))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

func TestRunRefusesBadArguments(t *testing.T) {
	for args, want := range map[string][]string{
		`-chunks: "x" is not a positive token count`: {"-chunks", "x"},
		"Sweep.Reps":           {"-reps", "-2"},
		"unexpected arguments": {"extra"},
	} {
		assert.ErrorContains(t, run(&bytes.Buffer{}, want), args)
	}
	assert.NoError(t, run(&bytes.Buffer{}, []string{"-h"}))
}

// -bench writes every chunk cap's runs at the probe load in Go benchmark
// format, one configuration line each, for benchstat -col config.
func TestRunWritesBenchmarkLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chunks.txt")
	require.NoError(t, run(&bytes.Buffer{}, []string{"-chunks", "1024", "-reps", "2", "-blocks", "2", "-horizon", "4m", "-bench", path}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(b)
	assert.Contains(t, s, "config: chunk=none\n")
	assert.Contains(t, s, "config: chunk=1024\n")
	assert.Equal(t, 4, strings.Count(s, "BenchmarkDocuments/load=0.5-1\t1\t"), "2 configurations × 2 replications")
}
