package costmodel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

// named is a model with a name for subtests.
type named struct {
	name string
	m    costmodel.Model
}

// builtins lists one valid instance of every model in the package.
func builtins(tb testing.TB) []named {
	tb.Helper()
	fit, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(costmodel.NewLinear3(10, 0.035, 0.5), 300, 0.02))
	require.NoError(tb, err)
	return []named{
		{"Frozen", costmodel.Frozen{}},
		{"Linear3", costmodel.NewLinear3(10, 0.035, 0.5)},
		{"LinearAll", costmodel.Linear{PerStep: 1, PerSeq: 0.1, PerDecodeToken: 0.2, PerDecodeContext: 1e-4, PerPrefillToken: 0.03, PerPrefillAttention: 1e-6}},
		{"LinearTiny", costmodel.Linear{PerDecodeContext: 1e-9}},
		{"RooflineBare", costmodel.Roofline{Hardware: costmodel.AtlasTP4().Hardware, Model: costmodel.AtlasTP4().Model}},
		{"AtlasRoofline", costmodel.AtlasRoofline()},
		{"Table", build(tb, measured)},
		{"Fit", fit.Linear},
		{"ScaledFrozen", costmodel.Scaled{Factor: 1.1}},
		{"ScaledRoofline", costmodel.Scaled{Model: costmodel.AtlasRoofline(), Factor: 0.9}},
	}
}

func TestEveryBuiltInModelPassesTheConformanceCheck(t *testing.T) {
	for _, n := range builtins(t) {
		t.Run(n.name, func(t *testing.T) {
			assert.NoError(t, costmodeltest.Check(n.m))
		})
	}
}

// StepTime runs once per simulated step: it must not allocate.
func TestStepTimeDoesNotAllocate(t *testing.T) {
	b := mixed(31, 2000, 256)
	for _, n := range builtins(t) {
		allocs := testing.AllocsPerRun(100, func() { n.m.StepTime(b) })
		assert.Zero(t, allocs, "%s.StepTime allocations per call", n.name)
	}
}

func BenchmarkStepTime(b *testing.B) {
	batch := mixed(31, 2000, 256)
	for _, n := range builtins(b) {
		b.Run(n.name, func(b *testing.B) {
			for b.Loop() {
				n.m.StepTime(batch)
			}
		})
	}
}
