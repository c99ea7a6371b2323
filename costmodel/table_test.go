package costmodel_test

import (
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
)

// measured is a small measured table: decode steps flatten as the batch
// grows, prefill steps are the frozen 20 + 0.035·n ms at three sizes.
var measured = costmodel.Table{
	Decode:  []costmodel.Point{{X: 1, Ms: 30}, {X: 8, Ms: 34}, {X: 32, Ms: 45}, {X: 64, Ms: 60}},
	Prefill: []costmodel.Point{{X: 256, Ms: 28.96}, {X: 1024, Ms: 55.84}, {X: 2048, Ms: 91.68}},
}

func build(tb testing.TB, tab costmodel.Table) *costmodel.TableModel {
	tb.Helper()
	m, err := tab.Build()
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestTableIsExactAtItsSamples(t *testing.T) {
	m := build(t, measured)
	for _, p := range measured.Decode {
		d, w := m.Lookup(decodes(int(p.X), 2000))
		if d != msDuration(p.Ms) || w != "" {
			t.Errorf("decode at %v sequences = %v %q, want %v ms and no warning", p.X, d, w, p.Ms)
		}
	}
	for _, p := range measured.Prefill {
		d, w := m.Lookup(prefill(int(p.X)))
		if d != msDuration(p.Ms) || w != "" {
			t.Errorf("prefill of %v tokens = %v %q, want %v ms and no warning", p.X, d, w, p.Ms)
		}
	}
}

// A mixed step pays both curves, like Frozen: 45 + 28.96 ms.
func TestTableMixedStepPaysBothCurves(t *testing.T) {
	if got := build(t, measured).StepTime(mixed(32, 2000, 256)); got != 73960*time.Microsecond {
		t.Errorf("mixed step = %v, want 73.96ms", got)
	}
}

func TestTableInterpolatesBetweenSamples(t *testing.T) {
	// Halfway between 8 (34 ms) and 32 (45 ms) sequences.
	d, w := build(t, measured).Lookup(decodes(20, 0))
	if d != 39500*time.Microsecond || w != "" {
		t.Errorf("decode at 20 sequences = %v %q, want 39.5ms, no warning", d, w)
	}
}

func TestTableWarnsOutsideItsSamples(t *testing.T) {
	m := build(t, measured)
	// Beyond the last prefill sample: the last slope, 0.035 ms/token.
	d, w := m.Lookup(prefill(4096))
	near(t, "extrapolated prefill ms", float64(d)/1e6, 91.68+0.035*2048, 1e-6)
	mentions(t, string(w), "Table.Prefill", "4096 tokens", "256–2048", "extrapolated")
	// Below the first prefill sample: held at it.
	d, w = m.Lookup(prefill(100))
	near(t, "held prefill ms", float64(d)/1e6, 28.96, 1e-6)
	mentions(t, string(w), "held at the first sample")
	// Both curves out at once: both warnings.
	_, w = m.Lookup(mixed(100, 0, 10))
	mentions(t, string(w), "Table.Decode", "Table.Prefill")
	// StepTime prices the same without the warning.
	if got := m.StepTime(prefill(4096)); got != msDuration(91.68+0.035*2048) {
		t.Errorf("StepTime(4096-token prefill) = %v", got)
	}
}

func TestTableWithOneSampleIsFlat(t *testing.T) {
	m := build(t, costmodel.Table{
		Decode:  []costmodel.Point{{X: 32, Ms: 45}},
		Prefill: []costmodel.Point{{X: 2000, Ms: 90}},
	})
	for _, b := range []costmodel.Batch{decodes(1, 0), decodes(64, 0)} {
		if got := m.StepTime(b); got != 45*time.Millisecond {
			t.Errorf("single-sample decode curve at %d = %v, want 45ms", len(b.Decode), got)
		}
	}
}
