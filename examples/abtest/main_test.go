package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
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
	for args, want := range map[string]string{
		"-blocks 1":        "-blocks must be >= 2: a verdict needs an interval across paired blocks, and one block has none (got 1)",
		"-batch -1":        "-batch must be a batch cap of 1 to 16384 sequences, got -1",
		"x":                "unexpected arguments",
		"-horizon 0":       "-horizon must be > 0: an experiment compares fixed windows",
		"-horizon -1m":     "-horizon must be > 0",
		"-threshold NaN":   "-threshold must be a relative improvement above -1",
		"-threshold Inf":   "-threshold must be a relative improvement above -1",
		"-threshold -1":    "-threshold must be a relative improvement above -1",
		"-threshold 1e307": "-threshold must be a relative improvement above -1 (-100 %) and finite in %, got 1e+307",
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// Issue 32: -batch 0 "raised the batch cap from 32 to 0" and ran 32
// against 32, -blocks 0 ran 10 blocks, and -card x.txt wrote Markdown
// after the whole run, or failed then when its directory was missing. A
// zero or out-of-range value is refused before any run, naming the flag,
// never replaced by a default.
func TestRunRefusesValuesThatStandForADefault(t *testing.T) {
	for args, want := range map[string]string{
		"-batch 0":                   "-batch must be a batch cap of 1 to 16384 sequences, got 0",
		"-batch 16385":               "-batch must be a batch cap of 1 to 16384 sequences, got 16385",
		"-blocks 0":                  "-blocks must be >= 2: a verdict needs an interval across paired blocks, and one block has none (got 0)",
		"-blocks -3":                 "-blocks must be >= 2: a verdict needs an interval across paired blocks, and one block has none (got -3)",
		"-card card.txt":             `-card "card.txt": name it *.md (Markdown) or *.json (JSON)`,
		"-card /nonexistent/card.md": `-card "/nonexistent/card.md": its directory /nonexistent does not exist`,
	} {
		var out bytes.Buffer
		assert.EqualError(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// A -horizon past the simulator's bound on a window (sim.MaxDuration) is
// refused before any run under the flag's name, with sim's reason.
func TestRunRefusesAHorizonPastSimsBound(t *testing.T) {
	h := sim.MaxDuration + time.Hour
	want := sim.Window{Warmup: h / 10, Horizon: h}.Validate()
	require.Error(t, want)
	var out bytes.Buffer
	assert.EqualError(t, run(&out, []string{"-horizon", h.String()}), "-horizon "+h.String()+": "+want.Error())
	assert.Zero(t, out.Len())
}

// The claim prints the values that run: a lower cap is "lowering", A's
// own cap says B is A, and a threshold keeps its decimals.
func TestClaimPrintsTheValuesThatRun(t *testing.T) {
	assert.Equal(t, "raising the batch cap from 32 to 48 raises goodput by at least 5 %", claim(48, 0.05))
	assert.Equal(t, "lowering the batch cap from 32 to 1 raises goodput by at least 2.5 %", claim(1, 0.025))
	assert.Equal(t, "a batch cap of 32, A's own, raises goodput by at least 0.1 % (B is A: the claim must fail)", claim(32, 0.001))
	assert.Equal(t, "raising the batch cap from 32 to 64 raises goodput by at least -10 %", claim(64, -0.1))

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-batch", "16", "-threshold", "0.025", "-blocks", "2", "-horizon", "2m"}))
	assert.Contains(t, out.String(), "claim:     lowering the batch cap from 32 to 16 raises goodput by at least 2.5 %\n")
	assert.Contains(t, out.String(), "method:    2 blocks per load, A and B sharing each block's seed; 1m48s per run\n")
	assert.Contains(t, out.String(), " against a threshold of +2.5 %, over ")
}

// Issue 8, bugs 3 and 4: -horizon 1s declared "not improved" from two
// zeros (no request can end in 1.8 s of window and drain: one takes 9 s
// alone), and -horizon 0 never ended. Now the first has no verdict and
// says why, and the second is refused at once (see above).
func TestRunWithoutMeasuredRequestsHasNoVerdict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.md")
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-horizon", "1s", "-blocks", "3", "-card", path}))
	s := out.String()
	assert.Contains(t, s, " 1.00 req/s  no measured requests\n")
	assert.Contains(t, s, "verdict:   no measured requests: no block measured a request that ended within its window and drain (1.8s); lengthen -horizon\n")
	assert.Contains(t, s, "boundary:  no measured requests at 1, 2, 2.5 req/s\n")
	assert.NotContains(t, s, "improved")
	assert.NotContains(t, s, "NaN")
	md, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(md), "## A/B verdict: no measured requests\n")
	assert.NotContains(t, string(md), "improved |")
	assert.NotContains(t, string(md), "NaN")
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
	assert.Equal(t, 2, strings.Count(string(md), "## System"), "one heading per system, not a second \"## System\" under each")

	path = filepath.Join(t.TempDir(), "card.json")
	require.NoError(t, run(&bytes.Buffer{}, []string{"-blocks", "3", "-horizon", "4m", "-card", path}))
	js, err := os.ReadFile(path)
	require.NoError(t, err)
	var card map[string]any
	require.NoError(t, json.Unmarshal(js, &card))
	assert.NotContains(t, card, "results", "an A/B card's result is its verdict")
	assert.Equal(t, 216.0, card["window"].(map[string]any)["drain_s"], "one more window: 4m − 24s")
}
