package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
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

// Issue 8, bug 3: a load whose windows measured no request has no
// attainment. The card says "no measured requests" there (it printed "—",
// and the knee row an interval for a knee it had not found), and a curve
// where no load measured anything has no peak either.
func TestCardSaysNoMeasuredRequests(t *testing.T) {
	sw := smallSweep()
	sw.Grid.Loads = []float64{0.0001, 1}
	c, err := sw.Run()
	require.NoError(t, err)
	require.True(t, c.Points[0].NoMeasured())
	card := NewCard(sw, c, 0)
	md := markdown(t, &card)
	assert.Contains(t, md, "| 0.0001 | 0 [0, 0] | no measured requests | — | — | — | stable |")
	assert.Contains(t, md, "| knee: highest load with attainment ≥ 0.95 | not found in the sweep (see below) | — |")
	assert.NotContains(t, md, "NaN")

	var back struct {
		Results struct {
			Points []map[string]any `json:"points"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(jsonOf(t, &card), &back))
	p := back.Results.Points[0]
	assert.Equal(t, true, p["no_measured"])
	assert.Nil(t, p["attainment"].(map[string]any)["center"], "NaN attainment is null")
	assert.NotContains(t, back.Results.Points[1], "no_measured")

	sw.Grid.Loads = []float64{0.0001}
	c, err = sw.Run()
	require.NoError(t, err)
	card = NewCard(sw, c, 1)
	md = markdown(t, &card)
	assert.Contains(t, md, "| peak goodput | no measured requests at any load | — |")
	assert.Contains(t, md, "- no load measured any request: no knee\n")
	assert.Contains(t, md, "| headroom at the operating point 1 req/s | unknown: no knee inside the sweep | — |")
}

// An experiment whose windows measured nothing has no verdict, and its
// card claims none: no improvement, no NaN.
func TestExperimentCardWithoutMeasuredRequests(t *testing.T) {
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "B is better", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sim.Config{Window: sim.Window{Horizon: time.Millisecond}},
		B:          sim.Config{Window: sim.Window{Horizon: time.Millisecond}, Engine: engine.Config{MaxSeqs: 48}},
		Workload:   analysis.Poisson(workload.Fixed(100, 10)), Loads: []float64{0.5, 1}, Blocks: 2,
	}
	res, err := x.Run()
	require.NoError(t, err)
	require.Equal(t, analysis.NoMeasured, res.Verdict)
	card := NewExperimentCard(x, res)
	md := markdown(t, &card)
	for _, want := range []string{
		"## A/B verdict: no measured requests\n",
		"No improvement of B over A was measured: no block measured a request under both A and B.\n",
		"| 0.5 | — | — | — | no measured requests |",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "NaN")
	assert.NotContains(t, md, "improved |")

	var back map[string]any
	require.NoError(t, json.Unmarshal(jsonOf(t, &card), &back))
	assert.Equal(t, "no measured requests", back["verdict"].(map[string]any)["verdict"])
}

// Issue 8: an A/B card named "System" twice ("## System B (the candidate)"
// then "## System") and carried an all-zero results block, as if it were
// an empty sweep's card. Its result is the experiment's verdict.
func TestExperimentCardHasOneHeadingPerSystemAndNoSweepResults(t *testing.T) {
	x := analysis.Experiment{
		Hypothesis: analysis.Hypothesis{Claim: "A/A", Metric: analysis.MetricGoodput, Threshold: 0.05},
		A:          sim.Config{Window: sim.Window{Warmup: 10 * time.Second, Horizon: time.Minute}},
		B:          sim.Config{Window: sim.Window{Warmup: 10 * time.Second, Horizon: time.Minute}},
		Workload:   analysis.Poisson(workload.Fixed(100, 10)), Loads: []float64{1}, Blocks: 2,
	}
	res, err := x.Run()
	require.NoError(t, err)
	card := NewExperimentCard(x, res)
	md := markdown(t, &card)
	// Goodput at 1 req/s, far below Atlas's knee, is bounded by the
	// offered load: the verdict's warning says so, under its heading.
	require.Len(t, res.Warnings, 1)
	assert.Equal(t, []string{"# Benchmark card", "## A/B verdict: not improved", "### Warnings", "## Workload", "## SLO and window",
		"## System B (the candidate)", "## System A (the baseline)", "## Reproduce", "## Raw events"}, headings(md))
	assert.Contains(t, md, "- "+res.Warnings[0]+"\n")

	var back map[string]any
	require.NoError(t, json.Unmarshal(jsonOf(t, &card), &back))
	assert.NotContains(t, back, "results", "an experiment's card has no sweep results")
	assert.Contains(t, back, "verdict")
}

// Issue 8: the card said drain_s 0 for a run that drained a whole window.
// Drain 0 means one more window; the card records what ran.
func TestCardRecordsTheEffectiveDrain(t *testing.T) {
	for _, tc := range []struct {
		w    sim.Window
		want float64
	}{
		{sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}, 540},
		{sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second, Drain: 30 * time.Second}, 30},
		{sim.Window{Warmup: 60 * time.Second}, 0}, // open: no drain
	} {
		assert.Equal(t, tc.want, windowOf(tc.w).Drain, "%+v", tc.w)
	}
	sw := smallSweep() // warm-up 10 s, horizon 70 s
	card := NewCard(sw, smallCurve(t), 0)
	assert.Contains(t, string(jsonOf(t, &card)), `"drain_s": 60`)
	assert.Contains(t, markdown(t, &card), "- Measured: requests arriving from 10 s to 70 s; they may finish up to 60 s after it.")
}

// Issue 8: the card named an "itl" column that JSON Lines files written
// without token instants do not have. The card's columns are those the
// writers write: the keys of every JSONL line, and the CSV header.
func TestCardEventColumnsAreThoseTheWritersWrite(t *testing.T) {
	for _, keep := range []bool{false, true} {
		var jl, cs bytes.Buffer
		j, c := NewEventJSONL(&jl), NewEventCSV(&cs)
		runFixture(t, keep, multi{j, c})
		require.NoError(t, j.Flush())
		require.NoError(t, c.Flush())

		ev := EventsOf("events.jsonl", "jsonl", fixtureConfig(keep))
		sc := bufio.NewScanner(&jl)
		partial := false
		for sc.Scan() {
			keys := jsonKeys(t, sc.Bytes())
			if len(keys) > len(ev.Columns) {
				assert.Equal(t, append(slices.Clone(ev.Columns), ev.Partial...), keys, "keep tokens %v", keep)
				partial = true
				continue
			}
			assert.Equal(t, ev.Columns, keys, "keep tokens %v", keep)
		}
		assert.Equal(t, keep, partial, "some lines have itl iff tokens were kept")
		header, err := csv.NewReader(&cs).Read()
		require.NoError(t, err)
		assert.Equal(t, EventsOf("events.csv", "csv", fixtureConfig(keep)).Columns, header, "keep tokens %v", keep)

		card := Card{Events: ev}
		md := markdown(t, &card)
		assert.Contains(t, md, "max_itl, max_token_itl, itl_over_budget, draft_tokens, accepted_tokens`")
		assert.Equal(t, keep, strings.Contains(md, "kept, `itl, token_itl`."), "keep tokens %v: %s", keep, md)
	}
}

// A run that measured nothing gives benchstat no goodput, attainment or
// latency (an empty window is no evidence), only its throughput.
func TestBenchLineOfAnEmptyWindow(t *testing.T) {
	sw := smallSweep()
	sw.Grid.Loads = []float64{0.0001}
	c, err := sw.Run()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Bench{}.Write(&buf, c))
	results, _ := checkBenchFormat(t, buf.String())
	require.Len(t, results, 2)
	for _, f := range results {
		assert.Equal(t, []string{"BenchmarkGoodput/load=0.0001-1", "1", "0", "throughput-req/s"}, f)
	}
}

func markdown(t *testing.T, c *Card) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&buf))
	return buf.String()
}

func jsonOf(t *testing.T, c *Card) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, c.WriteJSON(&buf))
	return buf.Bytes()
}

// headings are the Markdown headings of md, in order.
func headings(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// jsonKeys are the keys of a JSON object, in order.
func jsonKeys(t *testing.T, line []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(line, &m))
	dec := json.NewDecoder(bytes.NewReader(line))
	var keys []string
	_, err := dec.Token() // {
	require.NoError(t, err)
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		keys = append(keys, k.(string))
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
	}
	require.Len(t, keys, len(m))
	return keys
}
