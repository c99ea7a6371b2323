package main

import (
	"bytes"
	"path/filepath"
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
