package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
)

// shipped is the copy of the measured data in testdata (see its NOTICE.md).
var shipped = filepath.Join("testdata", bundle)

// The default data are the shipped copy, whatever lies beside the
// repository: a fresh clone runs the same comparison.
func TestDefaultDataIsTheShippedCopy(t *testing.T) {
	abs, err := filepath.Abs(shipped)
	require.NoError(t, err)
	assert.Equal(t, abs, defaultData())
}

// The comparison at the defaults is pinned by a golden file.
func TestRunGolden(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-data", shipped}))
	golden.Check(t, filepath.Join("testdata", "validate.golden"), out.Bytes())
}

// The acceptance test: replayed through the kernel-profile cost
// model, each request's E2E and TPOT are within 3 % of vLLM's (mean
// absolute percentage error), and the mean TTFT within 10 %, with nothing
// fitted to the run. It takes under a second of CPU (logged, not
// asserted: a loaded machine stretches the wall clock).
func TestReplayMatchesTheMeasuredRun(t *testing.T) {
	start := time.Now()
	m, err := readMeasured(shipped)
	require.NoError(t, err)
	r, err := replay(options{kvBlocks: shippedKVBlocks, kvFrom: kvDeclared}, m)
	require.NoError(t, err)
	c := compare(m.requests, r.records)
	t.Logf("replayed in %v: MAPE TTFT %.2f %%, TPOT %.2f %%, E2E %.2f %%; mean TTFT %+.1f %%", time.Since(start),
		c.ttft.mape, c.tpot.mape, c.e2e.mape, 100*(c.ttft.simulated.mean/c.ttft.measured.mean-1))
	assert.Zero(t, c.notOK)
	assert.LessOrEqual(t, c.e2e.mape, 3.0, "E2E MAPE %")
	assert.LessOrEqual(t, c.tpot.mape, 3.0, "TPOT MAPE %")
	assert.InDelta(t, 1, c.ttft.simulated.mean/c.ttft.measured.mean, 0.10, "mean TTFT")
	assert.Zero(t, r.outside, "every step inside the profiled grid")
}

// The KV pool is declared by the bundle, not recorded by the run. The
// replay holds at most 10,247 blocks at once, so the pool matters only
// through the prefix cache, which recycles freed blocks sooner in a
// smaller pool: from 25,000
// blocks up the comparison is the same; at 12,000 one request loses its
// 448-token prefix hit and each MAPE moves by under 0.05 points.
func TestTheKVAssumptionBarelyMovesTheResult(t *testing.T) {
	m, err := readMeasured(shipped)
	require.NoError(t, err)
	at := func(blocks int) (*replayed, comparison) {
		r, err := replay(options{kvBlocks: blocks, kvFrom: kvGiven}, m)
		require.NoError(t, err)
		return r, compare(m.requests, r.records)
	}
	r, c := at(shippedKVBlocks)
	assert.Equal(t, 10247, r.peakKV)
	for _, blocks := range []int{25_000, 70_000} {
		_, other := at(blocks)
		assert.Equal(t, c, other, "%d blocks", blocks)
	}
	small, other := at(12_000)
	assert.Equal(t, r.cached-448, small.cached)
	for i, m := range c.metrics() {
		assert.InDelta(t, m.mape, other.metrics()[i].mape, 0.05, m.name)
	}
}

// -card writes the validation as a JSON benchmark card: the claim, the
// profile's provenance and every declared assumption, the comparison.
func TestRunWritesACard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.json")
	require.NoError(t, run(&bytes.Buffer{}, []string{"-data", shipped, "-card", path}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var card struct {
		Claim  string `json:"claim"`
		System struct {
			Engine []struct{ Name, Value string } `json:"engine"`
			Model  []struct{ Name, Value string } `json:"cost_model_settings"`
		} `json:"system"`
		Notes   []string        `json:"notes"`
		Results json.RawMessage `json:"results"`
	}
	require.NoError(t, json.Unmarshal(b, &card))
	assert.Contains(t, card.Claim, "nothing fitted to the run's latencies")
	settings := map[string][]string{}
	for _, s := range card.System.Model {
		settings[s.Name] = append(settings[s.Name], s.Value)
	}
	assert.Equal(t, []string{"NVIDIA RTX PRO 6000 Blackwell Server Edition"}, settings["profile GPU"])
	assert.Equal(t, []string{"vLLM 0.19.0, CUDA 13.0"}, settings["profile software"])
	assert.Equal(t, []string{"2026-04-24T12:44:27+00:00"}, settings["profiled at"])
	assert.Contains(t, settings["declared"], "32 decoder layers (declared; the profile times one)")
	assert.Contains(t, settings["declared"], "TP 1: no collective")
	assert.Contains(t, card.System.Engine, struct{ Name, Value string }{"KVBlocks", "35000"})
	notes := strings.Join(card.Notes, "\n")
	assert.Contains(t, notes, "35000 KV blocks of 16 tokens, declared by the bundle, not recorded by the run (bundle.json kv_blocks: vLLM sizes the pool")
	assert.Contains(t, notes, "LLMServingSim's own prediction of this run (llmservingsim-sim.csv): TTFT 10.8 %, TPOT 1.54 %, E2E 1.94 %")
	assert.Contains(t, notes, "Per-request MAPE: TTFT ")
	assert.Nil(t, card.Results, "a single replay has no curve")
}

func TestRunRefusesBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"-kvblocks 0":                  "-kvblocks and -layers must be > 0 when given, got -kvblocks 0",
		"-layers -1":                   "-kvblocks and -layers must be > 0 when given, got -layers -1",
		"-kvblocks 2147483648":         "-kvblocks must be at most 2147483647 (engine.MaxKVBlocks), got 2147483648",
		"-card card.md":                "the card is written as JSON",
		"-card /nonexistent/card.json": `-card "/nonexistent/card.json": its directory /nonexistent does not exist`,
		"x":                            "unexpected arguments",
		"-data /nonexistent":           "/nonexistent/vllm/meta.json",
		"-data=":                       "-data: no default outside the servesim module (the shipped run is examples/validate/testdata/rtxpro6000-llama-3.1-8b there); name the directory",
	} {
		var out bytes.Buffer
		assert.ErrorContains(t, run(&out, strings.Fields(args)), want, args)
		assert.Zero(t, out.Len(), "%s: refused before anything is printed", args)
	}
}

// shippedKVBlocks is the KV pool the shipped bundle declares (bundle.json).
const shippedKVBlocks = 35_000
