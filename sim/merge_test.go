package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMergedSamplesAreTheSort holds mergeSorted to the sort it replaces:
// random values split among up to mergeParts parts (some empty, some
// sharing values), presorted and merged, are the sorted values, in
// milliseconds bit for bit; a fleet sample the parts do not cover, or a
// sketched one, is left to the sort.
func TestMergedSamplesAreTheSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 7))
	sc := new(scratch)
	for round := range 400 {
		n := rng.IntN(3) * rng.IntN(12_000)
		k := 1 + rng.IntN(mergeParts)
		var fleet sample
		parts := make([]sample, k)
		for range n {
			v := time.Duration(rng.Int64N(int64(90 * time.Second)))
			if rng.IntN(4) == 0 {
				v = time.Duration(rng.IntN(8)) * time.Millisecond // repeats
			}
			fleet.add(v, DefaultExactSamples)
			parts[rng.IntN(k)].add(v, DefaultExactSamples)
		}
		want := slices.Clone(fleet.values())
		slices.Sort(want)
		ptrs := make([]*sample, k)
		for i := range parts {
			parts[i].presort(sc)
			ptrs[i] = &parts[i]
		}
		if round%5 == 0 && n > 0 { // a value the parts miss: the fleet sorts
			fleet.add(0, DefaultExactSamples)
			fleet.mergeSorted(ptrs, sc)
			require.False(t, fleet.sorted(), "round %d", round)
			continue
		}
		fleet.mergeSorted(ptrs, sc)
		if n == 0 {
			require.False(t, fleet.sorted())
			continue
		}
		require.True(t, fleet.sorted(), "round %d: %d values in %d parts", round, n, k)
		wantMS := toMS(want)
		require.Equal(t, bitsOf(wantMS), bitsOf(asFloats(fleet.x)), "round %d: %d values in %d parts", round, n, k)
		y, _ := fleet.summarise(0, sc)
		require.Equal(t, bitsOf(wantMS), bitsOf(y))
	}
}

// TestFleetSummaryMergesAsItSorts runs random scenarios (fleets among
// them: autoscaled, disaggregated, with timeouts and errors) and the
// Fleet8LeastLoaded regime with the fleet's samples merged from its
// replicas' (mergeShares) and sorted (sortShares): the same bytes.
func TestFleetSummaryMergesAsItSorts(t *testing.T) {
	run := func(sorted bool, f func() (scenarioRun, error)) scenarioRun {
		sortShares = sorted
		defer func() { sortShares = false }()
		out, err := f()
		require.NoError(t, err)
		return out
	}
	fleets := 0
	for seed := range uint64(300) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		f := func() (scenarioRun, error) { return runScenario(cfg, reqs) }
		merged, sorted := run(false, f), run(true, f)
		sameBytes(t, sorted.text, merged.text)
		if len(merged.sum.Replicas) > 1 {
			fleets++
		}
	}
	require.Positive(t, fleets, "some scenarios ran fleets")
	for _, rg := range regimes {
		if rg.name != "Fleet8LeastLoaded" && rg.name != "Disagg" {
			continue
		}
		cfg, src := rg.build(t, rg.small)
		f := func() (scenarioRun, error) { out, _, err := runSourceScenario(cfg, src()); return out, err }
		merged, sorted := run(false, f), run(true, f)
		sameBytes(t, sorted.text, merged.text)
		require.NotEmpty(t, merged.sum.Samples.TTFT, rg.name)
	}
}
