package analysis

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/servesim/servesim/sim/stats"
)

// BandVerdict's words: every variant named when it holds; each flip, in
// the band's order, with its interval and verdict; a variant that
// compared no knee, or ran at no loads, says why.
func TestExperimentBandVerdictWords(t *testing.T) {
	holds := ExperimentResult{Verdict: NotImproved, BandHolds: true,
		Band: []VariantVerdict{{Name: "a", Verdict: NotImproved}, {Name: "b", Verdict: NotImproved}}}
	assert.Equal(t, "holds under every model of the band (a, b)", holds.BandVerdict())
	flip := VariantVerdict{Name: "b", Verdict: NotImproved, Improvement: stats.Interval{Center: 0.002, Lo: -0.001, Hi: 0.005, N: 4}}
	rests := ExperimentResult{Verdict: Improved, Band: []VariantVerdict{{Name: "a", Verdict: Improved}, flip}, BandFlip: &flip}
	assert.Equal(t, "rests on the model: under b +0.2 % [-0.1, +0.5] not improved", rests.BandVerdict())
	none := VariantVerdict{Name: "c", Verdict: NoMeasured, Blocks: 6, KneeUnpaired: 6}
	noLoads := VariantVerdict{Name: "d", Verdict: NoMeasured, Blocks: 6, Loads: []float64{}}
	rests.Band = append(rests.Band, none, VariantVerdict{Name: "e", Verdict: Improved}, noLoads)
	assert.Equal(t, "rests on the model: under b +0.2 % [-0.1, +0.5] not improved; "+
		"under c no block's knees were compared (in 6 of 6 blocks both lie beyond the same end of the loads), so no verdict; "+
		"under d no A/B loads were placed (A's knee under it lies below every load of its sweep), so no verdict", rests.BandVerdict())
	assert.Empty(t, ExperimentResult{}.BandVerdict())
}
