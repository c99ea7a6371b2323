package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// A trace written by -write-trace replays to the same summary, to the
// byte, as the run that generated it, past the exact-sample limit too.
func TestWrittenTraceReplaysTheSameRun(t *testing.T) {
	o := options{requests: 20_000, rate: 2.4, seed: 3}
	o.write = filepath.Join(t.TempDir(), "t.csv")
	var out bytes.Buffer
	require.NoError(t, writeTrace(&out, o))
	assert.Contains(t, out.String(), "wrote 20000 requests")

	summarise := func(o options) sim.Summary {
		src, done, _, err := source(o)
		require.NoError(t, err)
		defer done()
		s, err := sim.Run(sim.Config{Seed: o.seed, ExactSamples: 5_000}, src, nil)
		require.NoError(t, err)
		return s
	}
	gen := summarise(options{requests: 20_000, rate: 2.4, seed: 3})
	replay := summarise(options{trace: o.write, seed: 3})
	assert.Equal(t, 20_000, gen.Offered)
	assert.True(t, gen.Sketched(), "20,000 requests past ExactSamples 5,000")
	assert.Equal(t, fmt.Sprintf("%+v", gen), fmt.Sprintf("%+v", replay))
}

func TestRunPrints(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-requests", "3000", "-rate", "1"}))
	s := out.String()
	assert.Contains(t, s, "measured 3000 requests")
	assert.Contains(t, s, "percentiles exact")
	assert.Contains(t, s, "simulated requests per CPU-second")

	out.Reset()
	require.NoError(t, run(&out, []string{"-requests", "3000", "-rate", "1", "-exact-samples", "100"}))
	assert.Contains(t, out.String(), "from a sketch, within 0.5 % of exact")
}

// -cpuprofile writes a CPU profile of the run: gzipped, as pprof's are.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	require.NoError(t, run(&bytes.Buffer{}, []string{"-requests", "20000", "-cpuprofile", path}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 2)
	assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "a pprof profile is gzipped")

	err = run(&bytes.Buffer{}, []string{"-requests", "10", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir")})
	assert.ErrorContains(t, err, filepath.Join("no", "such", "dir"))
}

func TestBadFlags(t *testing.T) {
	for _, c := range [][]string{{"-requests", "0"}, {"-rate", "-1"}, {"-trace", "a", "-write-trace", "b"}, {"extra"}} {
		err := run(&bytes.Buffer{}, c)
		assert.Error(t, err, strings.Join(c, " "))
	}
	err := run(&bytes.Buffer{}, []string{"-trace", filepath.Join(t.TempDir(), "missing.csv")})
	assert.ErrorContains(t, err, "missing.csv")
}

// The generated workload and the written trace are the same requests.
func TestGeneratorIsTheAtlasQuestion(t *testing.T) {
	g, err := generator(options{requests: 5, rate: 2.4, seed: 1})
	require.NoError(t, err)
	r, err := g.Next()
	require.NoError(t, err)
	assert.Equal(t, 2000, r.InputTokens)
	assert.Equal(t, 200, r.OutputTokens)
	var _ workload.Source = g
}
