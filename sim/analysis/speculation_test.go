package analysis

import (
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/stretchr/testify/assert"
)

// A model-error band and a dial keep the speculation (a ×1.1 band scales
// the draft model's step too).
func TestSpeculationKeptByBandAndDial(t *testing.T) {
	r := sim.ReplicaConfig{Speculation: sim.Speculation{Tokens: 4, Acceptance: 0.7, DraftStep: 2 * time.Millisecond}}
	cfg := sim.Config{Speculation: r.Speculation}
	slow := withModel(cfg, func(m costmodel.Model) costmodel.Model { return costmodel.Scaled{Model: m, Factor: 1.1} }, 1.1)
	assert.Equal(t, 4, slow.Speculation.Tokens)
	assert.Equal(t, 2200*time.Microsecond, slow.Speculation.DraftStep)
	fleet := sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(2, r)}}
	assert.Equal(t, 4, DialDecodeStep.Set(fleet, 35).Fleet.Replicas[1].Speculation.Tokens)
}
