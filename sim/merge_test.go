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

// TestFleetSummarySplitsAsItMerges runs the scenarios and regimes of
// TestFleetSummaryMergesAsItSorts with the shares sorted together and
// split (splitSorted) and sorted each and merged (mergeOnly): the same
// bytes, each share's Dist (whose sums depend on where its array lies)
// among them.
func TestFleetSummarySplitsAsItMerges(t *testing.T) {
	run := func(merge bool, f func() (scenarioRun, error)) scenarioRun {
		mergeOnly = merge
		defer func() { mergeOnly = false }()
		out, err := f()
		require.NoError(t, err)
		return out
	}
	for seed := range uint64(300) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		f := func() (scenarioRun, error) { return runScenario(cfg, reqs) }
		sameBytes(t, run(true, f).text, run(false, f).text)
	}
	for _, rg := range regimes {
		if rg.name != "Fleet8LeastLoaded" && rg.name != "Disagg" {
			continue
		}
		cfg, src := rg.build(t, rg.small)
		f := func() (scenarioRun, error) { out, _, err := runSourceScenario(cfg, src()); return out, err }
		sameBytes(t, run(true, f).text, run(false, f).text)
	}
}

// TestSplitSamplesAreTheSort holds splitSorted to the presorts and the
// merge it replaces (mergeSorted's own twin is the sort): random values
// split among up to mergeParts parts (some empty, some sharing values,
// some in more than one chunk), sorted together and split, are each
// part's values sorted and the fleet's, in milliseconds bit for bit; a
// fleet sample the parts do not cover, a part already sorted, or a value
// too long to tag, is left as it was for the merge.
func TestSplitSamplesAreTheSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 8))
	sc := new(scratch)
	gap := func(round int) time.Duration {
		switch rng.IntN(8) {
		case 0, 1:
			return time.Duration(rng.IntN(8)) * time.Millisecond // repeats
		case 2:
			if round%7 == 0 {
				return time.Duration(rng.Int64N(1 << 62)) // too long to tag, in some rounds
			}
		}
		return time.Duration(rng.Int64N(int64(90 * time.Second)))
	}
	for round := range 400 {
		k := 1 + rng.IntN(mergeParts)
		parts, fleet := make([]sample, k), sample{}
		for range rng.IntN(3) * rng.IntN(12_000) {
			v := gap(round)
			fleet.add(v, DefaultExactSamples)
			parts[rng.IntN(k)].add(v, DefaultExactSamples)
		}
		n := fleet.n + len(fleet.cur)
		want := slices.Clone(fleet.values())
		slices.Sort(want)
		wantParts := make([][]uint64, k)
		for i := range parts {
			c := parts[i].clone()
			c.presort(sc)
			wantParts[i] = bitsOf(asFloats(c.x))
		}
		ptrs := make([]*sample, k)
		for i := range parts {
			ptrs[i] = &parts[i]
		}
		if round%5 == 0 && n > 0 { // a value the parts miss: nothing changes
			fleet.add(0, DefaultExactSamples)
			require.False(t, fleet.splitSorted(ptrs, sc), "round %d", round)
			require.False(t, fleet.sorted(), "round %d", round)
			for i := range parts {
				require.False(t, parts[i].sorted(), "round %d", round)
			}
			continue
		}
		if round%11 == 0 && n > 0 { // a part sorted already: nothing changes
			parts[0].presort(sc)
			require.False(t, fleet.splitSorted(ptrs, sc), "round %d", round)
			require.False(t, fleet.sorted(), "round %d", round)
			continue
		}
		split := fleet.splitSorted(ptrs, sc)
		if n == 0 || slices.Max(want) >= 1<<59 {
			require.False(t, split, "round %d", round)
			require.False(t, fleet.sorted(), "round %d", round)
			continue
		}
		require.True(t, split, "round %d: %d values in %d parts", round, n, k)
		require.True(t, fleet.sorted())
		require.Equal(t, bitsOf(toMS(want)), bitsOf(asFloats(fleet.x)), "round %d: %d values in %d parts", round, n, k)
		for i := range parts {
			require.True(t, parts[i].sorted(), "round %d: part %d", round, i)
			require.Equal(t, wantParts[i], bitsOf(asFloats(parts[i].x)), "round %d: part %d", round, i)
		}
	}
}
