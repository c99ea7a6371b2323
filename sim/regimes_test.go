package sim

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/sharedtraces"
	"github.com/servesim/servesim/workload"
)

// regime is one of issue 41's regimes: a realistic configuration and its
// workload at a size, built in one place so that its benchmark
// (BenchmarkRegime), its instruction budget (instructionBudgets,
// "Regime/<name>") and the differential test
// (TestRegimesFastEqualsStepwise) run the same thing.
type regime struct {
	name string
	// requests is one benchmark iteration's size: the requests its
	// source yields, which the budget divides by; small is the
	// differential test's. Half of requests is past every fill of the
	// regime (its pools, tiers and indexes full), so that the budget's
	// count, the marginal one between requests/2 and requests, is what
	// each further request costs: SERVESIM_BENCH_SCALE=4 repeats it
	// (docs/scale.md, "Past the fill").
	requests, small int
	// trace is the file under ../shared/traces it replays ("" for none):
	// without it the regime is skipped (sharedtraces.Path).
	trace string
	// build returns the configuration and a constructor of the source of
	// n requests; a source is consumed by one run.
	build func(tb testing.TB, n int) (Config, func() workload.Source)
}

// regimes are issue 41's regimes that BenchmarkRunAtlas and its
// neighbours in bench_test.go do not cover.
var regimes = []regime{
	// Prefix caching on, multi-turn conversations behind shared system
	// prompts: 4 turns each, every turn resending the conversation so far
	// (its prompt's blocks hashed and found again), 16 system prompts of
	// 1,024 tokens, 16-token blocks as the engine's. 0.5 conversations/s
	// is 2 requests/s, near the knee of one replica.
	{name: "Conversations", requests: 2_000, small: 100, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		return Config{}, func() workload.Source {
			src, err := workload.NewConversations(workload.Conversations{Seed: 1, Count: n / 4,
				Arrival: workload.Arrival{Rate: 0.5}, Turns: workload.Constant{Tokens: 4},
				FirstInput: workload.Uniform{Center: 600, RangeRatio: 0.5}, UserInput: workload.Uniform{Center: 150, RangeRatio: 0.5},
				Output: workload.Uniform{Center: 200, RangeRatio: 0.5}, Think: workload.Think{Mean: 10 * time.Second, Exponential: true},
				Prefix: workload.PrefixReuse{Groups: 16, PrefixTokens: 1024, Probability: 1, BlockTokens: 16}})
			if err != nil {
				tb.Fatal(err)
			}
			return src
		}
	}},
	// Speculative decoding, K = 4 drafts at α = 0.7, on the Atlas default
	// workload (2,000 / 200 tokens, Poisson 2.4 req/s).
	{name: "Speculation", requests: 4_000, small: 300, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		cfg := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{Speculation: Speculation{Tokens: 4, Acceptance: 0.7}})}}
		return cfg, func() workload.Source { return poisson(tb, 1, 2.4, n, workload.Fixed(2000, 200)) }
	}},
	// KV pressure with preemption: 2,000 blocks (32,000 tokens, about 14
	// of the 2,200-token sequences a batch of 32 would need), prompts
	// chunked at 256 tokens under a step budget of 512, so that decodes
	// outgrow the pool and running requests are preempted and recomputed
	// (151 preemptions in an iteration's 3,000 requests at 0.9 req/s).
	// Most requests miss the TTFT SLO: a 2,000-token prompt takes 8
	// chunks, each riding a decode step of at least 45 ms.
	{name: "KVPressure", requests: 3_000, small: 300, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		cfg := Config{Engine: engine.Config{KVBlocks: 2000, ChunkCap: 256, MaxBatchedTokens: 512}}
		return cfg, func() workload.Source { return poisson(tb, 1, 0.9, n, workload.Fixed(2000, 200)) }
	}},
	// A fleet of 8 on the fleet's shared-prefix workload (BenchmarkRunFleet64's
	// "prefix": FleetHighReuse, 500-token suffixes, 200-token answers,
	// 2 req/s a replica) behind LeastLoaded, and behind PrefixAffinity
	// reading SGLang's approximate tree and llm-d's KV events.
	{name: "Fleet8LeastLoaded", requests: 3_200, small: 64, build: fleet8(LeastLoaded{})},
	// Fleet8PrefixApprox's pools fill at the same point: its size was
	// 3,200 until the twenty-fourth round of issue 41 (9,548 a request
	// there, 9,749 between 6,400 and 12,800).
	{name: "Fleet8PrefixApprox", requests: 12_800, small: 64, build: fleet8(PrefixAffinity{View: ApproxView{}})},
	// The replicas' pools fill at about request 3,500 of the events
	// fleet, and a request costs three times as much past it (an
	// eviction drops keys the index held): its size was 1,600 until
	// the twentieth round of issue 41, which measured before the fill.
	{name: "Fleet8PrefixEvents", requests: 12_800, small: 64, build: fleet8(PrefixAffinity{View: EventsView{Lag: 50 * time.Millisecond}})},
	// A disaggregated fleet: 2 prefill replicas for 4 decode replicas,
	// both pools behind LeastLoaded, KV pushed over a 50 GB/s link shared
	// fairly (examples/disagg's), on the Atlas workload at 9 req/s.
	{name: "Disagg", requests: 2_000, small: 300, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}), Router: LeastLoaded{},
			Prefill: PrefillPool{Replicas: Copies(2, ReplicaConfig{}), Router: LeastLoaded{},
				Link: Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: LinkFair}}}}
		return cfg, func() workload.Source { return poisson(tb, 1, 9, n, workload.Fixed(2000, 200)) }
	}},
	// KV tiers: 4 replicas behind RoundRobin on the shared-prefix
	// workload, whose working set (1,048,576 tokens) outgrows each
	// replica's HBM (4,096 blocks here, 65,536 tokens, as of a larger
	// model, so that a hundred requests evict), each with a 256 GiB host tier over 50 GB/s
	// (examples/tiers'): evicted prefixes are loaded back on a hit. At
	// 1.2 req/s a replica, as the smaller pool holds about 14 sequences.
	// The host tiers fill before request 2,000, and a request costs
	// three to four times as much past it (every store evicts): its
	// size was 1,000 until the twentieth round of issue 41, which
	// measured before the fill.
	{name: "Tiers", requests: 4_000, small: 100, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		ranks := costmodel.AtlasTP4().Hardware.Accelerators
		blockBytes := float64(engine.DefaultBlockSize) * costmodel.AtlasKVBytesPerToken * float64(ranks)
		cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{Engine: engine.Config{KVBlocks: 4096}}),
			HostTier: HostTier{Blocks: int(256 * (1 << 30) / blockBytes), Link: Link{Bandwidth: 50e9, Latency: 20 * time.Microsecond, Sharing: LinkFIFO}}}}
		return cfg, sharedPrefix(tb, 4, 1.2, n)
	}},
	// An autoscaled fleet: the load steps from 2 to 6 req/s and back
	// (1,000 / 200 tokens), and a Schedule grows the fleet from 1 replica
	// to 3 for the peak and back to 1 (a minute's cold start at the full
	// size), so that replicas join, serve, drain and leave.
	{name: "Autoscale", requests: 4_000, small: 400, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		step := time.Duration(n/10) * time.Second // the load offers 2·step + 6·step + 2·2·step = 12 step·s: n is reached in the last
		cfg := Config{Fleet: Fleet{Replicas: Copies(1, ReplicaConfig{}), Autoscale: Autoscale{
			Policy: Schedule{Steps: []ReplicaStep{{Duration: step, Replicas: 1}, {Duration: step, Replicas: 3}, {Duration: time.Hour, Replicas: 1}}},
			Max:    3, ColdStart: ColdStart{Load: step / 7}}}}
		return cfg, func() workload.Source {
			load := workload.Schedule{Steps: []workload.RateStep{{Duration: step, Rate: 2}, {Duration: step, Rate: 6}, {Duration: 2 * step, Rate: 2}}}
			src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: n, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
			if err != nil {
				tb.Fatal(err)
			}
			return src
		}
	}},
	// Trace replay from file, parsing included: the Azure 2023
	// conversation sample examples/tracereplay ships (2,000 requests,
	// mean 1,105 in / 265 out tokens; a file of its first n rows,
	// replayFile), time-scaled to 1.5 req/s, between its 1 req/s (all
	// good) and 2 req/s (half).
	{name: "AzureReplay", requests: 2_000, small: 300, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		path := filepath.Join("..", "examples", "tracereplay", "testdata", "azure_conv_sample.csv")
		return Config{}, replayFile(tb, path, workload.Azure(), 1.5, n)
	}},
	// The Mooncake trace (../shared/traces, 3,993 requests, mean 13,156
	// input tokens on 512-token hash ids), prefix cache on (the engine's
	// default), time-scaled to 0.2 req/s on one replica, as
	// examples/tracereplay's slowest row: a file of its first 2,000
	// requests (replayFile), which keep a run under valgrind to seconds.
	{name: "MooncakeReplay", requests: 2_000, small: 6, trace: "mooncake_synthetic_trace.jsonl",
		build: func(tb testing.TB, n int) (Config, func() workload.Source) {
			path := sharedtraces.Path(tb, "mooncake_synthetic_trace.jsonl")
			return Config{}, replayFile(tb, path, workload.Mooncake(0), 0.2, n)
		}},
}

// fleet8 is a fleet of 8 Atlas replicas behind r on the shared-prefix
// workload.
func fleet8(r Router) func(tb testing.TB, n int) (Config, func() workload.Source) {
	return func(tb testing.TB, n int) (Config, func() workload.Source) {
		return Config{Fleet: Fleet{Replicas: Copies(8, ReplicaConfig{}), Router: r}}, sharedPrefix(tb, 8, 2, n)
	}
}

// sharedPrefix is n requests of the fleet's shared-prefix workload
// (BenchmarkRunFleet64's "prefix" at 2 req/s) at rate a replica.
func sharedPrefix(tb testing.TB, replicas int, rate float64, n int) func() workload.Source {
	return func() workload.Source {
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: n, Arrival: workload.Arrival{Rate: rate * float64(replicas)},
			Lengths: workload.Fixed(500, 200), Prefix: workload.FleetHighReuse})
		if err != nil {
			tb.Fatal(err)
		}
		return g
	}
}

// replayFile replays a file of the trace at path's first n requests
// (traceHead: the header, if any, and n rows; all of them when n covers
// the file), time-scaled to rate: every source opens and parses that
// file, each of its passes (the TargetRate first pass, then the replay),
// as a replay from file of n requests does. A run of n requests and one
// of n/2 (the budget's marginal count) then differ by every pass over
// n/2 rows: with the whole file read by each (a first pass over all of
// it, the replay stopped after n), the first pass cancelled out of the
// count.
func replayFile(tb testing.TB, path string, cfg workload.TraceConfig, rate float64, n int) func() workload.Source {
	cfg.Transform.TargetRate = rate
	head := traceHead(tb, path, cfg.Format, n)
	return func() workload.Source {
		tr, err := workload.OpenReplay(head, cfg)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { tr.Close() })
		return tr
	}
}

// traceHead writes, in tb's temporary directory, a copy of the trace
// file at path cut after its first n rows (a CSV file's header line and
// n lines, a JSON Lines file's n lines: a row a line), and returns its
// path. Its work is the same at every n, so the budget's marginal count
// holds none of it: the file is read whole and every line end found
// before the cut is chosen.
func traceHead(tb testing.TB, path string, format workload.Format, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var ends []int // after each line's '\n'
	for i := 0; ; {
		k := bytes.IndexByte(data[i:], '\n')
		if k < 0 {
			break
		}
		i += k + 1
		ends = append(ends, i)
	}
	lines := n
	if format == workload.CSV {
		lines++ // the header
	}
	cut := len(data)
	if lines < len(ends) {
		cut = ends[lines-1]
	}
	head := filepath.Join(tb.TempDir(), filepath.Base(path))
	if err := os.WriteFile(head, data[:cut], 0o600); err != nil {
		tb.Fatal(err)
	}
	return head
}

// BenchmarkRegime runs each regime of issue 41 (the regimes table) at
// its size, a few thousand requests an iteration, and reports what
// BenchmarkRunAtlas does; every iteration must simulate exactly the
// regime's requests, which its instruction budget divides by.
//
//	go test ./sim -run '^$' -bench 'Regime' -count 6 | benchstat -
func BenchmarkRegime(b *testing.B) {
	for _, rg := range regimes {
		b.Run(rg.name, func(b *testing.B) {
			n := benchSize(rg.requests)
			cfg, src := rg.build(b, n)
			benchRunN(b, cfg, src, n)
		})
	}
}

// TestRegimesFastEqualsStepwise is issue 41's check that the fast path
// is the stepwise one on every regime's benchmark workload: each
// regime's configuration at a small size (a few hundred requests) runs
// both ways with every engine's invariants checked after every step and
// its batched contract held (checkEngines), and gives the same bytes:
// every record, the summary and every step. Each regime must also show
// the mechanism it is named for, or it measures nothing of it.
func TestRegimesFastEqualsStepwise(t *testing.T) {
	t.Parallel()
	for _, rg := range regimes {
		t.Run(rg.name, func(t *testing.T) {
			cfg, fast, step := runRegimeTwice(t, rg, func(c *Config) { c.Stepwise = true })
			sameBytes(t, step.text, fast.text)
			t.Logf("%d requests, %d good, %d prompt tokens cached, %d preemptions", fast.sum.Offered, fast.sum.Good, fast.sum.Cached, fast.sum.Preempt)
			s := fast.sum
			require.Equal(t, rg.small, s.Offered, "every request of the regime is measured")
			assert.Equal(t, s.Offered, s.Good+s.Misses.Total())
			switch rg.name {
			case "Conversations", "Fleet8PrefixApprox", "Fleet8PrefixEvents":
				assert.Positive(t, s.Cached, "prompt tokens found in the prefix cache")
			case "Speculation":
				drafted, accepted := 0, 0
				for _, r := range fast.recs {
					drafted, accepted = drafted+r.Drafted, accepted+r.Accepted
				}
				require.Positive(t, drafted)
				// Draft i of K = 4 is accepted when it and every one
				// before it are, with probability α^i: a step accepts
				// α + α² + α³ + α⁴ = 1.7731 of its 4 drafts, 0.4433.
				assert.InDelta(t, 0.4433, float64(accepted)/float64(drafted), 0.02)
				assert.Positive(t, fast.specMoves, "speculative runs planned (engine/specrun.go)")
				t.Logf("%d speculative runs", fast.specMoves)
			case "KVPressure":
				assert.Positive(t, s.Preempt, "running requests preempted for KV")
			case "Disagg":
				require.NotNil(t, s.Disagg)
				assert.Equal(t, s.Offered, s.Disagg.Remote, "AlwaysRemote prefills every request in the pool")
				assert.Positive(t, fast.runReserves, "decode runs reserved handed-off requests without a cut")
			case "Tiers":
				require.NotNil(t, s.Tiers)
				assert.Positive(t, s.Tiers.Loads, "blocks loaded back from the host tier")
			case "Autoscale":
				assert.True(t, checkLives(t, cfg, fast), "a replica joined and served, and one drained")
			}
		})
	}
}

// TestRegimesSketchWithinItsError is issue 41's check that every
// regime's percentiles, sketched past ExactSamples, stay within the
// sketch's stated relative error of the exact ones: each regime at its
// small size runs with every sample kept and with a quarter of them (at
// least 2) kept exactly, the rest sketched; the counts, maxima and means
// are the same and each percentile is within stats.SketchAccuracy.
func TestRegimesSketchWithinItsError(t *testing.T) {
	t.Parallel()
	for _, rg := range regimes {
		t.Run(rg.name, func(t *testing.T) {
			kept := max(2, rg.small/4)
			_, exact, sk := runRegimeTwice(t, rg, func(c *Config) { c.ExactSamples = kept })
			require.False(t, exact.sum.Sketched())
			require.True(t, sk.sum.Sketched(), "%d requests past ExactSamples %d", sk.sum.Offered, kept)
			sketchedWithin(t, exact.sum, sk.sum)
		})
	}
}

// runRegimeTwice runs regime rg's configuration at its small size, and
// again changed by change, each on a source of its own; it returns the
// configuration and the two runs.
func runRegimeTwice(t *testing.T, rg regime, change func(*Config)) (Config, scenarioRun, scenarioRun) {
	t.Helper()
	cfg, src := rg.build(t, rg.small)
	a, _, err := runSourceScenario(cfg, src())
	require.NoError(t, err)
	changed := cfg
	change(&changed)
	b, _, err := runSourceScenario(changed, src())
	require.NoError(t, err)
	return cfg, a, b
}

// Every regime has its instruction budget, over the requests its
// benchmark simulates.
func TestEveryRegimeHasABudget(t *testing.T) {
	for _, rg := range regimes {
		found := false
		for _, b := range instructionBudgets {
			if b.bench == "Regime/"+rg.name {
				found = true
				assert.Equal(t, rg.requests, b.requests, "%s: the budget's requests are the benchmark's", rg.name)
			}
		}
		assert.True(t, found, "regime %s has no entry Regime/%s in instructionBudgets", rg.name, rg.name)
	}
}

// regimeTrace is the shared trace the benchmark bench replays ("" for
// none), for the budget to skip without it.
func regimeTrace(bench string) string {
	for _, rg := range regimes {
		if "Regime/"+rg.name == bench {
			return rg.trace
		}
	}
	return ""
}

// TestPrefixTwoRunsChangeNothing holds the engines' bisection of a prompt's
// runs of ids (engine.Request.PrefixTwoRuns, which Synthetic's prompts
// promise, and Conversations' rising ids) to their scan: each regime
// whose requests promise runs (open-loop, or a closed loop that is no
// trace) gives the same bytes, every record, the summary and every step,
// with the promises cleared (each run pool then scans the ids, through
// its key memo).
func TestPrefixTwoRunsChangeNothing(t *testing.T) {
	t.Parallel()
	tried := 0
	for _, rg := range regimes {
		t.Run(rg.name, func(t *testing.T) { // a regime's build may skip (MooncakeReplay without ../shared), the rest run
			cfg, src := rg.build(t, rg.small)
			wrap := func(n *noRuns) workload.Source { return n }
			if _, closed := src().(workload.Feedback); closed {
				if _, paced := src().(workload.Paced); paced {
					return
				}
				wrap = func(n *noRuns) workload.Source { return noRunsFed{n, n.Source.(workload.Feedback)} }
			}
			promised := &noRuns{Source: src()}
			want, _, err := runSourceScenario(cfg, wrap(promised), true)
			require.NoError(t, err)
			if promised.cleared == 0 {
				return // no prompt of this regime promises runs
			}
			tried++
			got, _, err := runSourceScenario(cfg, wrap(&noRuns{Source: src(), clear: true}), true)
			require.NoError(t, err)
			sameBytes(t, want.text, got.text)
		})
	}
	assert.GreaterOrEqual(t, tried, 5, "the shared-prefix regimes promise runs")
}

// noRuns counts the requests of its source that promise runs of ids
// (PrefixTwoRuns), and clears the promise when clear.
type noRuns struct {
	workload.Source
	clear   bool
	cleared int
}

// noRunsFed is noRuns of a closed-loop source, which it passes feedback.
type noRunsFed struct {
	*noRuns
	workload.Feedback
}

func (n *noRuns) Next() (workload.Request, error) {
	r, err := n.Source.Next()
	if r.PrefixTwoRuns.Two() || r.PrefixTwoRuns.Rises() {
		n.cleared++
		if n.clear {
			r.PrefixTwoRuns = ascend.Promise{}
		}
	}
	return r, err
}
