package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// burst is n requests of 2,000 prompt and 2 output tokens, all due at 0.
func burst(n int) *slice {
	s := make(slice, n)
	for i := range s {
		s[i] = workload.Request{ID: uint64(i), InputTokens: 2000, OutputTokens: 2}
	}
	return &s
}

// Under a cap of 1, a burst of four 2,000-token requests is served one at
// a time: each waits for the previous one's end (prefill 90 ms, one
// decode step 45 ms), so request k is sent at k × 135 ms, and its TTFT
// counts from the send (90 ms). The events carry the due instant and the
// wait, arrival = scheduled + client_wait, and the vLLM-shaped summary
// writes the wait as vLLM's client_queue_time statistics.
func TestEventsCarryTheClientWait(t *testing.T) {
	var csvOut bytes.Buffer
	w := NewEventCSV(&csvOut)
	cfg := sim.Config{MaxConcurrency: 1}
	sum, err := sim.Run(cfg, burst(4), w)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	rows, err := csv.NewReader(&csvOut).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	require.Len(t, rows, 5)
	for _, row := range rows[1:] {
		id, _ := strconv.Atoi(row[col["id"]])
		sent := time.Duration(id) * 135 * time.Millisecond
		assert.Equal(t, "0", row[col["scheduled"]], "all due at 0")
		assert.Equal(t, mustFloat(t, row[col["client_wait"]]), mustFloat(t, row[col["arrival"]]), "request %d", id)
		assert.InDelta(t, sent.Seconds(), mustFloat(t, row[col["client_wait"]]), 1e-12, "request %d", id)
		assert.Equal(t, "0.09", row[col["ttft"]], "TTFT from the send: request %d", id)
	}
	assert.InDelta(t, (0+135+270+405)/4.0, sum.ClientWait.Mean, 1e-9)

	var capped, uncapped bytes.Buffer
	require.NoError(t, WriteServe(&capped, &sum, Meta{MaxConcurrency: 1}))
	require.NoError(t, WriteServe(&uncapped, &sum, Meta{}))
	var got map[string]any
	require.NoError(t, json.Unmarshal(capped.Bytes(), &got))
	assert.Equal(t, 1.0, got["max_concurrency"])
	assert.InDelta(t, 202.5, got["mean_client_queue_time_ms"], 1e-9)
	assert.InDelta(t, 270+0.97*135, got["p99_client_queue_time_ms"], 1e-9, "linear: 0.99 × 3 = 2.97 between the third and fourth")
	assert.Less(t, strings.Index(capped.String(), `"p99_e2el_ms"`), strings.Index(capped.String(), `"mean_client_queue_time_ms"`), "after vLLM's e2el")
	assert.NotContains(t, uncapped.String(), "client_queue_time", "vLLM writes it only under --max-concurrency")
}

// A request still waiting for a slot when the run stopped was never sent:
// its wait is null, as an instant that did not happen.
func TestEventsOfARequestNeverSent(t *testing.T) {
	var out bytes.Buffer
	w := NewEventJSONL(&out)
	cfg := sim.Config{MaxConcurrency: 1, Window: sim.Window{Horizon: 100 * time.Millisecond, Drain: 10 * time.Millisecond}}
	_, err := sim.Run(cfg, burst(3), w)
	require.NoError(t, err)
	require.NoError(t, w.Flush())
	var never int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["client_wait"] == nil {
			never++
			assert.Equal(t, "unfinished", rec["status"])
		}
	}
	assert.Equal(t, 2, never, "one sent, two still waiting at the stop")
}

// The card's concurrency and cache state come from the configuration.
func TestWorkloadOfTheConfiguration(t *testing.T) {
	assert.Equal(t, "no cap: open loop, every request sent the instant it is due", ConcurrencyOf(sim.Config{}, analysis.Rate))
	assert.Contains(t, ConcurrencyOf(sim.Config{MaxConcurrency: 16}, analysis.Rate), "capped at 16 requests in flight (as vllm bench serve --max-concurrency 16)")
	w := CardWorkloadOf(sim.Config{}, analysis.Concurrency)
	assert.True(t, strings.HasPrefix(w.Concurrency, "concurrency N clients, closed loop"), w.Concurrency)
	assert.Contains(t, w.Loop, "closed-loop")
	assert.Empty(t, CardWorkloadOf(sim.Config{}, analysis.Rate).Loop, "an open-loop source's loop is the caller's to state")

	assert.Equal(t, "cold: empty prefix cache at the start of each run", CacheStateOf(sim.Config{}))
	reuse := workload.PrefixReuse{Groups: 8, PrefixTokens: 1000, Probability: 0.9, BlockTokens: 16}
	warm := sim.Config{Warm: reuse.SharedPrompts()}
	// 1,000 tokens share 62 whole blocks of 16: 992 tokens a prompt.
	assert.True(t, strings.HasPrefix(CacheStateOf(warm), "warm: 8 prompts, 7936 tokens of shared prefixes installed"), CacheStateOf(warm))
	off := sim.Config{Warm: reuse.SharedPrompts(), Engine: engine.Config{DisablePrefixCache: true}}
	assert.Contains(t, CacheStateOf(off), "no prefix cache")

	run := SystemOf(warm).Run
	assert.Contains(t, run, Setting{"Warm", "8 prompts, 7936 prefix tokens (see the cache state)"})
	classed := SystemOf(sim.Config{Classes: twoClasses()}).Run
	assert.Contains(t, classed, Setting{"Classes", "interactive (TTFT ≤ 600ms, priority -1); batch (TTFT ≤ 30s, priority 0)"})
}

// An experiment's card says each system's clients, once when they agree.
func TestPairWorkload(t *testing.T) {
	same := pairWorkload(sim.Config{}, sim.Config{})
	assert.Equal(t, ConcurrencyOf(sim.Config{}, analysis.Rate), same.Concurrency)
	diff := pairWorkload(sim.Config{}, sim.Config{MaxConcurrency: 8})
	assert.True(t, strings.HasPrefix(diff.Concurrency, "A: no cap"), diff.Concurrency)
	assert.Contains(t, diff.Concurrency, "; B: capped at 8")
}

func twoClasses() []sim.Class {
	return []sim.Class{
		{Name: "interactive", SLO: sim.SLO{TTFT: 600 * time.Millisecond}, Priority: -1},
		{Name: "batch", SLO: sim.SLO{TTFT: 30 * time.Second}},
	}
}

// handClassCurve is a curve against clients, written by hand, with two
// classes and an empty default class.
func handClassCurve() *analysis.Curve {
	inter := sim.SLO{TTFT: 600 * time.Millisecond, ITL: sim.DefaultITL, TPOT: sim.Unbounded, E2E: sim.Unbounded}
	batch := inter
	batch.TTFT = 30 * time.Second
	nan := math.NaN()
	pt := func(clients, rate, att float64, sat analysis.Saturation) analysis.Point {
		half := simEst(rate/2, rate/2*0.98, rate/2*1.02)
		runs := make([]sim.Summary, 4)
		for i := range runs {
			runs[i].Offered = 100 // measured something: the point has an attainment
		}
		return analysis.Point{Load: clients, Runs: runs,
			Offered: simEst(rate, rate*0.98, rate*1.02), Throughput: simEst(rate, rate*0.98, rate*1.02),
			Goodput: simEst(rate*att, rate*att*0.97, rate*att*1.03), Attainment: simEst(att, att-0.01, math.Min(att+0.01, 1)),
			TTFT:       analysis.Percentiles{P50: simEst(120, 110, 130), P99: simEst(900, 800, 1000)},
			ITL:        analysis.Percentiles{P50: simEst(45, 45, 45), P99: simEst(74, 70, 78)},
			WorstITL:   analysis.Percentiles{P99: simEst(74, 70, 78)},
			Saturation: sat,
			Classes: []analysis.ClassPoint{
				{Name: "interactive", SLO: inter, Offered: half, Goodput: simEst(rate/2*(2*att-1), rate/2*(2*att-1)*0.95, rate/2*(2*att-1)*1.05),
					Attainment: simEst(2*att-1, 2*att-1.05, math.Min(2*att-0.95, 1)), TTFT: analysis.Percentiles{P50: simEst(120, 110, 130), P99: simEst(800, 700, 900)}},
				{Name: "batch", SLO: batch, Offered: half, Goodput: half,
					Attainment: simEst(1, 1, 1), TTFT: analysis.Percentiles{P50: simEst(150, 140, 160), P99: simEst(2000, 1800, 2200)}},
				{Name: sim.DefaultClass, SLO: inter, Offered: simEst(0, 0, 0), Goodput: simEst(0, 0, 0), Attainment: simEst(nan, nan, nan)},
			}}
	}
	return &analysis.Curve{
		Axis: analysis.Concurrency,
		Points: []analysis.Point{
			pt(8, 1.5, 1, analysis.Stable),
			pt(16, 2.3, 0.97, analysis.Stable),
			pt(32, 2.6, 0.9, analysis.Stable),
		},
		Target: 0.95, Confidence: 0.95, SLO: inter,
		Knee: analysis.Knee{Load: simEst(20, 18, 24), Found: true, LastMet: 16, FirstMiss: 32},
		Peak: analysis.Peak{Load: 32, Goodput: simEst(2.34, 2.27, 2.41)},
		ClassKnees: []analysis.ClassKnee{
			{Name: "interactive", SLO: inter, Knee: analysis.Knee{Load: simEst(12, 10, 14), Found: true, LastMet: 8, FirstMiss: 16}},
			{Name: "batch", SLO: batch, Knee: analysis.Knee{Load: simEst(32, nan, nan), Censored: analysis.AboveHighest, LastMet: 32, Target: 0.95}},
			{Name: sim.DefaultClass, SLO: inter, Knee: analysis.Knee{Load: simEst(nan, nan, nan)}},
		},
	}
}

// A card of classes against clients: the loads are labelled clients, each
// class has its SLO, priority and knee and, per load, its rates,
// attainment and TTFT; the default class, which got no request, is left
// out; the workload's clients, cache state and replay are the
// configuration's.
func TestCardOfClassesAgainstClients(t *testing.T) {
	reuse := workload.PrefixReuse{Groups: 8, PrefixTokens: 1000, Probability: 0.9, BlockTokens: 16}
	sw := analysis.Sweep{Config: sim.Config{Classes: twoClasses(), Warm: reuse.SharedPrompts(), Window: sim.Window{Warmup: 60e9, Horizon: 600e9}},
		BaseSeed: 7, Axis: analysis.Concurrency}
	c := NewCard(sw, handClassCurve(), 16)
	c.Title = "Atlas TP4, two classes against clients"
	c.Workload.Replay = "conv.csv (csv), conversation-keeping replay (a turn is released at the later of its recorded instant and its predecessor's end + 2s minimum think time), own pace"
	// Set by hand: other packages' config fields must not move this golden.
	c.System = System{Run: []Setting{{"MaxConcurrency", "0"}, {"Classes", classesValue(sw.Config.Classes)}, {"Warm", "8 prompts, 7936 prefix tokens (see the cache state)"}}}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	require.Len(t, c.Results.Classes, 2, "the empty default class is left out")
	assert.Equal(t, -1, c.Results.Classes[0].Priority)
	assert.Equal(t, "clients", c.Results.LoadUnit)

	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	require.NoError(t, c.WriteJSON(&js))
	checkGolden(t, "card_classes.md", md.Bytes())
	checkGolden(t, "card_classes.json", js.Bytes())
	for _, want := range []string{
		"| knee: highest load with attainment ≥ 0.95 | 20 clients | [18, 24] |",
		"| headroom at the operating point 16 clients | +4 clients (+25.0 %) |",
		"| offered (clients) | goodput (req/s) |",
		"| interactive | TTFT ≤ 600 ms, every ITL ≤ 150 ms | -1 | 12 | [10, 14] |",
		"| 16 | batch | 1.15 [1.127, 1.173] | 1.15 [1.127, 1.173] | 1 [1, 1] | 150 [140, 160] | 2000 [1800, 2200] |",
		"| cache state | warm: 8 prompts, 7936 tokens",
		"| trace replay | conv.csv (csv), conversation-keeping replay",
	} {
		assert.Contains(t, md.String(), want)
	}
	assert.NotContains(t, md.String(), "| default |")

	var back Card
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, c.Results.Classes[1].Knee.Censored, back.Results.Classes[1].Knee.Censored)
	assert.Equal(t, c.Workload.Replay, back.Workload.Replay)
}

// A real sweep of two classes: per load the classes' offered rates add up
// to the aggregate's, replication by replication, so their means do too.
func TestCardClassesOfASweep(t *testing.T) {
	sw := smallSweep()
	sw.Config.Classes = twoClasses()
	sw.Workload = analysis.ClassMix(
		analysis.Part{Class: "interactive", Share: 1, Lengths: workload.Fixed(2000, 200)},
		analysis.Part{Class: "batch", Share: 1, Lengths: workload.Fixed(2000, 200)},
	)
	curve, err := sw.Run()
	require.NoError(t, err)
	c := NewCard(sw, curve, 0)
	require.Len(t, c.Results.Classes, 2)
	for i, p := range c.Results.Points {
		sum := c.Results.Classes[0].Points[i].Offered.Center + c.Results.Classes[1].Points[i].Offered.Center
		assert.InDelta(t, float64(p.Offered.Center), float64(sum), 1e-9, "load %v", p.Load)
	}
}
