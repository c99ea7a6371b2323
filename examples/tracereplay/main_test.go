package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/internal/sharedtraces"
	"github.com/servesim/servesim/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedTrace is the real trace beside the repository root; the test
// skips, and TestMain says so, without it.
func sharedTrace(t *testing.T, name string) string {
	t.Helper()
	return sharedtraces.Path(t, name)
}

// The report is pinned by golden files; run `go test
// ./examples/tracereplay -update` after a deliberate change and review the
// diff.
func TestRunGolden(t *testing.T) {
	for _, tc := range []struct {
		name, shared string // shared: a trace of ../shared/traces the case needs
		args         []string
	}{
		{"azure_sample", "", []string{"-trace", filepath.Join("testdata", "azure_conv_sample.csv"), "-rates", "1,2,3"}},
		{"azure_5min", azureConv, []string{"-window", "5m", "-rates", "1,2,3"}},
		{"mooncake_2min", "mooncake_synthetic_trace.jsonl", []string{"-format", "mooncake", "-window", "2m", "-rates", "0.1,0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.shared != "" {
				args = append([]string{"-trace", sharedTrace(t, tc.shared)}, args...)
			}
			var out bytes.Buffer
			require.NoError(t, run(&out, args))
			golden.Check(t, filepath.Join("testdata", tc.name+".golden"), out.Bytes())
		})
	}
}

// The default trace is found from any directory inside the module.
func TestDefaultTrace(t *testing.T) {
	sharedTrace(t, azureConv)
	abs, err := filepath.Abs(filepath.Join(sharedtraces.Dir(), azureConv))
	require.NoError(t, err)
	got, err := filepath.Abs(defaultTrace())
	require.NoError(t, err)
	assert.Equal(t, abs, got)
}

func TestRunRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rates", "1,x"}, `-rates: "x" is not a positive rate`},
		{[]string{"-rates", "-1"}, `-rates: "-1" is not a positive rate`},
		{[]string{"-rates", "1,Inf"}, `-rates: "Inf" is not a positive rate`},
		{[]string{"-rates", "NaN"}, `-rates: "NaN" is not a positive rate`},
		{[]string{"-target", "NaN"}, "-target must be an attainment in (0, 1], got NaN"},
		{[]string{"-target", "2"}, "-target must be an attainment in (0, 1], got 2"},
		{[]string{"-target", "0"}, "-target must be an attainment in (0, 1], got 0"},
		{[]string{"-window", "-1s"}, "-window must be >= 0 (0: the whole trace), got -1s"},
		{[]string{"-format", "parquet"}, `unknown format "parquet"`},
		{[]string{"-trace", "no/such/file.csv"}, "no such file"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-min-think", "2s"}, "applies only with -keep-conversations"},
		{[]string{"-keep-conversations", "-min-think", "-1s"}, "-min-think must be >= 0"},
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, tc.args), tc.want, "run(%q)", tc.args)
	}
}

func TestRunHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	assert.Contains(t, out.String(), "-trace")
}

// Issue 8: the report said "Azure … 2023 (conversation)" for any Azure
// file, the code trace included. It names the release the file's first
// timestamp dates and the service its name gives, and cites that
// release's paper.
func TestSourceNamesTheTraceRead(t *testing.T) {
	dir := t.TempDir()
	// write makes an Azure-format trace of 20 requests a second apart from
	// minute (a timestamp up to its minutes) in the time zone zone.
	write := func(name, minute, zone string) string {
		path := filepath.Join(dir, name)
		rows := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
		for i := range 20 {
			rows += fmt.Sprintf("%s:%02d.000000%s,%d,%d\n", minute, 10+i, zone, 500+i, 20+i)
		}
		require.NoError(t, os.WriteFile(path, []byte(rows), 0o644))
		return path
	}
	for _, tc := range []struct {
		name, minute, zone, want string
	}{
		{"AzureLLMInferenceTrace_code.csv", "2023-11-16 18:15", "", "Azure LLM inference trace 2023 (code): Patel et al., \"Splitwise"},
		{"AzureLLMInferenceTrace_conv_1week.csv", "2024-05-10 00:00", "+00:00", "Azure LLM inference trace 2024 (conversation): Stojkovic et al., \"DynamoLLM"},
		{"requests.csv", "2023-11-16 18:15", "", "Azure LLM inference trace 2023 (service not named by the file name): Patel"},
		{"ours_code.csv", "2026-01-02 03:04", "", "Azure-format trace (code), first request in 2026: not a public Azure release"},
	} {
		path := write(tc.name, tc.minute, tc.zone)
		got, err := source(path, "azure")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(got, tc.want), "%s: %q", tc.name, got)

		var out bytes.Buffer
		require.NoError(t, run(&out, []string{"-trace", path, "-rates", "1"}), tc.name)
		assert.Contains(t, out.String(), "source     "+tc.want, tc.name)
		if !strings.Contains(tc.want, "conversation") {
			assert.NotContains(t, out.String(), "(conversation)", tc.name)
		}
	}
}

// A replay that measured no request has no attainment: the table and the
// knee say so instead of printing NaN or comparing it with the target.
func TestReplayWithoutMeasuredRequests(t *testing.T) {
	empty := sim.Summary{Attainment: math.NaN()}
	met := sim.Summary{Offered: 10, Good: 10, Attainment: 1}
	missed := sim.Summary{Offered: 10, Good: 5, Attainment: 0.5}
	var out bytes.Buffer
	printTable(&out, []point{{label: "scaled to 1/s", rate: 1, sum: empty}})
	assert.Contains(t, out.String(), "scaled to 1/s        1.00       0  no measured requests\n")
	assert.NotContains(t, out.String(), "NaN")

	assert.Equal(t, "no replay measured a request: no attainment to compare with the target",
		knee([]point{{rate: 1, sum: empty}}, 0.95))
	assert.Equal(t, "attainment falls below 95% between 1.00 req/s (1.000) and 3.00 req/s (0.500)",
		knee([]point{{rate: 1, sum: met}, {rate: 2, sum: empty}, {rate: 3, sum: missed}}, 0.95))
	assert.Equal(t, "attainment stays at or above 95% up to 1.00 req/s (1.000), the highest load replayed",
		knee([]point{{rate: 1, sum: met}, {rate: 2, sum: empty}}, 0.95))
}
