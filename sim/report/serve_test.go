package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

func fixtureServe(t *testing.T) (sim.Summary, []byte) {
	var tally Tally
	sum := runFixture(t, false, &tally)
	w := fixtureConfig(false).Window
	var buf bytes.Buffer
	require.NoError(t, WriteServe(&buf, &sum, Meta{Label: "fixture", ModelID: "atlas-70b-tp4", RequestRate: 2, Burstiness: 1, InputTokens: tally.InputTokens, Window: &w}))
	return sum, buf.Bytes()
}

func TestServeGolden(t *testing.T) {
	_, b := fixtureServe(t)
	checkGolden(t, "serve.json", b)
}

// The summary's numbers are the Summary's, under vLLM's names.
func TestServeNumbersAreTheSummarys(t *testing.T) {
	sum, b := fixtureServe(t)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))

	ok := sum.Count(sim.StatusOK)
	assert.EqualValues(t, ok, m["completed"])
	assert.EqualValues(t, sum.Offered-ok, m["failed"], "vLLM's failed is every request that did not succeed")
	assert.EqualValues(t, sum.Offered, m["num_prompts"])
	assert.Equal(t, sum.Window.Seconds(), m["duration"])
	assert.Equal(t, sum.RequestThroughput, m["request_throughput"])
	assert.Equal(t, sum.Goodput, m["request_goodput"])
	assert.Equal(t, sum.OutputThroughput, m["output_throughput"])
	assert.EqualValues(t, sum.Tokens, m["total_output_tokens"])
	assert.EqualValues(t, 2000+100+2000, m["total_input_tokens"], "prompts of the measured ok requests 1, 5 and 6")
	assert.InDelta(t, float64(4100+sum.Tokens)/sum.Window.Seconds(), m["total_token_throughput"], 1e-12)
	for name, d := range map[string]stats.Dist{"ttft": sum.TTFT, "tpot": sum.TPOT, "itl": sum.ITL, "e2el": sum.E2E, "queue_delay": sum.QueueDelay} {
		assert.Equal(t, d.Mean, m["mean_"+name+"_ms"], name)
		assert.Equal(t, d.Median, m["median_"+name+"_ms"], name)
		assert.Equal(t, d.Std, m["std_"+name+"_ms"], name)
		assert.Equal(t, d.P99, m["p99_"+name+"_ms"], name)
	}
	assert.Equal(t, sum.Attainment, m["attainment"])
	assert.EqualValues(t, sum.Good, m["good"])
	assert.Equal(t, map[string]any{"ok": 3.0, "rejected": 1.0, "timed_out": 1.0, "errored": 1.0, "unfinished": 0.0}, m["status"])
	assert.Equal(t, map[string]any{"ttft_ms": 600.0, "itl_ms": 150.0, "tpot_ms": nil, "e2el_ms": nil}, m["slo"], "unbounded SLOs are null")
	misses := m["misses"].(map[string]any)
	total := 0.0
	for _, v := range misses {
		total += v.(float64)
	}
	assert.EqualValues(t, sum.Offered-sum.Good, total, "offered = good + Σ exclusive misses")
}

func TestServeWritesNullNotMadeUpFigures(t *testing.T) {
	var sum sim.Summary
	var buf bytes.Buffer
	require.NoError(t, WriteServe(&buf, &sum, Meta{}))
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m), buf.String())
	for _, k := range []string{"label", "model_id", "request_rate", "burstiness", "max_concurrency", "total_input_tokens", "total_token_throughput"} {
		assert.Contains(t, m, k)
		assert.Nil(t, m[k], k)
	}
	assert.NotContains(t, m, "date")
}

func TestServeRefusesANilSummary(t *testing.T) {
	var buf bytes.Buffer
	assert.Error(t, WriteServe(&buf, nil, Meta{}))
	assert.Error(t, Bench{}.Write(&buf, nil))
}
