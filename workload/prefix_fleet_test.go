package workload_test

import (
	"io"
	"math"
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedTokens is the working set of p's shared prompts: every group's
// full blocks, the part a prefix cache can hold for others.
func sharedTokens(p workload.PrefixReuse, groups int) int {
	return groups * (p.PrefixTokens / p.BlockTokens * p.BlockTokens)
}

// zipfTotal is Σₖ (k+1)^−s over p's groups: group k's share of the
// shared requests is (k+1)^−s / zipfTotal(p).
func zipfTotal(p workload.PrefixReuse) float64 {
	total := 0.0
	for k := range p.Groups {
		total += math.Pow(float64(k+1), -p.Zipf)
	}
	return total
}

// popularGroups is the number of most popular groups of p that carry at
// least a share of its shared requests.
func popularGroups(p workload.PrefixReuse, share float64) int {
	total, cum := zipfTotal(p), 0.0
	for k := range p.Groups {
		if cum += math.Pow(float64(k+1), -p.Zipf) / total; cum >= share {
			return k + 1
		}
	}
	return p.Groups
}

// FleetHighReuse's working set is larger than one Atlas TP4 replica's KV
// cache and smaller than a fleet of 4's, counting all of it or only the
// groups that carry 90 % or 80 % of the requests; split among 4 replicas it
// fits each. FleetLowReuse's fits one replica ten times over.
func TestFleetPresetsWorkingSet(t *testing.T) {
	replica := costmodel.AtlasKVTokens
	require.Equal(t, 458_752, replica)
	require.Equal(t, 28_672*16, replica)
	fleet := 4 * replica

	high := workload.FleetHighReuse
	require.NoError(t, high.Validate())
	all := sharedTokens(high, high.Groups)
	assert.Equal(t, 1_048_576, all)
	assert.True(t, replica < all && all < fleet, "working set %d tokens, replica %d, fleet %d", all, replica, fleet)
	assert.Equal(t, 262_144, all/4, "each replica's share when a router splits the groups")
	assert.Less(t, all/4+32*700, replica, "a replica's share and a batch of 32 running requests' own tokens fit its pool")

	for _, c := range []struct {
		share  float64
		groups int
		tokens int
	}{{0.9, 178, 729_088}, {0.8, 120, 491_520}} {
		m := popularGroups(high, c.share)
		assert.Equal(t, c.groups, m, "groups carrying %g of the requests", c.share)
		ws := sharedTokens(high, m)
		assert.Equal(t, c.tokens, ws)
		assert.True(t, replica < ws && ws < fleet, "popular working set %d tokens", ws)
	}
	assert.InDelta(t, 0.093, 1/zipfTotal(high), 0.0005, "the most popular prefix's share of the requests")

	low := workload.FleetLowReuse
	require.NoError(t, low.Validate())
	assert.Equal(t, 32_768, sharedTokens(low, low.Groups))
	assert.Less(t, 10*sharedTokens(low, low.Groups), replica)
}

// With its prefix cached, a FleetHighReuse request with a 500-token suffix
// prefills in 37.5 ms; uncached in 180.86 ms: both within the TTFT SLO.
// A FleetLowReuse hit saves under 18 ms.
func TestFleetPresetsPrefillWithinTTFT(t *testing.T) {
	cost := costmodel.Frozen{}
	const suffix = 500
	cached := cost.PrefillTime(suffix)
	uncached := cost.PrefillTime(workload.FleetHighReuse.PrefixTokens + suffix)
	assert.Equal(t, 37500*time.Microsecond, cached)
	assert.Equal(t, 180860*time.Microsecond, uncached)
	assert.Less(t, uncached, costmodel.AtlasTTFT)
	saved := cost.PrefillTime(workload.FleetLowReuse.PrefixTokens+suffix) - cost.PrefillTime(suffix)
	assert.Equal(t, 17920*time.Microsecond, saved)
}

// Two requests of the same group share exactly the full blocks of the
// prefix, a common leading run of PrefixTokens/BlockTokens ids, and
// nothing after it; requests of different groups share no id. A prefix
// that ends inside a block (1,000 tokens = 62 blocks and 8 tokens) shares
// its 62 full blocks only.
func TestPrefixSameGroupSharesFullBlocks(t *testing.T) {
	for _, p := range []workload.PrefixReuse{
		workload.FleetHighReuse,
		{Groups: 3, PrefixTokens: 1000, Probability: 1, BlockTokens: 16, Zipf: 1},
	} {
		full := p.PrefixTokens / p.BlockTokens
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: 5, Count: 300, Arrival: workload.Arrival{Rate: 2},
			Lengths: workload.Independent{Input: workload.Uniform{Center: 500, RangeRatio: 0.5}, Output: workload.Constant{Tokens: 200}},
			Prefix:  p})
		require.NoError(t, err)
		var reqs []workload.Request
		var sets []map[uint64]bool
		for r, err := g.Next(); err != io.EOF; r, err = g.Next() {
			require.NoError(t, err)
			require.Len(t, r.PrefixHashes, (r.InputTokens+p.BlockTokens-1)/p.BlockTokens)
			reqs = append(reqs, r)
			sets = append(sets, idSet(r.PrefixHashes))
		}
		same := 0
		for i, a := range reqs {
			for j, b := range reqs[i+1:] {
				group := a.PrefixHashes[0]/uint64(full) == b.PrefixHashes[0]/uint64(full)
				run := commonRun(a.PrefixHashes, b.PrefixHashes)
				if group {
					same++
					assert.Equal(t, full, run, "requests %d and %d", a.ID, b.ID)
				} else {
					assert.Zero(t, run, "requests %d and %d of different groups", a.ID, b.ID)
				}
				assert.Equal(t, run, shared(a.PrefixHashes, sets[i+1+j]), "requests %d and %d share ids past their common run", a.ID, b.ID)
			}
		}
		assert.Positive(t, same, "some pairs of the same group")
	}
}

// commonRun is the length of the common leading run of a and b.
func commonRun(a, b []uint64) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// idSet is the set of ids.
func idSet(ids []uint64) map[uint64]bool {
	in := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	return in
}

// shared is the number of ids of a found in the set b.
func shared(a []uint64, b map[uint64]bool) int {
	n := 0
	for _, id := range a {
		if b[id] {
			n++
		}
	}
	return n
}
