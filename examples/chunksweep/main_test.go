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
		// Issue 8: nonsense loads are refused by flag name, at once.
		"-probe: NaN is not a positive rate in requests/s": {"-probe", "NaN"},
		"-probe: 0 is not a positive rate":                 {"-probe", "0"},
		"-probe: +Inf is not a positive rate":              {"-probe", "Inf"},
		"-start: -1 is not a positive rate":                {"-start", "-1"},
		"-horizon must be > 0":                             {"-horizon", "0"},
		"-probe 1e+30 req/s: 2.4e+33 requests in 40m0s of arrivals (twice the horizon): more than a run can count": {"-probe", "1e30"},
	} {
		var out bytes.Buffer
		err := run(&out, want)
		assert.ErrorContains(t, err, args)
		if err != nil {
			assert.Equal(t, 1, strings.Count(err.Error(), args), "said once: %v", err)
		}
		assert.Zero(t, out.Len(), "%q: refused before anything is printed", want)
	}
	assert.NoError(t, run(&bytes.Buffer{}, []string{"-h"}))
}

// Issue 8, bug 3: at a probe load where no request was measured the table
// printed NaN latencies and attainment, and the chain compared NaNs.
func TestRunAtAProbeLoadThatMeasuresNothing(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-probe", "0.0001", "-chunks", "1024", "-reps", "2", "-blocks", "2", "-horizon", "4m"}))
	s := out.String()
	assert.Contains(t, s, "ITL tax and TTFT at 0.0001 req/s;")
	assert.Regexp(t, `\n +none +136\.65 +- +- +- +no measured requests +stable +1\.741 `, s)
	assert.Contains(t, s, "chain:    no measured requests at 0.0001 req/s: raise -probe to read the ITL tax\n")
	assert.NotContains(t, s, "NaN")
}

// Issue 8: at an absurd probe load (-probe 1e9) every run stops on its
// backlog bound, the table says overloaded, and nothing prints NaN.
func TestRunAtAnOverloadingProbe(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-probe", "1e9", "-chunks", "1024", "-reps", "2", "-blocks", "2", "-horizon", "4m"}))
	s := out.String()
	assert.Regexp(t, `\n +none +136\.65 +- +- +- +0\.000 +overloaded +`, s)
	assert.Contains(t, s, "chain:    no request completed at 1000000000.00 req/s (overloaded): lower -probe to read the ITL tax\n")
	assert.NotContains(t, s, "NaN")
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
