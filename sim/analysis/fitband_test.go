package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// visitedSteps is every step of one run, for a fit's coverage and error.
type visitedSteps struct{ shapes costmodel.Shapes }

func (v *visitedSteps) Observe(*sim.Record) {}
func (v *visitedSteps) ObserveStep(s *sim.Step) {
	for one := range s.All() {
		v.shapes.Add(costmodel.Batch{Prefill: one.Prefill, Decode: one.Decode, Verify: one.Verify}, 1)
	}
}

// A user fits a model to steps measured on the shapes a run visits and
// sweeps it: the band is the fit's error, with no number chosen. The
// "GPU" is AtlasLinear with 2 % multiplicative noise, measured on 300
// shapes drawn from the visited ones; a relative fit's error there is the
// noise's 95 % prediction interval, t·σ·√(1 + h) ≈ 1.97 × 2 % (σ
// estimated on 294 degrees of freedom within ±8 % at two standard
// errors), and the sweep under FitBand is the sweep under the ModelError
// of that scale declared by hand, figure for figure.
func TestFitBandIsTheFitsError(t *testing.T) {
	gpu := costmodel.AtlasLinear()
	cfg := sim.Config{Model: gpu, Window: sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}}
	src, err := atlasWorkload(1.5, 1)
	require.NoError(t, err)
	var v visitedSteps
	_, err = sim.Run(cfg, src, &v)
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(3, 3))
	var samples []costmodel.Sample
	for _, b := range v.shapes.Draw(rng, 300) {
		ms := float64(gpu.StepTime(b)) * (1 + 0.02*rng.NormFloat64())
		samples = append(samples, costmodel.Sample{Batch: b, Time: time.Duration(ms)})
	}
	res, err := costmodel.Fit{Terms: costmodel.AllTerms, Relative: true, Visited: &v.shapes}.Run(samples)
	require.NoError(t, err)
	e := res.ErrorOn(&v.shapes)
	t.Logf("%v", e)
	assert.InDelta(t, 0.0394, e.Scale, 0.0032, "Scale")
	assert.Less(t, e.Outside, 0.05)

	band, err := FitBand(e)
	require.NoError(t, err)
	assert.Equal(t, ModelError{Scale: e.Scale}, band)

	sweep := func(m ModelError) *Curve {
		c, err := Sweep{Config: sim.Config{Model: res.Linear, Window: cfg.Window}, Workload: atlasWorkload,
			Grid: Grid{Loads: []float64{1, 1.5, 2, 2.5}}, Reps: 2, ModelError: m}.Run()
		require.NoError(t, err)
		require.NotNil(t, c.Band)
		return c
	}
	fitted, declared := sweep(band), sweep(ModelError{Scale: e.Scale})
	require.Len(t, fitted.Band.Variants, 2)
	for i, fv := range fitted.Band.Variants {
		dv := declared.Band.Variants[i]
		assert.Equal(t, dv.Name, fv.Name)
		sameCurve(t, dv.Curve, fv.Curve)
	}
	bandOf := func(b *Band) string {
		return fmt.Sprintf("%+v %+v %+v %v %+v", b.Declared, b.Knee, b.Peak, b.Fragile, b.Mover)
	}
	sameBytes(t, []byte(bandOf(declared.Band)), []byte(bandOf(fitted.Band)))
	fitted.Band, declared.Band = nil, nil
	sameCurve(t, declared, fitted)
}

// FitBand refuses an estimate no band can rest on, saying why.
func TestFitBandRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    costmodel.FitError
		want string
	}{
		{"none", costmodel.FitError{}, "no visited steps"},
		{"unmeasured", costmodel.FitError{Steps: 10, Confidence: 0.95, Scale: math.Inf(1), Outside: 0.05, Unmeasured: "visited steps reach decodes 128"}, "unmeasured on every visited step: visited steps reach decodes 128"},
		{"too wide", costmodel.FitError{Steps: 10, Confidence: 0.95, Scale: 1.2}, "±120 %, beyond any band"},
		{"outside", costmodel.FitError{Steps: 100, Confidence: 0.95, Scale: 0.2, Outside: 0.06}, "6.0 % of the 100 visited steps lie outside the fit's samples, more than 1 − confidence (5 %)"},
		{"outside and unmeasured", costmodel.FitError{Steps: 100, Confidence: 0.95, Scale: 0.2, Outside: 0.5, Unmeasured: "visited steps reach decodes 128"}, "50.0 % of the 100 visited steps lie outside the fit's samples (visited steps reach decodes 128), more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := FitBand(tc.e)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, m.Declared())
		})
	}
	m, err := FitBand(costmodel.FitError{Steps: 100, Confidence: 0.95, Scale: 0.2, Outside: 0.05})
	require.NoError(t, err)
	assert.Equal(t, ModelError{Scale: 0.2}, m)
}
