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

// sharedTrace is the real trace beside the repository root.
func sharedTrace(t *testing.T, name string) string {
	path := filepath.Join("..", "..", "..", "shared", "traces", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real trace %s not available (%v): this test needs ../shared/traces beside the repository", path, err)
	}
	return path
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
	abs, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "traces", azureConv))
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
		{[]string{"-target", "2"}, "-target in (0, 1]"},
		{[]string{"-format", "parquet"}, `unknown format "parquet"`},
		{[]string{"-trace", "no/such/file.csv"}, "no such file"},
		{[]string{"extra"}, "unexpected arguments"},
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
