package stats

import (
	"testing"

	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
)

// MSER-5 cuts a transient that decays over the first 200 observations of a
// stationary series, and cuts (almost) nothing from a series without one.
func TestMSER5FindsTheTransient(t *testing.T) {
	rng := workload.NewStream(1, "test")
	y := make([]float64, 2000)
	for i := range y {
		y[i] = 10 + rng.NormFloat64()
		if i < 200 {
			y[i] += 30 * float64(200-i) / 200
		}
	}
	d := MSER5(y)
	assert.GreaterOrEqual(t, d, 150)
	assert.LessOrEqual(t, d, 260)
	for i := range y {
		y[i] = 10 + rng.NormFloat64()
	}
	assert.Less(t, MSER5(y), 100)
	assert.Equal(t, 0, MSER5([]float64{1, 2, 3}))
}
