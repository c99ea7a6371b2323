package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// rises builds control-plane results on one axis with the given relative
// rises of the knee at the given staleness.
func rises(axis string, lags []time.Duration, rise []float64) []cpResult {
	cp := make([]cpResult, len(lags))
	for i := range lags {
		cp[i] = cpResult{variant{axes: []string{axis}, lag: lags[i]}, &analysis.ExperimentResult{Improvement: stats.Interval{Center: rise[i]}}}
	}
	return cp
}

// By hand: the rise falls from +8 % at 1 s to +2 % at 4 s, so it crosses
// 5 % halfway, at 2.5 s; a rise at or above 5 % throughout pays at every
// staleness, and one below it at the freshest never paid.
func TestStopsPaying(t *testing.T) {
	lags := []time.Duration{0, time.Second, 4 * time.Second}
	assert.Equal(t, "x: PrefixAffinity stops paying (its rise falls below 5 %) between 1s and 4s, at about 2.5s interpolated",
		stopsPaying(rises("x", lags, []float64{0.1, 0.08, 0.02}), "x", 0.05))
	assert.Equal(t, "x: PrefixAffinity's rise stays at or above 5 % up to 4s, the stalest tried",
		stopsPaying(rises("x", lags, []float64{0.1, 0.05, 0.06}), "x", 0.05))
	assert.Equal(t, "x: PrefixAffinity's rise over LeastLoaded is below 5 % already at 0s",
		stopsPaying(rises("x", lags, []float64{0.01, 0.08, 0.09}), "x", 0.05))
	assert.Empty(t, stopsPaying(rises("x", lags, []float64{0.1, 0.1, 0.1}), "y", 0.05), "no variant on that axis")
}

// With as many control-plane blocks as A/B blocks, the exact view with
// fresh signals is the study's own test against LeastLoaded: the same
// fleets, loads and seeds, so the same paired knee difference, to the
// bit.
func TestExactControlPlaneIsTheStudysTest(t *testing.T) {
	o, err := parse(&bytes.Buffer{}, small)
	require.NoError(t, err)
	require.Equal(t, o.blocks, o.cpBlocks)
	out, err := sweepLevel(levels[1], o)
	require.NoError(t, err)
	operate(out, o)
	require.NotNil(t, out.loads)
	out.tests[1].ModelError = analysis.ModelError{} // the control plane runs the nominal model only
	out.tests[1].BandLoads = nil
	want, err := out.tests[1].Run()
	require.NoError(t, err)
	cp, err := controlPlane(out, o)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(cp[0].name, "exact view, fresh signals"))
	assert.Equal(t, want.KneeDiff, cp[0].result.KneeDiff)
	assert.Equal(t, want.Improvement, cp[0].result.Improvement)
}

// By hand: LeastLoaded's knee falls from 10 to 9 req/s (10 %) and
// PrefixAffinity's from 11 to 10 (9 %) as their signals go 5 s stale,
// more than herdingFall: herding shows; from 10 to 9.8 (2 %) and 11 to
// 10.8 it does not. Variants off the signal axis are not read.
func TestHerding(t *testing.T) {
	knees := func(a ...float64) []cpResult {
		cp := []cpResult{{variant{name: "approximate"}, &analysis.ExperimentResult{KneeA: stats.Interval{Center: 1}}}}
		for i, k := range a {
			cp = append(cp, cpResult{variant{axes: []string{signalAxis}, lag: time.Duration(i) * 5 * time.Second},
				&analysis.ExperimentResult{KneeA: stats.Interval{Center: k}, KneeB: stats.Interval{Center: k + 1}}})
		}
		return cp
	}
	assert.Equal(t, "herding (a router's knee falling more than 5 % as its load signals go 0s, 5s stale, 4 routers): LeastLoaded 10, 9 req/s, shows; PrefixAffinity 11, 10 req/s, shows",
		herding(knees(10, 9)))
	assert.Contains(t, herding(knees(10, 9.8)), "LeastLoaded 10, 9.8 req/s, does not show; PrefixAffinity 11, 10.8 req/s, does not show")
}
