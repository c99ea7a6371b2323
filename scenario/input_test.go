package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// atlasFile is the capacity scenario examples/run ships.
const atlasFile = "../examples/run/scenarios/atlas-capacity.json"

// withEngine is the scenario file at path with its sweep's engine field
// set to the number v, as a user would edit it.
func withEngine(t *testing.T, path, field, v string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m))
	engine := m["Sweep"].(map[string]any)["Config"].(map[string]any)["Engine"].(map[string]any)
	engine[field] = json.Number(v)
	out, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return out
}

// A scenario file with 2³¹ KV blocks is refused when it is read, naming
// the file, the field and the bound; it used to pass and panic on the
// first step ("invariant progress broken").
func TestScenarioFileBoundsKVBlocks(t *testing.T) {
	const want = "scenario: Sweep: engine: KVBlocks must be <= 2147483647 (MaxKVBlocks: block ids and runs of free blocks are int32), got 2147483648"
	_, err := Default().Parse(withEngine(t, atlasFile, "KVBlocks", "2147483648"))
	assert.EqualError(t, err, want)

	path := filepath.Join(t.TempDir(), "atlas.json")
	require.NoError(t, os.WriteFile(path, withEngine(t, atlasFile, "KVBlocks", "2147483648"), 0o644))
	_, err = Load(path)
	assert.EqualError(t, err, path+": "+want)

	// The largest pool is accepted, and so is every other count at its
	// bound.
	s, err := Default().Parse(withEngine(t, atlasFile, "KVBlocks", "2147483647"))
	require.NoError(t, err)
	assert.Equal(t, 2147483647, s.Sweep.Config.Engine.KVBlocks)
	_, err = Default().Parse(withEngine(t, atlasFile, "MaxSeqs", "2147483648"))
	assert.ErrorContains(t, err, "engine: MaxSeqs must be <= 16384 (MaxSeqsLimit")
	// A number past int64 is a decoding error naming the path.
	_, err = Default().Parse(withEngine(t, atlasFile, "KVBlocks", "99999999999999999999"))
	assert.ErrorContains(t, err, "Scenario.Sweep.Config.Engine.KVBlocks")
}

// A scenario file with a UTF-8 byte order mark (Notepad writes one) reads
// as the same file without it; it was refused as "invalid character 'ï'"
// while the trace readers accept one. So does a card.
func TestScenarioByteOrderMark(t *testing.T) {
	plain, err := os.ReadFile(atlasFile)
	require.NoError(t, err)
	bom := append([]byte("\ufeff"), plain...)
	want, err := Default().Parse(plain)
	require.NoError(t, err)
	got, err := Default().Parse(bom)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	path := filepath.Join(t.TempDir(), "bom.json")
	require.NoError(t, os.WriteFile(path, bom, 0o644))
	got, err = Load(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	var cfg sim.Config
	require.NoError(t, Default().Unmarshal([]byte("\ufeff{\"Engine\":{\"MaxSeqs\":8}}"), &cfg))
	assert.Equal(t, 8, cfg.Engine.MaxSeqs)
	// Only a leading mark: one inside the text is still an error, with
	// its place.
	err = Default().Unmarshal([]byte("{\n\ufeff\"Engine\":{}}"), &cfg)
	assert.ErrorContains(t, err, "sim.Config: line 2, column 1: invalid character 'ï' looking for beginning of object key string")

	raw, why := Default().CardScenario(want)
	require.Empty(t, why)
	card, err := json.Marshal(map[string]any{"analysis_revision": analysis.AnalysisRevision(), "scenario": raw})
	require.NoError(t, err)
	card = append([]byte("\ufeff"), card...)
	assert.True(t, IsCard(card))
	back, err := Default().ParseCard(card, CardOptions{})
	require.NoError(t, err)
	assert.Equal(t, want, back)
}
