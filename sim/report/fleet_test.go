package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// A single replica's system has no fleet, and no Fleet row among the run
// settings: its card reads as it did before fleets existed.
func TestSystemOfASingleReplicaHasNoFleet(t *testing.T) {
	for _, cfg := range []sim.Config{{}, {Engine: engine.Config{ChunkCap: 512}}, {Fleet: sim.Fleet{Replicas: sim.Copies(1, sim.ReplicaConfig{})}}} {
		s := SystemOf(cfg)
		assert.Nil(t, s.Fleet)
		for _, r := range s.Run {
			assert.NotEqual(t, "Fleet", r.Name)
		}
		assert.Contains(t, s.Engine, Setting{"MaxSeqs", "32"})
		b, err := json.Marshal(s)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "fleet")
	}
	assert.Contains(t, SystemOf(sim.Config{Engine: engine.Config{ChunkCap: 512}}).Engine, Setting{"ChunkCap", "512"})
}

// A homogeneous fleet is described once: the replicas' count, the router
// with its defaults filled in, the signal delay, and the engine and cost
// model every replica has.
func TestSystemOfAHomogeneousFleet(t *testing.T) {
	cfg := sim.Config{Fleet: sim.Fleet{
		Replicas: sim.Copies(4, sim.ReplicaConfig{Engine: engine.Config{MaxSeqs: 48}}),
		Router:   sim.PrefixAffinity{BalanceAbs: 8}, SignalDelay: 250 * time.Millisecond,
	}}
	s := SystemOf(cfg)
	require.NotNil(t, s.Fleet)
	assert.Equal(t, 4, s.Fleet.Replicas)
	assert.Equal(t, "sim.PrefixAffinity", s.Fleet.Router)
	assert.Equal(t, []Setting{{"CacheThreshold", "0.5"}, {"BalanceAbs", "8"}, {"BalanceRel", "1.0001"}, {"View", "sim.ExactView"}}, s.Fleet.RouterSetup,
		"SGLang's defaults filled in, the set field kept")
	assert.Equal(t, 0.25, s.Fleet.SignalDelay)
	assert.Nil(t, s.Fleet.Groups, "alike: no groups")
	assert.Contains(t, s.Engine, Setting{"MaxSeqs", "48"})
	assert.Equal(t, "costmodel.Frozen (nil: the default)", s.Model)
	for _, r := range s.Run {
		assert.NotEqual(t, "Fleet", r.Name, "the fleet has its own table")
	}

	var b strings.Builder
	s.markdown(&b, "System")
	md := b.String()
	for _, want := range []string{
		"| replicas | 4, configured alike: the engine and cost model below are each replica's |",
		"| router | `sim.PrefixAffinity` |", "| router: BalanceAbs | `8` |",
		"| SignalDelay | `250ms`: the router reads each replica's load as of its last refresh",
		"| engine (`engine.Config`) | value |", "| MaxSeqs | `48` |",
	} {
		assert.Contains(t, md, want)
	}
}

// A router left nil is the default round robin, and a fleet of several
// replicas without one still says so.
func TestSystemOfAFleetWithTheDefaultRouter(t *testing.T) {
	s := SystemOf(sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{})}})
	require.NotNil(t, s.Fleet)
	assert.Equal(t, "sim.RoundRobin (nil: the default)", s.Fleet.Router)
	assert.Empty(t, s.Fleet.RouterSetup)
	// A router on a single replica is a fleet setting worth stating too.
	s = SystemOf(sim.Config{Fleet: sim.Fleet{Router: sim.LeastLoaded{}}})
	require.NotNil(t, s.Fleet)
	assert.Equal(t, 1, s.Fleet.Replicas)
	assert.Equal(t, "sim.LeastLoaded", s.Fleet.Router)
	assert.Contains(t, s.Engine, Setting{"KVBlocks", "28672"})
}

// A heterogeneous fleet lists each configuration once with the replicas
// that have it, in the order of their first replica.
func TestSystemOfAHeterogeneousFleet(t *testing.T) {
	old := sim.ReplicaConfig{Model: costmodel.Frozen{DecodeStep: 60 * time.Millisecond}}
	cfg := sim.Config{Fleet: sim.Fleet{Replicas: []sim.ReplicaConfig{{}, old, {}, old}, Router: sim.LeastLoaded{}}}
	s := SystemOf(cfg)
	require.NotNil(t, s.Fleet)
	require.Len(t, s.Fleet.Groups, 2)
	assert.Equal(t, []int{0, 2}, s.Fleet.Groups[0].Replicas)
	assert.Equal(t, []int{1, 3}, s.Fleet.Groups[1].Replicas)
	assert.Equal(t, "costmodel.Frozen (nil: the default)", s.Fleet.Groups[0].Model)
	assert.Equal(t, "costmodel.Frozen", s.Fleet.Groups[1].Model)
	assert.Contains(t, s.Fleet.Groups[1].ModelSetup, Setting{"DecodeStep", "60ms"})
	assert.Empty(t, s.Engine, "no single engine to show")
	assert.Empty(t, s.Model)

	var b strings.Builder
	s.markdown(&b, "System")
	md := b.String()
	assert.Contains(t, md, "| replicas | 4, in 2 configurations (below) |")
	assert.Contains(t, md, "| cost model (`costmodel.Frozen`), replicas 1, 3 | value |")
	assert.Contains(t, md, "| engine (`engine.Config`), replicas 0, 2 | value |")
	assert.NotContains(t, md, "| engine (`engine.Config`) | value |")
}

// fleetCurve is handCurve run by a fleet of two replicas: every run says
// how the two shared its load.
func fleetCurve() *analysis.Curve {
	c := handCurve()
	for i := range c.Points {
		for k := range c.Points[i].Runs {
			s := &c.Points[i].Runs[k]
			s.Cached, s.InputTokens = 600+10*k, 1000
			s.Imbalance = sim.Imbalance{Requests: 1.02 + 0.01*float64(k), Busy: 1.01}
			s.Replicas = []sim.ReplicaSummary{
				{Replica: 0, Offered: 50, Good: 50, Goodput: 0.25, Attainment: 1, Cached: 300, InputTokens: 500, Busy: 0.5, KVOccupancy: 0.4},
				{Replica: 1, Offered: 50, Good: 49, Goodput: 0.245, Attainment: 0.98, Cached: 350, InputTokens: 500, Busy: 0.6, KVOccupancy: math.NaN()},
			}
		}
	}
	return c
}

// fleetCard is an A/B card of two fleets: B a homogeneous fleet behind
// PrefixAffinity with its curve, A a heterogeneous one. Systems are set by
// hand, so that other packages' config fields move no golden.
func fleetCard() Card {
	sw := analysis.Sweep{Config: sim.Config{Window: sim.Window{Warmup: 60e9, Horizon: 600e9}}, BaseSeed: 7}
	c := NewCard(sw, fleetCurve(), 0)
	c.Title = "Two replicas behind PrefixAffinity"
	c.Claim = "PrefixAffinity raises goodput by at least 5 % over a mixed fleet behind LeastLoaded."
	engineRows := []Setting{{"MaxSeqs", "32"}, {"KVBlocks", "28672"}}
	c.System = System{
		Engine: engineRows, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}},
		Run: []Setting{{"Timeout", "0s"}},
		Fleet: &CardFleet{Replicas: 2, Router: "sim.PrefixAffinity",
			RouterSetup: []Setting{{"CacheThreshold", "0.5"}, {"BalanceAbs", "32"}, {"BalanceRel", "1.0001"}}},
	}
	c.Baseline = &System{
		Run: []Setting{{"Timeout", "0s"}},
		Fleet: &CardFleet{Replicas: 2, Router: "sim.LeastLoaded", SignalDelay: 0.5, Groups: []ReplicaGroup{
			{Replicas: []int{0}, Engine: engineRows, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "45ms"}}},
			{Replicas: []int{1}, Engine: engineRows, Model: "costmodel.Frozen", ModelSetup: []Setting{{"DecodeStep", "60ms"}}},
		}},
	}
	c.Build = Build{Module: Module, Version: "(devel)", Revision: Unknown, Time: Unknown, Modified: Unknown, GoVersion: "go1.26", Platform: "linux/amd64"}
	c.Command = "go test ./sim/report -run TestFleetCardGolden"
	return c
}

func TestFleetCardGolden(t *testing.T) {
	c := fleetCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	checkGolden(t, "card_fleet.md", md.Bytes())
	require.NoError(t, c.WriteJSON(&js))
	checkGolden(t, "card_fleet.json", js.Bytes())

	var back Card
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, c.System.Fleet, back.System.Fleet)
	assert.Equal(t, c.Baseline.Fleet.Groups, back.Baseline.Fleet.Groups)
	require.NotNil(t, back.Results.Points[0].Fleet)
	assert.InDelta(t, 0.615, float64(back.Results.Points[0].Fleet.PrefixHitRate.Center), 1e-12)
	assert.True(t, math.IsNaN(float64(back.Results.Points[0].Fleet.Replicas[1].KVOccupancy)), "NaN is null and reads back")
}

// The fleet's figures per load are the runs' own: the hit rate and the
// imbalance averaged over the replications, each replica's share in
// replica order.
func TestFleetPointOfRuns(t *testing.T) {
	c := fleetCurve()
	fp := fleetPointOf(c.Points[0].Runs, 0.95)
	require.NotNil(t, fp)
	assert.InDelta(t, 0.615, float64(fp.PrefixHitRate.Center), 1e-12, "mean of 0.60, 0.61, 0.62, 0.63")
	assert.Equal(t, 4, fp.PrefixHitRate.N)
	assert.Less(t, float64(fp.PrefixHitRate.Lo), 0.615)
	assert.InDelta(t, 1.035, float64(fp.ImbalanceRequests.Center), 1e-12)
	assert.Equal(t, Num(1.01), fp.ImbalanceBusy.Center)
	require.Len(t, fp.Replicas, 2)
	assert.Equal(t, Num(0.6), fp.Replicas[0].PrefixHitRate)
	assert.Equal(t, Num(0.7), fp.Replicas[1].PrefixHitRate)
	assert.Equal(t, Num(0.98), fp.Replicas[1].Attainment)
	assert.True(t, math.IsNaN(float64(fp.Replicas[1].KVOccupancy)), "no occupancy in any run: none")

	assert.Nil(t, fleetPointOf(handCurve().Points[0].Runs, 0.95), "a single replica has no fleet figures")
	assert.Nil(t, pointOf(&handCurve().Points[0], 0.95).Fleet)
}

// A real fleet's sweep: the card carries the fleet section and the
// per-load fleet table, and the figures are those of the runs.
func TestNewCardFromAFleetSweep(t *testing.T) {
	sw := smallSweep()
	sw.Config.Fleet = sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{}), Router: sim.PrefixAffinity{}}
	sw.Workload = analysis.WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
		return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: 3 * time.Minute, Arrival: workload.Arrival{Rate: rate},
			Lengths: workload.Fixed(500, 100), Prefix: workload.PrefixReuse{Groups: 4, PrefixTokens: 1024, Probability: 1, BlockTokens: 16}})
	})
	sw.Grid = analysis.Grid{Loads: []float64{2, 4}}
	c, err := sw.Run()
	require.NoError(t, err)
	card := NewCard(sw, c, 0)
	require.NotNil(t, card.System.Fleet)
	assert.Equal(t, 2, card.System.Fleet.Replicas)
	for i, p := range card.Results.Points {
		require.NotNil(t, p.Fleet, "load %v", p.Load)
		require.Len(t, p.Fleet.Replicas, 2)
		assert.Greater(t, float64(p.Fleet.PrefixHitRate.Center), 0.5, "four shared 1,024-token prefixes, two replicas: mostly cached")
		assert.GreaterOrEqual(t, float64(p.Fleet.ImbalanceRequests.Center), 1.0)
		var hits, busy float64
		for _, run := range c.Points[i].Runs {
			hits += run.Replicas[1].PrefixHitRate() / float64(len(c.Points[i].Runs))
			busy += run.Replicas[1].Busy / float64(len(c.Points[i].Runs))
		}
		assert.InDelta(t, hits, float64(p.Fleet.Replicas[1].PrefixHitRate), 1e-12)
		assert.InDelta(t, busy, float64(p.Fleet.Replicas[1].Busy), 1e-12)
	}
	var md bytes.Buffer
	require.NoError(t, card.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "### Fleet\n")
	assert.Contains(t, md.String(), "| router | `sim.PrefixAffinity` |")
}

// A single replica's card has no fleet table.
func TestCardOfOneReplicaHasNoFleetTable(t *testing.T) {
	c := handCard()
	var md, js bytes.Buffer
	require.NoError(t, c.WriteMarkdown(&md))
	require.NoError(t, c.WriteJSON(&js))
	assert.NotContains(t, md.String(), "### Fleet")
	assert.NotContains(t, md.String(), "fleet (`sim.Fleet`)")
	assert.NotContains(t, js.String(), `"fleet"`)
}

// A disaggregated fleet's card says so: the replicas counted are its
// decode pool, and the prefill pool has its own rows (replicas by the
// fleet's indices, router, decider, link, KV bytes a token) and its
// replicas' configuration; the JSON carries it, a co-located card not.
func TestSystemOfADisaggregatedFleet(t *testing.T) {
	cfg := sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(3, sim.ReplicaConfig{}),
		Prefill: sim.PrefillPool{Replicas: sim.Copies(1, sim.ReplicaConfig{Engine: engine.Config{MaxBatchedTokens: 8192}}),
			Decider: sim.PrefixThreshold{NonCachedTokens: 512}, Link: sim.Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: sim.LinkFair}}}}
	s := SystemOf(cfg)
	require.NotNil(t, s.Fleet)
	require.NotNil(t, s.Fleet.Prefill)
	p := s.Fleet.Prefill
	assert.Equal(t, 3, s.Fleet.Replicas)
	assert.Equal(t, 1, p.Replicas)
	require.Len(t, p.Groups, 1)
	assert.Equal(t, []int{3}, p.Groups[0].Replicas, "the fleet's index, after the decode pool")
	assert.Contains(t, p.Groups[0].Engine, Setting{"MaxBatchedTokens", "8192"})
	assert.Equal(t, "sim.PrefixThreshold{NonCachedTokens: 512}", p.Decider)
	assert.Equal(t, "sim.RoundRobin (nil: the default)", p.Router)
	assert.Equal(t, 81920.0, p.KVBytesPerToken)
	var b strings.Builder
	s.markdown(&b, "System")
	md := b.String()
	for _, want := range []string{"| prefill pool | 1 replicas (replicas 3)", "| decider | `sim.PrefixThreshold{NonCachedTokens: 512}` |",
		"| link | `" + cfg.Fleet.Prefill.Link.String() + "`, one per prefill replica |", "| engine (`engine.Config`), replica 3 | value |"} {
		assert.Contains(t, md, want)
	}
	j, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(j), `"prefill":{"replicas":1`)
	j, err = json.Marshal(SystemOf(sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{})}}))
	require.NoError(t, err)
	assert.NotContains(t, string(j), "prefill")
}

// A fleet's KV tiers are on its card: a single replica with a host tier
// is a fleet to describe, each tier with its blocks, link and bytes per
// token (defaults filled in); a fleet without tiers carries none.
func TestSystemOfTiers(t *testing.T) {
	cfg := sim.Config{Fleet: sim.Fleet{HostTier: sim.HostTier{Blocks: 13107, Link: sim.Link{Bandwidth: 50e9}},
		SharedStore: sim.SharedStore{Blocks: 100000, Link: sim.Link{Bandwidth: 12.5e9, Sharing: sim.LinkFair}}}}
	s := SystemOf(cfg)
	require.NotNil(t, s.Fleet)
	require.NotNil(t, s.Fleet.HostTier)
	require.NotNil(t, s.Fleet.SharedStore)
	assert.Equal(t, CardTier{Blocks: 13107, Link: cfg.Fleet.HostTier.Link.String(), KVBytesPerToken: 81920}, *s.Fleet.HostTier)
	assert.Equal(t, 4*81920.0, s.Fleet.SharedStore.KVBytesPerToken, "every rank's shard of a token crosses the network")
	var b strings.Builder
	s.markdown(&b, "System")
	assert.Contains(t, b.String(), "| host tier | 13107 blocks a replica, link `"+cfg.Fleet.HostTier.Link.String()+"` (one a replica), 81920 KV bytes a token |")
	assert.Contains(t, b.String(), "| shared store | 100000 blocks")
	j, err := json.Marshal(SystemOf(sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{})}}))
	require.NoError(t, err)
	assert.NotContains(t, string(j), "tier")
	assert.NotContains(t, string(j), "shared_store")
}
