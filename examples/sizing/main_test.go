package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/internal/testlong"
)

// The output at small settings: a quiet day (mean 2 req/s), two
// replications of two-minute windows, with the default model band and
// the trace sample.
func TestSmallGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-mean", "2", "-reps", "2", "-warmup", "30s", "-horizon", "120s"}))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
}

// At its defaults the answer is at least the fleet the serving capacity
// alone requires (no replica serves more than costmodel's estimate of
// its saturation rate, so n ≥ load / capacity), and the cost line is
// the replicas' price over their output tokens.
func TestDefaultsRespectCapacity(t *testing.T) {
	testlong.Skip(t, "the default sizing with its band and the trace sample, about 140 runs")
	var out bytes.Buffer
	require.NoError(t, run(&out, nil))
	s := out.String()
	t.Log("\n" + s)
	n := number(t, s, `Replicas: (\d+)`)
	load := number(t, s, `= ([\d.]+) req/s, steady`)
	e, err := costmodel.AtlasTP4().Estimate()
	require.NoError(t, err)
	floor := math.Ceil(load / e.ServingCapacity.Value)
	assert.GreaterOrEqual(t, n, floor, "load %.4g over capacity %.4g", load, e.ServingCapacity.Value)
	cost := number(t, s, `Cost: \$([\d.]+)`)
	tput := number(t, s, `\(([\d.]+) output tokens/s\)`)
	assert.InEpsilon(t, n*10/(3600*tput)*1e6, cost, 0.01)
	assert.InEpsilon(t, load*200, tput, 0.05, "every request's 200 tokens at the sizing load")
}

func number(t *testing.T, s, pattern string) float64 {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	require.NotNil(t, m, pattern)
	x, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return x
}

// A bound too small says so, naming it.
func TestUnmet(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-mean", "5", "-reps", "2", "-warmup", "10s", "-horizon", "60s", "-max", "1"}))
	assert.Contains(t, out.String(), "Not met: sim: Sizing: no fleet of at most 1 replicas (MaxReplicas)")
}

func TestBadFlags(t *testing.T) {
	for _, c := range [][]string{{"-mean", "0"}, {"-peak-to-trough", "0.5"}, {"-router", "nope"}, {"-input", "0"}, {"extra"}, {"-headroom", "-1"}} {
		err := run(&bytes.Buffer{}, c)
		assert.Error(t, err, strings.Join(c, " "))
	}
	// Each names its flag, before any sizing runs.
	for flag, c := range map[string][]string{
		"-model-error":  {"-model-error", "1"},
		"-band-reps":    {"-band-reps", "-1"},
		"-trace-warmup": {"-trace-warmup", "-1s"},
		"-trace":        {"-trace", filepath.Join(t.TempDir(), "missing.csv")},
	} {
		assert.ErrorContains(t, run(&bytes.Buffer{}, c), flag, strings.Join(c, " "))
	}
	// A warm-up as long as the compressed replay leaves no window.
	err := run(&bytes.Buffer{}, []string{"-trace-warmup", "10m"})
	assert.ErrorContains(t, err, "-trace-warmup 10m0s must be shorter than the trace's replay")
	assert.NoError(t, run(&bytes.Buffer{}, []string{"-h"}))
}

// The sample's own rate, counted from the file itself (its rows over the
// span of its first and last TIMESTAMP), is the trace's load; the sizing
// load is it × (1 + headroom), and the window ends at the compressed
// replay's last arrival, the span / (1 + headroom).
func TestTraceLoadIsItsOwnRate(t *testing.T) {
	f, err := os.Open(defaultTrace())
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	rows = rows[1:] // the header
	at := func(row []string) time.Time {
		x, err := time.Parse("2006-01-02 15:04:05.0000000", row[0])
		require.NoError(t, err)
		return x
	}
	span := at(rows[len(rows)-1]).Sub(at(rows[0]))
	rate := float64(len(rows)) / span.Seconds()
	t.Logf("%d rows over %v: %.4g req/s", len(rows), span, rate)

	tr, err := readTrace(defaultTrace(), 30*time.Second, 0.2)
	require.NoError(t, err)
	assert.Equal(t, len(rows), tr.n)
	assert.Equal(t, span, tr.span)
	assert.InEpsilon(t, rate, tr.rate, 1e-12)
	assert.InDelta(t, float64(span)/1.2, float64(tr.window.Horizon), 1)

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-mean", "2", "-reps", "2", "-warmup", "30s", "-horizon", "120s", "-model-error", "0", "-shapes=false"}))
	s := out.String()
	assert.InEpsilon(t, rate, number(t, s, `: ([\d.]+) req/s at its own pace`), 1e-3)
	assert.InEpsilon(t, 1.2*rate, number(t, s, `headroom\): ([\d.]+) req/s over`), 1e-3)
	assert.NotContains(t, s, "Model band", "no band declared")
	assert.Contains(t, s, "model band: none declared")
	// The trace's cost line is the same identity as the day's.
	trace := s[strings.Index(s, "Trace: "):]
	n := number(t, trace, `Replicas: (\d+)`)
	assert.InEpsilon(t, n*10/(3600*number(t, trace, `\(([\d.]+) output tokens/s\)`))*1e6, number(t, trace, `Cost: \$([\d.]+)`), 1e-3)
}

// A trace replay ignores its seed: behind least-loaded every replication
// would be the same run, so the trace's sizing runs one; behind random
// they differ in the router's draws, and it runs -reps.
func TestTraceReps(t *testing.T) {
	for router, want := range map[string]string{
		"least-loaded": "(one replication: no seed range)",
		"random":       "over 2 replications)",
	} {
		var out bytes.Buffer
		require.NoError(t, run(&out, []string{"-mean", "1", "-reps", "2", "-warmup", "10s", "-horizon", "60s", "-model-error", "0", "-shapes=false", "-router", router}))
		s := out.String()
		assert.Contains(t, s[strings.Index(s, "Trace: "):], want, router)
	}
}

// The band's rows, in both answers of the golden run: more step time
// never needs fewer replicas (×1.1 ≥ nominal ≥ ×0.9 on the same seeds;
// the nominal's own seeds include the variants'), the range's ends are
// the fewest and the most of the rows, and the words follow from them.
func TestBandRows(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "small.golden"))
	require.NoError(t, err)
	row := regexp.MustCompile(`(?m)^  (nominal|step times ×[\d.]+|atlas-\w+) +(\d+) `)
	for i, part := range strings.Split(string(out), "\nTrace: ") {
		sizes := map[string]float64{}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, m := range row.FindAllStringSubmatch(part, -1) {
			n, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err)
			sizes[m[1]] = n
			lo, hi = min(lo, n), max(hi, n)
		}
		require.Len(t, sizes, 6, "answer %d: the nominal model and five variants", i)
		assert.GreaterOrEqual(t, sizes["step times ×1.1"], sizes["nominal"], "answer %d", i)
		assert.GreaterOrEqual(t, sizes["nominal"], sizes["step times ×0.9"], "answer %d", i)
		if lo == hi {
			assert.Contains(t, part, fmt.Sprintf("holds under every model of the band (step times ×1.1, step times ×0.9, atlas-linear, atlas-roofline, atlas-profiled): %.0f replicas", lo))
		} else {
			assert.Contains(t, part, fmt.Sprintf("sizes across the band: [%.0f, %.0f]", lo, hi))
			assert.Contains(t, part, "The size rests on the model: under ")
		}
	}
}
