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
	assert.Equal(t, x.ModelError, res.ModelError, "the result says what was declared")
	res.Band, res.BandHolds, res.ModelError = nil, false, ModelError{}
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

// A model that moves both knees above the experiment's loads leaves the
// variant nearly without a verdict (both knees beyond the same end in
// most blocks); the same variant at its own loads, the nominal ones
// scaled by the model's speed-up, compares every block and keeps B's
// advantage, which the ×0.7 scale preserves (B's step is 35/45 of A's
// under it too). (×1.3 is infeasible here: its largest mixed step,
// 1.3 × 136.6 ms, breaks the 150 ms ITL bound at any load.)
func TestExperimentBandLoadsFollowTheModel(t *testing.T) {
	x := kneeExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = ModelError{Scale: 0.3}
	res, err := x.Run()
	require.NoError(t, err)
	require.Equal(t, Improved, res.Verdict, "%+v", res)
	fast := res.Band[1]
	require.Equal(t, "step times ×0.7", fast.Name)
	assert.Equal(t, x.Loads, fast.Loads)
	assert.GreaterOrEqual(t, fast.KneeUnpaired, x.Blocks/2, "at the nominal loads both knees lie above them in most blocks")

	x.BandLoads = map[string][]float64{"step times ×0.7": make([]float64, len(x.Loads))}
	for i, l := range x.Loads {
		x.BandLoads["step times ×0.7"][i] = l / 0.7
	}
	own, err := x.Run()
	require.NoError(t, err)
	fast = own.Band[1]
	assert.Equal(t, x.BandLoads["step times ×0.7"], fast.Loads)
	assert.Equal(t, 0, fast.KneeUnpaired)
	assert.Equal(t, x.Blocks, fast.KneeDiff.N)
	assert.Equal(t, Improved, fast.Verdict, "%+v", fast)
	assert.Equal(t, fmt.Sprintf("%+v", res.Band[0]), fmt.Sprintf("%+v", own.Band[0]), "a variant BandLoads does not name runs at Loads, unchanged")
	own.Band, res.Band = nil, nil
	own.BandHolds, res.BandHolds, own.BandFlip, res.BandFlip = false, false, nil, nil
	assert.Equal(t, printed(res), printed(own), "the nominal result does not depend on the band's loads")
}

func TestExperimentBandLoadsValidate(t *testing.T) {
	x := kneeExperiment(sim.Config{})
	x.ModelError = AtlasBand(0.1)
	x.BandLoads = map[string][]float64{"atlas-lineer": {1, 2}}
	assert.ErrorContains(t, x.Validate(), `Experiment.BandLoads["atlas-lineer"]: the model band (step times ±10 %, atlas-linear, atlas-roofline, atlas-profiled) has no such variant; its variants are "step times ×1.1", "step times ×0.9", "atlas-linear"`)
	x.BandLoads = map[string][]float64{"atlas-linear": {2}}
	assert.ErrorContains(t, x.Validate(), `Experiment.BandLoads["atlas-linear"] must hold 2 loads or more`)
	x.BandLoads = map[string][]float64{"step times ×0.9": {1, -2}}
	assert.ErrorContains(t, x.Validate(), `Experiment.BandLoads["step times ×0.9"][1] must be a positive finite rate, got -2`)
	x.BandLoads = map[string][]float64{"atlas-linear": {1, 2}, "step times ×1.1": {0.9, 1.8}}
	assert.NoError(t, x.Validate())
}

// BandLoads places each variant's loads as the nominal ones are placed:
// the factors times that variant's own knee.
func TestBandLoadsFromASweep(t *testing.T) {
	s := Sweep{Config: sim.Config{Window: sim.Window{Warmup: 10 * time.Second, Horizon: 2 * time.Minute}},
		Workload: atlasWorkload, Grid: Grid{Start: 0.5}, Reps: 2, ModelError: ModelError{Scale: 0.05}}
	c, err := s.Run()
	require.NoError(t, err)
	require.NotNil(t, c.Band)
	loads := BandLoads(c, []float64{0.5, 1})
	require.Len(t, loads, 2)
	for _, v := range c.Band.Variants {
		require.True(t, v.Curve.Knee.Found, v.Name)
		k := v.Curve.Knee.Load.Center
		assert.Equal(t, []float64{0.5 * k, k}, loads[v.Name], v.Name)
	}
	assert.Less(t, loads["step times ×1.05"][1], c.Knee.Load.Center, "a slower model's knee is lower")
	assert.Greater(t, loads["step times ×0.95"][1], c.Knee.Load.Center)
	assert.Nil(t, BandLoads(&Curve{}, []float64{1}), "no band, no loads")
}

// A scale variant is named by its factor as a reader writes it, not by
// its float's rounding error (1 − 0.9 is 0.09999999999999998).
func TestBandVariantNames(t *testing.T) {
	var names []string
	for _, v := range (ModelError{Scale: 0.9}).variants() {
		names = append(names, v.Name)
	}
	assert.Equal(t, []string{"step times ×1.9", "step times ×0.1"}, names)
}

// A model under which A's knee lies below every load its sweep ran places
// no loads: the variant gets an empty list, does not run, and has no
// verdict, which the band's words say; it is not read where A collapses.
func TestBandLoadsBelowTheSweep(t *testing.T) {
	s := Sweep{Config: sim.Config{Window: sim.Window{Warmup: 10 * time.Second, Horizon: 2 * time.Minute}},
		Workload: atlasWorkload, Grid: Grid{Start: 0.5}, Reps: 2, ModelError: ModelError{Scale: 0.2}}
	c, err := s.Run()
	require.NoError(t, err)
	// ×1.2 makes the largest mixed step 1.2 × 136.6 ms, past the 150 ms
	// ITL bound: the knee is below the lowest load.
	require.Equal(t, BelowLowest, c.Band.Variants[0].Curve.Knee.Censored)
	loads := BandLoads(c, []float64{0.8, 1.2})
	assert.Equal(t, []float64{}, loads["step times ×1.2"])
	require.Len(t, loads["step times ×0.8"], 2)

	x := kneeExperiment(sim.Config{Model: costmodel.Frozen{DecodeStep: 35 * time.Millisecond}})
	x.ModelError = ModelError{Scale: 0.2}
	x.BandLoads = loads
	require.NoError(t, x.Validate())
	res, err := x.Run()
	require.NoError(t, err)
	slow := res.Band[0]
	assert.Equal(t, NoMeasured, slow.Verdict)
	assert.Equal(t, []float64{}, slow.Loads)
	assert.Zero(t, slow.KneeDiff.N)
	assert.False(t, res.BandHolds)
	assert.Equal(t, "rests on the model: under step times ×1.2 no A/B loads were placed (A's knee under it lies below every load of its sweep), so no verdict", res.BandVerdict())
	assert.Equal(t, loads["step times ×0.8"], res.Band[1].Loads)
}
