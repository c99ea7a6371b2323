package scenario

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// Every malformed configuration gets one error naming the path.
func TestMalformedConfigsNameThePath(t *testing.T) {
	r := Default()
	for _, c := range []struct{ in, want string }{
		{`{"Engine":{"ChunkCapp":3}}`, "sim.Config.Engine.ChunkCapp: unknown field of engine.Config"},
		{`{"Model":{"kind":"Foo"}}`, `sim.Config.Model: costmodel.Model kind "Foo" is not registered (registered: drafting, frozen, linear, roofline, scaled, table)`},
		{`{"Model":{"DecodeStep":"45ms"}}`, `sim.Config.Model: a costmodel.Model needs its "kind"`},
		{`{"Model":{"kind":"frozen","DecodeStep":45}}`, `sim.Config.Model.DecodeStep: want a duration with its unit, as "45ms" or "1m30s", got 45`},
		{`{"Model":{"kind":"frozen","DecodeStep":"45"}}`, `sim.Config.Model.DecodeStep: time: missing unit in duration "45"`},
		{`{"Engine":{"ChunkCap":"x"}}`, "sim.Config.Engine.ChunkCap: want a whole number, got \"x\""},
		{`{"Engine":{"ChunkCap":2.5}}`, "sim.Config.Engine.ChunkCap: want a whole number, got 2.5"},
		{`{"Fleet":{"Replicas":{}}}`, "sim.Config.Fleet.Replicas: want an array"},
		{`{"Classes":[{"Name":"a"},{"Nom":"b"}]}`, "sim.Config.Classes[1].Nom: unknown field of sim.Class"},
		{`{"Speculation":{"ClassAcceptance":{"a":"high"}}}`, `sim.Config.Speculation.ClassAcceptance["a"]: want a number`},
		{`{"Engine":{"ChunkCap":1,"ChunkCap":2}}`, "sim.Config.Engine.ChunkCap: given twice"},
		{`{"Engine":{"ChunkCap":1}`, "sim.Config: truncated JSON"},
		{`{"Engine":{"ChunkCap":1}} {}`, "sim.Config: trailing data"},
		{"{\n  \"Engine\": {,}\n}", "sim.Config: line 2, column 14"},
		{`[]`, "sim.Config: want an object, got []"},
	} {
		var cfg sim.Config
		err := r.Unmarshal([]byte(c.in), &cfg)
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.want, c.in)
	}
}

// A function is not data: writing one names it.
func TestFunctionsAreNotData(t *testing.T) {
	r := Default()
	_, err := r.Marshal(sim.Config{Model: costmodel.Func(func(costmodel.Batch) time.Duration { return time.Millisecond })})
	assert.ErrorContains(t, err, "sim.Config.Model is a function (costmodel.Func): not data; use a registered kind of costmodel.Model instead")
	_, err = r.Marshal(analysis.Experiment{Hypothesis: analysis.Hypothesis{Metric: analysis.Metric{Name: "mine", Of: func(*sim.Summary) float64 { return 0 }}}})
	assert.ErrorContains(t, err, `analysis.Experiment.Hypothesis.Metric: sim: metric "mine" is your own`)
	_, err = r.Marshal(analysis.DialSweep{Dial: analysis.DialFunc("x", "y", func(*sim.Config, float64) {})})
	assert.ErrorContains(t, err, `analysis.DialSweep.Dial: sim: dial "x" is your own`)
}

// A user's own kind joins the registry in the user's code, and only that
// registry knows it.
type myModel struct{ PerStep time.Duration }

func (m myModel) StepTime(b costmodel.Batch) time.Duration {
	if b.Empty() {
		return 0
	}
	return m.PerStep
}

func TestRegisterYourOwnKind(t *testing.T) {
	r := Default()
	require.NoError(t, Register[costmodel.Model](r, "mine", myModel{}))
	b, err := r.Marshal(sim.Config{Model: myModel{PerStep: 7 * time.Millisecond}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"Model":{"kind":"mine","PerStep":"7ms"}}`, string(b))
	var back sim.Config
	require.NoError(t, r.Unmarshal(b, &back))
	assert.Equal(t, myModel{PerStep: 7 * time.Millisecond}, back.Model)
	assert.ErrorContains(t, Default().Unmarshal(b, &back), `kind "mine" is not registered`)

	assert.ErrorContains(t, Register[costmodel.Model](r, "mine", costmodel.Frozen{}), `kind "mine" of costmodel.Model is already`)
	assert.ErrorContains(t, Register[costmodel.Model](r, "other", myModel{}), "is already kind \"mine\"")
	assert.ErrorContains(t, Register[costmodel.Model](r, "fn", costmodel.Func(nil)), "only structs are data")
	assert.ErrorContains(t, Register[costmodel.Frozen](r, "x", costmodel.Frozen{}), "needs an interface type")
	assert.Contains(t, Kinds[costmodel.Model](r), "mine")
}

// FuzzUnmarshal: no input panics the decoder, and whatever decodes
// writes back and decodes to the same bytes.
//
//	go test ./scenario -run '^$' -fuzz FuzzUnmarshal -fuzztime 1m
func FuzzUnmarshal(f *testing.F) {
	r := Default()
	for _, s := range []string{`{}`, `{"Engine":{"ChunkCap":256,"Policy":{"kind":"priority"}}}`,
		`{"Model":{"kind":"scaled","Model":{"kind":"table","value":{"Decode":[{"X":1,"Ms":40}],"Prefill":[{"X":0,"Ms":20}]}},"Factor":1.1}}`,
		`{"Fleet":{"Replicas":[{},{"Speculation":{"Tokens":4,"Acceptance":0.7}}],"Router":{"kind":"prefix_affinity","BalanceAbs":4}}}`,
		`{"Classes":[{"Name":"a","SLO":{"TTFT":"1s"}}],"Speculation":{"ClassAcceptance":{"a":0.5}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var cfg sim.Config
		if r.Unmarshal(data, &cfg) != nil {
			return
		}
		b, err := r.Marshal(cfg)
		if err != nil {
			return // a NaN from "1e400"-like input is refused on the way out
		}
		var again sim.Config
		require.NoError(t, r.Unmarshal(b, &again), "%s", b)
		b2, err := r.Marshal(again)
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2))
	})
}
