package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/shard"
	"github.com/servesim/servesim/workload"
)

// A small study: three loads, two replications, two-minute windows.
var small = []string{"-loads", "1,2,3", "-reps", "2", "-warmup", "20s", "-horizon", "2m"}

func args(a ...string) []string { return append(a, small...) }

// Issue 15: the shards run as separate processes (the binary built here,
// each shard's index from $JOB_COMPLETION_INDEX as an Indexed Job's pod
// gets it), and their merge prints and writes the same bytes as the
// unsharded sweep: the report and the card.
func TestShardsAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	testlong.Skip(t, "builds the command and runs it as four processes; TestRunThenMerge runs the shards in process")
	dir := t.TempDir()
	bin := filepath.Join(dir, "shard")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	const n = 3
	shards := filepath.Join(dir, "shards")
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(bin, args("run", "-shards", fmt.Sprint(n), "-out", shards)...)
			cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("shard %d: %w: %s", i, err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	merged, err := exec.Command(bin, args("merge", "-in", shards, "-card", filepath.Join(dir, "card"))...).Output()
	require.NoError(t, err)
	mergedCard := readCard(t, filepath.Join(dir, "card"))
	all, err := exec.Command(bin, args("all", "-card", filepath.Join(dir, "card"))...).Output()
	require.NoError(t, err)
	assert.Equal(t, string(all), string(merged))
	assert.Equal(t, readCard(t, filepath.Join(dir, "card")), mergedCard)
	assert.Contains(t, string(merged), "knee:")
}

func readCard(t *testing.T, dir string) string {
	var b strings.Builder
	for _, name := range []string{"card.md", "card.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		b.Write(data)
	}
	return b.String()
}

// In one process: every shard of a split into 2, then the merge, equal to
// the unsharded report.
func TestRunThenMerge(t *testing.T) {
	shards := t.TempDir()
	for i := range 2 {
		var out bytes.Buffer
		require.NoError(t, run(&out, args("run", "-shard", fmt.Sprint(i), "-shards", "2", "-out", shards)))
		assert.Contains(t, out.String(), fmt.Sprintf("shard %d of 2: 9 of the study's 18 runs", i))
	}
	var merged, all bytes.Buffer
	require.NoError(t, run(&merged, args("merge", "-in", shards)))
	require.NoError(t, run(&all, args("all")))
	assert.Equal(t, all.String(), merged.String())

	// Another study's merge names the shard files it refuses.
	err := run(&merged, []string{"merge", "-in", shards, "-loads", "1,2,3", "-reps", "3", "-warmup", "20s", "-horizon", "2m"})
	assert.ErrorContains(t, err, filepath.Join(shards, "shard-0-of-2.simshard")+" (shard 0 of 2) is of another study")
	require.NoError(t, os.Remove(filepath.Join(shards, "shard-1-of-2.simshard")))
	err = run(&merged, args("merge", "-in", shards))
	assert.ErrorContains(t, err, "shard 1 of 2 is missing")
}

// The study as a scenario file runs as the flags' study does.
func TestStudyFile(t *testing.T) {
	var file, fromFlags, fromFile bytes.Buffer
	require.NoError(t, run(&file, args("study")))
	path := filepath.Join(t.TempDir(), "study.json")
	require.NoError(t, os.WriteFile(path, file.Bytes(), 0o644))
	require.NoError(t, run(&fromFlags, args("all")))
	require.NoError(t, run(&fromFile, []string{"all", "-study", path}))
	assert.Equal(t, fromFlags.String(), fromFile.String())
}

// A dial sweep's and an experiment's scenario files run as shards too, and
// merge into what they print and write unsharded, card included (which
// embeds the scenario).
func TestDialSweepAndExperimentScenarios(t *testing.T) {
	sw := analysis.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)),
		Grid:     analysis.Grid{Loads: []float64{1, 2, 3}},
		Reps:     2,
	}
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "a 256-token chunk cap raises goodput by 5 %", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sw.Config, B: analysis.DialChunkCap.Set(sw.Config, 256),
		Workload: sw.Workload, Loads: []float64{1, 2}, Blocks: 3,
	}
	for name, sc := range map[string]scenario.Scenario{
		"dial":       {Name: "dial", DialSweep: &analysis.DialSweep{Sweep: sw, Dial: analysis.DialChunkCap, Values: []float64{0, 256}, Probe: 1}},
		"experiment": {Name: "experiment", Experiment: &x},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "study.json")
			require.NoError(t, scenario.Save(path, sc))
			study := []string{"-study", path}
			for i := range 2 {
				require.NoError(t, run(&bytes.Buffer{}, append([]string{"run", "-shard", fmt.Sprint(i), "-shards", "2", "-out", filepath.Join(dir, "shards")}, study...)))
			}
			var merged, all bytes.Buffer
			require.NoError(t, run(&merged, append([]string{"merge", "-in", filepath.Join(dir, "shards"), "-card", filepath.Join(dir, "card")}, study...)))
			mergedCard := readCard(t, filepath.Join(dir, "card"))
			require.NoError(t, run(&all, append([]string{"all", "-card", filepath.Join(dir, "card")}, study...)))
			assert.Equal(t, all.String(), merged.String())
			assert.Equal(t, readCard(t, filepath.Join(dir, "card")), mergedCard)
			assert.Contains(t, mergedCard, `"scenario"`)
		})
	}
}

// What a merge cannot build from shards is refused, saying why.
func TestUnshardableScenarios(t *testing.T) {
	dir := t.TempDir()
	auto := scenario.Scenario{Sweep: &analysis.Sweep{
		Config:   sim.Config{Window: sim.Window{Warmup: 15 * time.Second, Horizon: 90 * time.Second}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)), Grid: analysis.Grid{Start: 0.5},
	}}
	path := filepath.Join(dir, "auto.json")
	require.NoError(t, scenario.Save(path, auto))
	err := run(&bytes.Buffer{}, []string{"run", "-shard", "0", "-shards", "2", "-out", dir, "-study", path})
	assert.ErrorIs(t, err, shard.ErrAutomaticGrid)
	assert.ErrorContains(t, err, "explicit Grid.Loads")

	replay := scenario.Scenario{Replay: &scenario.TraceReplay{Path: "trace.csv"}}
	path = filepath.Join(dir, "replay.json")
	require.NoError(t, os.WriteFile(path, must(scenario.Default().Marshal(replay)), 0o644))
	err = run(&bytes.Buffer{}, []string{"all", "-study", path})
	assert.ErrorContains(t, err, "holds a replay: one run, nothing to shard")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestRunRefusesBadArguments(t *testing.T) {
	t.Setenv(indexVar, "")
	os.Unsetenv(indexVar)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run", "-shards", "2", "-out", "x"}, "-shard is not set and neither is $JOB_COMPLETION_INDEX"},
		{[]string{"run", "-shard", "2", "-shards", "2", "-out", "x"}, "shard index 2 is not below -shards 2"},
		{[]string{"run", "-shard", "0", "-out", "x"}, "-shards: the number of shards must be >= 1"},
		{[]string{"run", "-shard", "0", "-shards", "1"}, "-out: the directory"},
		{[]string{"merge"}, "-in: the directory of shard files is not set"},
		{[]string{"merge", "-in", "nowhere"}, "nowhere"},
		{[]string{"all", "-loads", "1,x"}, `-loads: "x" is not a positive rate`},
		{[]string{"all", "-study", "s.json", "-reps", "3"}, "-study defines the whole study: -reps would be ignored"},
		{[]string{"all", "extra"}, "unexpected arguments"},
	} {
		err := run(&bytes.Buffer{}, tc.args)
		assert.ErrorContains(t, err, tc.want, "%q", tc.args)
	}
}

func TestIndexFromTheEnvironment(t *testing.T) {
	t.Setenv(indexVar, "1")
	sh, err := shardOf(&options{shard: -1, shards: 4})
	require.NoError(t, err)
	assert.Equal(t, 1, sh.Index)
	t.Setenv(indexVar, "one")
	_, err = shardOf(&options{shard: -1, shards: 4})
	assert.ErrorContains(t, err, `$JOB_COMPLETION_INDEX: "one" is not an index`)
}
