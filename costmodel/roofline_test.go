package costmodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// The bare Atlas roofline of 32 sequences at 2,000 context is the chapter's
// floor: weights plus KV, memory-bound.
func TestRooflineBareIsTheFloor(t *testing.T) {
	r := costmodel.Roofline{Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model}
	// KV read of 64,000 context tokens plus the write of 32 new ones.
	want := (35e9 + 64032*81920.0) / 3e12 * 1e3
	assert.InDelta(t, want, float64(r.StepTime(decodes(32, 2000)))/1e6, 1e-6, "bare roofline ms")
}

// "Atlas: 45 ms at 32 sequences of 2,000 context", and the prefill anchor.
func TestAtlasRooflineHitsItsAnchors(t *testing.T) {
	r := costmodel.AtlasRoofline()
	assert.Equal(t, 45*time.Millisecond, r.StepTime(decodes(32, 2000)), "decode anchor")
	assert.Equal(t, 90*time.Millisecond, r.StepTime(prefill(2000)), "prefill anchor")
	assert.InDelta(t, 0.30, r.MemEfficiency, 0.01, "MemEfficiency (about a third)")
	assert.InDelta(t, 0.78, r.ComputeEfficiency, 0.01, "ComputeEfficiency (three-quarters)")
	assert.NoError(t, r.Validate())
}

func TestRooflineCalibrateKeepsOverheads(t *testing.T) {
	r := costmodel.Roofline{
		Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model,
		StepOverhead: 5 * time.Millisecond, SeqOverhead: 100 * time.Microsecond,
	}
	c, err := r.Calibrate(decodes(32, 2000), 45*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 45*time.Millisecond, c.StepTime(decodes(32, 2000)))
	assert.Equal(t, r.StepOverhead, c.StepOverhead)
	assert.Equal(t, r.SeqOverhead, c.SeqOverhead)
}

func TestRooflineCalibrateRefusesTheImpossible(t *testing.T) {
	r := costmodel.Roofline{Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model}
	for _, tc := range []struct {
		name     string
		r        costmodel.Roofline
		anchor   costmodel.Batch
		measured time.Duration
		want     string
	}{
		{"faster than the roof", r, decodes(32, 2000), 5 * time.Millisecond, "MemEfficiency"},
		{"empty anchor", r, costmodel.Batch{}, 45 * time.Millisecond, "non-empty"},
		{"invalid anchor", r, decodes(1, -5), 45 * time.Millisecond, "Batch.Decode[0]"},
		{"no time left after overheads", costmodel.Roofline{Hardware: r.Hardware, Model: r.Model, StepOverhead: time.Second}, decodes(1, 0), 45 * time.Millisecond, "overheads"},
		{"the other roof is slower", costmodel.Roofline{Hardware: r.Hardware, Model: r.Model, MemEfficiency: 0.01, ComputeEfficiency: 0.05}, prefill(2000), 90 * time.Millisecond, "other roof"},
		{"invalid roofline", costmodel.Roofline{}, decodes(1, 0), 45 * time.Millisecond, "Roofline.Hardware.MemBandwidth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.Calibrate(tc.anchor, tc.measured)
			errorMentions(t, err, tc.want)
			assert.Equal(t, tc.r, got, "a failed Calibrate must not change the roofline")
		})
	}
}
