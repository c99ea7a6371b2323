package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report is pinned by golden files; run `go test ./examples/capacity
// -update` after a deliberate change and review the diff.
func TestRunGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"atlas", []string{"-reps", "2", "-horizon", "5m", "-out", ""}},
		{"batch48_output400", []string{"-batch", "48", "-output", "400", "-reps", "2", "-horizon", "5m", "-operating", "1", "-out", ""}},
		{"overloaded", []string{"-batch", "64", "-chunk", "4096", "-prompt", "16000", "-ttft", "500ms", "-estimate-only"}},
		{"explicit_loads", []string{"-loads", "1,2,3", "-reps", "2", "-horizon", "4m", "-operating", "0", "-out", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, run(&out, tc.args))
			golden.Check(t, filepath.Join("testdata", tc.name+".golden"), out.Bytes())
		})
	}
}

func TestRunRefusesBadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-batch", "0"}, "Replica.Point.Batch must be >= 1, got 0"},
		{[]string{"-itl", "-5ms"}, "Replica.Point.SLO.ITL must be > 0"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-loads", "1,x"}, `-loads: "x" is not a positive rate`},
		{[]string{"-reps", "-1"}, "Sweep.Reps"},
		{[]string{"-horizon", "30s"}, "Window.Horizon"},
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, tc.args), tc.want, "run(%q)", tc.args)
	}
}

func TestRunHelpIsNotAnError(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	assert.Contains(t, out.String(), "-batch")
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{
		458752: "458,752", 28672: "28,672", 1000: "1,000", 999: "999", 711.1111: "711.1",
		0.6104: "0.6104", -1234567: "-1,234,567", 57: "57", 1234.5: "1234",
	} {
		assert.Equal(t, want, number(v), "number(%v)", v)
	}
}

// The report's files: the goodput plot (a PNG that decodes, and an SVG),
// the latency plot, the card in Markdown and JSON citing the raw events, and
// one JSON Lines file of raw events per run.
func TestRunWritesPlotsCardAndEvents(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-loads", "1,2,2.5", "-reps", "2", "-horizon", "4m", "-out", dir}))
	for _, name := range []string{"capacity-goodput.png", "capacity-latency.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		assert.Greater(t, img.Bounds().Dx(), 500)
		assert.Contains(t, out.String(), filepath.Join(dir, name))
	}
	svg, err := os.ReadFile(filepath.Join(dir, "capacity-goodput.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "knee")
	md, err := os.ReadFile(filepath.Join(dir, "capacity-card.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "knee: highest load with attainment")
	assert.Contains(t, string(md), "load=<load>-rep=<r>.jsonl")
	var card map[string]any
	js, err := os.ReadFile(filepath.Join(dir, "capacity-card.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &card))
	assert.Equal(t, "servesim-analysis/1", card["analysis_revision"])
	events, err := filepath.Glob(filepath.Join(dir, "events", "*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, events, 6, "3 loads × 2 replications")
	lines, err := os.ReadFile(filepath.Join(dir, "events", "load=1-rep=0.jsonl"))
	require.NoError(t, err)
	assert.Greater(t, bytes.Count(lines, []byte("\n")), 200)
}
