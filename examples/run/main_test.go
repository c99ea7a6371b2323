package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/testlong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/workload"
)

// shrink loads a shipped scenario, lets edit make it smaller, and saves
// the variant in a temporary file.
func shrink(t *testing.T, name string, edit func(s *scenario.Scenario)) string {
	t.Helper()
	s, err := scenario.Load(filepath.Join("scenarios", name))
	require.NoError(t, err)
	edit(&s)
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, scenario.Save(path, s))
	return path
}

// smallAtlas is atlas-capacity.json with two replications of three loads
// and a four-minute horizon (examples/capacity's test run).
func smallAtlas(s *scenario.Scenario) {
	s.Sweep.Reps = 2
	s.Sweep.Grid = analysis.Grid{Loads: []float64{1, 2, 2.5}}
	s.Sweep.Config.Horizon = 4 * time.Minute
}

// smallRouting is routing.json as examples/routing's golden run has it:
// -replicas 2 -reps 2 -blocks 2 -horizon 2m -start 1.5.
func smallRouting(s *scenario.Scenario) {
	const horizon = 2 * time.Minute
	small := func(cfg *sim.Config) {
		cfg.Fleet.Replicas = cfg.Fleet.Replicas[:2]
		cfg.Window = sim.Window{Warmup: horizon / 10, Horizon: horizon}
	}
	workload := func(w analysis.Workload) analysis.Workload {
		sw := w.(analysis.SyntheticWorkload)
		sw.Spec.Duration = 2 * horizon
		return sw
	}
	for i := range s.Study.Groups {
		g := &s.Study.Groups[i]
		for j := range g.Sweeps {
			sw := &g.Sweeps[j].Sweep
			small(&sw.Config)
			sw.Workload, sw.Reps, sw.Grid.Start = workload(sw.Workload), 2, 1.5
		}
		for j := range g.Experiments {
			x := &g.Experiments[j].Experiment
			small(&x.A)
			small(&x.B)
			x.Workload, x.Blocks = workload(x.Workload), 2
		}
	}
}

// runIn runs the program with args and the files into dir, and returns
// its output with dir written as <out>.
func runIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(&out, append(args, "-out", dir)))
	return strings.ReplaceAll(out.String(), dir, "<out>")
}

// The Atlas capacity scenario, smaller: its report, files and card.
func TestAtlasCapacityGolden(t *testing.T) {
	dir := t.TempDir()
	got := runIn(t, dir, "-config", shrink(t, "atlas-capacity.json", smallAtlas))
	golden.Check(t, filepath.Join("testdata", "atlas-small.golden"), []byte(got))
	for _, f := range []string{"report.txt", "atlas-capacity-goodput.png", "atlas-capacity-goodput.svg", "atlas-capacity-latency.png",
		"atlas-capacity-card.md", "atlas-capacity-card.json", "events/" + report.EventFileName(1, 0)} {
		info, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	// Issue 32: a pasted chart names its study, and carries the model
	// band the scenario declares.
	svg, err := os.ReadFile(filepath.Join(dir, "atlas-capacity-goodput.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), ">Atlas TP4 goodput curve (simulated), attainment target 0.95<")
	assert.Contains(t, string(svg), "model range of the knee [&lt; 1, 2.141] req/s under step times ±10 %")
	b, err := os.ReadFile(filepath.Join(dir, "atlas-capacity-card.json"))
	require.NoError(t, err)
	var card report.Card
	require.NoError(t, json.Unmarshal(b, &card))
	assert.Equal(t, report.Rerunnable, card.Rerun)
	assert.Equal(t, "events/load=<load>-rep=<r>.jsonl", card.Events.Path, "relative to the card")
	assert.Contains(t, card.Command, "go run ./examples/run -config ")
}

// A card reruns into itself: the capacity card, rerun from the card,
// is the same card byte for byte, and so are its events.
func TestCapacityCardRerunsByteIdentical(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	runIn(t, first, "-config", shrink(t, "atlas-capacity.json", smallAtlas))
	card := filepath.Join(first, "atlas-capacity-card.json")
	runIn(t, second, "-config", card)
	for _, f := range []string{"atlas-capacity-card.json", "atlas-capacity-card.md", "report.txt", "events/" + report.EventFileName(2.5, 1)} {
		a, err := os.ReadFile(filepath.Join(first, f))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(second, f))
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), f)
	}
	// A card of another analysis revision reruns only when told.
	b, err := os.ReadFile(card)
	require.NoError(t, err)
	old := filepath.Join(t.TempDir(), "old-card.json")
	require.NoError(t, os.WriteFile(old, bytes.Replace(b, []byte(analysis.AnalysisRevision()), []byte("servesim-analysis/1"), 1), 0o644))
	err = run(&bytes.Buffer{}, []string{"-config", old, "-no-files"})
	assert.ErrorIs(t, err, scenario.ErrRevision)
}

// The routing scenario, smaller, as examples/routing's golden run has it.
// Both print their verdict with report.VerdictLine (its test holds the
// sentence); TestRoutingSmallVerdictsAreRoutings compares the two
// programs'.
func TestRoutingScenarioSmall(t *testing.T) {
	testlong.Skip(t, "runs the routing scenario")
	got := runIn(t, t.TempDir(), "-config", shrink(t, "routing.json", smallRouting), "-no-files")
	golden.Check(t, filepath.Join("testdata", "routing-small.golden"), []byte(got))
}

// The routing file and examples/routing give the same verdict and model
// band lines at the small size, each pinned by its golden file
// (TestRoutingScenarioSmall here, TestRunGolden there): the two programs
// read equal declarations alike. examples/routing's
// TestScenarioFileDeclaresThisStudy holds the file's declarations at its
// defaults equal to that program's, so at the defaults too the file
// gives its verdicts, without running either study (about two minutes
// each on 2 cores).
func TestRoutingSmallVerdictsAreRoutings(t *testing.T) {
	mine, err := os.ReadFile(filepath.Join("testdata", "routing-small.golden"))
	require.NoError(t, err)
	routing, err := os.ReadFile(filepath.Join("..", "routing", "testdata", "small.golden"))
	require.NoError(t, err)
	want := verdicts(string(routing))
	assert.Len(t, want, 4, "a verdict and a model band line per reuse level")
	assert.Equal(t, want, verdicts(string(mine)))
}

var verdictLine = regexp.MustCompile(`(?m)^(verdict|model band) .*$`)

func verdicts(s string) []string { return verdictLine.FindAllString(s, -1) }

// Malformed scenario files are refused naming the file and the field.
func TestBadConfigs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"Sweep":{"Reps":-1,"Workload":{"kind":"poisson"}}}`), 0o644))
	err := run(&bytes.Buffer{}, []string{"-config", bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+": ")
	assert.Contains(t, err.Error(), "Sweep.Grid needs Loads or a positive Start")
	assert.ErrorContains(t, run(&bytes.Buffer{}, nil), "-config: a scenario file")
}

// A stored card and its raw events are pinned (testdata/pinned, written
// by `go test -update`; the card's build and analysis revision are
// placeholders): rerunning the card's scenario writes the same events
// byte for byte and the same card, and the card's results are recomputed
// from the stored events alone, equal to the stored ones.
func TestPinnedCardAndEvents(t *testing.T) {
	pinned := filepath.Join("testdata", "pinned")
	dir := t.TempDir()
	runIn(t, dir, "-config", filepath.Join(pinned, "pinned.json"))
	files, err := filepath.Glob(filepath.Join(dir, "events", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 4)
	for _, f := range append(files, filepath.Join(dir, "report.txt")) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, f)
		golden.Check(t, filepath.Join(pinned, rel), b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pinned-card.json"))
	require.NoError(t, err)
	golden.Check(t, filepath.Join(pinned, "pinned-card.json"), withoutBuild(t, b))
	stored, err := os.ReadFile(filepath.Join(pinned, "pinned-card.json"))
	require.NoError(t, err)

	_, err = scenario.LoadCard(filepath.Join(pinned, "pinned-card.json"), scenario.CardOptions{})
	assert.ErrorIs(t, err, scenario.ErrRevision, "the stored card names no revision of this build")
	s, err := scenario.LoadCard(filepath.Join(pinned, "pinned-card.json"), scenario.CardOptions{AnyRevision: true})
	require.NoError(t, err)
	c, err := report.CurveFromEvents(*s.Sweep, filepath.Join(pinned, "events"))
	require.NoError(t, err)
	var card report.Card
	require.NoError(t, json.Unmarshal(stored, &card))
	again, err := json.Marshal(report.ResultsOf(c, s.Operating))
	require.NoError(t, err)
	want, err := json.Marshal(card.Results)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(again), "the results recomputed from the stored events")
}

// withoutBuild is a card's JSON with placeholders for what depends on
// the build: the binary's facts and the analysis revision.
func withoutBuild(t *testing.T, b []byte) []byte {
	t.Helper()
	var c report.Card
	require.NoError(t, json.Unmarshal(b, &c))
	c.Build = report.Build{Module: report.Module, Version: report.Unknown, Revision: report.Unknown, Time: report.Unknown,
		Modified: report.Unknown, GoVersion: report.Unknown, Platform: report.Unknown}
	c.AnalysisRevision = "servesim-analysis/(pinned: not this build's)"
	var out bytes.Buffer
	require.NoError(t, c.WriteJSON(&out))
	return out.Bytes()
}

// The other kinds a scenario holds run too: an A/B experiment, a dial
// sweep and a replay of a trace, each with its report and its files.
func TestExperimentDialAndReplay(t *testing.T) {
	sw, err := scenario.Load(filepath.Join("testdata", "pinned", "pinned.json"))
	require.NoError(t, err)
	cfg := sw.Sweep.Config
	chunked := cfg
	chunked.Engine.ChunkCap = 256
	trace := workload.Generic(workload.CSV)
	trace.Transform.WindowEnd = 3 * time.Minute
	for _, c := range []struct {
		s     scenario.Scenario
		want  []string
		files []string
	}{
		{scenario.Scenario{Name: "ab", Experiment: &analysis.Experiment{
			Hypothesis: analysis.Hypothesis{Claim: "a 256-token chunk cap raises goodput by 5 %", Metric: analysis.MetricGoodput, Threshold: 0.05},
			A:          cfg, B: chunked, Workload: sw.Sweep.Workload, Loads: []float64{1, 3}, Blocks: 2}},
			[]string{"hypothesis, declared before the runs: a 256-token chunk cap", "\nverdict ab: "}, []string{"ab-card.json", "ab-card.md"}},
		{scenario.Scenario{Name: "chunk", Claim: "the chunk cap moves the knee", DialSweep: &analysis.DialSweep{Sweep: *sw.Sweep, Dial: analysis.DialChunkCap, Values: []float64{0, 256}}},
			[]string{"dial Engine.ChunkCap (tokens), baseline 0", "knee − baseline's"}, []string{"chunk-card.json", "chunk-dial.png"}},
		{scenario.Scenario{Name: "replay", Replay: &scenario.TraceReplay{Config: cfg, Path: filepath.Join("..", "tracereplay", "testdata", "conversations.csv"), Trace: trace}},
			[]string{"replay:    ", "measured:  ", `summary:   {"endpoint_type"`}, []string{"replay-cdf.png", "replay-events.jsonl"}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.json")
		require.NoError(t, scenario.Save(path, c.s))
		got := runIn(t, dir, "-config", path)
		for _, w := range c.want {
			assert.Contains(t, got, w, c.s.Name)
		}
		for _, f := range append(c.files, "report.txt") {
			_, err := os.Stat(filepath.Join(dir, f))
			assert.NoError(t, err, f)
		}
	}
}
