package main

import (
	"bytes"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
)

// small is the study at small settings: an hour's day (24 steps of 2.5
// minutes), two days, one-minute cold start, sizing on two-minute
// windows, a band of one day.
var small = []string{"-hours", "1", "-days", "2", "-cold", "60s", "-sizing-window", "2m", "-sizing-reps", "1", "-band-reps", "1", "-out", ""}

// The output at small settings, both days (the trace sample's lengths for
// the second).
func TestSmallGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, small))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

// What the day's arithmetic fixes: a static fleet pays its replicas for
// the whole day; the time-of-day schedule, asking each step's replicas a
// cold start ahead, serves each step's size for the step (Σ n_h steps)
// and pays more only for its warming (a cold start a join) and its
// drains; every arm is paired with the first, which differs from itself
// by exactly 0.
func TestStudyArithmetic(t *testing.T) {
	o, err := parse(io.Discard, small)
	require.NoError(t, err)
	days, err := o.dayList()
	require.NoError(t, err)
	out, err := o.measure(io.Discard, days[0])
	require.NoError(t, err)
	hours := (24 * out.step).Hours()
	arms := out.res.Arms
	require.Equal(t, "static@peak", arms[0].Name)
	assert.InDelta(t, float64(out.peakN)*hours, arms[0].ReplicaHours.Center, 1e-9)
	assert.InDelta(t, float64(out.meanN)*hours, arms[1].ReplicaHours.Center, 1e-9)
	assert.Zero(t, arms[0].AttainmentDiff.Center)
	assert.LessOrEqual(t, out.meanN, out.peakN)
	sum, joins := 0, 0
	for h, n := range out.sizes {
		sum += n
		if h > 0 {
			joins += max(0, n-out.sizes[h-1])
		}
	}
	tod := arms[2]
	require.Equal(t, "time-of-day (cold 1m0s)", tod.Name)
	assert.InDelta(t, float64(joins), tod.Joins, 1e-9, "a join for each replica a step adds")
	serving := float64(sum) * out.step.Hours()
	warming := float64(joins) * time.Minute.Hours()
	assert.GreaterOrEqual(t, tod.ReplicaHours.Lo, serving+warming-1e-9, "Σ n_h steps serving, and a cold start a join")
	assert.Less(t, tod.ReplicaHours.Hi, serving+warming+0.1*hours, "and the drains, short at this load")
	assert.Less(t, tod.ReplicaHoursDiff.Hi, 0.0, "cheaper than the peak fleet")
	for _, a := range arms {
		assert.Len(t, a.Binned, 24, a.Name)
		assert.NotEmpty(t, a.Timeline, a.Name)
		assert.True(t, a.Attainment.Center >= 0 && a.Attainment.Center <= 1, a.Name)
	}
}

// -out gets each day's chart as a PNG (the directory made if missing).
func TestChart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "charts")
	args := append(append([]string(nil), small...), "-out", dir, "-trace", "", "-model-error", "0")
	var out bytes.Buffer
	require.NoError(t, run(&out, args))
	path := filepath.Join(dir, "day-diurnal.png")
	assert.Contains(t, out.String(), "Chart: "+path)
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Greater(t, img.Height, img.Width, "three panels, stacked")
}

func TestBadFlags(t *testing.T) {
	for flag, c := range map[string][]string{
		"-mean":          {"-mean", "0"},
		"-hours":         {"-hours", "0"},
		"-days":          {"-days", "0"},
		"-price":         {"-price", "-1"},
		"-target":        {"-target", "1"},
		"-cold":          {"-cold", "soon"},
		"-sizing-window": {"-sizing-window", "10s"},
		"-model-error":   {"-model-error", "1"},
		"-band-reps":     {"-band-reps", "-1"},
		"-trace":         {"-trace", filepath.Join(t.TempDir(), "missing.csv")},
		"-out":           {"-hours", "0.1", "-days", "1", "-cold", "0s", "-sizing-window", "1m", "-sizing-reps", "1", "-model-error", "0", "-trace", "", "-out", "/proc/no/such/dir"},
		"unexpected":     {"extra"},
	} {
		err := run(&bytes.Buffer{}, c)
		assert.ErrorContains(t, err, flag, strings.Join(c, " "))
	}
	assert.NoError(t, run(&bytes.Buffer{}, []string{"-h"}))
}
