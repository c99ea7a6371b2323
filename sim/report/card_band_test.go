package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// handBandCurve is handCurve under a declared model error (±10 % and the
// Atlas roofline beside Frozen) whose slow variant's knee lies below the
// loads, with the utilisation of every point against 2.694 req/s, a
// speculating system's figures (K = 4 at α = 0.7: 2.77 tokens a step) and
// an SLO gating the retokenized ITL. The overloaded point's TTFT p99 over
// every offered request is beyond every bound.
func handBandCurve() *analysis.Curve {
	c := handCurve()
	slow, fast, roof := handCurve(), handCurve(), handCurve()
	slow.Knee = analysis.Knee{Load: simEst(math.NaN(), math.NaN(), math.NaN()), Censored: analysis.BelowLowest, FirstMiss: 0.5, Target: 0.95}
	slow.Peak = analysis.Peak{Load: 1, Goodput: simEst(0.9, 0.85, 0.95)}
	fast.Knee = analysis.Knee{Load: simEst(1.9, 1.8, 2.05), Found: true, LastMet: 1, FirstMiss: 2}
	fast.Peak = analysis.Peak{Load: 2, Goodput: simEst(1.95, 1.9, 2)}
	roof.Knee = analysis.Knee{Load: simEst(1.7, 1.55, 1.85), Found: true, LastMet: 1, FirstMiss: 2}
	c.Band = &analysis.Band{
		Declared: analysis.ModelError{Scale: 0.1, Alternatives: []costmodel.Model{costmodel.AtlasRoofline()}},
		Variants: []analysis.Variant{{Name: "step times ×1.1", Curve: slow}, {Name: "step times ×0.9", Curve: fast}, {Name: "costmodel.Roofline", Curve: roof}},
		Knee:     analysis.Range{Lo: 0.5, Hi: 1.9, LoBelow: true},
		Peak:     analysis.Range{Lo: 0.9, Hi: 1.95},
		Fragile:  true,
		Mover:    analysis.Move{Model: "step times ×1.1", Knee: 0.5, Rel: (0.5 - 1.6) / 1.6, Below: true},
	}
	c.Warnings = append(c.Warnings, "the knee moves across the model band (step times ±10 %, costmodel.Roofline) over [< 0.5, 1.9] req/s: the largest step this configuration can form, 136.645ms, is 91 % of the 150ms ITL bound")
	c.SLO.ITLSeries = sim.PerToken
	for i := range c.Points {
		p := &c.Points[i]
		p.Utilisation = p.Load / 2.694
		for j := range p.Runs {
			p.Runs[j].Speculation = sim.SpecSummary{Steps: 1000, Drafted: 4000, Accepted: 2800}
		}
		p.MeanAccepted, p.AcceptanceRate = simEst(2.77, 2.7, 2.84), simEst(0.693, 0.68, 0.71)
		itl := p.ITL.P99.Center
		p.ITLRetokenized = analysis.Percentiles{P50: simEst(16.3, 16, 16.6), P99: simEst(itl/2, itl/2*0.95, itl/2*1.05)}
	}
	c.Points[3].TTFTOffered.P99 = simEst(math.Inf(1), 30000, math.Inf(1))
	return c
}

func handBandCard() Card {
	sw := analysis.Sweep{Config: sim.Config{Window: sim.Window{Warmup: 60e9, Horizon: 600e9}}, BaseSeed: 7, Capacity: 2.694}
	c := NewCard(sw, handBandCurve(), 1.2)
	c.Title = "Atlas TP4 with speculative decoding, under a declared model error"
	c.Claim = "K = 4 drafts at α = 0.7 keep ≥ 95 % attainment up to 1.5 req/s of 2,000-token prompts."
	c.Results.Capacity.Source = "costmodel.Estimate.ServingCapacity: 1 / (200 × 45 ms / 32 + 90 ms prefill)"
	c.Workload = CardWorkload{Description: "open-loop Poisson; lengths fixed(2000, 200)", Fingerprint: "sha256:0123abcd"}
	// Set by hand: other packages' config fields must not move this golden.
	c.System = System{
		Engine: []Setting{{"MaxSeqs", "32"}}, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}},
		Speculation: sim.Speculation{Tokens: 4, Acceptance: 0.7, DraftStep: 2 * time.Millisecond}.String(),
		Run:         []Setting{{"Timeout", "0s"}},
	}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	c.Estimate = &PreRun{
		Source: "costmodel.Estimate of the replica the sweep ran, from declared figures",
		Figures: append(CardFiguresOf("Decode throughput (bounded by step time)",
			costmodel.Figure{Name: "decode step", Value: 45, Unit: "ms", Basis: "cost model, 32 seq × 2100 context", Knob: "step time"},
			costmodel.Figure{}, // an optional figure left zero: left out
		), CardFiguresOf("Assemble",
			costmodel.Figure{Name: "serving capacity", Value: 2.694, Unit: "req/s", Basis: "1 / (200 × 45 ms / 32 + 90 ms prefill)", Knob: "step time, batch"},
			costmodel.Figure{Name: "KV capacity", Value: 458752, Unit: "tokens", Basis: "35 GiB / 80 KiB", Knob: "KV bytes"},
		)...),
		Warnings: []string{"a 2047-token prefill chunk stretches the step to 136.6 ms, 91 % of the 150ms ITL bound"},
	}
	return c
}

// The card records what its numbers rest on: the model error declared
// before the sweep and the range it gave the knee, the peak and the
// headroom beside their seed intervals, each variant's knee, the serving
// capacity (an estimate, and whence) with each load's utilisation, TTFT
// over every offered request beside the successful-only one, the
// pre-run estimate, and for a speculating system the speculation, the
// ITL series its SLO gates, the tokens a step, the acceptance and the
// retokenized ITL.
func TestCardOfABandAndSpeculationGolden(t *testing.T) {
	c := handBandCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	require.NoError(t, c.WriteJSON(&js))
	checkGolden(t, "card_band.md", md.Bytes())
	checkGolden(t, "card_band.json", js.Bytes())
	for _, want := range []string{
		"| figure | value | 95 % interval | model range |",
		"| knee: highest load with attainment ≥ 0.95 | 1.6 req/s | [1.45, 1.75] | [< 0.5, 1.9] req/s |",
		"| peak goodput | 1.86 req/s at 2 req/s offered | [1.8, 1.92] | [0.9, 1.95] req/s |",
		"| headroom at the operating point 1.2 req/s | +0.4 req/s (+33.3 %) | [0.25, 0.55] | [< -58.3 %, +58.3 %] of the operating load |",
		"step times ×1.1 (knee not found: the lowest measured load 0.5 already misses",
		"step times ×0.9 (knee 1.9 req/s [1.8, 2.05])",
		"**Fragile:**",
		" The knee rests on the model: under step times ×1.1 the knee is < 0.5 req/s (-69 %); across the band (step times ±10 %, costmodel.Roofline) it spans [< 0.5, 1.9].",
		"a serving capacity of 2.694 req/s, an estimate made before the runs, not a measurement (source: costmodel.Estimate.ServingCapacity",
		"| 3 | 111 % | 1.2 [1.164, 1.236] | 0.4 [0.39, 0.41] | 9000 [8100, 9900] | ∞ [30000, ∞] |",
		"| 1 | 2.77 [2.7, 2.84] | 0.693 [0.68, 0.71] | 74 [70.3, 77.7] | 37 [35.15, 38.85] |",
		"- The ITL bound gates every token's gap, each chunk's gap divided by its tokens (per token, retokenized",
		"Speculation (`sim.Speculation`): speculative decoding, K = 4 drafts a step, i.i.d. acceptance α = 0.7, a draft model (2ms per draft).",
		"## Estimate before the runs",
		"| **Assemble** |  |  |  |",
		"| serving capacity | 2.694 req/s | 1 / (200 × 45 ms / 32 + 90 ms prefill) | step time, batch |",
		"| KV capacity | 458752 tokens |",
	} {
		assert.Contains(t, md.String(), want)
	}
	assert.NotContains(t, md.String(), "NaN")
	assert.NotContains(t, md.String(), "Inf")
}

// The new fields read back from JSON: written again, the card is the same
// bytes. What is not finite is null: the knee range's bounds when no
// model placed a knee, a percentile beyond every bound (+Inf, read back
// as NaN, as every Num).
func TestCardOfABandRoundTrips(t *testing.T) {
	c := handBandCard()
	c.Results.Band.Knee = CardRange{Lo: Num(math.Inf(1)), Hi: Num(math.Inf(-1))} // no model placed a knee
	var js bytes.Buffer
	require.NoError(t, c.WriteJSON(&js))
	var back Card
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	var again bytes.Buffer
	require.NoError(t, back.WriteJSON(&again))
	assert.Equal(t, js.String(), again.String())

	r := back.Results
	require.NotNil(t, r.Band)
	assert.Equal(t, c.Results.Band.Declared, r.Band.Declared)
	assert.Equal(t, CardModelError{Scale: 0.1, Alternatives: []string{"costmodel.Roofline"}, Fragile: analysis.DefaultFragile,
		Text: "step times ±10 %, costmodel.Roofline"}, r.Band.Declared)
	assert.True(t, math.IsNaN(float64(r.Band.Knee.Lo)) && math.IsNaN(float64(r.Band.Knee.Hi)), "±Inf is null, read back as NaN")
	assert.Equal(t, c.Results.Band.Peak, r.Band.Peak)
	assert.True(t, r.Band.Fragile)
	require.Len(t, r.Band.Variants, 3)
	assert.Equal(t, "step times ×1.1", r.Band.Variants[0].Name)
	assert.False(t, r.Band.Variants[0].Knee.Found)
	assert.Equal(t, c.Results.Band.Variants[1].Knee.Load.Center, r.Band.Variants[1].Knee.Load.Center)
	require.NotNil(t, r.Headroom.Model)
	assert.Equal(t, *c.Results.Headroom.Model, *r.Headroom.Model)
	assert.True(t, r.Headroom.Model.LoBelow)
	assert.Equal(t, *c.Results.Capacity, *r.Capacity)
	assert.InDelta(t, 3/2.694, r.Points[3].Utilisation, 1e-12)
	assert.True(t, math.IsNaN(float64(r.Points[3].TTFTOfferedP99.Center)), "+Inf is null, read back as NaN")
	assert.Equal(t, Num(30000), r.Points[3].TTFTOfferedP99.Lo)
	require.NotNil(t, r.Points[1].Speculation)
	assert.Equal(t, *c.Results.Points[1].Speculation, *r.Points[1].Speculation)
	assert.Equal(t, "per token (retokenized)", back.SLO.ITLSeries)
	assert.Equal(t, c.System.Speculation, back.System.Speculation)
	assert.Equal(t, *c.Estimate, *back.Estimate)
	assert.Equal(t, "Assemble", back.Estimate.Figures[1].Group)
	assert.Len(t, back.Estimate.Figures, 3, "the zero figure is left out")

	var md bytes.Buffer
	require.NoError(t, back.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| unknown: no model of the band placed a knee |")
	assert.NotContains(t, md.String(), "NaN")
}

// A card without a declared model error says that its intervals are seed
// noise, and has no model-range column, no utilisation and no
// speculation; its JSON has none of those keys.
func TestCardWithoutABandSaysSo(t *testing.T) {
	c := handCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	require.NoError(t, c.WriteJSON(&js))
	assert.Contains(t, md.String(), "Model error: none declared. The intervals are seed noise only")
	assert.NotContains(t, md.String(), "model range")
	assert.NotContains(t, md.String(), "utilisation")
	assert.NotContains(t, md.String(), "### Speculative decoding")
	for _, key := range []string{`"model_band"`, `"capacity"`, `"utilisation"`, `"speculation"`, `"model_range"`, `"estimate"`} {
		assert.NotContains(t, js.String(), key)
	}
}

// A real sweep under a declared ±10 % with an estimated capacity: the
// card carries the band the curve computed (the slower model's knee no
// higher than the faster's), the headroom's model range, and each
// point's utilisation, the load over the capacity.
func TestNewCardOfASweepWithABand(t *testing.T) {
	sw := smallSweep()
	sw.ModelError = analysis.ModelError{Scale: 0.1}
	sw.Capacity = 2.694
	c, err := sw.Run()
	require.NoError(t, err)
	require.NotNil(t, c.Band)
	card := NewCard(sw, c, 1.5)
	r := card.Results
	require.NotNil(t, r.Band)
	assert.Equal(t, 0.1, r.Band.Declared.Scale)
	assert.Equal(t, analysis.DefaultFragile, r.Band.Declared.Fragile, "the default filled in")
	require.Len(t, r.Band.Variants, 2)
	assert.Equal(t, "step times ×1.1", r.Band.Variants[0].Name)
	assert.Equal(t, "step times ×0.9", r.Band.Variants[1].Name)
	assert.Equal(t, Num(c.Band.Knee.Lo), r.Band.Knee.Lo)
	assert.Equal(t, Num(c.Band.Knee.Hi), r.Band.Knee.Hi)
	assert.Equal(t, c.Band.Fragile, r.Band.Fragile)
	require.NotNil(t, r.Headroom.Model)
	assert.Equal(t, Num(c.Headroom(1.5).Model.Lo), r.Headroom.Model.Lo)
	require.NotNil(t, r.Capacity)
	assert.Equal(t, 2.694, r.Capacity.Rate)
	assert.Empty(t, r.Capacity.Source, "NewCard cannot know where the estimate came from")
	for i, p := range r.Points {
		assert.Equal(t, p.Load/2.694, p.Utilisation, "load %v", p.Load)
		assert.Equal(t, Num(c.Points[i].TTFTOffered.P99.Center), p.TTFTOfferedP99.Center)
		assert.GreaterOrEqual(t, float64(p.TTFTOfferedP99.Center), float64(p.TTFTP99.Center), "load %v: over every offered request, never below the successful ones", p.Load)
		assert.Nil(t, p.Speculation, "no speculative decoding")
	}
	var md bytes.Buffer
	require.NoError(t, card.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "Model error declared before the sweep: step times ±10 %")
	assert.Contains(t, md.String(), "| 4 | 148 % |")
}

// A speculating sweep's card: the system says what speculation ran,
// every point that drafted carries the mean accepted length (5 tokens a
// step at α = 1 with K = 4), the acceptance rate and the retokenized ITL,
// below the per-chunk ITL; the events' columns are on the card.
func TestNewCardOfASpeculatingSweep(t *testing.T) {
	sw := smallSweep()
	sw.Grid.Loads = []float64{1, 2}
	spec := sim.Speculation{Tokens: 4, Acceptance: 1}
	sw.Config.Speculation = spec
	sw.Config.SLO.ITLSeries = sim.PerToken
	c, err := sw.Run()
	require.NoError(t, err)
	card := NewCard(sw, c, 0)
	assert.Equal(t, spec.String(), card.System.Speculation)
	for _, s := range card.System.Run {
		assert.NotEqual(t, "Speculation", s.Name, "its own line, not a run setting")
	}
	assert.Equal(t, "per token (retokenized)", card.SLO.ITLSeries)
	for _, p := range card.Results.Points {
		require.NotNil(t, p.Speculation, "load %v", p.Load)
		assert.Equal(t, Num(5), p.Speculation.MeanAccepted.Center, "load %v", p.Load)
		assert.Equal(t, Num(1), p.Speculation.AcceptanceRate.Center, "load %v", p.Load)
		assert.Less(t, float64(p.Speculation.ITLTokenP99.Center), float64(p.ITLP99.Center), "load %v: a chunk of 5 tokens", p.Load)
	}
	var md bytes.Buffer
	require.NoError(t, card.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "### Speculative decoding")
	assert.Contains(t, md.String(), "Speculation (`sim.Speculation`): "+spec.String()+".")
	assert.Contains(t, md.String(), "| 1 | 5 [5, 5] | 1 [1, 1] |")
}

// A fleet whose replicas speculate differently is two configurations on
// its card, each saying its speculation; alike, the system says it once.
func TestFleetCardKeepsEachReplicasSpeculation(t *testing.T) {
	spec := sim.Speculation{Tokens: 2, Acceptance: 0.5}
	cfg := sim.Config{Fleet: sim.Fleet{Replicas: []sim.ReplicaConfig{{Speculation: spec}, {}}}}
	s := SystemOf(cfg)
	require.NotNil(t, s.Fleet)
	require.Len(t, s.Fleet.Groups, 2, "same engine and model, different speculation")
	assert.Equal(t, spec.String(), s.Fleet.Groups[0].Speculation)
	assert.Empty(t, s.Fleet.Groups[1].Speculation)
	var b strings.Builder
	s.markdown(&b, "System")
	assert.Contains(t, b.String(), "Speculation (`sim.Speculation`, replica 0): "+spec.String()+".")

	cfg.Fleet.Replicas = sim.Copies(2, sim.ReplicaConfig{Engine: engine.Config{MaxSeqs: 16}, Speculation: spec})
	s = SystemOf(cfg)
	assert.Nil(t, s.Fleet.Groups)
	assert.Equal(t, spec.String(), s.Speculation)
}

// A dial sweep over the draft length: the values that speculated show
// their tokens a step and retokenized ITL p99 at the probe load beside
// the per-chunk ITL p99; the value without speculation shows none.
func TestDialCardOfSpeculation(t *testing.T) {
	d, r := handDial()
	p := r.Probe[1]
	p.Runs = []sim.Summary{{Offered: 100, Speculation: sim.SpecSummary{Steps: 10, Drafted: 40, Accepted: 28}}}
	p.MeanAccepted = simEst(2.77, 2.7, 2.84)
	p.ITLRetokenized = analysis.Percentiles{P99: simEst(30, 29, 31)}
	r.Probe[1] = p
	c := NewDialCard(d, r)
	var md bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| attainment | tokens a step | ITL p99 per token (ms) |")
	assert.Contains(t, md.String(), "| 2.77 [2.7, 2.84] | 30 [29, 31] |")
	assert.Contains(t, md.String(), "| 1 [0.99, 1] | — | — |", "the baseline does not speculate")
}
