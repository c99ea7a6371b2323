package report

import (
	"math"
	"testing"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/stretchr/testify/assert"
)

func TestPairedDiff(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		in   stats.Interval
		want string
	}{
		{stats.Interval{Center: 31.74, Lo: 19.41, Hi: 44.02, N: 8}, "+31.7 [+19.4, +44.0]"},
		{stats.Interval{Center: -11.3, Lo: -11.8, Hi: -10.8, N: 12}, "-11.3 [-11.8, -10.8]"},
		{stats.Interval{Center: 0, Lo: 0, Hi: 0, N: 4}, "+0.0 [+0.0, +0.0]"},
		{stats.Interval{Center: 5, Lo: nan, Hi: nan, N: 1}, "+5.0"},
		{stats.Interval{Center: nan, Lo: nan, Hi: nan, N: 3}, "-"},
		{stats.Interval{}, "-"},
	} {
		assert.Equal(t, c.want, PairedDiff(c.in), "%+v", c.in)
	}
}

// BandVerdicts: one line a variant, its verdict and paired knee
// difference, or why it has none.
func TestBandVerdicts(t *testing.T) {
	nan := math.NaN()
	knee := analysis.Hypothesis{Metric: analysis.MetricKnee}
	r := &analysis.ExperimentResult{Hypothesis: knee, Band: []analysis.VariantVerdict{
		{Name: "atlas-linear", Blocks: 4, Verdict: analysis.Improved,
			KneeDiff:    stats.Interval{Center: 1.0164, Lo: 0.9021, Hi: 1.1302, N: 4},
			Improvement: stats.Interval{Center: 0.501, Lo: 0.46, Hi: 0.542, N: 4}},
		{Name: "step times ×1.1", Blocks: 4, Verdict: analysis.NoMeasured, KneeUnpaired: 4,
			KneeDiff: stats.Interval{Center: nan, Lo: nan, Hi: nan}, Improvement: stats.Interval{Center: nan, Lo: nan, Hi: nan}},
		{Name: "atlas-profiled", Blocks: 2, Verdict: analysis.Inconclusive,
			KneeDiff:    stats.Interval{Center: 0.25, Lo: nan, Hi: nan, N: 1},
			Improvement: stats.Interval{Center: 0.1, Lo: nan, Hi: nan, N: 1}},
	}}
	assert.Equal(t, []string{
		"under atlas-linear: improved on the knee, paired +1.016 [0.902, 1.130] req/s, +50.1 % [+46.0, +54.2] (4 blocks)",
		"under step times ×1.1: no verdict on the knee: in 4 of 4 blocks A's and B's knees both lie beyond the same end of the A/B loads",
		"under atlas-profiled: inconclusive on the knee, paired +0.250 req/s, +10.0 % (no interval) (2 blocks)",
	}, BandVerdicts(r))
	assert.Nil(t, BandVerdicts(&analysis.ExperimentResult{}))

	// A variant at loads of its own says which; one at the nominal loads
	// does not.
	r = &analysis.ExperimentResult{Hypothesis: knee, Loads: []analysis.LoadResult{{Load: 6}, {Load: 9}}, Band: []analysis.VariantVerdict{
		{Name: "atlas-roofline", Blocks: 2, Loads: []float64{6.64, 11.4}, Verdict: analysis.NotImproved,
			KneeDiff:    stats.Interval{Center: -0.3, Lo: -0.58, Hi: -0.01, N: 2},
			Improvement: stats.Interval{Center: -0.031, Lo: -0.061, Hi: -0.001, N: 2}},
		{Name: "atlas-linear", Blocks: 2, Loads: []float64{6, 9}, Verdict: analysis.NoMeasured, KneeUnpaired: 2,
			KneeDiff: stats.Interval{Center: nan, Lo: nan, Hi: nan}, Improvement: stats.Interval{Center: nan, Lo: nan, Hi: nan}},

		{Name: "step times ×1.1", Blocks: 2, Loads: []float64{}, Verdict: analysis.NoMeasured,
			KneeDiff: stats.Interval{Center: nan, Lo: nan, Hi: nan}, Improvement: stats.Interval{Center: nan, Lo: nan, Hi: nan}},
	}}
	assert.Equal(t, []string{
		"under atlas-roofline at 6.64-11.4 req/s: not improved on the knee, paired -0.300 [-0.580, -0.010] req/s, -3.1 % [-6.1, -0.1] (2 blocks)",
		"under atlas-linear: no verdict on the knee: in 2 of 2 blocks A's and B's knees both lie beyond the same end of the A/B loads",
		"under step times ×1.1: no verdict: no A/B loads were placed (A's knee under it lies below every load of its sweep)",
	}, BandVerdicts(r))

	// On another metric (examples/classes: a class's attainment) a line
	// reads the verdict and the improvement, no knee.
	r = &analysis.ExperimentResult{Hypothesis: analysis.Hypothesis{Metric: analysis.MetricClassAttainment("interactive")},
		Loads: []analysis.LoadResult{{Load: 2}, {Load: 2.4}}, Band: []analysis.VariantVerdict{
			{Name: "atlas-linear", Blocks: 6, Loads: []float64{2, 2.4}, Verdict: analysis.Inconclusive,
				KneeDiff:    stats.Interval{Center: nan, Lo: nan, Hi: nan},
				Improvement: stats.Interval{Center: 0.023, Lo: 0.006, Hi: 0.041, N: 6}},
			{Name: "step times ×0.9", Blocks: 6, Loads: []float64{2.26, 2.72}, Verdict: analysis.Improved,
				KneeDiff:    stats.Interval{Center: nan, Lo: nan, Hi: nan},
				Improvement: stats.Interval{Center: 0.115, Lo: 0.07, Hi: 0.159, N: 6}},
			{Name: "step times ×1.1", Blocks: 6, Loads: []float64{2, 2.4}, Verdict: analysis.NoMeasured,
				KneeDiff: stats.Interval{Center: nan, Lo: nan, Hi: nan}, Improvement: stats.Interval{Center: nan, Lo: nan, Hi: nan}},
		}}
	assert.Equal(t, []string{
		"under atlas-linear: inconclusive, +2.3 % [+0.6, +4.1] (6 blocks)",
		"under step times ×0.9 at 2.26-2.72 req/s: improved, +11.5 % [+7.0, +15.9] (6 blocks)",
		"under step times ×1.1: no measured requests in 6 blocks",
	}, BandVerdicts(r))
}
