package chart

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// fleetCurves sweep a fleet of 2 Atlas replicas behind round robin and
// behind PrefixAffinity, on shared prefixes that one replica's cache
// cannot hold beside its running requests.
func fleetCurves(t *testing.T) []Series {
	t.Helper()
	var out []Series
	for _, r := range []struct {
		name   string
		router sim.Router
	}{{"RoundRobin", sim.RoundRobin{}}, {"PrefixAffinity", sim.PrefixAffinity{}}} {
		c, err := analysis.Sweep{
			Config: sim.Config{
				Fleet:  sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{}), Router: r.router},
				Window: sim.Window{Warmup: 30 * time.Second, Horizon: 4 * time.Minute},
			},
			Workload: analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
				return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: 10 * time.Minute, Arrival: workload.Arrival{Rate: rate},
					Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
			}),
			Grid: analysis.Grid{Loads: []float64{1, 3, 4.5, 6}},
			Reps: 3,
		}.Run()
		require.NoError(t, err)
		out = append(out, Series{Name: r.name, Curve: c})
	}
	return out
}

// The comparison charts render as PNG and SVG and name each series' knee
// with the curve's own figure.
func TestComparisonCharts(t *testing.T) {
	series := fleetCurves(t)
	g, err := Goodputs("Fleet of 2, high reuse", series...)
	require.NoError(t, err)
	h, err := PrefixHitRate("", series...)
	require.NoError(t, err)
	dir := t.TempDir()
	if d := os.Getenv("SERVESIM_CHART_DIR"); d != "" {
		dir = d // keep the images to look at them
	}
	for name, p := range map[string]*plot.Plot{"goodputs": g, "hitrate": h} {
		assertLegendFits(t, p, name)
		require.NoError(t, Save(filepath.Join(dir, name+".svg"), p))
		require.NoError(t, Save(filepath.Join(dir, name+".png"), p))
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		require.NoError(t, err)
		_, err = png.Decode(bytes.NewReader(b))
		require.NoError(t, err)
	}
	// The y axis ends 6 % above the highest goodput bound (the
	// throughput, not drawn here, once set it).
	hi := 0.0
	for _, s := range series {
		hi = math.Max(hi, goodputTop(s.Curve))
	}
	assert.InDelta(t, 1.06*hi, g.Y.Max, 1e-9)
	svg := svgOf(t, g)
	for _, s := range series {
		if s.Curve.Knee.Found {
			assert.Contains(t, svg, s.Name+": knee "+rate(s.Curve.Knee.Load.Center))
		} else {
			assert.Contains(t, svg, s.Name+": no knee inside the sweep")
		}
		assert.Contains(t, svg, s.Name+": goodput, 95 % interval")
	}
	assert.Contains(t, svgOf(t, h), "PrefixAffinity: mean over replications, bars their range")
	assert.Contains(t, svgOf(t, h), "Prefix hit rate vs offered load")
}

// The hit rate is Cached / InputTokens per run, averaged; runs without
// prompt tokens take no part.
func TestHitRateOfRuns(t *testing.T) {
	mean, lo, hi, ok := hitRate([]sim.Summary{{Cached: 50, InputTokens: 100}, {}, {Cached: 30, InputTokens: 100}})
	require.True(t, ok)
	assert.InDelta(t, 0.4, mean, 1e-12)
	assert.Equal(t, 0.3, lo)
	assert.Equal(t, 0.5, hi)
	_, _, _, ok = hitRate([]sim.Summary{{}})
	assert.False(t, ok)
}

func TestComparisonChartsRefuseEmptyInputs(t *testing.T) {
	_, err := Goodputs("x")
	assert.ErrorContains(t, err, "no series")
	_, err = Goodputs("x", Series{Name: "empty", Curve: &analysis.Curve{}})
	assert.ErrorContains(t, err, `series "empty" has no points`)
	_, err = PrefixHitRate("x", Series{Name: "nil"})
	assert.ErrorContains(t, err, `series "nil" has no points`)
}
