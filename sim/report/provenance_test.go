package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/report"
)

// A card priced by a kernel profile says which GPU and software the
// profile timed, when, and what the model declares rather than measures.
func TestCardRecordsTheProfilesProvenance(t *testing.T) {
	curve := []costmodel.KernelPoint{{X: 1, Us: 10}, {X: 64, Us: 20}}
	p := costmodel.Profile{
		Dense:        map[string][]costmodel.KernelPoint{"k": curve},
		PerSequence:  map[string][]costmodel.KernelPoint{"head": curve},
		Attention:    []costmodel.AttentionPoint{{PrefillChunk: 16, Us: 5}, {Decodes: 1, DecodeContext: 16, Us: 6}, {PrefillChunk: 16, Decodes: 1, DecodeContext: 16, Us: 8}},
		LayerKernels: []string{"k"}, SequenceKernels: []string{"head"}, Layers: 32,
		Provenance: costmodel.Provenance{GPU: "Test GPU", Framework: "vLLM 0.19.0", ProfiledAt: "2026-04-24"},
	}
	m, err := p.Build()
	require.NoError(t, err)
	s := report.SystemOf(sim.Config{Model: m})
	assert.Equal(t, "*costmodel.ProfileModel", s.Model)
	assert.Contains(t, s.ModelSetup, report.Setting{Name: "profile GPU", Value: "Test GPU"})
	assert.Contains(t, s.ModelSetup, report.Setting{Name: "profile software", Value: "vLLM 0.19.0"})
	assert.Contains(t, s.ModelSetup, report.Setting{Name: "profiled at", Value: "2026-04-24"})
	assert.Contains(t, s.ModelSetup, report.Setting{Name: "declared", Value: "32 decoder layers (declared; the profile times one)"})
	assert.Contains(t, s.ModelSetup, report.Setting{Name: "declared", Value: "TP 1: no collective"})
	for _, row := range s.ModelSetup {
		assert.NotEqual(t, "profile model", row.Name, "an unstated field is left out")
	}
	assert.Equal(t, s.ModelSetup, report.SystemOf(sim.Config{Model: costmodel.Frozen{}, Fleet: sim.Fleet{Replicas: []sim.ReplicaConfig{{Model: m}, {Model: m}}}}).ModelSetup,
		"a fleet of profiled replicas lists the same rows")
}
