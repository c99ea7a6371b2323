package sim

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// validateProfile is the ProfileModel of examples/validate's kernel
// profiles (Llama-3.1-8B, 32 layers, on an RTX PRO 6000).
func validateProfile(t testing.TB) *costmodel.ProfileModel {
	t.Helper()
	p, err := costmodel.ReadProfile(os.DirFS("../examples/validate/testdata/rtxpro6000-llama-3.1-8b"), "profile", 1)
	require.NoError(t, err)
	p.Layers = 32
	m, err := p.Build()
	require.NoError(t, err)
	return m
}

// TestProfileModelFastEqualsStepwise holds runs priced by measured kernel
// profiles (examples/validate's ProfileModel) to their step-by-step twins,
// byte for byte. Such a model reads every decode's context, no decode
// cohort serves it, and its price moves every few steps, so the run
// planner's search for the last step priced like the first (gallop, then
// bisect; the second step first after a run cut there) decides almost
// every move: at the knee, under KV pressure, and with more than the 512
// decodes whose contexts the attention's longest-decodes bound sorts.
func TestProfileModelFastEqualsStepwise(t *testing.T) {
	t.Parallel()
	m := validateProfile(t)
	requests := func(seed uint64, rate float64, n, in, out int) list {
		src := poisson(t, seed, rate, n, workload.Fixed(in, out))
		var l list
		for {
			r, err := src.Next()
			if err == io.EOF {
				return l
			}
			require.NoError(t, err)
			l = append(l, r)
		}
	}
	for _, c := range []struct {
		name string
		cfg  Config
		reqs list
		held float64 // the mean number of requests in the system must exceed it
		pre  bool    // some request must be preempted
	}{
		{"knee", Config{Model: m}, requests(1, 2.4, 300, 2000, 200), 0, false},
		{"kv pressure", Config{Model: m, Engine: engine.Config{KVBlocks: 600}}, requests(2, 2, 100, 200, 2000), 0, true},
		{"wide batch", Config{Model: m, Engine: engine.Config{MaxSeqs: 600}}, requests(3, 100, 800, 100, 300), 512, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := fastEqualsStepwise(t, c.cfg, c.reqs)
			require.Equal(t, len(c.reqs), run.sum.Offered)
			require.Greater(t, run.sum.MeanInSystem, c.held)
			if c.pre {
				require.Positive(t, run.sum.Preempt)
			}
		})
	}
}
