package main

import (
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// examples/run/scenarios/routing.json asks this program's question as
// data, and at this program's defaults it declares the same study: each
// level's sweeps (fleet, router, window, grid, replications, seeds,
// model band) and A/B tests (hypothesis, A, B, blocks, seeds, model
// band, the factors of RoundRobin's knee that place the loads), and the
// same workload, compared by the requests it draws. With the two
// programs' verdicts equal on equal declarations (the small runs,
// examples/run's TestRoutingSmallVerdictsAreRoutings), the file at its
// defaults gives this program's verdict and model band lines, without
// running either study (two runs of about two minutes each on 2 cores).
// The control plane, the gateway, the sizing and the retained goodput
// past PrefixAffinity's knee are this program's own: the file asks none
// of them.
func TestScenarioFileDeclaresThisStudy(t *testing.T) {
	s, err := scenario.Load(filepath.Join("..", "run", "scenarios", "routing.json"))
	require.NoError(t, err)
	o, err := parse(io.Discard, nil)
	require.NoError(t, err)
	require.NotNil(t, s.Study)
	require.Len(t, s.Study.Groups, len(levels))
	for i, l := range levels {
		g := s.Study.Groups[i]
		require.Equal(t, l.name, g.Name)
		want := levelSweeps(l, o)
		require.Len(t, g.Sweeps, len(routers), l.name)
		for j, r := range routers {
			got := g.Sweeps[j]
			require.Equal(t, r.name, got.Name, l.name)
			sameRequests(t, want[j].Workload, got.Sweep.Workload, l.name+" "+r.name)
			w, f := want[j], got.Sweep
			w.Workload, f.Workload, w.Workers, f.Workers = nil, nil, 0, 0
			if r == prefixAffinity {
				// This program's own readout: PrefixAffinity's goodput
				// retained past its knee. No verdict reads that sweep.
				assert.True(t, w.Grid.PastKnee)
				w.Grid.PastKnee = false
			}
			assert.Equal(t, declared(t, w), declared(t, f), "%s, %s sweep", l.name, r.name)
		}
		require.Len(t, g.Experiments, len(baselines), l.name)
		for j, base := range baselines {
			got := g.Experiments[j]
			assert.Equal(t, base.name, got.A, l.name)
			assert.Equal(t, prefixAffinity.name, got.B, l.name)
			require.NotNil(t, got.Operating, "%s against %s: loads from a knee", l.name, base.name)
			assert.Equal(t, roundRobin.name, got.Operating.Sweep, "%s against %s: loads from RoundRobin's knee", l.name, base.name)
			assert.Equal(t, o.factors, got.Operating.Factors, "%s against %s", l.name, base.name)
			x := experiment(l, base, o)
			sameRequests(t, x.Workload, got.Experiment.Workload, l.name+" against "+base.name)
			f := got.Experiment
			x.Workload, f.Workload, x.Workers, f.Workers = nil, nil, 0, 0
			assert.Equal(t, declared(t, x), declared(t, f), "%s against %s", l.name, base.name)
		}
	}
}

// declared is v as a scenario file writes it.
func declared(t *testing.T, v any) string {
	t.Helper()
	b, err := scenario.Default().Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// sameRequests asserts that two workloads draw the same requests, on a
// few seeds and at a low and a high load, to their ends.
func sameRequests(t *testing.T, want, got analysis.Workload, what string) {
	t.Helper()
	require.NotNil(t, got, what)
	for _, load := range []float64{2, 20} {
		for seed := range uint64(3) {
			a, err := want.Source(load, seed)
			require.NoError(t, err)
			b, err := got.Source(load, seed)
			require.NoError(t, err, what)
			n := 0
			for ; ; n++ {
				x, errA := a.Next()
				y, errB := b.Next()
				if errors.Is(errA, io.EOF) || errors.Is(errB, io.EOF) {
					require.ErrorIs(t, errA, io.EOF, "%s: the file's workload ends first, at load %g, seed %d", what, load, seed)
					require.ErrorIs(t, errB, io.EOF, "%s: the file's workload goes on, at load %g, seed %d", what, load, seed)
					break
				}
				require.NoError(t, errA)
				require.NoError(t, errB)
				if !assert.Equal(t, x, y, "%s: request %d at load %g, seed %d", what, n, load, seed) {
					return
				}
			}
			assert.Greater(t, n, 1000, "%s: the workloads drew requests", what)
		}
	}
}
