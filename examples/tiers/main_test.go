package main

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// small are the golden run's arguments: a fleet of 2, short windows, few
// replications and blocks, two A/B loads, the band's shapes alone, one
// store size.
var small = []string{"-replicas", "2", "-reps", "2", "-blocks", "2", "-band-blocks", "2", "-model-error", "0", "-warmup", "10s", "-horizon", "30s",
	"-start", "2", "-operating", "0.8,1.2", "-host-gib", "64", "-shared", "1"}

// The report is pinned by a golden file run with small arguments; run
// `go test ./examples/tiers -update` after a deliberate change. The same
// rows are checked against what the tiers can serve.
func TestRunGolden(t *testing.T) {
	o, err := parse(nil, small)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, writeDeclaration(&out, o))
	byLevel, err := measure(o)
	require.NoError(t, err)
	for _, rs := range byLevel {
		writeLevel(&out, rs, o)
	}
	for _, rs := range byLevel {
		writeAnswer(&out, rs, o)
	}
	golden.Check(t, filepath.Join("testdata", "small.golden"), out.Bytes())

	s := out.String()
	for _, l := range levels {
		for _, r := range setups(o) {
			assert.Equal(t, 1, strings.Count(s, "\nverdict "+l.name+", "+r.name+": "), "one verdict line per row")
		}
		assert.Equal(t, 1, strings.Count(s, "\nstore sizes "+l.name+": "), "one store-size line per level")
	}
	assert.Less(t, strings.Index(s, "Hypothesis, declared before the runs"), strings.Index(s, "== low-reuse"), "the hypothesis comes before any result")

	for _, rs := range byLevel {
		for _, r := range rs {
			for i, c := range r.curves {
				for _, p := range c.Points {
					for k := range p.Runs {
						sum := &p.Runs[k]
						what := r.level.name + ", " + r.name + ", " + r.routers[i].name
						if !r.tiered() {
							assert.Nil(t, sum.Tiers, "%s: no tier, no tier summary", what)
							continue
						}
						require.NotNil(t, sum.Tiers, what)
						tr := sum.Tiers
						assert.Equal(t, sum.Cached, tr.HBM, "%s: the HBM hits are the prefix cache's", what)
						if !r.host.On() {
							assert.Zero(t, tr.Host, "%s: no host tier, no host hits", what)
						}
						if !r.shared.On() {
							assert.Zero(t, tr.Shared, "%s: no store, no store hits", what)
						}
						// Only the shared prefix can be found: at high
						// reuse every request is a 4,096-token prefix and
						// its own 500 tokens, so at most 4,096/4,596 of the
						// prompt tokens are found anywhere.
						if r.level.prefix == workload.FleetHighReuse {
							assert.LessOrEqual(t, (tr.HBM+tr.Host+tr.Shared)*(4096+o.input), 4096*tr.InputTokens, what)
						}
					}
				}
			}
		}
	}
}

// By hand: 256 GiB over the 4 ranks of an Atlas TP4 replica, blocks of
// 16 tokens of 80 KiB on each rank (5 MiB a block), is 256 × 1024 / 5 =
// 52,428.8, so 52,428 whole blocks; sim.HostTier's doc gives 64 GiB as
// 13,107. The fleet of 4 has 4 × 28,672 = 114,688 blocks of HBM (560
// GiB); FleetHighReuse's 256 prefixes of 4,096 tokens are 65,536 blocks
// (320 GiB), FleetLowReuse's 64 of 512 are 2,048.
func TestSizes(t *testing.T) {
	assert.Equal(t, float64(5<<20), blockBytes)
	assert.Equal(t, 52428, hostBlocks(256))
	assert.Equal(t, 13107, hostBlocks(64))
	assert.Equal(t, 114688, hbmBlocks(4))
	assert.Equal(t, "560 GiB", gib(float64(hbmBlocks(4))*blockBytes))
	assert.Equal(t, 28672, sharedBlocks(0.25, 4))
	assert.Equal(t, 458752, sharedBlocks(4, 4))
	assert.Equal(t, 65536, levels[1].workingSet())
	assert.Equal(t, "320 GiB", gib(float64(levels[1].workingSet())*blockBytes))
	assert.Equal(t, 2048, levels[0].workingSet())
	assert.Equal(t, "5 MiB", gib(blockBytes))
}

// rises are relative rises of the knee without intervals.
func rises(c ...float64) []stats.Interval {
	out := make([]stats.Interval, len(c))
	for i, x := range c {
		out[i] = stats.Interval{Center: x, Lo: math.NaN(), Hi: math.NaN()}
	}
	return out
}

// By hand: the rise falls from +8 % without a store to +2 % with 1,000
// blocks, so it crosses 5 % halfway, at 500 blocks (2.44 GiB at 5 MiB a
// block; half of a 1,000-block working set); a rise at or above 5 % at
// every size pays throughout; one below 5 % without a store never paid;
// one that comes back above 5 % at a larger size says so.
func TestStopsPaying(t *testing.T) {
	sizes := []int{0, 1000, 4000}
	assert.Equal(t, "PrefixAffinity stops paying (its rise over RoundRobin falls below 5 %, from +8.0 % (no interval) to +2.0 % (no interval)) between 0 and 1000 blocks of store, at about 500 blocks (2.441 GiB, 0.5x the working set) interpolated",
		stopsPaying(sizes, rises(0.08, 0.02, 0.01), 0.05, 1000))
	assert.Equal(t, "PrefixAffinity's rise over RoundRobin stays at or above 5 % up to 4000 blocks (19.53 GiB, 4x the working set), the largest store tried (+6.0 % (no interval))",
		stopsPaying(sizes, rises(0.1, 0.05, 0.06), 0.05, 1000))
	assert.Equal(t, "PrefixAffinity's rise over RoundRobin is below 5 % already without a store (+1.0 % (no interval))",
		stopsPaying(sizes, rises(0.01, 0.08, 0.09), 0.05, 1000))
	assert.Contains(t, stopsPaying(sizes, rises(0.1, 0.04, 0.07), 0.05, 1000),
		"between 0 and 1000 blocks of store, at about 833 blocks (4.067 GiB, 0.833x the working set) interpolated; its rise is back at or above 5 % with 4000 blocks (+7.0 % (no interval))")
}

func TestRunRefusesBadArguments(t *testing.T) {
	for want, args := range map[string][]string{
		"-replicas must be >= 1":                            {"-replicas", "0"},
		"-input and -output must be >= 1 token":             {"-output", "0"},
		"-threshold must be a relative improvement":         {"-threshold", "NaN"},
		`-operating: "x" is not a positive multiple`:        {"-operating", "0.9,x"},
		"-operating needs 2 loads or more":                  {"-operating", "1"},
		"-start: +Inf is not a positive rate":               {"-start", "Inf"},
		"-reps must be >= 2":                                {"-reps", "1"},
		"-blocks must be >= 2":                              {"-blocks", "0"},
		"-band-blocks must be 0 (every block) or >= 2":      {"-band-blocks", "1"},
		"-model-error must be in [0, 1)":                    {"-model-error", "1"},
		"-warmup must be >= 0 and -horizon after it":        {"-horizon", "1m"},
		"got -1s and 4m0s":                                  {"-warmup", "-1s"},
		"-host-gib must be a size >= 0 GiB":                 {"-host-gib", "-1"},
		"-host-gib 0.001 GiB holds no KV block of 5 MiB":    {"-host-gib", "0.001"},
		"-host-bandwidth must be a positive rate":           {"-host-bandwidth", "0"},
		"-shared-bandwidth must be a positive rate":         {"-shared-bandwidth", "-5"},
		"-host-latency and -shared-latency must be >= 0":    {"-shared-latency", "-1s"},
		`-shared: "0" is not a positive multiple`:           {"-shared", "0,1"},
		"-shared: sizes must rise":                          {"-shared", "1,0.5"},
		"-shared 1e-09 x the fleet's HBM holds no KV block": {"-shared", "1e-9"},
		"-shared 1e+09 x the fleet's HBM is more than":      {"-shared", "1e9"},
		"unexpected arguments":                              {"extra"},
		"flag provided but not defined: -no-such-flag":      {"-no-such-flag"},
	} {
		var out bytes.Buffer
		err := run(&out, args)
		assert.ErrorContains(t, err, want, "%q", args)
		if !strings.Contains(want, "not defined") { // the flag package prints the usage
			assert.Zero(t, out.Len(), "%q: refused before anything is printed", args)
		}
	}
}

// -h documents every flag and is not an error.
func TestHelpDocumentsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(&out, []string{"-h"}))
	help := out.String()
	for _, flag := range []string{"-replicas", "-input", "-output", "-threshold", "-model-error", "-band-blocks", "-operating", "-start", "-reps", "-blocks",
		"-horizon", "-seed", "-workers", "-host-gib", "-host-bandwidth", "-host-latency", "-shared", "-shared-bandwidth", "-shared-latency", "-tiered-view"} {
		assert.Regexp(t, "\n  "+flag+"[ \n]", help, flag)
	}
	assert.Contains(t, help, "Does prefix-aware routing")
}

// By hand: two runs of 1,000 and 3,000 prompt tokens, 400 and 1,200
// found in HBM, 100 and 300 loaded from the host tier, 0 and 400 from
// the store, pool to 1,600/4,000 = 0.4 from HBM, 400/4,000 = 0.1 from
// the host and 400/4,000 = 0.1 from the store; the TTFT share spent
// loading and the links' utilisation are the runs' means, an
// instantaneous link's NaN left out. A run without tiers counts in HBM
// alone.
func TestHitsAtPoolsTheRuns(t *testing.T) {
	p := analysis.Point{Runs: []sim.Summary{
		{InputTokens: 1000, Cached: 400, Tiers: &sim.TierSummary{InputTokens: 1000, HBM: 400, Host: 100, Shared: 0,
			TTFTShareLoading: 0.1, HostUtilisation: 0.2, SharedUtilisation: math.NaN()}},
		{InputTokens: 3000, Cached: 1200, Tiers: &sim.TierSummary{InputTokens: 3000, HBM: 1200, Host: 300, Shared: 400,
			TTFTShareLoading: 0.3, HostUtilisation: 0.4, SharedUtilisation: 0.5}},
	}}
	h := hitsAt(&p)
	assert.InDelta(t, 0.4, h.hbm, 1e-12)
	assert.InDelta(t, 0.1, h.host, 1e-12)
	assert.InDelta(t, 0.1, h.shared, 1e-12)
	assert.InDelta(t, 0.2, h.loading, 1e-12)
	assert.InDelta(t, 0.3, h.hostUtil, 1e-12)
	assert.InDelta(t, 0.5, h.sharedUtil, 1e-12)

	none := hitsAt(&analysis.Point{Runs: []sim.Summary{{InputTokens: 500, Cached: 100}}})
	assert.InDelta(t, 0.2, none.hbm, 1e-12)
	assert.Zero(t, none.host)
	assert.True(t, math.IsNaN(none.loading), "no tier, no loading share")
}

// The conditional line reads the verdict's strength and the band: a
// rise whose interval lies at or below the threshold does not pay, one
// that straddles it with its centre above likely pays; a band that
// holds says so, one that does not names the model it rests on.
func TestIfLine(t *testing.T) {
	hyp := analysis.Hypothesis{Metric: analysis.MetricKnee, Threshold: 0.05}
	iv := func(c, lo, hi float64) stats.Interval { return stats.Interval{Center: c, Lo: lo, Hi: hi, N: 6} }
	base := &analysis.ExperimentResult{Hypothesis: hyp, Improvement: iv(0.064, 0.015, 0.113), Verdict: analysis.Inconclusive}
	notPaid := &analysis.ExperimentResult{Hypothesis: hyp, Improvement: iv(-0.003, -0.018, 0.012), Verdict: analysis.NotImproved,
		KneeA: iv(9.46, 9, 10), KneeB: iv(9.43, 9, 10), KneeDiff: iv(-0.029, -0.169, 0.111), BandHolds: true,
		Band: []analysis.VariantVerdict{{Name: "atlas-linear", Verdict: analysis.NotImproved}}}
	assert.Equal(t, "PrefixAffinity's rise of the knee over RoundRobin is +6.4 % [+1.5, +11.3] without the tier, -0.3 % [-1.8, +1.2] with it (a fall; 9.46 -> 9.43 req/s, paired -0.029 [-0.169, 0.111] req/s): prefix-aware routing does not pay (not improved: the rise is surely at or below +5 %), under every model of the band",
		ifLine(base, notPaid))
	likely := &analysis.ExperimentResult{Hypothesis: hyp, Improvement: iv(0.07, 0.02, 0.12), Verdict: analysis.Inconclusive,
		Band: []analysis.VariantVerdict{{Name: "atlas-roofline", Verdict: analysis.NotImproved, Improvement: iv(-0.01, -0.03, 0.01)}}}
	line := ifLine(base, likely)
	assert.Contains(t, line, "is +6.4 % [+1.5, +11.3] without the tier, +7.0 % [+2.0, +12.0] with it (a rise;")
	assert.Contains(t, line, "prefix-aware routing likely pays, not surely (inconclusive: the interval straddles +5 %), resting on the model (under atlas-roofline -1.0 % [-3.0, +1.0] not improved)")
}
