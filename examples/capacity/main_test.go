package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
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
		{"overloaded", []string{"-batch", "64", "-budget", "4096", "-chunk", "4096", "-prompt", "16000", "-ttft", "500ms", "-estimate-only"}},
		{"explicit_loads", []string{"-loads", "1,2,3", "-reps", "2", "-horizon", "4m", "-operating", "0", "-out", ""}},
		// Issue 8, bug 3: a load that measured no request has no
		// attainment, and the knee comes from the others.
		{"no_measured", []string{"-loads", "0.0001,0.001,1", "-reps", "5", "-horizon", "2m", "-out", ""}},
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
		{[]string{"-reps", "-1"}, "-reps: -1 is not a number of replications"},
		{[]string{"-horizon", "30s"}, "-horizon: 30s must end the window after -warmup (1m0s)"},
		// Issue 8: nonsense floats are refused by flag name.
		{[]string{"-operating", "Inf"}, "-operating: +Inf is not a load in requests/s"},
		{[]string{"-operating", "-1"}, "-operating: -1 is not a load"},
		{[]string{"-operating", "NaN"}, "-operating: NaN is not a load"},
		{[]string{"-start", "0"}, "-start: 0 is not a positive rate"},
		{[]string{"-start", "+Inf"}, "-start: +Inf is not a positive rate"},
		{[]string{"-loads", "1,Inf"}, `-loads: "Inf" is not a positive rate`},
		{[]string{"-loads", "NaN"}, `-loads: "NaN" is not a positive rate`},
		{[]string{"-loads", "-2"}, `-loads: "-2" is not a positive rate`},
		// Issue 10: the scheduler's limits are dials of the estimate and
		// the simulation alike, refused as the engine refuses them.
		{[]string{"-budget", "16"}, "Replica.Point.Budget (16) must be >= Batch (32)"},
		{[]string{"-chunk", "4096"}, "Replica.Point.ChunkCap (4096) must not exceed Budget (2048)"},
		{[]string{"-chunk", "-1"}, "Replica.Point.ChunkCap must be >= 0, got -1"},
		{[]string{"-model-error", "1"}, "-model-error: 1 is not a relative error in [0, 1)"},
		{[]string{"-model-error", "-0.1"}, "-model-error: -0.1 is not a relative error"},
		{[]string{"-model-error", "NaN"}, "-model-error: NaN is not a relative error"},
		// Flags that described a replica the simulation did not run are gone.
		{[]string{"-context", "4000"}, "flag provided but not defined: -context"},
		{[]string{"-seq-tokens", "8000"}, "flag provided but not defined: -seq-tokens"},
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, tc.args), tc.want, "run(%q)", tc.args)
		if !strings.Contains(tc.want, "not defined") { // the flag package prints the usage
			assert.Zero(t, out.Len(), "run(%q) refuses before writing anything", tc.args)
		}
	}
}

// A load so high that the backlog bound stops every run before its window
// opens measured nothing, yet it is past the knee, not "no evidence": the
// report says so, and prints no NaN for latencies nothing completed to give.
func TestRunAtAnOverloadingLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 100,000 queued requests per run")
	}
	testlong.Skip(t, "holds 100,000 queued requests per run")
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-loads", "0.5,1000,5000", "-reps", "2", "-horizon", "2m", "-model-error", "0", "-out", ""}))
	s := out.String()
	assert.Contains(t, s, "note       at 5000.000 req/s the replica was overloaded before the window opened: attainment 0, past the knee\n")
	assert.Regexp(t, `\n +5000\.000 +185625 +0\.000 +\[0\.00, 0\.00\] +0\.000 +\[0\.000, 0\.000\] +- +- +- +- +overloaded\n`, s)
	// At 1000 req/s requests were offered and none succeeded: only the
	// TTFT over every offered request exists, and it is flagged.
	assert.Regexp(t, `\n +1000\.000 +37125 +0\.000 +\[0\.00, 0\.00\] +0\.000 +\[0\.000, 0\.000\] +- +- +\d+ ! +- +overloaded\n`, s)
	assert.Contains(t, s, "\n!          TTFT p99 over every offered request is over 1.1 × the p99 over successful ones")
	assert.NotContains(t, s, "NaN")
}

// Issue 8: -loads 1e30 printed an internal Synthetic.Count overflow (the
// report's own request count, converted past int's range), once per
// replication. It is one error naming the flag, before any output.
func TestRunRefusesALoadItCannotCountOnce(t *testing.T) {
	for _, args := range [][]string{{"-loads", "1,1e30"}, {"-start", "1e30"}} {
		var out bytes.Buffer
		err := run(&out, args)
		require.Error(t, err)
		assert.Contains(t, err.Error(), args[0]+" 1e+30 req/s: workload: Arrival.Rate 1e+30 req/s over Duration 8760h0m0s is about 3.15e+37 requests, more than")
		assert.Equal(t, 1, strings.Count(err.Error(), "a workload can count"), "one error, not one per replication: %v", err)
		assert.NotContains(t, err.Error(), "Synthetic.Count")
		assert.Zero(t, out.Len())
	}
}

// Issue 10: every flag of the replica moves the estimate and the
// simulation alike; -h says no flag moves only the estimate.
func TestHelpSaysNoFlagMovesOnlyTheEstimate(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	help := map[string]string{}
	var name string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "-") {
			name = f[0]
			continue
		}
		help[name] += line
	}
	for _, flag := range []string{"-batch", "-budget", "-chunk", "-prompt", "-output", "-ttft", "-itl", "-model-error"} {
		assert.Contains(t, help, flag)
		assert.NotContains(t, help[flag], "estimate only", flag)
	}
	assert.NotContains(t, help, "-context")
	assert.NotContains(t, help, "-seq-tokens")
	assert.Contains(t, help["-out"], "earlier runs' load=…-rep=….jsonl files there are removed first")
}

// Issue 8: out/events kept the files of earlier runs beside the new ones.
// The report removes the event files it writes (load=…-rep=….jsonl) and
// nothing else.
func TestRunClearsEarlierEventFiles(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	require.NoError(t, os.MkdirAll(events, 0o755))
	for _, name := range []string{"load=9-rep=7.jsonl", "load=1-rep=0.jsonl", "notes.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(events, name), []byte("old\n"), 0o644))
	}
	require.NoError(t, run(&bytes.Buffer{}, []string{"-loads", "1", "-reps", "2", "-horizon", "2m", "-out", dir}))
	names, err := filepath.Glob(filepath.Join(events, "*"))
	require.NoError(t, err)
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	assert.ElementsMatch(t, []string{"load=1-rep=0.jsonl", "load=1-rep=1.jsonl", "notes.txt"}, names)
	fresh, err := os.ReadFile(filepath.Join(events, "load=1-rep=0.jsonl"))
	require.NoError(t, err)
	assert.NotEqual(t, "old\n", string(fresh))
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
	for _, want := range []string{
		"| figure | value | 95 % interval | model range |",
		"Model error declared before the sweep: step times ±10 %",
		"under step times ×1.1 (knee ",
		"| utilisation |",
		"a serving capacity of 2.694 req/s, an estimate made before the runs, not a measurement (source: costmodel's serving capacity, 1 / (200 × 45 ms / 32 + 90 ms prefill), in the estimate below)",
		"| TTFT p99, all offered (ms) |",
		"## Estimate before the runs",
		"| serving capacity | 2.694 req/s | 1 / (200 × 45 ms / 32 + 90 ms prefill) |",
		"| largest formable step | 136.6 ms |",
		"- Against the estimate: serving capacity 2.694 req/s: the knee is ",
		"load=<load>-rep=<r>.jsonl",
	} {
		assert.Contains(t, string(md), want)
	}
	assert.Contains(t, string(md), "| command | `go run ./examples/capacity -loads 1,2,2.5 -reps 2 -horizon 4m -out "+dir+"` |", "the card's command reproduces it")
	var card map[string]any
	js, err := os.ReadFile(filepath.Join(dir, "capacity-card.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(js, &card))
	assert.Equal(t, analysis.AnalysisRevision(), card["analysis_revision"])
	assert.Contains(t, card["rerun"], "from the scenario it embeds", "its workload is data (analysis.Poisson)")
	// The card reruns: the scenario it embeds is the sweep that ran, and
	// gives the knee it reports.
	s, err := scenario.LoadCard(filepath.Join(dir, "capacity-card.json"), scenario.CardOptions{})
	require.NoError(t, err)
	require.NotNil(t, s.Sweep)
	c, err := s.Sweep.Run()
	require.NoError(t, err)
	knee := card["results"].(map[string]any)["knee"].(map[string]any)["load"].(map[string]any)
	assert.Equal(t, knee["center"], c.Knee.Load.Center, "the rerun's knee is the card's")
	// Issue 32: the card embeds everything its rerun needs (examples/run
	// titled the rerun "scenario (sweep, scenario)" and lost the operating
	// load and the headroom): the name, title, claim and operating load,
	// so that the rerun's results, headroom included, are the card's.
	assert.Equal(t, "atlas-capacity", s.Name)
	assert.Equal(t, "Atlas TP4 goodput curve (simulated)", s.Title)
	assert.Equal(t, card["claim"], s.Claim)
	assert.Equal(t, 1.5, s.Operating)
	again, err := json.Marshal(report.NewCard(*s.Sweep, c, s.Operating).Results)
	require.NoError(t, err)
	var recorded map[string]any
	require.NoError(t, json.Unmarshal(again, &recorded))
	want := card["results"].(map[string]any)
	delete(want["capacity"].(map[string]any), "source") // the capacity program's words
	delete(recorded["capacity"].(map[string]any), "source")
	assert.Equal(t, want, recorded, "the rerun's results are the card's")
	assert.NotNil(t, recorded["headroom"])
	assert.Equal(t, knee["lo"], c.Knee.Load.Lo)
	assert.Equal(t, 180.0, card["window"].(map[string]any)["drain_s"], "one more window of 3 minutes, as it ran")
	assert.NotContains(t, card["events"].(map[string]any)["columns"], "itl", "the JSONL files have no itl key")
	res := card["results"].(map[string]any)
	band := res["model_band"].(map[string]any)
	assert.Equal(t, 0.1, band["declared"].(map[string]any)["scale"])
	assert.Len(t, band["variants"], 2)
	// Issue 34: the card says whether the knee holds under every model of
	// the band or rests on one, in the curve's words.
	require.NotEmpty(t, c.ModelVerdict())
	assert.Equal(t, c.ModelVerdict(), band["verdict"])
	assert.Contains(t, string(md), " The knee "+c.ModelVerdict()+".")
	assert.Equal(t, 2.694, math.Round(1000*res["capacity"].(map[string]any)["req_per_s"].(float64))/1000)
	assert.InDelta(t, 1/2.694, res["points"].([]any)[0].(map[string]any)["utilisation"], 1e-3)
	assert.NotNil(t, res["headroom"].(map[string]any)["model_range"])
	assert.NotEmpty(t, card["estimate"].(map[string]any)["figures"])
	events, err := filepath.Glob(filepath.Join(dir, "events", "*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, events, 6, "3 loads × 2 replications")
	lines, err := os.ReadFile(filepath.Join(dir, "events", "load=1-rep=0.jsonl"))
	require.NoError(t, err)
	assert.Greater(t, bytes.Count(lines, []byte("\n")), 200)
}
