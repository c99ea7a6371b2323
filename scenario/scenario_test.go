package scenario

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// smallSweep is a valid sweep of the Atlas replica.
func smallSweep() *analysis.Sweep {
	return &analysis.Sweep{Config: sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: 10 * time.Minute}},
		Workload: analysis.Poisson(workload.Fixed(2000, 200)), Grid: analysis.Grid{Start: 0.5}, Reps: 5,
		ModelError: analysis.ModelError{Scale: 0.1}, Capacity: 2.69}
}

// A scenario written and read back is the same scenario.
func TestScenarioSavesAndLoads(t *testing.T) {
	x := analysis.Experiment{Hypothesis: analysis.Hypothesis{Claim: "B wins", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A: smallSweep().Config, B: smallSweep().Config, Workload: smallSweep().Workload, Blocks: 4}
	study := &Study{Groups: []Group{{Name: "low", Sweeps: []NamedSweep{{Name: "RR", Sweep: *smallSweep()}},
		Experiments: []Comparison{{A: "RR", B: "PA", Experiment: x, Operating: &Operating{Sweep: "RR", Factors: []float64{0.7, 1.1}}}}}}}
	for _, s := range []Scenario{
		{Name: "atlas", Claim: "knee above 1.5", Sweep: smallSweep(), Output: Output{Dir: "out/x", Write: []string{"card"}}},
		{Name: "routing", Study: study, Output: Output{Write: []string{}}},
		{Replay: &TraceReplay{Path: "trace.csv", Trace: workload.TraceConfig{Sort: true}}},
	} {
		path := filepath.Join(t.TempDir(), "s.json")
		require.NoError(t, Save(path, s))
		back, err := Load(path)
		require.NoError(t, err)
		want, _ := Default().Marshal(s)
		got, _ := Default().Marshal(back)
		assert.Equal(t, string(want), string(got)) // a metric's function compares only by name
		assert.Equal(t, s.Output, back.Output)
	}
}

// A sweep under the Atlas band (±10 % and the named shapes, calibrated
// to Frozen) is data: written and read back, it is the same band, and
// the shapes keep their names and models.
func TestScenarioKeepsTheShapesOfItsBand(t *testing.T) {
	s := smallSweep()
	s.ModelError = analysis.AtlasBand(0.1)
	b, err := Default().Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"Name": "atlas-roofline"`)
	var back analysis.Sweep
	require.NoError(t, Default().Unmarshal(b, &back))
	assert.Equal(t, s.ModelError, back.ModelError)
	require.NoError(t, back.Validate())
}

// Every problem of a scenario is named by its field, and a file's
// problems by the file too.
func TestScenarioErrorsNameTheFieldAndTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ in, want string }{
		{`{}`, "a scenario needs one of Sweep, Experiment, DialSweep, Replay or Study"},
		{`{"Name":"a b","Replay":{"Path":"x"}}`, `Name "a b" must be a word`},
		{`{"Replay":{"Path":"x"},"Sweep":{}}`, "got sweep, replay"},
		{`{"Sweep":{"Reps":-1}}`, "scenario: Sweep: sim: Sweep.Workload is nil"},
		{`{"Sweep":{"Reps":"x"}}`, `scenario.Scenario.Sweep.Reps: want a whole number, got "x"`},
		{`{"Sweep":{"Config":{"Engine":{"ChunkCapp":1}}}}`, "scenario.Scenario.Sweep.Config.Engine.ChunkCapp: unknown field of engine.Config"},
		{`{"Replay":{"Config":{"Timeout":"-1s"}}}`, "scenario: Replay: sim: Timeout must be >= 0"},
		{`{"Replay":{"Path":"x"},"Output":{"Write":["cards"]}}`, `Output.Write[0] is "cards"`},
		{`{"Study":{"Groups":[{"Name":"g","Experiments":[{"A":"a","B":"b","Operating":{"Sweep":"s","Factors":[0]}}]}]}}`,
			`Groups[0] ("g"): Experiments[0]: Operating.Sweep "s" is not one of the group's sweeps`},
		{`{"Study":{"Groups":[{"Name":"g","Experiments":[{"A":"a","B":"b","Operating":{"Sweep":"s","Factors":[0]}}]}]}}`,
			"Operating.Factors[0] must be a positive multiple of the knee, got 0"},
		{`{"Sweep":`, "truncated JSON"},
	} {
		path := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(path, []byte(c.in), 0o644))
		_, err := Load(path)
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), path+": ", c.in)
		assert.Contains(t, err.Error(), c.want, c.in)
	}
	_, err := Load(filepath.Join(dir, "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A card embeds its scenario, and loading the card gives it back; a card
// of another analysis revision, or of a function, says why it cannot be
// rerun.
func TestCardScenario(t *testing.T) {
	r := Default()
	s := Scenario{Name: "atlas", Sweep: smallSweep()}
	s.Sweep.Observe = func(float64, int) sim.Observer { return nil } // plumbing, not data
	raw, why := r.CardScenario(s)
	require.Empty(t, why)
	card := func(rev string, scen json.RawMessage, rerun string) []byte {
		b, err := json.Marshal(map[string]any{"title": "t", "analysis_revision": rev, "scenario": scen, "rerun": rerun})
		require.NoError(t, err)
		return b
	}
	back, err := r.ParseCard(card(analysis.AnalysisRevision(), raw, ""), CardOptions{})
	require.NoError(t, err)
	s.Sweep.Observe = nil
	assert.Equal(t, s, back)
	assert.True(t, IsCard(card("x", raw, "")))
	assert.False(t, IsCard(raw))

	_, err = r.ParseCard(card("servesim-analysis/1", raw, ""), CardOptions{})
	assert.ErrorIs(t, err, ErrRevision)
	assert.ErrorContains(t, err, `analysis_revision "servesim-analysis/1" is not this build's`)
	_, err = r.ParseCard(card("servesim-analysis/1", raw, ""), CardOptions{AnyRevision: true})
	assert.NoError(t, err)

	s.Sweep.Workload = analysis.WorkloadFunc(func(float64, uint64) (workload.Source, error) { return nil, errors.New("x") })
	raw, why = r.CardScenario(s)
	assert.Nil(t, raw)
	assert.Equal(t, "cannot be rerun: Sweep.Workload is a function (analysis.WorkloadFunc): not data; use a registered kind of analysis.Workload instead", why)
	_, err = r.ParseCard(card(analysis.AnalysisRevision(), nil, why), CardOptions{})
	assert.ErrorIs(t, err, ErrNotRerunnable)
	assert.ErrorContains(t, err, why)

	for _, c := range []struct{ in, want string }{
		{`{"analysis_revision":`, "unexpected end of JSON input"},
		{`{"title":"x"}`, "analysis_revision is missing"},
		{`{"analysis_revision":3}`, "cannot unmarshal number"},
		{string(card(analysis.AnalysisRevision(), json.RawMessage(`{"Sweep":{"Reps":-2}}`), "")), "card: scenario: scenario: Sweep"},
	} {
		_, err := r.ParseCard([]byte(c.in), CardOptions{})
		assert.ErrorContains(t, err, c.want, c.in)
	}
}

// The scenario and card decoders never panic, whatever the bytes.
func FuzzLoadScenario(f *testing.F) {
	r := Default()
	seed, err := r.Marshal(Scenario{Name: "atlas", Sweep: smallSweep()})
	require.NoError(f, err)
	f.Add(seed)
	f.Add([]byte(`{"Study":{"Groups":[{"Name":"g","Sweeps":[{"Name":"s","Sweep":{}}]}]}}`))
	f.Add([]byte(`{"Replay":{"Path":"x","Trace":{"Sort":true}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := r.Parse(b); err == nil {
			_ = s.Kind()
		}
	})
}

func FuzzLoadCard(f *testing.F) {
	r := Default()
	raw, _ := r.CardScenario(Scenario{Sweep: smallSweep()})
	b, err := json.Marshal(map[string]any{"analysis_revision": analysis.AnalysisRevision(), "scenario": raw})
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"analysis_revision":"x","rerun":"cannot"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = r.ParseCard(b, CardOptions{})
		_, _ = r.ParseCard(b, CardOptions{AnyRevision: true})
	})
}

// A knee comparison whose loads come from a sweep's knee needs two
// factors or more, as an experiment on the knee needs two loads; with two
// it is valid.
func TestOperatingKneeNeedsTwoFactors(t *testing.T) {
	x := analysis.Experiment{Hypothesis: analysis.Hypothesis{Claim: "B's knee is higher", Metric: analysis.MetricKnee, Threshold: 0.05},
		A: smallSweep().Config, B: smallSweep().Config, Workload: smallSweep().Workload, Blocks: 4}
	s := func(factors ...float64) Scenario {
		return Scenario{Name: "routing", Study: &Study{Groups: []Group{{Name: "g", Sweeps: []NamedSweep{{Name: "RR", Sweep: *smallSweep()}},
			Experiments: []Comparison{{A: "RR", B: "PA", Experiment: x, Operating: &Operating{Sweep: "RR", Factors: factors}}}}}}}
	}
	assert.ErrorContains(t, s(1).Validate(), "Experiment.Loads must hold 2 loads or more to compare knees, got 1")
	assert.NoError(t, s(0.9, 1.1).Validate())
}
