package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A band whose only model is the nominal one (Frozen's defaults, which
// both policies run) reruns the very same (configuration, workload,
// seed): its verdict at the verdict loads is the nominal verdict exactly,
// each class's change under it is the nominal change, FCFS's knee under
// it is the nominal knee, and near its own knee it runs the verdict loads
// again (the same multiples of the same knee) and gives the same verdict.
// And declaring a band leaves every nominal figure as it was without one.
func TestBandOfTheNominalModelIsTheVerdict(t *testing.T) {
	o := optionsOf(t, small...)
	band := analysis.ModelError{Shapes: []costmodel.NamedModel{{Name: "nominal", Model: costmodel.Frozen{}}}}
	s, err := classStudyUnder(o, band)
	require.NoError(t, err)
	require.NotNil(t, s.band)
	fixed := s.band.fixed
	require.Len(t, fixed.Band, 1)
	v := fixed.Band[0]
	assert.Equal(t, s.verdict.Verdict, v.Verdict)
	assert.Equal(t, fmt.Sprintf("%+v", s.verdict.Improvement), fmt.Sprintf("%+v", v.Improvement), "bit for bit")
	assert.Equal(t, o.reps, v.Blocks)
	assert.Equal(t, o.near, v.Loads)
	assert.True(t, fixed.BandHolds)
	assert.Nil(t, fixed.BandFlip)
	assert.Equal(t, "holds under every model of the band (nominal)", fixed.BandVerdict())

	m := s.band.models[0]
	assert.Equal(t, fmt.Sprintf("%+v", s.near), fmt.Sprintf("%+v", m.fixed))
	assert.Equal(t, fmt.Sprintf("%+v", s.curves[0].Knee), fmt.Sprintf("%+v", m.knee))

	require.NotNil(t, s.band.own)
	require.Len(t, m.loads, len(o.near))
	for i, l := range m.loads {
		assert.InDelta(t, o.near[i], l, 1e-12, "the verdict loads again")
	}
	assert.Equal(t, s.verdict.Verdict, s.band.own.Band[0].Verdict)
	assert.InDelta(t, s.verdict.Improvement.Center, s.band.own.Band[0].Improvement.Center, 1e-9)

	plain, err := classStudyUnder(o, analysis.ModelError{})
	require.NoError(t, err)
	assert.Nil(t, plain.band)
	assert.Equal(t, fmt.Sprintf("%+v", *plain.verdict), fmt.Sprintf("%+v", *s.verdict))
	for i := range plain.curves {
		assert.Equal(t, fmt.Sprintf("%+v", plain.curves[i].Points), fmt.Sprintf("%+v", s.curves[i].Points))
	}
	assert.Equal(t, fmt.Sprintf("%+v", plain.loads), fmt.Sprintf("%+v", s.loads))
}

// The band's verdicts, read from the sweeps' runs under each model, are
// the ones analysis.Experiment.Run gives with the band declared: at the
// verdict loads, and with Experiment.BandLoads at each model's own
// (analysis.BandLoads of FCFS's banded curve at the verdict loads'
// multiples of its knee). So each variant here is the band's model, named
// as the band names it, on the band's seeds.
//
// And what the band moves follows from the step: every step ×1.1 lowers
// FCFS's knee, ×0.9 raises it; each shape holds Frozen's 45 ms at batch
// 32 / 2,000 context, and atlas-linear prices batch 16 at 2,100 context
// 20 + 16 × 0.5980424 + 16 × 2,100 × 9.160378e-05 = 32.65 ms.
func TestBandIsTheExperimentsBand(t *testing.T) {
	o := optionsOf(t, small...)
	s, err := classStudyOf(o)
	require.NoError(t, err)
	require.NotNil(t, s.band)
	x := experiment(o)
	x.ModelError = modelBand(o)
	same := func(want, got *analysis.ExperimentResult, reading string) {
		t.Helper()
		require.Len(t, got.Band, 5, reading)
		assert.Equal(t, fmt.Sprintf("%+v", want.Band), fmt.Sprintf("%+v", got.Band), reading)
		assert.Equal(t, want.BandHolds, got.BandHolds, reading)
		assert.Equal(t, want.BandVerdict(), got.BandVerdict(), reading)
		if want.BandFlip != nil && got.BandFlip != nil {
			assert.Equal(t, want.BandFlip.Name, got.BandFlip.Name, reading)
		} else {
			assert.Equal(t, want.BandFlip == nil, got.BandFlip == nil, reading)
		}
	}
	want, err := x.Run()
	require.NoError(t, err)
	same(want, s.band.fixed, "at the verdict loads")
	require.NotNil(t, s.band.own)
	x.BandLoads = analysis.BandLoads(s.curves[0], s.band.factors)
	want, err = x.Run()
	require.NoError(t, err)
	same(want, s.band.own, "at each model's own loads")

	names := []string{"step times ×1.1", "step times ×0.9", "atlas-linear", "atlas-roofline", "atlas-profiled"}
	for i, m := range s.band.models {
		assert.Equal(t, names[i], m.name)
	}
	nominal := s.curves[0].Knee.Load.Center
	slow, fast := s.band.models[0].knee, s.band.models[1].knee
	require.True(t, slow.Found && fast.Found)
	assert.Less(t, slow.Load.Center, nominal, "slower steps, lower knee")
	assert.Greater(t, fast.Load.Center, nominal, "faster steps, higher knee")

	var out bytes.Buffer
	writeBand(&out, o, s)
	text := out.String()
	assert.Contains(t, text, "at batch 32 / 2,000 context (atlas-linear 45.0, atlas-roofline 45.0, atlas-profiled 45.0 ms there)")
	assert.InDelta(t, 32.65, 20+16*0.5980424+16*2100*9.160378e-05, 0.005)
	assert.Contains(t, text, "context: Frozen 45.0, atlas-linear 32.6, ")
	assert.NotContains(t, text, "NaN")
	assert.NotContains(t, text, "on the knee", "the verdict is on a class's attainment")
	for _, line := range strings.Split(text, "\n") {
		assert.Equal(t, strings.TrimRight(line, " "), line, "no trailing blanks")
	}
}

// The band is the same whatever -workers runs it: the whole report is.
func TestRunIsTheSameForAnyWorkers(t *testing.T) {
	var one, three bytes.Buffer
	require.NoError(t, run(&one, append([]string{"-workers", "1", "-caps", "16"}, small...)))
	require.NoError(t, run(&three, append([]string{"-workers", "3", "-caps", "16"}, small...)))
	assert.Equal(t, one.String(), three.String())
	assert.Contains(t, one.String(), "model band, declared before the runs: step times ±10 %, atlas-linear, atlas-roofline, atlas-profiled")
}

// -band-reps runs each model on the first seeds only, and says so; with
// neither -model-error nor -shapes there is no band, and nothing of it is
// printed; one replication takes no verdict, so no band either.
func TestBandFlags(t *testing.T) {
	o := optionsOf(t, append([]string{"-band-reps", "2", "-shapes", ""}, small...)...)
	s, err := classStudyOf(o)
	require.NoError(t, err)
	require.Len(t, s.band.models, 2)
	for _, v := range s.band.fixed.Band {
		assert.Equal(t, 2, v.Blocks)
	}
	var out bytes.Buffer
	writeBand(&out, o, s)
	assert.Contains(t, out.String(), "model band, declared before the runs: step times ±10 % (each model on the first 2 of the 3 seeds; FCFS and Priority alike under each).\n")
	assert.NotContains(t, out.String(), "the shapes hold")

	assert.Equal(t, 3, repsOf(optionsOf(t, "-reps", "3", "-band-reps", "5"), modelBand(optionsOf(t, "-reps", "3", "-band-reps", "5"))), "at most -reps")
	assert.False(t, modelBand(optionsOf(t, "-model-error", "0", "-shapes", "")).Declared())
	assert.False(t, modelBand(optionsOf(t, "-reps", "1")).Declared())
}
