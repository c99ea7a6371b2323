package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 32: no flag value is silently replaced by a default. -reps 0 ran
// analysis.Sweep's default of 5 and printed "0 replications per load"; -warmup
// and -horizon were refused under sim's field names. Each is refused by
// its flag before anything is written.
func TestRunRefusesDegenerateFlagValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-reps", "0"}, "-reps: 0 is not a number of replications per load in [1, 1000] (intervals need 2 or more)"},
		{[]string{"-reps", "-1"}, "-reps: -1 is not a number of replications per load in [1, 1000]"},
		{[]string{"-reps", "1001"}, "-reps: 1001 is not a number of replications per load in [1, 1000]"},
		{[]string{"-warmup", "-1s"}, "-warmup: -1s is negative (0 measures from the start)"},
		{[]string{"-horizon", "0"}, "-horizon: 0s must end the window after -warmup (1m0s)"},
		{[]string{"-horizon", "-1s"}, "-horizon: -1s must end the window after -warmup (1m0s)"},
		{[]string{"-warmup", "20m"}, "-horizon: 10m0s must end the window after -warmup (20m0s)"},
		{[]string{"-reps", "0", "-estimate-only"}, "-reps: 0 is not"},
	} {
		var out bytes.Buffer
		err := run(&out, tc.args)
		require.Error(t, err, "run(%q)", tc.args)
		assert.Equal(t, tc.want, err.Error()[:len(tc.want)], "run(%q)", tc.args)
		assert.Zero(t, out.Len(), "run(%q) refuses before writing anything", tc.args)
	}
}

// Issue 32: -reps 1 printed a zero-width "95 %" interval [1.734, 1.734].
// One replication gives point estimates and says an interval needs two.
func TestRunOneReplicationPrintsNoInterval(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-loads", "1,2,3", "-reps", "1", "-horizon", "4m", "-model-error", "0", "-out", ""}))
	s := out.String()
	assert.Contains(t, s, "200 output tokens (fixed), 1 replication per load\n")
	assert.Contains(t, s, "window:    warm-up 1m0s, horizon 4m0s; no intervals: one replication gives point estimates only (an interval needs -reps 2 or more)\n")
	assert.Regexp(t, `\nknee       \d\.\d{3} req/s \(no CI, n=1\) over seeds`, s)
	assert.Regexp(t, `\nheadroom   -?\d\.\d{3} req/s \(no CI, n=1\) \([+-]\d+ %\) from the operating load 1\.500 req/s`, s)
	assert.Regexp(t, `\n +1\.000 +37 +\d\.\d{3} +\(no CI, n=1\) +1\.000 +\(no CI, n=1\)`, s)
	assert.NotContains(t, s, "95% CI")
	assert.Contains(t, s, "ran        1 curve × 1 replication: 3 runs")
}

// Issue 32: with -prompt 1000000 no request fits in the KV cache. The
// estimate warned "expect preemption" and every load was labelled
// overloaded at attainment 0. The estimate and a line before the sweep
// name the request's size and the KV bound; every load is refused.
func TestRunSaysEveryRequestNeverFits(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-prompt", "1000000", "-loads", "0.5,2", "-reps", "2", "-horizon", "2m", "-model-error", "0", "-out", ""}))
	s := out.String()
	before, after, ok := strings.Cut(s, "Simulated goodput curve")
	require.True(t, ok)
	assert.Contains(t, before, "  a prompt of 1000000 tokens is at or above the KV cache's 458752 tokens, the most a vLLM-like engine's max_model_len can be: an engine refuses every such request at arrival")
	assert.NotContains(t, s, "expect preemption")
	why := "every request has a 1,000,000-token prompt, at or above the engine's MaxModelLen, its KV capacity of 458,752 tokens (28,672 blocks of 16): the engine refuses each at arrival, at any load"
	assert.Contains(t, before, "\nBefore the sweep: "+why+". Every load below is refused, not overloaded.\n")
	assert.Regexp(t, `\n +0\.500 +\d+ +0\.000 +\[0\.00, 0\.00\] +0\.000 +\[0\.000, 0\.000\] +- +- +∞ ! +- +refused\n`, after)
	assert.Regexp(t, `\n +2\.000 +\d+ +0\.000 .* refused\n`, after)
	assert.NotContains(t, after, "overloaded")
	assert.Contains(t, after, "\nrefused    every request at every load was refused at arrival, none served: "+why+"\n")
	assert.Contains(t, after, "\nknee       none: the replica refused every request at every load (see refused above)\n")
}

// Issue 32: -out /proc/x failed only after the whole estimate had
// printed. The directory is made and written to first.
func TestRunRefusesAnUnwritableOutFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	for _, dir := range []string{"/proc/x", filepath.Join(file, "sub")} {
		var out bytes.Buffer
		err := run(&out, []string{"-out", dir})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "-out "+dir+": the output directory cannot be made: mkdir ")
		assert.Zero(t, out.Len(), "nothing printed before the refusal")
	}
	if os.Geteuid() != 0 { // root writes in a read-only directory
		ro := filepath.Join(t.TempDir(), "ro")
		require.NoError(t, os.Mkdir(ro, 0o555))
		var out bytes.Buffer
		err := run(&out, []string{"-out", ro})
		assert.ErrorContains(t, err, "-out "+ro+": the output directory cannot be written: ")
		assert.Zero(t, out.Len())
	}
	// A writable directory is left with no probe file in it.
	dir := t.TempDir()
	require.NoError(t, run(&bytes.Buffer{}, []string{"-loads", "1", "-reps", "2", "-horizon", "2m", "-model-error", "0", "-out", dir}))
	probes, err := filepath.Glob(filepath.Join(dir, ".capacity-probe-*"))
	require.NoError(t, err)
	assert.Empty(t, probes)
}

// Issue 34: -shapes adds Atlas's shape alternatives to the band, each
// by name with its knee, and says whether the knee holds under every
// model of the band or rests on one; without it the report names none.
func TestRunShapesNamesEachModelOfTheBand(t *testing.T) {
	args := []string{"-loads", "1,1.5,2,2.5", "-reps", "2", "-horizon", "4m", "-model-error", "0", "-out", ""}
	var out bytes.Buffer
	require.NoError(t, run(&out, append(args, "-shapes")))
	s := out.String()
	for _, name := range []string{"atlas-linear", "atlas-roofline", "atlas-profiled"} {
		assert.Regexp(t, `\n           under `+name+`: knee [<>]? ?\d\.\d+ req/s\n`, s)
	}
	assert.Contains(t, s, "error:     3 models of another shape declared before the sweep: every load also ran under atlas-linear and atlas-roofline and atlas-profiled, on the same seeds\n")
	assert.Regexp(t, `\n           the knee (holds under every model of the band|rests on the model: under atlas-)`, s)
	out.Reset()
	require.NoError(t, run(&out, args))
	assert.NotContains(t, out.String(), "atlas-linear")
}
