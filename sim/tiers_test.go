package sim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// tiered is a fleet of n replicas of kv blocks each (0: Atlas's) with
// PrefixAffinity or RoundRobin, a host tier and a shared store of the given
// sizes (negative: none), on 50 GB/s PCIe and a fair 12.5 GB/s network.
func tiered(n, kv int, router Router, host, shared int) Config {
	cfg := Config{Timeout: 20 * time.Second, Window: Window{Warmup: 20 * time.Second, Horizon: 200 * time.Second},
		Fleet: Fleet{Replicas: Copies(n, ReplicaConfig{Engine: engine.Config{KVBlocks: kv}}), Router: router}}
	if host >= 0 {
		cfg.Fleet.HostTier = HostTier{Blocks: host, Link: Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond}}
	}
	if shared >= 0 {
		cfg.Fleet.SharedStore = SharedStore{Blocks: shared, Link: Link{Bandwidth: 12.5e9, Latency: 200 * time.Microsecond, Sharing: LinkFair}}
	}
	return cfg
}

// A tier of no room is no tier, byte for byte: every store is dropped,
// every lookup misses, and the engines (whose fast paths a tier turns
// off) plan every step as the fast-forwarded engines without one, under
// prefix sharing, timeouts and KV pressure. Only Summary.Tiers is new.
func TestZeroTierIsNoTier(t *testing.T) {
	t.Parallel()
	for _, kv := range []int{0, 900} {
		t.Run(fmt.Sprintf("KVBlocks %d", kv), func(t *testing.T) {
			base := tiered(3, kv, PrefixAffinity{}, -1, -1)
			src, err := sharedWorkload(5, 3)
			require.NoError(t, err)
			want, wantRecs, wantSum := recordsOf(t, base, src)
			require.NotEmpty(t, wantRecs)
			for _, c := range []struct {
				name         string
				host, shared int
			}{{"host", 0, -1}, {"shared", -1, 0}, {"both", 0, 0}} {
				cfg := tiered(3, kv, PrefixAffinity{}, c.host, c.shared)
				src, err := sharedWorkload(5, 3)
				require.NoError(t, err)
				got, _, sum := recordsOf(t, cfg, src)
				sameBytes(t, want, got)
				require.NotNil(t, sum.Tiers, c.name)
				assert.Zero(t, sum.Tiers.Loads, c.name)
				assert.Zero(t, sum.Tiers.Host+sum.Tiers.Shared, c.name)
				assert.Positive(t, sum.Tiers.HostDropped+sum.Tiers.SharedDropped, "%s: the stores were offered and dropped", c.name)
				sum.Tiers = nil
				assert.Equal(t, fmt.Sprintf("%+v", wantSum), fmt.Sprintf("%+v", sum), c.name)
				if kv > 0 {
					assert.Positive(t, wantSum.Preempt, "the small cache preempts")
				}
			}
		})
	}
}

// With tiers that hold blocks, a run is the same bytes stepwise
// (Config.Stepwise) as fast-forwarded (TestPropertiesOfRandomScenarios
// also checks every engine's invariants after every plan and step, with
// tiers in two scenarios of three).
func TestTiersStepwiseIsFast(t *testing.T) {
	for _, c := range []struct {
		name         string
		router       Router
		host, shared int
	}{{"host RoundRobin", RoundRobin{}, 4000, -1}, {"shared PrefixAffinity", PrefixAffinity{}, -1, 20000}, {"both RoundRobin", RoundRobin{}, 2000, 8000}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tiered(3, 900, c.router, c.host, c.shared)
			src, err := sharedWorkload(5, 3)
			require.NoError(t, err)
			want, _, sum := recordsOf(t, cfg, src)
			require.Positive(t, sum.Tiers.Loads, "the tiers served loads")
			cfg.Stepwise = true
			src, err = sharedWorkload(5, 3)
			require.NoError(t, err)
			got, _, _ := recordsOf(t, cfg, src)
			sameBytes(t, want, got)
			t.Logf("%s: %v", c.name, sum.Tiers)
		})
	}
}

// The hits add up and the bytes conserve: the prompt tokens found in
// HBM, the host tier and the shared store never exceed the prompt and
// add up to the summary's; with no timeout (no load is cancelled) and a
// window that holds every load, each link moved exactly its blocks ×
// BlockSize × its bytes per token (80 KiB a rank over PCIe, 320 KiB a
// token over the network), and its utilisation, bytes / (bandwidth ×
// window × links), is the share of the window it was busy moving them.
func TestTierTokensAndBytes(t *testing.T) {
	cfg := tiered(4, 900, RoundRobin{}, 3000, 20000)
	cfg.Timeout = 0
	cfg.Window = Window{} // open: every request measured, every load inside
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 5, Duration: 100 * time.Second,
		Arrival: workload.Arrival{Rate: 4}, Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
	require.NoError(t, err)
	var recs []Record
	r, err := newRunner(cfg, src, ObserverFunc(func(rec *Record) { recs = append(recs, *rec) }))
	require.NoError(t, err)
	require.NoError(t, r.loop())
	sum := r.summary()
	ts := sum.Tiers
	require.NotNil(t, ts)
	var host, shared int
	for _, rec := range recs {
		require.LessOrEqual(t, rec.Cached+rec.CachedHost+rec.CachedShared, rec.Input, "request %d", rec.ID)
		if rec.Measured {
			host, shared = host+rec.CachedHost, shared+rec.CachedShared
		}
	}
	assert.Equal(t, host, ts.Host)
	assert.Equal(t, shared, ts.Shared)
	assert.Equal(t, sum.Cached, ts.HBM)
	require.Positive(t, ts.Host)
	require.Positive(t, ts.Shared)
	assert.Equal(t, float64(r.tiers.movedHost*16*80*1024), ts.HostBytes)
	assert.Equal(t, float64(r.tiers.movedShared*16*4*80*1024), ts.SharedBytes)
	window := sum.Window.Seconds()
	assert.InDelta(t, ts.HostBytes/(50e9*window*4), ts.HostUtilisation, 1e-12)
	assert.InDelta(t, ts.SharedBytes/(12.5e9*window), ts.SharedUtilisation, 1e-12)
	assert.InDelta(t, ts.HostUtilisation, ts.HostBusy, 1e-6, "a FIFO link is busy while it moves bytes at full bandwidth")
	assert.InDelta(t, ts.SharedUtilisation, ts.SharedBusy, 1e-6, "a fair link moves bytes at full bandwidth whenever busy")
	t.Logf("%v", ts)
}

// Bad tiers are refused, each error naming its field.
func TestTiersValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"negative blocks", func(c *Config) { c.Fleet.HostTier.Blocks = -1 }, "Fleet.HostTier.Blocks"},
		{"bad link", func(c *Config) { c.Fleet.SharedStore.Link.Bandwidth = -5 }, "Fleet.SharedStore.Link"},
		{"bad bytes", func(c *Config) { c.Fleet.HostTier.KVBytesPerToken = math.Inf(1) }, "Fleet.HostTier.KVBytesPerToken"},
		{"NaN bytes", func(c *Config) { c.Fleet.SharedStore.KVBytesPerToken = math.NaN() }, "Fleet.SharedStore.KVBytesPerToken"},
		// 1e300 bytes a token once overflowed a load's int64 bytes into a
		// panic ("transfer 2 of -9223372036854775808 bytes").
		{"absurd bytes", func(c *Config) { c.Fleet.HostTier.KVBytesPerToken = 1e300 }, "MaxKVBytesPerToken"},
		{"no prefix cache", func(c *Config) { c.Fleet.Replicas[1].Engine.DisablePrefixCache = true }, "Fleet.Replicas[1].Engine.DisablePrefixCache"},
		{"two block sizes", func(c *Config) { c.Fleet.Replicas[1].Engine.BlockSize = 32 }, "Fleet.SharedStore: every replica must have one BlockSize"},
		{"prefill pool", func(c *Config) { c.Fleet.Prefill = PrefillPool{Replicas: Copies(1, ReplicaConfig{})} }, "not modelled with a prefill pool"},
		{"detected warm-up", func(c *Config) { c.DetectWarmup = true }, "Window.DetectWarmup"},
	} {
		cfg := tiered(2, 0, RoundRobin{}, 100, 100)
		c.mod(&cfg)
		assert.ErrorContains(t, cfg.Validate(), c.want, c.name)
	}
	assert.NoError(t, tiered(2, 0, RoundRobin{}, 0, 0).Validate(), "tiers of no room are allowed")
}

// scripted routes arrival k to targets[k] and notes what its view says
// each replica holds of the prompt.
type scripted struct {
	view    CacheView
	targets []int
	seen    *[][2]int
}

func (s scripted) CacheView() CacheView { return s.view }

func (s scripted) Route(r *workload.Request, v *View) int {
	*s.seen = append(*s.seen, [2]int{v.CachedPrefix(0), v.CachedPrefix(1)})
	return s.targets[v.Routed()]
}

// TieredView sees the blocks HBM lost in the tiers below it. Request A
// (a 256-token shared prefix in a 300-token prompt) runs on replica 0;
// request B (310 tokens of its own) then takes every one of replica 0's
// 20 blocks, evicting A's. Request C, with A's prefix: ExactView sees
// nothing anywhere; TieredView sees A's 16 full blocks of shared content
// in replica 0's host tier (256 tokens) and nothing at replica 1, or in
// the shared store at both; C, sent to replica 0, loads them.
func TestTieredViewSeesTheTiers(t *testing.T) {
	prefix := make([]uint64, 16)
	for i := range prefix {
		prefix[i] = uint64(700 + i)
	}
	reqs := list{
		{ID: 0, Arrival: 0, InputTokens: 300, OutputTokens: 2, PrefixHashes: prefix, PrefixBlockTokens: 16},
		{ID: 1, Arrival: 10 * time.Second, InputTokens: 310, OutputTokens: 2},
		{ID: 2, Arrival: 20 * time.Second, InputTokens: 300, OutputTokens: 2, PrefixHashes: prefix, PrefixBlockTokens: 16},
	}
	for _, c := range []struct {
		name         string
		view         CacheView
		host, shared int
		want         [2]int
	}{
		{"exact, host tier", ExactView{}, 1000, -1, [2]int{0, 0}},
		{"tiered, host tier", TieredView{}, 1000, -1, [2]int{256, 0}},
		{"tiered, shared store", TieredView{}, -1, 1000, [2]int{256, 256}},
		{"tiered, no tier", TieredView{}, -1, -1, [2]int{0, 0}},
	} {
		var seen [][2]int
		cfg := tiered(2, 20, scripted{view: c.view, targets: []int{0, 0, 0}, seen: &seen}, c.host, c.shared)
		cfg.Timeout, cfg.Window = 0, Window{}
		src := append(list(nil), reqs...)
		_, recs, _ := recordsOf(t, cfg, &src)
		require.Len(t, seen, 3, c.name)
		assert.Equal(t, [2]int{0, 0}, seen[0], c.name)
		assert.Equal(t, c.want, seen[2], c.name)
		require.Len(t, recs, 3)
		assert.Equal(t, 0, recs[2].Cached, "%s: HBM lost A's blocks", c.name)
		if c.host > 0 {
			assert.Equal(t, 256, recs[2].CachedHost, c.name)
		}
		if c.shared > 0 {
			assert.Equal(t, 256, recs[2].CachedShared, c.name)
		}
	}
}

// A warm start writes the warm prompts' blocks through to the tiers, as
// serving them would have: each replica's host tier and the shared store
// hold the 16 blocks of a 300-token prompt's 256 tokens of shared content
// before the first arrival.
func TestWarmFillsTheTiers(t *testing.T) {
	prefix := make([]uint64, 16)
	for i := range prefix {
		prefix[i] = uint64(900 + i)
	}
	cfg := tiered(2, 0, RoundRobin{}, 1000, 1000)
	cfg.Warm = []workload.Request{{InputTokens: 300, PrefixHashes: prefix, PrefixBlockTokens: 16}}
	src := list{}
	r, err := newRunner(cfg, &src, nil)
	require.NoError(t, err)
	keys := r.reps[0].eng.BlockKeys(nil, prefix, 16, 300)
	require.Len(t, keys, 16)
	for i := range r.reps {
		assert.Equal(t, 16, r.tiers.host[i].lru.Len(), "replica %d's host tier", i)
		for _, k := range keys {
			assert.True(t, r.tiers.host[i].lru.Contains(k))
		}
	}
	assert.Equal(t, 16, r.tiers.shared.Len(), "one store for the fleet: the second replica's store found them held")
}

// A host tier alone tells a key this replica is loading by the tier's
// pins; its slow twin counts the loads by key (countLoads), as a fleet
// with a shared store does: the same bytes, with lookups that wait on a
// load in flight.
func TestHostPinsCountLoads(t *testing.T) {
	for _, router := range []Router{RoundRobin{}, PrefixAffinity{}} {
		cfg := tiered(3, 900, router, 4000, -1)
		src, err := sharedWorkload(5, 3)
		require.NoError(t, err)
		want, _, sum := recordsOf(t, cfg, src)
		require.Positive(t, sum.Tiers.Loads, "the host tier served loads")
		countLoads = true
		src, err = sharedWorkload(5, 3)
		require.NoError(t, err)
		got, _, _ := recordsOf(t, cfg, src)
		countLoads = false
		sameBytes(t, want, got)
	}
}
