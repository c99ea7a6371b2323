package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The template's output is pinned by a golden file run with small arguments.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-blocks", "4", "-horizon", "5m"}))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

// B identical to A is never improved: the template falsifies an empty claim.
func TestIdenticalBIsNotImproved(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-batch", "32", "-blocks", "3", "-horizon", "5m"}))
	assert.Contains(t, out.String(), "verdict:   not improved: +0.0 % [+0.0, +0.0]")
}

func TestRunRefusesBadArguments(t *testing.T) {
	assert.ErrorContains(t, run(&bytes.Buffer{}, []string{"-blocks", "1"}), "Experiment.Blocks")
	assert.ErrorContains(t, run(&bytes.Buffer{}, []string{"-batch", "-1"}), "MaxSeqs")
	assert.ErrorContains(t, run(&bytes.Buffer{}, []string{"x"}), "unexpected arguments")
}

// -card writes the result as a benchmark card: the claim, both systems and
// the verdict with its boundary.
func TestRunWritesACard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.md")
	require.NoError(t, run(&bytes.Buffer{}, []string{"-blocks", "3", "-horizon", "4m", "-card", path}))
	md, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, want := range []string{"raising the batch cap from 32 to 48", "A/B verdict", "System A (the baseline)", "| MaxSeqs | `48` |", "| MaxSeqs | `32` |"} {
		assert.Contains(t, string(md), want)
	}
	assert.NotContains(t, string(md), "knee:")
}
