package main

import (
	"bytes"
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
