package costmodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// measured is a small measured table: decode steps flatten as the batch
// grows, prefill steps are the frozen 20 + 0.035·n ms at three sizes.
var measured = costmodel.Table{
	Decode:  []costmodel.TablePoint{{X: 1, Ms: 30}, {X: 8, Ms: 34}, {X: 32, Ms: 45}, {X: 64, Ms: 60}},
	Prefill: []costmodel.TablePoint{{X: 256, Ms: 28.96}, {X: 1024, Ms: 55.84}, {X: 2048, Ms: 91.68}},
}

func build(tb testing.TB, tab costmodel.Table) *costmodel.TableModel {
	tb.Helper()
	m, err := tab.Build()
	require.NoError(tb, err)
	return m
}

func TestTableIsExactAtItsSamples(t *testing.T) {
	m := build(t, measured)
	for _, p := range measured.Decode {
		d, w := m.Lookup(decodes(int(p.X), 2000))
		assert.Equal(t, msDuration(p.Ms), d, "decode at %v sequences", p.X)
		assert.Empty(t, w)
	}
	for _, p := range measured.Prefill {
		d, w := m.Lookup(prefill(int(p.X)))
		assert.Equal(t, msDuration(p.Ms), d, "prefill of %v tokens", p.X)
		assert.Empty(t, w)
	}
}

// A mixed step pays both curves, like Frozen: 45 + 28.96 ms.
func TestTableMixedStepPaysBothCurves(t *testing.T) {
	assert.Equal(t, 73960*time.Microsecond, build(t, measured).StepTime(mixed(32, 2000, 256)))
}

func TestTableInterpolatesBetweenSamples(t *testing.T) {
	// Halfway between 8 (34 ms) and 32 (45 ms) sequences.
	d, w := build(t, measured).Lookup(decodes(20, 0))
	assert.Equal(t, 39500*time.Microsecond, d)
	assert.Empty(t, w)
}

func TestTableWarnsOutsideItsSamples(t *testing.T) {
	m := build(t, measured)
	// Beyond the last prefill sample: the last slope, 0.035 ms/token.
	d, w := m.Lookup(prefill(4096))
	assert.InDelta(t, 91.68+0.035*2048, float64(d)/1e6, 1e-6, "extrapolated prefill ms")
	assert.Contains(t, string(w), "Table.Prefill")
	assert.Contains(t, string(w), "4096 tokens")
	assert.Contains(t, string(w), "256–2048")
	assert.Contains(t, string(w), "extrapolated")
	// Below the first prefill sample: held at it.
	d, w = m.Lookup(prefill(100))
	assert.InDelta(t, 28.96, float64(d)/1e6, 1e-6, "held prefill ms")
	assert.Contains(t, string(w), "held at the first sample")
	// Both curves out at once: both warnings.
	_, w = m.Lookup(mixed(100, 0, 10))
	assert.Contains(t, string(w), "Table.Decode")
	assert.Contains(t, string(w), "Table.Prefill")
	// StepTime prices the same without the warning.
	assert.Equal(t, msDuration(91.68+0.035*2048), m.StepTime(prefill(4096)))
}

func TestTableWithOneSampleIsFlat(t *testing.T) {
	m := build(t, costmodel.Table{
		Decode:  []costmodel.TablePoint{{X: 32, Ms: 45}},
		Prefill: []costmodel.TablePoint{{X: 2000, Ms: 90}},
	})
	for _, b := range []costmodel.Batch{decodes(1, 0), decodes(64, 0)} {
		assert.Equal(t, 45*time.Millisecond, m.StepTime(b), "%d sequences", len(b.Decode))
	}
}
