package costmodel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Erlang's C against closed forms: one server waits with probability ρ,
// two servers offered one erlang with probability 1/3.
func TestErlangC(t *testing.T) {
	for _, rho := range []float64{0.1, 0.5, 0.9} {
		assert.InDelta(t, rho, erlangC(1, rho), 1e-12)
	}
	assert.InDelta(t, 1.0/3, erlangC(2, 1), 1e-12)
	assert.InDelta(t, 0, erlangC(32, 0), 1e-12)
}

// With one seat the qualified load solves ρ·exp(−(μ − λ)·t) = 1 − target.
func TestTTFTQualifiedOnOneSeat(t *testing.T) {
	mu, budget, target := 2.0, 0.5, 0.95
	q := ttftQualified(1, mu, budget, target)
	assert.InDelta(t, 1-target, q/mu*math.Exp(-(mu-q)*budget), 1e-9)
	assert.Zero(t, ttftQualified(1, mu, -0.1, target))
}
