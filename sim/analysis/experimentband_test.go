package analysis

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
)

// A band whose only shape is the nominal model reruns the very same
// runs: every figure of the variant equals the nominal one, and the
// verdict holds.
func TestExperimentBandOfTheNominalModelHolds(t *testing.T) {
	x := kneeExperiment(sim.Config{Engine: engine.Config{MaxSeqs: 8}})
	x.ModelError = ModelError{Shapes: []costmodel.NamedModel{{Name: "same", Model: costmodel.Frozen{}}}}
	res, err := x.Run()
	require.NoError(t, err)
	require.Len(t, res.Band, 1)
	v := res.Band[0]
	assert.Equal(t, "same", v.Name)
	assert.Equal(t, res.Improvement, v.Improvement)
	assert.Equal(t, res.KneeDiff, v.KneeDiff)
	assert.Equal(t, res.Verdict, v.Verdict)
	assert.Equal(t, x.WithDefaults().Blocks, v.Blocks)
	assert.True(t, res.BandHolds)
	assert.Nil(t, res.BandFlip)
	assert.Equal(t, "holds under every model of the band (same)", res.BandVerdict())

	nominal := x
	nominal.ModelError = ModelError{}
	plain, err := nominal.Run()
	require.NoError(t, err)
	res.Band, res.BandHolds = nil, false
	assert.Equal(t, printed(plain), printed(res), "the band adds to the result and changes nothing of it")
	assert.Empty(t, plain.BandVerdict())
}

// B differs from A only in its cost model (a 35 ms decode step against
// 45 ms): its knee is higher, but under a band variant that gives both
// the same model the advantage vanishes (the paired difference is
// exactly 0), and the verdict flips there, naming the variant. The ±10 %
// variants scale both and keep B's advantage.
func TestExperimentBandFlipsWhereTheAdvantageVanishes(t *testing.T) {
	x := kneeExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = ModelError{Scale: 0.1, Shapes: []costmodel.NamedModel{{Name: "flat-45ms", Model: costmodel.Frozen{}}}}
	res, err := x.Run()
	require.NoError(t, err)
	require.Equal(t, Improved, res.Verdict, "%+v", res)
	require.Len(t, res.Band, 3)
	assert.Equal(t, []string{"step times ×1.1", "step times ×0.9", "flat-45ms"}, []string{res.Band[0].Name, res.Band[1].Name, res.Band[2].Name})
	flat := res.Band[2]
	assert.Equal(t, 0.0, flat.KneeDiff.Center)
	assert.Equal(t, 0.0, flat.Improvement.Center)
	assert.Equal(t, NotImproved, flat.Verdict)
	assert.False(t, res.BandHolds)
	require.NotNil(t, res.BandFlip)
	first := 0
	for res.Band[first].Verdict == res.Verdict {
		first++
	}
	assert.Equal(t, res.Band[first], *res.BandFlip, "the first variant that flips")
	assert.Contains(t, res.BandVerdict(), "rests on the model: under "+res.BandFlip.Name)
	assert.Contains(t, res.BandVerdict(), res.BandFlip.Verdict.String())
	t.Log(res.BandVerdict())

	again, err := x.Run()
	require.NoError(t, err)
	assert.Equal(t, printed(res), printed(again), "deterministic")
	x.Workers = 1
	one, err := x.Run()
	require.NoError(t, err)
	assert.Equal(t, printed(res), printed(one), "whatever the workers")
}

// printed is r in words, its BandFlip followed (NaN is not equal to
// itself, so the results are compared printed).
func printed(r *ExperimentResult) string {
	k := *r
	k.Hypothesis.Metric.Of = nil
	flip := "<nil>"
	if k.BandFlip != nil {
		flip = fmt.Sprintf("%+v", *k.BandFlip)
	}
	k.BandFlip = nil
	return fmt.Sprintf("%+v flip %s", k, flip)
}

// ModelError.Reps runs each variant on the first blocks only.
func TestExperimentBandReps(t *testing.T) {
	x := kneeExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = ModelError{Shapes: []costmodel.NamedModel{{Name: "flat-45ms", Model: costmodel.Frozen{}}}, Reps: 2}
	res, err := x.Run()
	require.NoError(t, err)
	require.Len(t, res.Band, 1)
	assert.Equal(t, 2, res.Band[0].Blocks)
	assert.Equal(t, 2, res.Band[0].KneeDiff.N+res.Band[0].KneeUnpaired)
}

func TestExperimentBandValidate(t *testing.T) {
	x := kneeExperiment(sim.Config{})
	x.ModelError = ModelError{Scale: 0.1, Reps: 1}
	assert.ErrorContains(t, x.Validate(), "ModelError.Reps")
	x.ModelError = ModelError{Scale: 2}
	assert.ErrorContains(t, x.Validate(), "ModelError.Scale")
	x = kneeExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = AtlasBand(0.1)
	assert.ErrorContains(t, x.Validate(), "Experiment.B: sim: ModelError.Calibrated")
	x = kneeExperiment(sim.Config{})
	x.ModelError = AtlasBand(0.1)
	require.NoError(t, x.Validate())
	_, err := x.ResultOf(nil)
	assert.ErrorIs(t, err, ErrBandedElsewhere)
}
