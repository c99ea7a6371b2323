package sim

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/cputime"
	"github.com/servesim/servesim/workload"
)

// BenchmarkRunAtlas runs the Atlas default (Poisson arrivals, 2,000 input /
// 200 output tokens, batch 32) near its knee and reports simulated requests
// per wall-clock second, per CPU-second of the process (user + system, GC
// included: the figure a busy machine does not distort), and heap
// allocations per simulated request, with exact per-token ITL accounting.
// Compare runs with benchstat.
func BenchmarkRunAtlas(b *testing.B) {
	benchRun(b, Config{}, func() workload.Source { return poisson(b, 1, 2.4, benchSize(20_000), workload.Fixed(2000, 200)) })
}

// BenchmarkRunFleet runs 8 Atlas replicas behind round robin, each at the
// load BenchmarkRunAtlas puts on its one replica (8 × 2.4 req/s), and
// reports simulated requests per wall-clock second: a fleet should cost
// about what its replicas cost alone. Compare with BenchmarkRunAtlas:
//
//	go test ./sim -run '^$' -bench 'RunAtlas|RunFleet' -count 6 | benchstat -col /... -
func BenchmarkRunFleet(b *testing.B) {
	const replicas = 8
	cfg := Config{Fleet: Fleet{Replicas: Copies(replicas, ReplicaConfig{})}}
	benchRun(b, cfg, func() workload.Source {
		return poisson(b, 1, replicas*2.4, replicas*20_000, workload.Fixed(2000, 200))
	})
}

// BenchmarkRunFleetRandom is BenchmarkRunFleet behind Random: by Poisson
// thinning each replica then sees exactly BenchmarkRunAtlas's workload in
// distribution (Poisson at 2.4 req/s), so the two compare the simulator's
// cost of a fleet at equal queueing; round robin's regular arrivals keep
// batches smaller and cut more moves.
func BenchmarkRunFleetRandom(b *testing.B) {
	const replicas = 8
	cfg := Config{Fleet: Fleet{Replicas: Copies(replicas, ReplicaConfig{}), Router: Random{}}}
	benchRun(b, cfg, func() workload.Source {
		return poisson(b, 1, replicas*2.4, replicas*20_000, workload.Fixed(2000, 200))
	})
}

// BenchmarkRunFleet64 runs 64 Atlas replicas behind each built-in router,
// and, as "single", one replica alone at the same load a replica, on two
// workloads: "atlas", BenchmarkRunAtlas's (Poisson, 2,000 input / 200
// output tokens, 2.4 req/s a replica), whose requests carry no prefix
// ids; and "prefix", the fleet's shared-prefix workload (sharedWorkload:
// 500-token suffixes behind the 4,096-token FleetHighReuse prefixes,
// 200-token answers, Poisson, 2 req/s a replica), where PrefixAffinity
// asks every replica's cache at every arrival. A fleet of 64 behind any
// router should cost at most 3× one replica a simulated request (issue
// 37). Compare with benchstat:
//
//	go test ./sim -run '^$' -bench 'RunFleet64' -count 6 | benchstat -col /router -
func BenchmarkRunFleet64(b *testing.B) {
	const replicas = 64
	for _, w := range []struct {
		name     string
		rate     float64 // a replica's
		requests int     // a replica's
		lengths  workload.Joint
		prefix   workload.PrefixReuse
	}{
		{"atlas", 2.4, 2_000, workload.Fixed(2000, 200), workload.PrefixReuse{}},
		{"prefix", 2, 1_000, workload.Fixed(500, 200), workload.FleetHighReuse},
	} {
		source := func(n int) func() workload.Source {
			return func() workload.Source {
				g, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Count: n * benchSize(w.requests),
					Arrival: workload.Arrival{Rate: float64(n) * w.rate}, Lengths: w.lengths, Prefix: w.prefix})
				if err != nil {
					b.Fatal(err)
				}
				return g
			}
		}
		b.Run("workload="+w.name, func(b *testing.B) {
			b.Run("router=single", func(b *testing.B) { benchRun(b, Config{}, source(1)) })
			for _, r := range allRouters {
				b.Run("router="+r.name, func(b *testing.B) {
					benchRun(b, Config{Fleet: Fleet{Replicas: Copies(replicas, ReplicaConfig{}), Router: r.r}}, source(replicas))
				})
			}
		})
	}
}

// BenchmarkRunKVBound is BenchmarkRunAtlas with a KV cache of 3,000
// blocks (48,000 tokens: about 22 of its 2,200-token sequences) at
// 2.1 req/s: the waiting head is often held back by memory, not by the
// batch cap, the case engine.Runner.JoinChangesNothing covers.
func BenchmarkRunKVBound(b *testing.B) {
	cfg := Config{Engine: engine.Config{KVBlocks: 3000}}
	benchRun(b, cfg, func() workload.Source { return poisson(b, 1, 2.1, 5_000, workload.Fixed(2000, 200)) })
}

// BenchmarkRunLinear is BenchmarkRunAtlas priced by a Linear model whose
// decode step grows with the KV it reads (about 47 ms at a batch of 32 of
// these sequences): every step is priced differently from the last, so no
// run of steps is planned at once and a request costs about as many moves
// as it has tokens. The engine's decode cohort prices such a model by the
// contexts' sum (costmodel.DecodeSum).
func BenchmarkRunLinear(b *testing.B) {
	cfg := Config{Model: costmodel.Linear{PerStep: 40, PerDecodeToken: 0.1, PerDecodeContext: 0.00005, PerPrefillToken: 0.035}}
	benchRun(b, cfg, func() workload.Source { return poisson(b, 1, 2.3, 2_000, workload.Fixed(2000, 200)) })
}

// BenchmarkRunProfile is BenchmarkRunAtlas's workload (2,000 of its
// requests) priced by the kernel profiles of examples/validate's GPU
// (costmodel.ProfileModel, Llama-3.1-8B on an RTX PRO 6000): a model read
// from measured kernels, whose attention reads its grid once per decode
// of every step priced, and whose price moves every few steps.
func BenchmarkRunProfile(b *testing.B) {
	m := validateProfile(b)
	benchRun(b, Config{Model: m}, func() workload.Source { return poisson(b, 1, 2.4, 2_000, workload.Fixed(2000, 200)) })
}

// BenchmarkRunLongOutputs is BenchmarkRunAtlas with ten times longer
// answers (2,000 tokens) at the load that keeps the replica as near its
// knee (a tenth): the fast-forward should make a request's cost grow far
// slower than its tokens.
func BenchmarkRunLongOutputs(b *testing.B) {
	benchRun(b, Config{}, func() workload.Source { return poisson(b, 1, 0.3, 4_000, workload.Fixed(2000, 2000)) })
}

// BenchmarkRunBatch256 runs a batch of up to 256 sequences with 2,000-token
// answers (200-token prompts, a KV cache holding 256 × 4,096 tokens so
// that the batch cap binds, not memory) at 2.5 req/s, near the 2.84 req/s
// that 256 sequences of 2,000 steps of 45 ms serve: every move now touches
// a batch eight times the Atlas one.
func BenchmarkRunBatch256(b *testing.B) {
	cfg := Config{Engine: engine.Config{MaxSeqs: 256, KVBlocks: 256 * 4096 / 16}}
	benchRun(b, cfg, func() workload.Source { return poisson(b, 1, 2.5, benchSize(4_000), workload.Fixed(200, 2000)) })
}

func benchRun(b *testing.B, cfg Config, src func() workload.Source) { benchRunN(b, cfg, src, 0) }

// benchHalf halves the benchmarks that have instruction budgets
// (benchSize): TestInstructionBudget runs each at its size and at half of
// it, and divides the difference by the requests between, so that a
// run's setup is not counted a request (SERVESIM_BENCH_HALF=1).
var benchHalf = os.Getenv("SERVESIM_BENCH_HALF") != ""

// benchScale is SERVESIM_BENCH_SCALE, a whole number of times each
// budgeted benchmark's size (benchSize; 1 when unset): the budgets' sizes
// are meant to be past every fill (a pool, a tier, an index) of their
// regime, where a request's cost no longer moves with the run's length,
// and TestInstructionBudget at a scale of 4 is how that is checked
// (docs/scale.md, "Past the fill").
var benchScale = scaleOf(os.Getenv("SERVESIM_BENCH_SCALE"))

// scaleOf reads a SERVESIM_BENCH_SCALE: a whole number at least 1, or 1
// for anything else (TestInstructionBudget refuses anything else first).
func scaleOf(v string) int {
	k, err := strconv.Atoi(v)
	if err != nil || k < 1 {
		return 1
	}
	return k
}

// benchSize is n requests times benchScale, or half of them under
// benchHalf.
func benchSize(n int) int {
	n *= benchScale
	if benchHalf {
		return n / 2
	}
	return n
}

// benchRunN is benchRun holding every iteration to want simulated
// requests (0: any number).
func benchRunN(b *testing.B, cfg Config, src func() workload.Source, want int) {
	var done int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cputime.Used()
	for b.Loop() {
		sum, err := Run(cfg, src(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if want > 0 && sum.Offered != want {
			b.Fatalf("an iteration simulated %d requests, want %d", sum.Offered, want)
		}
		done += sum.Offered
	}
	cpu := cputime.Used() - cpu0
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "requests/s")
	if cpu > 0 {
		b.ReportMetric(float64(done)/cpu.Seconds(), "requests/cpu-s")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(done), "allocs/request")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/request")
	b.ReportMetric(0, "ns/op")
}

// No allocation per token or per step: the same 2,000 requests with ten
// times longer answers (ten times the tokens, about ten times the steps)
// allocate about as much, with the fleet, classes and speculative decoding
// on too, and under conversations with the prefix cache. A run's
// allocations are its setup and the summary's slices.
func TestNoAllocationPerTokenOrStep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs long answers")
	}
	features := Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{Speculation: Speculation{Tokens: 3, Acceptance: 0.7}})},
		Classes: []Class{{Name: "fast", SLO: SLO{TTFT: 300 * time.Millisecond}}}}
	for name, cfg := range map[string]Config{"atlas": {}, "fleet+classes+speculation": features} {
		allocs := func(output int, rate float64) (float64, int) {
			var tokens int
			a := testing.AllocsPerRun(1, func() {
				s, err := Run(cfg, poisson(t, 1, rate, 2_000, workload.Fixed(2000, output)), nil)
				require.NoError(t, err)
				tokens = s.Tokens
			})
			return a, tokens
		}
		short, tShort := allocs(200, 2)
		long, tLong := allocs(2000, 0.2)
		t.Logf("%s: %.0f allocations for %d tokens, %.0f for %d", name, short, tShort, long, tLong)
		require.Greater(t, tLong, 9*tShort)
		assert.Less(t, long, short+100, "%s: allocations grow with tokens (%d more)", name, tLong-tShort)
	}
	// The prefix cache (kept by runs) under conversations whose answers
	// are resent, cached block by block as they are decoded: 500
	// conversations of 4 turns, answers ten times longer at a tenth of
	// the rate. The requests' own ids are the workload's data, not the
	// loop's: a turn's ids cover its prompt and its answer, cut from
	// slabs of 4,096 ids (workload's promptSlab; a turn of more than
	// 2,048 ids gets its own array), so at least 2,048 ids a slab: the
	// longer answers' run carries about 560,000 ids more, about 140 slabs
	// of 4,096, and its allocations were 74 more at 40f3c78, about 96
	// once a turn's ids covered its answer's too (99e3cab), at the old
	// bound of 100. The bound allows the slabs, counted from the ids the
	// requests carry (at most one a 2,048), and still fails on anything
	// made a step or a token (3.6 million tokens more).
	conversations := func(output int, rate float64) (float64, int, int) {
		var tokens, ids int
		a := testing.AllocsPerRun(1, func() {
			ids = 0
			src, err := workload.NewConversations(workload.Conversations{Seed: 1, Count: 500,
				Arrival: workload.Arrival{Rate: rate}, Turns: workload.Constant{Tokens: 4},
				FirstInput: workload.Uniform{Center: 600, RangeRatio: 0.5}, UserInput: workload.Uniform{Center: 150, RangeRatio: 0.5},
				Output: workload.Uniform{Center: output, RangeRatio: 0.5}, Think: workload.Think{Mean: 10 * time.Second, Exponential: true},
				Prefix: workload.PrefixReuse{Groups: 16, PrefixTokens: 1024, Probability: 1, BlockTokens: 16}})
			require.NoError(t, err)
			s, err := Run(Config{}, countIDs{src, &ids}, nil)
			require.NoError(t, err)
			tokens = s.Tokens
		})
		return a, tokens, ids
	}
	short, tShort, iShort := conversations(200, 0.5)
	long, tLong, iLong := conversations(2000, 0.05)
	slabs := float64(iLong-iShort) / 2048
	t.Logf("conversations: %.0f allocations for %d tokens (%d ids), %.0f for %d (%d ids): at most %.0f id slabs more", short, tShort, iShort, long, tLong, iLong, slabs)
	require.Greater(t, tLong, 9*tShort)
	assert.Less(t, long, short+100+slabs, "conversations: allocations grow with tokens (%d more)", tLong-tShort)
}

// countIDs is a conversation source that counts the ids of the requests
// it yields (TestNoAllocationPerTokenOrStep); its other methods are the
// source's.
type countIDs struct {
	*workload.ChatSource
	ids *int
}

func (c countIDs) Next() (workload.Request, error) {
	r, err := c.ChatSource.Next()
	*c.ids += len(r.PrefixHashes)
	return r, err
}
