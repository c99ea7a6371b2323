package costmodel_test

import (
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// The bare Atlas roofline of 32 sequences at 2,000 context is the chapter's
// floor: weights plus KV, memory-bound.
func TestRooflineBareIsTheFloor(t *testing.T) {
	r := costmodel.Roofline{Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model}
	// KV read of 64,000 context tokens plus the write of 32 new ones.
	want := (35e9 + 64032*81920.0) / 3e12 * 1e3
	near(t, "bare roofline ms", float64(r.StepTime(decodes(32, 2000)))/1e6, want, 1e-6)
}

// "Atlas: 45 ms at 32 sequences of 2,000 context", and the prefill anchor.
func TestAtlasRooflineHitsItsAnchors(t *testing.T) {
	r := costmodel.AtlasRoofline()
	if got := r.StepTime(decodes(32, 2000)); got != 45*time.Millisecond {
		t.Errorf("calibrated decode anchor = %v, want 45ms", got)
	}
	if got := r.StepTime(prefill(2000)); got != 90*time.Millisecond {
		t.Errorf("calibrated prefill anchor = %v, want 90ms", got)
	}
	near(t, "MemEfficiency (about a third)", r.MemEfficiency, 0.30, 0.01)
	near(t, "ComputeEfficiency (three-quarters)", r.ComputeEfficiency, 0.78, 0.01)
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
}

func TestRooflineCalibrateKeepsOverheads(t *testing.T) {
	r := costmodel.Roofline{
		Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model,
		StepOverhead: 5 * time.Millisecond, SeqOverhead: 100 * time.Microsecond,
	}
	c, err := r.Calibrate(decodes(32, 2000), 45*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.StepTime(decodes(32, 2000)); got != 45*time.Millisecond {
		t.Errorf("calibrated with overheads = %v, want 45ms", got)
	}
	if c.StepOverhead != r.StepOverhead || c.SeqOverhead != r.SeqOverhead {
		t.Error("Calibrate changed the overheads")
	}
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
			if got != tc.r {
				t.Errorf("a failed Calibrate changed the roofline: %+v", got)
			}
		})
	}
}
