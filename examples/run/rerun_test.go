package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/scenario"
)

// Issue 32: a card whose recorded knee was edited to 3.5 reran to 2.010
// and never compared. A rerun of a card holds the card's recorded results
// to its own, figure by figure: "reproduced" when all agree; otherwise
// each figure that differs, with the card's value and the rerun's, and an
// error (exit status 1) after the files are written.
func TestRerunComparesWithTheCard(t *testing.T) {
	first := t.TempDir()
	runIn(t, first, "-config", shrink(t, "atlas-capacity.json", smallAtlas))
	card := filepath.Join(first, "atlas-capacity-card.json")

	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-config", card, "-no-files"}))
	m := regexp.MustCompile(`\n\nrerun      reproduced: every one of the (\d+) figures (.*) records \(results\) is the rerun's\n$`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.Greater(t, n, 200, "every point's figures, the knee, the peak, the headroom and the band")
	assert.Equal(t, card, m[2])

	// The knee edited to 3.5: the rerun says which figure differs.
	b, err := os.ReadFile(card)
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(b, &c))
	load := c["results"].(map[string]any)["knee"].(map[string]any)["load"].(map[string]any)
	center := load["center"].(float64)
	load["center"] = 3.5
	edited, err := json.MarshalIndent(c, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "edited-card.json")
	require.NoError(t, os.WriteFile(path, edited, 0o644))
	out.Reset()
	dir := t.TempDir()
	err = run(&out, []string{"-config", path, "-out", dir})
	require.Error(t, err)
	assert.Equal(t, "the rerun does not reproduce "+path+": 1 of "+m[1]+" recorded figures differ (listed above)", err.Error())
	assert.Contains(t, out.String(), "\n\nrerun      NOT reproduced: 1 of the "+m[1]+" figures "+path+" records differ from the rerun's:\n"+
		"           results.knee.load.center: card 3.5, rerun "+strconv.FormatFloat(center, 'g', -1, 64)+"\n")
	assert.FileExists(t, filepath.Join(dir, "atlas-capacity-card.json"), "the files are written first")
	report, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	require.NoError(t, err)
	assert.NotContains(t, string(report), "rerun ", "report.txt is the study's report, not the comparison")

	// A scenario file is not a card: nothing to compare.
	out.Reset()
	require.NoError(t, run(&out, []string{"-config", shrink(t, "atlas-capacity.json", smallAtlas), "-no-files"}))
	assert.NotContains(t, out.String(), "rerun ")
}

// A figure the rerun has and the card lacks (or the other way round) is
// listed leaf by leaf as absent on one side; provenance in words
// (results.capacity.source) is not a figure.
func TestCompareCardsListsAbsentFigures(t *testing.T) {
	var diffs []difference
	n := 0
	walk("results", map[string]any{"knee": 1, "capacity": map[string]any{"req_per_s": 2, "source": "a"}},
		map[string]any{"capacity": map[string]any{"req_per_s": 2, "source": "b"}, "headroom": map[string]any{"abs": 0.5, "rel": []any{1, 2}}},
		true, true, &diffs, &n)
	assert.Equal(t, 4, n, "knee, capacity.req_per_s, headroom.abs, headroom.rel")
	assert.Equal(t, []difference{
		{"results.headroom.abs", "absent", "0.5"},
		{"results.headroom.rel", "absent", "[1,2]"},
		{"results.knee", "1", "absent"},
	}, diffs)
}

// Issue 32: a scenario whose requests can never fit in KV (KVBlocks: 1)
// labelled every load "overloaded" at attainment 0. Each load refused
// every request at arrival: it is labelled refused.
func TestNeverFittingRequestsAreRefused(t *testing.T) {
	path := shrink(t, "atlas-capacity.json", func(s *scenario.Scenario) {
		smallAtlas(s)
		s.Sweep.Config.Engine.KVBlocks = 1
	})
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-config", path, "-no-files"}))
	got := out.String()
	assert.Contains(t, got, ", 1 KV blocks of 16;")
	for _, load := range []string{"1.000", "2.000", "2.500"} {
		assert.Regexp(t, `\n +`+regexp.QuoteMeta(load)+` +\d+ +0\.000 +\[0\.00, 0\.00\] +0\.000 +\[0\.000, 0\.000\] +- +- +- +refused\n`, got)
	}
	assert.NotContains(t, got, "overloaded")
}
