package analysis

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/revision"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CurveOf rebuilds a sweep's curve from its runs' summaries.
func TestCurveOfRebuildsTheCurve(t *testing.T) {
	s := Sweep{Config: sim.Config{Window: sim.Window{Warmup: 20 * time.Second, Horizon: 2 * time.Minute}},
		Workload: Poisson(workload.Fixed(2000, 200)), Grid: Grid{Loads: []float64{1, 2, 3}}, Reps: 3, Capacity: 2.69}
	c, err := s.Run()
	require.NoError(t, err)
	var loads []float64
	var runs [][]sim.Summary
	for _, p := range c.Points {
		loads, runs = append(loads, p.Load), append(runs, p.Runs)
	}
	again, err := s.CurveOf(loads, runs)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%+v", *c), fmt.Sprintf("%+v", *again))
	_, err = s.CurveOf(loads, runs[:2])
	assert.ErrorContains(t, err, "3 loads, 2 lists of runs")
}

// The analysis revision is a hash of the analysis sources, stable within
// a build.
func TestAnalysisRevisionIsDerived(t *testing.T) {
	r := AnalysisRevision()
	assert.Regexp(t, `^servesim-analysis/sha256:[0-9a-f]{16}$`, r)
	assert.Equal(t, r, AnalysisRevision())
	var want []string
	for pkg, names := range map[string][]string{
		"sim":           {"summary.go", "window.go", "sample.go", "pools_summary.go", "tiers_summary.go", "scale_summary.go"},
		"sim/stats":     {"dist.go", "quantile.go", "interval.go", "mser.go"},
		"internal/fsum": {"fsum.go"},
		"sim/analysis":  {"curve.go", "classcurve.go", "band.go", "dial.go", "experiment.go", "sizing.go", "retained.go", "day.go"},
	} {
		for _, name := range names {
			want = append(want, "github.com/servesim/servesim/"+pkg+"/"+name)
		}
	}
	slices.Sort(want)
	assert.Equal(t, want, revision.Files(), "every analysis source is hashed, in order")
}
