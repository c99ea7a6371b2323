package report

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// verdictResult is B against a baseline whose knee is 2 req/s: improved
// at 1.5 and 2 req/s, worse at 3 (past the knee).
func verdictResult() *analysis.ExperimentResult {
	nan := math.NaN()
	return &analysis.ExperimentResult{
		Hypothesis:      analysis.Hypothesis{Threshold: 0.05},
		BaselineKnee:    2,
		Improvement:     stats.Interval{Center: 0.0723, Lo: 0.0591, Hi: 0.0844},
		Verdict:         analysis.Improved,
		PastImprovement: stats.Interval{Center: -0.1, Lo: nan, Hi: nan},
		PastVerdict:     analysis.Inconclusive,
		Loads: []analysis.LoadResult{
			{Load: 1.5, Improvement: stats.Interval{Center: 0.08, Lo: 0.06, Hi: 0.1}, Verdict: analysis.Improved},
			{Load: 2, Improvement: stats.Interval{Center: 0.07, Lo: 0.055, Hi: 0.09}, Verdict: analysis.Improved},
			{Load: 3, Improvement: stats.Interval{Center: -0.1, Lo: -0.2, Hi: -0.01}, Verdict: analysis.NotImproved},
		},
	}
}

// The verdict sentence examples/routing and examples/run both print, in
// each of its forms: a headline and the loads past the knee; a baseline
// that misses the target everywhere; no improvement measured; several
// baselines with one left out; no verdict.
func TestVerdictLine(t *testing.T) {
	r := verdictResult()
	assert.Equal(t, "improved over RoundRobin at or below its knee (1.5, 2 req/s), +7.2 % [+5.9, +8.4], "+
		"inconclusive past it (3 req/s), -10.0 % (no interval) "+
		"(boundary: B beats the threshold at 1.5, 2 req/s; B is worse than A at 3 req/s)",
		ComparisonLine(r, "RoundRobin"))

	missed := verdictResult()
	missed.BaselineKnee = math.NaN()
	missed.Improvement = stats.Interval{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	missed.Verdict = analysis.NoMeasured
	missed.Loads = missed.Loads[:1]
	assert.Equal(t, "no measured requests over A at 1.5 req/s (where A misses the attainment target), none measured "+
		"(boundary: B beats the threshold at 1.5 req/s)", ComparisonLine(missed, "A"))

	assert.Equal(t, "verdict high: "+ComparisonLine(r, "RoundRobin")+"; and "+ComparisonLine(missed, "LeastLoaded")+"; threshold +5 %",
		VerdictLine("high", []string{"RoundRobin", "LeastLoaded", "Random"}, []*analysis.ExperimentResult{r, missed, nil}, "unused"))
	assert.Equal(t, "verdict ab: "+ComparisonLine(missed, "A")+"; threshold +5 %",
		VerdictLine("ab", []string{"A"}, []*analysis.ExperimentResult{missed}, ""))
	assert.Equal(t, "verdict low: no verdict: RoundRobin's knee was not found",
		VerdictLine("low", []string{"RoundRobin"}, nil, "RoundRobin's knee was not found"))
	assert.Equal(t, "verdict low: no verdict: no loads",
		VerdictLine("low", []string{"RoundRobin", "LeastLoaded"}, []*analysis.ExperimentResult{nil, r}, "no loads"))
}

// On the knee the sentence is the knees and their paired difference,
// with the blocks compared through a bound and those left out.
func TestVerdictLineOnTheKnee(t *testing.T) {
	r := &analysis.ExperimentResult{
		Hypothesis:  analysis.Hypothesis{Metric: analysis.MetricKnee, Threshold: 0.05},
		Blocks:      12,
		KneeA:       stats.Interval{Center: 8.55, Lo: 8.2, Hi: 8.9, N: 11},
		KneeB:       stats.Interval{Center: 9.25, Lo: 9, Hi: 9.5, N: 11},
		KneeDiff:    stats.Interval{Center: 0.7, Lo: 0.4, Hi: 1, N: 11},
		Improvement: stats.Interval{Center: 0.082, Lo: 0.047, Hi: 0.117, N: 11},
		Verdict:     analysis.Improved,
		KneeBounds:  2, KneeUnpaired: 1,
	}
	assert.Equal(t, "improved over RoundRobin on the knee, 8.55 -> 9.25 req/s, paired +0.700 [0.400, 1.000] req/s, +8.2 % [+4.7, +11.7] "+
		"(11 blocks, 2 through a knee beyond the loads; 1 left out, both knees beyond the same end)", ComparisonLine(r, "RoundRobin"))
	assert.Equal(t, "verdict high-reuse: "+ComparisonLine(r, "RoundRobin")+"; threshold +5 %",
		VerdictLine("high-reuse", []string{"RoundRobin"}, []*analysis.ExperimentResult{r}, ""))
}
