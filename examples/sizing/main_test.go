package main

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/internal/testlong"
)

// The output at small settings: a quiet day (mean 2 req/s), two
// replications of two-minute windows.
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
	testlong.Skip(t, "the default sizing, about 30 runs of an 8-replica fleet")
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
	assert.NoError(t, run(&bytes.Buffer{}, []string{"-h"}))
}
