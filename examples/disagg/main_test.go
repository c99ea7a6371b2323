package main

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
)

// small are the golden run's arguments: short windows, few replications
// and blocks, two splits at one bandwidth.
var small = []string{"-reps", "2", "-blocks", "2", "-band-blocks", "2", "-horizon", "90s", "-splits", "1,2", "-bandwidths", "50", "-operating", "0.7,1,1.3"}

// The report is pinned by a golden file run with small arguments; run
// `go test ./examples/disagg -update` after a deliberate change.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, small))
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())
	s := out.String()
	for _, l := range loads {
		assert.Equal(t, 1, strings.Count(s, "\nverdict "+l.name+": "), "one verdict line per workload")
	}
	decl := strings.Index(s, "Hypothesis, declared before the runs")
	assert.True(t, decl >= 0 && decl < strings.Index(s, "== chat"), "the hypothesis comes before any result")
}

// The example's fleets obey the checks of the issue at its own
// configuration: a split fleet at low load, every request remote.
func exampleRun(t *testing.T, r row, l load, rate float64) (sim.Summary, []sim.Record) {
	t.Helper()
	o, err := parse(new(bytes.Buffer), nil)
	require.NoError(t, err)
	o.horizon = 2 * time.Minute
	cfg := config(r, o)
	cfg.Window = sim.Window{} // open: every request of the 4 minutes is measured, every transfer inside
	cfg.KeepTokens = true
	cfg.Seed = 3
	src, err := requests(l, o).Source(rate, 3)
	require.NoError(t, err)
	var recs []sim.Record
	sum, err := sim.Run(cfg, src, sim.ObserverFunc(func(rec *sim.Record) {
		k := *rec
		k.Tokens = append([]time.Duration(nil), rec.Tokens...) // the runner reuses its slice
		recs = append(recs, k)
	}))
	require.NoError(t, err)
	return sum, recs
}

// On the decode pool every gap after a request's first is the
// pure-decode step, 45 ms to the nanosecond: no prefill enters its
// steps. Every landed request moved its prompt's KV once, 80 KiB a
// token, and the links' utilisation is those bytes over bandwidth ×
// window × links.
func TestSplitFleetDecodesCleanAndConservesBytes(t *testing.T) {
	r := row{prefill: 1, bandwidth: 50, decider: sim.AlwaysRemote{}}
	sum, recs := exampleRun(t, r, loads[1], 1.5)
	d := sum.Disagg
	require.NotNil(t, d)
	var moved float64
	gaps := 0
	for _, rec := range recs {
		require.True(t, rec.Remote, "request %d", rec.ID)
		if rec.Transfer > 0 {
			moved += float64(rec.Input) * costmodel.AtlasKVBytesPerToken
		}
		for i := 2; i < len(rec.Tokens); i++ {
			require.Equal(t, costmodel.AtlasDecodeStep, rec.Tokens[i]-rec.Tokens[i-1], "request %d, gap %d", rec.ID, i)
			gaps++
		}
	}
	assert.Greater(t, gaps, 10_000)
	assert.InEpsilon(t, moved, d.Bytes, 1e-9, "every landed transfer moved its prompt's bytes, once")
	window := (sum.Window).Seconds()
	assert.InEpsilon(t, d.Bytes/(50e9*window), d.LinkUtilisation, 1e-9)
	assert.InEpsilon(t, d.LinkUtilisation, d.LinkBusy, 1e-6, "a work-conserving link: bytes = bandwidth × busy time")
	assert.Equal(t, 1.0, d.RemoteShare)
}

// With llm-d's decider every prompt of at least -decider-tokens tokens
// is prefilled remotely (no prompt shares a prefix with another: nothing
// is cached), and no shorter one: the decider's share is the share of
// long prompts.
func TestThresholdSharesTheLongPrompts(t *testing.T) {
	r := row{prefill: 1, bandwidth: 50, decider: sim.PrefixThreshold{NonCachedTokens: 1024}}
	_, recs := exampleRun(t, r, loads[0], 4)
	long := 0
	for _, rec := range recs {
		assert.Equal(t, rec.Input >= 1024, rec.Remote, "request %d of %d prompt tokens", rec.ID, rec.Input)
		if rec.Input >= 1024 {
			long++
		}
	}
	share := float64(long) / float64(len(recs))
	t.Logf("%.3f of %d chat prompts have 1,024 tokens or more", share, len(recs))
	assert.InDelta(t, 0.11, share, 0.03, "lognormal(600, cv 0.6): P(X >= 1024) = 0.108")
}

// The estimate the report prints follows from the chapter's arithmetic:
// a decode replica serves 32 / ((output − 1) × 45 ms) req/s, a prompt's
// KV is 80 KiB a token over the link.
func TestEstimateIsTheArithmetic(t *testing.T) {
	e, err := estimate(loads[0], 50)
	require.NoError(t, err)
	assert.InDelta(t, 32/(249*0.045), e.DecodeCapacity.Value, 1e-9)
	assert.InDelta(t, 600*81920/50e9*1e3, e.TransferTime.Value, 1e-9)
	assert.InDelta(t, 50e9/(600*81920), e.TransferBound.Value, 1e-6)
	assert.InDelta(t, e.DecodeCapacity.Value/e.PrefillCapacity.Value, e.Ratio.Value, 1e-12)
	var out bytes.Buffer
	writeEstimate(&out, loads[0], options{replicas: 4, bandwidths: []float64{25, 50, 100}})
	assert.Contains(t, out.String(), fmt.Sprintf("decode-pool capacity: %.4g req/s", e.DecodeCapacity.Value))
	assert.False(t, math.IsNaN(e.Balanced.Value))
}

// Nonsense flags are refused by name before anything runs.
func TestFlagsAreChecked(t *testing.T) {
	for flag, args := range map[string][]string{
		"-splits":         {"-splits", "4"},
		"-bandwidths":     {"-bandwidths", "0"},
		"-decider-tokens": {"-decider-tokens", "0"},
		"-blocks":         {"-blocks", "1"},
		"-operating":      {"-operating", "1"},
		"-replicas":       {"-replicas", "1"},
	} {
		err := run(new(bytes.Buffer), args)
		require.Error(t, err, flag)
		assert.Contains(t, err.Error(), flag)
	}
}
