package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// FuzzPlainChunksAreEachChunk holds plainChunks, which counts a step's
// plain chunks by size, to accountChunk, which accounts each alone
// (eachChunk), on random scenarios with speculative decoding, the
// engine's paths the same both ways: every record and the summary, the
// same bytes.
func FuzzPlainChunksAreEachChunk(f *testing.F) {
	for seed := range uint64(64) {
		f.Add(randomScenario(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		plainChunksAreEachChunk(t, data)
	})
}

// TestPlainChunksAreEachChunk is FuzzPlainChunksAreEachChunk over 600
// seeded scenarios (about one in four speculative), and the Speculation
// regime; half of each with two tables a runner (chunkShift), whose
// gaps take each other's places at almost every change.
func TestPlainChunksAreEachChunk(t *testing.T) {
	defer func(s uint) { chunkShift = s }(chunkShift)
	few := func(i uint64) {
		chunkShift = 64 - 10
		if i%2 == 1 {
			chunkShift = 63 // two slots
		}
	}
	spec := 0
	for seed := range uint64(600) {
		few(seed)
		if plainChunksAreEachChunk(t, randomScenario(1000+seed)) {
			spec++
		}
	}
	require.Greater(t, spec, 100, "speculative scenarios")
	// The regime, and with ITL bounds about its steps' and their
	// fractions, in either series, so that chunks pass them by their
	// gap or their gap over their tokens.
	rg := regimeNamed(t, "Speculation")
	over := 0
	for i, itl := range []time.Duration{0, 8, 12, 16, 24, 40} {
		for _, series := range []ITLSeries{PerChunk, PerToken} {
			few(uint64(i))
			cfg, src := rg.build(t, 200)
			if itl > 0 {
				cfg.SLO.ITL, cfg.SLO.ITLSeries = itl*time.Millisecond, series
			}
			fast, _, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			eachChunk = true
			each, _, err := runSourceScenario(cfg, src())
			eachChunk = false
			require.NoError(t, err)
			sameBytes(t, each.text, fast.text)
			for _, rec := range fast.recs {
				over += rec.ITLOver
			}
		}
	}
	require.Positive(t, over, "gaps over the ITL bound")

	// A fleet of speculative replicas of two K, whose steps interleave:
	// the table changes with the replica.
	rcs := []ReplicaConfig{{Speculation: Speculation{Tokens: 3, Acceptance: 0.6}}, {Speculation: Speculation{Tokens: 5, Acceptance: 0.8}}, {Speculation: Speculation{Tokens: 3, Acceptance: 0.6}}}
	cfg := Config{Fleet: Fleet{Replicas: rcs, Router: LeastLoaded{}}, Timeout: 20 * time.Second}
	fast, _, err := runSourceScenario(cfg, poisson(t, 5, 8, 300, workload.Fixed(800, 150)))
	require.NoError(t, err)
	eachChunk = true
	defer func() { eachChunk = false }()
	each, _, err := runSourceScenario(cfg, poisson(t, 5, 8, 300, workload.Fixed(800, 150)))
	require.NoError(t, err)
	sameBytes(t, each.text, fast.text)
}

// plainChunksAreEachChunk runs the scenario of data both ways, when it
// decodes speculatively, and reports whether it does.
func plainChunksAreEachChunk(t *testing.T, data []byte) bool {
	t.Helper()
	cfg, reqs := decodeScenario(data)
	speculates := cfg.Speculation.Tokens > 0
	for _, rc := range cfg.Fleet.Replicas {
		speculates = speculates || rc.Speculation.Tokens > 0
	}
	if !speculates {
		return false
	}
	fast, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	eachChunk = true
	defer func() { eachChunk = false }()
	each, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	sameBytes(t, each.text, fast.text)
	return true
}
