package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// small are the golden run's arguments: a fleet of 2, short windows, few
// replications and blocks.
var small = []string{"-replicas", "2", "-reps", "2", "-blocks", "2", "-cp-blocks", "2", "-horizon", "2m", "-start", "1.5", "-size-load", "8", "-size-reps", "2", "-out", ""}

// The report is pinned by a golden file run with small arguments; run
// `go test ./examples/routing -update` after a deliberate change. The run
// writes into a directory (-out), whose files are checked here too, and
// lists them on its output: the golden file is the report without that
// list, as -out ” prints it.
func TestRunGolden(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(&out, append(append([]string{"-workers", "1"}, small[:len(small)-2]...), "-out", dir)))
	s := out.String()
	golden.Check(t, filepath.Join("testdata", "small.golden"), []byte(withoutWrote(s)))
	for _, level := range []string{"low-reuse", "high-reuse"} {
		assert.Equal(t, 1, strings.Count(s, "\nverdict "+level+": "), "one verdict line per reuse level")
	}
	decl, verdicts := strings.Index(s, "Hypothesis, declared before the runs"), strings.Index(s, "\nverdict ")
	assert.True(t, decl >= 0 && decl < strings.Index(s, "== low-reuse"), "the hypothesis comes before any result")
	assert.Greater(t, verdicts, decl)

	// -out wrote both levels' charts and cards.
	for _, level := range []string{"low-reuse", "high-reuse"} {
		for _, f := range []string{"goodput.png", "goodput.svg", "hitrate.png", "hitrate.svg", "card.md", "card.json"} {
			path := filepath.Join(dir, "routing-"+level+"-"+f)
			info, err := os.Stat(path)
			require.NoError(t, err, path)
			assert.Positive(t, info.Size(), path)
			assert.Contains(t, s, "wrote "+path+"\n")
		}
		md, err := os.ReadFile(filepath.Join(dir, "routing-"+level+"-card.md"))
		require.NoError(t, err)
		for _, want := range []string{"| router | `sim.PrefixAffinity` |", "| router | `sim.RoundRobin` |", "### Fleet", "Against LeastLoaded", "go run ./examples/routing -workers 1 -replicas 2"} {
			assert.Contains(t, string(md), want, level)
		}
	}
}

// withoutWrote is a report without the list of the files written, which
// follows it after a blank line.
func withoutWrote(s string) string {
	if i := strings.Index(s, "\n\nwrote "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// The results do not depend on how many runs go in parallel: on 3
// workers, the report is the golden file TestRunGolden wrote on 1.
func TestRunIsDeterministicAcrossWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the study again")
	}
	testlong.Skip(t, "runs the study again")
	var many bytes.Buffer
	require.NoError(t, run(&many, append([]string{"-workers", "3"}, small...)))
	want, err := os.ReadFile(filepath.Join("testdata", "small.golden"))
	require.NoError(t, err)
	assert.Equal(t, string(want), many.String())
}

func TestRunRefusesBadArguments(t *testing.T) {
	for want, args := range map[string][]string{
		"-replicas must be >= 1":                      {"-replicas", "0"},
		"-input and -output must be >= 1 token":       {"-output", "0"},
		"-threshold must be a relative improvement":   {"-threshold", "NaN"},
		`-operating: "x" is not a positive multiple`:  {"-operating", "0.9,x"},
		`-operating: "-1" is not a positive multiple`: {"-operating", "-1"},
		"-start: +Inf is not a positive rate":         {"-start", "Inf"},
		"-reps must be >= 2":                          {"-reps", "1"},
		"-blocks must be >= 2":                        {"-blocks", "0"},
		"-cp-blocks must be 0 (none) or >= 2":         {"-cp-blocks", "1"},
		"-horizon must be > 0":                        {"-horizon", "0"},
		"-size-load must be a rate >= 0":              {"-size-load", "-3"},
		"-size-reps must be >= 2":                     {"-size-reps", "1"},
		"-size-load 1e+09 req/s is more than any fleet of 256 Atlas TP4 replicas could carry (at most 910.2 req/s": {"-size-load", "1e9"},
		"unexpected arguments":                         {"extra"},
		"flag provided but not defined: -no-such-flag": {"-no-such-flag"},
	} {
		var out bytes.Buffer
		err := run(&out, args)
		assert.ErrorContains(t, err, want, "%q", args)
		if !strings.Contains(want, "not defined") { // the flag package prints the usage
			assert.Zero(t, out.Len(), "%q: refused before anything is printed", args)
		}
	}
}

// -h documents every flag and is not an error.
func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	help := out.String()
	for _, flag := range []string{"-replicas", "-input", "-output", "-threshold", "-operating", "-start", "-reps", "-blocks", "-horizon", "-seed", "-workers", "-out", "-size-load", "-size-reps", "-model-error", "-band-blocks"} {
		assert.Contains(t, help, "  "+flag+" ", flag)
	}
	assert.Contains(t, help, "Does prefix-aware routing")
}
