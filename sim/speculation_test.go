package sim

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/workload"
)

// oneRequest runs one 2,000-token prompt with a 201-token answer alone,
// keeping its tokens.
func oneRequest(t *testing.T, spec Speculation) (Record, Summary) {
	t.Helper()
	var rec Record
	src := list{{ID: 1, InputTokens: 2000, OutputTokens: 201}}
	sum, err := Run(Config{Speculation: spec, KeepTokens: true}, &src, ObserverFunc(func(r *Record) { rec = *r }))
	require.NoError(t, err)
	return rec, sum
}

// chunks splits a record's token instants into streamed chunks: the
// tokens emitted at one instant.
func chunks(rec Record) (at []time.Duration, size []int) {
	for _, t := range rec.Tokens {
		if n := len(at); n > 0 && at[n-1] == t {
			size[n-1]++
			continue
		}
		at, size = append(at, t), append(size, 1)
	}
	return at, size
}

// α = 1 with a free drafter: after the prefill's token (90 ms), every
// decode step verifies 4 drafts and emits all 5 tokens as one chunk, in
// 45 + 4 × 0.035 = 45.14 ms: 200 tokens in 40 chunks, E2E 90 + 40 × 45.14
// = 1,895.6 ms (201 steps of 45 ms without speculation: 9,090 ms). Each
// chunk's gap is 45.14 ms; retokenized, 9.028 ms per token.
func TestSpeculationAllAccepted(t *testing.T) {
	rec, sum := oneRequest(t, Speculation{Tokens: 4, Acceptance: 1})
	require.Equal(t, StatusOK, rec.Status)
	at, size := chunks(rec)
	require.Len(t, at, 41)
	assert.Equal(t, 1, size[0])
	for i := 1; i < len(at); i++ {
		assert.Equal(t, 5, size[i], "chunk %d", i)
		assert.Equal(t, 45140*time.Microsecond, at[i]-at[i-1], "chunk %d", i)
	}
	assert.Equal(t, 1895600*time.Microsecond, rec.E2E())
	assert.Equal(t, 160, rec.Drafted)
	assert.Equal(t, 160, rec.Accepted)
	assert.Equal(t, 45140*time.Microsecond, rec.MaxITL)
	assert.Equal(t, 9028*time.Microsecond, rec.MaxTokenITL)
	assert.InDelta(t, 45.14, sum.ITL.Max, 1e-9)
	assert.InDelta(t, 9.028, sum.ITLRetokenized.Max, 1e-9)
	assert.Equal(t, 40, sum.ITL.N)
	assert.Equal(t, 200, sum.ITLRetokenized.N, "one retokenized gap per token")
	assert.Equal(t, 5.0, sum.Speculation.MeanAccepted)
	assert.Equal(t, 1.0, sum.Speculation.AcceptanceRate)
}

// α = 0: every draft is rejected, one token a step, each step paying for
// its drafts: 45.14 ms while 4 are drafted, then 45.105, 45.07 and
// 45.035 ms as the last three steps draft 3, 2 and 1 (a request never
// drafts past its last token) and 45 ms for the last, which drafts none.
func TestSpeculationNoneAccepted(t *testing.T) {
	rec, sum := oneRequest(t, Speculation{Tokens: 4, Acceptance: 0})
	at, size := chunks(rec)
	require.Len(t, at, 201)
	for _, n := range size {
		require.Equal(t, 1, n)
	}
	want := 90*time.Millisecond + 196*45140*time.Microsecond + (45105+45070+45035+45000)*time.Microsecond
	assert.Equal(t, want, rec.E2E())
	assert.Equal(t, 196*4+3+2+1, rec.Drafted)
	assert.Zero(t, rec.Accepted)
	assert.Equal(t, rec.MaxITL, rec.MaxTokenITL, "one token a chunk")
	assert.Equal(t, 0.0, sum.Speculation.AcceptanceRate)
	assert.Equal(t, 1.0, sum.Speculation.MeanAccepted)
}

// K = 0 is no speculation: the retokenized series is the per-chunk one,
// and nothing is drafted.
func TestNoSpeculationHasOneSeries(t *testing.T) {
	rec, sum := oneRequest(t, Speculation{})
	assert.Equal(t, rec.MaxITL, rec.MaxTokenITL)
	assert.Equal(t, sum.ITL, sum.ITLRetokenized)
	assert.Equal(t, SpecSummary{}, sum.Speculation)
	assert.Zero(t, rec.Drafted)
	assert.Equal(t, 9090*time.Millisecond, rec.E2E())
}

// Under i.i.d. acceptance α a step of K drafts emits 1 + (accepted) tokens
// with mean (1 − α^(K+1)) / (1 − α): 2.7731 for K = 4, α = 0.7, 1.9375
// for K = 4, α = 0.5, 6.1258 for K = 8, α = 0.9. The simulated mean over
// thousands of steps lies within 4 standard errors. And on every request,
// drafted = accepted + rejected, no chunk's gap is below its retokenized
// gap, and the chunk's retokenized gap × its tokens is the chunk's gap.
func TestMeanAcceptedLength(t *testing.T) {
	for _, c := range []struct {
		k     int
		alpha float64
	}{{4, 0.7}, {4, 0.5}, {8, 0.9}} {
		t.Run(fmt.Sprintf("K=%d,α=%g", c.k, c.alpha), func(t *testing.T) {
			want := (1 - math.Pow(c.alpha, float64(c.k+1))) / (1 - c.alpha)
			var drafted, accepted int
			obs := ObserverFunc(func(r *Record) {
				require.LessOrEqual(t, r.Accepted, r.Drafted)
				drafted += r.Drafted
				accepted += r.Accepted
				require.GreaterOrEqual(t, r.MaxITL, r.MaxTokenITL)
				at, size := chunks(*r)
				for i := 1; i < len(at); i++ {
					g := at[i] - at[i-1]
					tok := g / time.Duration(size[i])
					require.LessOrEqual(t, tok, g)
					require.InDelta(t, int64(g), int64(tok)*int64(size[i]), float64(size[i]), "retokenized × tokens = the chunk's gap, to the ns")
				}
			})
			cfg := Config{Speculation: Speculation{Tokens: c.k, Acceptance: c.alpha}, KeepTokens: true}
			sum, err := Run(cfg, poisson(t, 3, 1, 300, workload.Fixed(1000, 200)), obs)
			require.NoError(t, err)
			sp := sum.Speculation
			t.Logf("mean accepted %.4f ± %.4f over %d full steps, want %.4f; acceptance rate %.3f", sp.MeanAccepted, sp.MeanAcceptedSE, sp.FullSteps, want, sp.AcceptanceRate)
			assert.Greater(t, sp.FullSteps, 5000)
			assert.InDelta(t, want, sp.MeanAccepted, 4*sp.MeanAcceptedSE)
			assert.Equal(t, drafted, sp.Drafted)
			assert.Equal(t, accepted, sp.Accepted)
			assert.LessOrEqual(t, sum.ITLRetokenized.Max, sum.ITL.Max)
		})
	}
}

// An empirical distribution of accepted lengths: weights 1, 0, 0, 3 of 0
// to 3 accepted give a mean of 1 + 3 × 3/4 = 3.25 tokens a full step.
func TestAcceptedLengthsDistribution(t *testing.T) {
	cfg := Config{Speculation: Speculation{Tokens: 3, AcceptedLengths: []float64{1, 0, 0, 3}}}
	sum, err := Run(cfg, poisson(t, 5, 1, 200, workload.Fixed(1000, 200)), nil)
	require.NoError(t, err)
	sp := sum.Speculation
	assert.InDelta(t, 3.25, sp.MeanAccepted, 4*sp.MeanAcceptedSE)
}

// A class's own α: interactive requests accepted at 0.9, the rest at 0.3.
func TestClassAcceptance(t *testing.T) {
	cfg := Config{
		Classes:     []Class{{Name: "code", SLO: SLO{TTFT: time.Second}}},
		Speculation: Speculation{Tokens: 4, Acceptance: 0.3, ClassAcceptance: map[string]float64{"code": 0.9}},
	}
	rate := map[string][2]int{}
	src, err := classMix(1, 1, workload.Fixed(500, 200), "code", "chat")
	require.NoError(t, err)
	_, err = Run(cfg, &limited{src, 300}, ObserverFunc(func(r *Record) {
		v := rate[r.Class]
		rate[r.Class] = [2]int{v[0] + r.Drafted, v[1] + r.Accepted}
	}))
	require.NoError(t, err)
	code, chat := rate["code"], rate["chat"]
	assert.Greater(t, float64(code[1])/float64(code[0]), 0.6)
	assert.Less(t, float64(chat[1])/float64(chat[0]), 0.3)
}

// limited yields the first n requests of a source.
type limited struct {
	workload.Source
	n int
}

func (l *limited) Next() (workload.Request, error) {
	if l.n == 0 {
		return workload.Request{}, io.EOF
	}
	l.n--
	return l.Source.Next()
}

// The SLO's ITL bound gates the series it names: with 8 drafts and α = 1
// a chunk's gap is 45 + 8 × 0.035 = 45.28 ms, over a 40 ms bound per
// chunk, but 5.03 ms per token, within it.
func TestITLSeriesGatesTheSLO(t *testing.T) {
	run := func(series ITLSeries) Summary {
		src := list{{ID: 1, InputTokens: 500, OutputTokens: 91}}
		sum, err := Run(Config{SLO: SLO{ITL: 40 * time.Millisecond, ITLSeries: series}, Speculation: Speculation{Tokens: 8, Acceptance: 1}}, &src, nil)
		require.NoError(t, err)
		return sum
	}
	assert.Equal(t, 0, run(PerChunk).Good)
	assert.Equal(t, 1, run(PerToken).Good)
}

// A draft model's steps are paid once per step for the longest draft: 4
// drafts at 5 ms each make every decode step 45.14 + 20 = 65.14 ms.
func TestDraftModelCost(t *testing.T) {
	rec, _ := oneRequest(t, Speculation{Tokens: 4, Acceptance: 1, DraftStep: 5 * time.Millisecond})
	assert.Equal(t, 65140*time.Microsecond, rec.MaxITL)
}

func TestSpeculationValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Speculation: Speculation{Tokens: -1}}, "Speculation.Tokens must be >= 0"},
		{Config{Speculation: Speculation{Tokens: 2, Acceptance: 1.5}}, "Speculation.Acceptance must be in [0, 1]"},
		{Config{Speculation: Speculation{Tokens: 2, AcceptedLengths: []float64{1, 1}}}, "want Tokens + 1 = 3"},
		{Config{Speculation: Speculation{Tokens: 2, AcceptedLengths: []float64{0, 0, 0}}}, "no positive weight"},
		{Config{Speculation: Speculation{Acceptance: 0.5}}, "Tokens is 0"},
		{Config{Speculation: Speculation{Tokens: 2, DraftStep: -time.Millisecond}}, "DraftStep"},
		{Config{Speculation: Speculation{Tokens: 2, ClassAcceptance: map[string]float64{"a": 2}}}, `ClassAcceptance["a"]`},
		{Config{SLO: SLO{ITLSeries: 7}}, "ITLSeries"},
		{Config{Speculation: Speculation{Tokens: 2048, Acceptance: 0.5}}, "Speculation.Tokens (2048) must be below the engine's MaxBatchedTokens (2048)"},
	} {
		assert.ErrorContains(t, c.cfg.Validate(), c.want)
	}
	cfg := Config{}
	cfg.Engine.SpeculativeTokens = 2
	assert.ErrorContains(t, cfg.Validate(), "Engine.SpeculativeTokens is set through Speculation.Tokens")
	assert.NoError(t, Config{Model: costmodel.Frozen{VerifyPerToken: time.Microsecond}, Speculation: Speculation{Tokens: 2, Acceptance: 0.5}}.Validate())
}

// A speculative replica's largest step counts its drafts and its drafter:
// with K = 4 and a 2 ms draft model on Atlas, one decode verifying 5
// positions beside a 2,043-token chunk is 45 + 20 + 0.035 × 2,043 + 4 ×
// 0.035 + 4 × 2 = 144.645 ms.
func TestSpeculativeLargestStep(t *testing.T) {
	r := ReplicaConfig{Speculation: Speculation{Tokens: 4, Acceptance: 0.7, DraftStep: 2 * time.Millisecond}}
	e, m := r.effective()
	d, _ := engine.LargestStep(e, m, 0, 0)
	assert.Equal(t, 144645*time.Microsecond, d)
}

// TestAcceptedStepFrequencies holds the law of a step's accepted drafts,
// one draw a step, to the i.i.d. model's: of d drafts, A = j accepted
// with probability α^j − α^(j+1) for j < d and α^d for j = d (the
// truncated geometric), for every d from 0 to K, each frequency over
// 60,000 steps within 4.5 standard errors of it; for one α (accept.IID)
// and for α by class (iidAcceptor, ClassAcceptance), each class's
// requests at their own α. Each draw is its request's own stream's.
func TestAcceptedStepFrequencies(t *testing.T) {
	const steps = 60_000
	for _, c := range []struct {
		k       int
		alpha   float64
		byClass map[string]float64
	}{{4, 0.7, nil}, {4, 0.5, nil}, {8, 0.9, nil}, {3, 0.2, nil}, {1, 0.7, nil},
		{4, 0.7, map[string]float64{"code": 0.9, "chat": 0.3}}} {
		t.Run(fmt.Sprintf("K=%d,α=%g,classes=%v", c.k, c.alpha, c.byClass != nil), func(t *testing.T) {
			r := &runner{}
			r.classes.list = []classState{{name: "code"}, {name: "chat"}, {name: ""}} // the default class last
			s := Speculation{Tokens: c.k, Acceptance: c.alpha, ClassAcceptance: c.byClass}
			acc := newAcceptor(r, s)
			if c.byClass == nil {
				require.IsType(t, (*accept.IID)(nil), acc)
			} else {
				require.IsType(t, (*iidAcceptor)(nil), acc)
			}
			r.slots = make([]slot, 3*16)
			for i := range r.slots {
				r.seedAcc(int32(i), uint64(i))
				r.slots[i].class = i % 3
			}
			for class, cl := range r.classes.list {
				alpha := c.alpha
				if v, ok := c.byClass[cl.name]; ok {
					alpha = v
				}
				for d := 0; d <= c.k; d++ {
					counts := make([]int, d+1)
					for i := range steps {
						ref := int32(3*(i%16) + class)
						counts[acc.Accept(ref, d)]++
					}
					for j, n := range counts {
						p := math.Pow(alpha, float64(j))
						if j < d {
							p -= math.Pow(alpha, float64(j+1))
						}
						se := math.Sqrt(p * (1 - p) / steps)
						got := float64(n) / steps
						assert.InDelta(t, p, got, 4.5*se+1e-12, "class %q (α %g), %d drafts: P(A = %d)", cl.name, alpha, d, j)
					}
				}
			}
		})
	}
}

// TestFreeDraftingIsItsModel holds the model a replica with a free
// drafter runs (effective: the target model itself) to the Drafting it
// stands for, on random batches that verify drafts, and keeps a priced
// drafter wrapped.
func TestFreeDraftingIsItsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 9))
	models := []costmodel.Model{nil, costmodel.Frozen{}, costmodel.Linear{PerStep: 40, PerDecodeToken: 0.1, PerDecodeContext: 0.00005, PerPrefillToken: 0.035},
		costmodel.Frozen{DecodeStep: 30 * time.Millisecond, VerifyPerToken: 50 * time.Microsecond},
		costmodel.Func(func(b costmodel.Batch) time.Duration { // reads every verified position
			d := time.Millisecond
			for i := range b.Decode {
				d += time.Duration(b.Verified(i)*(1+b.Decode[i]%7)) * time.Microsecond
			}
			return d
		})}
	for _, m := range models {
		r := ReplicaConfig{Model: m, Speculation: Speculation{Tokens: 4, Acceptance: 0.7}}
		cfg, got := r.effective()
		require.Equal(t, 4, cfg.SpeculativeTokens)
		if got == nil {
			got = costmodel.Frozen{} // as engine.New reads nil
		}
		want := costmodel.Drafting{Model: m}
		for range 500 {
			var b costmodel.Batch
			for range rng.IntN(12) {
				b.Decode = append(b.Decode, 1+rng.IntN(4000))
				b.Verify = append(b.Verify, 1+rng.IntN(5))
			}
			if rng.IntN(3) == 0 {
				b.Prefill = []costmodel.Chunk{{NewTokens: 1 + rng.IntN(512), Context: rng.IntN(2000)}}
			}
			require.Equal(t, want.StepTime(b), got.StepTime(b), "model %T, batch %+v", m, b)
		}
		r.Speculation.DraftStep = time.Millisecond
		_, priced := r.effective()
		assert.IsType(t, costmodel.Drafting{}, priced, "a draft model's cost is the wrapper's")
	}
}

// widestDecode is an observer that keeps the most decodes of a step.
type widestDecode struct{ n int }

func (*widestDecode) Observe(*Record)       {}
func (w *widestDecode) ObserveStep(s *Step) { w.n = max(w.n, len(s.Decode)) }

// A speculative batch of more than 32 decodes (plainChunks' bound on a
// call until it counted chunks by size) is accounted as stepwise: the
// same bytes, every step's engine checked.
func TestWideSpeculativeBatchFastEqualsStepwise(t *testing.T) {
	rg := regime{name: "WideSpeculation", small: 400, build: func(tb testing.TB, n int) (Config, func() workload.Source) {
		rc := ReplicaConfig{Engine: engine.Config{MaxSeqs: 128}, Speculation: Speculation{Tokens: 4, Acceptance: 0.7}}
		cfg := Config{Fleet: Fleet{Replicas: Copies(1, rc)}}
		return cfg, func() workload.Source { return poisson(tb, 3, 40, n, workload.Fixed(200, 200)) }
	}}
	cfg, fast, step := runRegimeTwice(t, rg, func(c *Config) { c.Stepwise = true })
	sameBytes(t, step.text, fast.text)
	var w widestDecode
	_, src := rg.build(t, rg.small)
	_, err := Run(cfg, src(), &w)
	require.NoError(t, err)
	t.Logf("widest step: %d decodes", w.n)
	assert.Greater(t, w.n, 32, "steps of more than 32 decodes")
}

// TestOneAcceptorIsIID holds the acceptor of one α for every class
// (accept.IID) to the i.i.d. acceptor reading its request's class (given
// the one α by ClassAcceptance), stream by stream: the same draws, the
// same accepted drafts.
func TestOneAcceptorIsIID(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 13))
	for range 50 {
		r := &runner{}
		r.slots = make([]slot, 8)
		r.classes.list = make([]classState, 1+rng.IntN(3))
		for i := range r.classes.list[1:] {
			r.classes.list[i].name = fmt.Sprint("class", i)
		}
		s := Speculation{Tokens: 1 + rng.IntN(6), Acceptance: rng.Float64()}
		one, ok := newAcceptor(r, s).(*accept.IID)
		require.True(t, ok, "one α: accept.IID")
		twin := &runner{}
		twin.slots = make([]slot, len(r.slots))
		twin.classes.list = r.classes.list
		s.ClassAcceptance = map[string]float64{"class0": s.Acceptance, "absent": 0.5}
		each, ok := newAcceptor(twin, s).(*iidAcceptor)
		require.True(t, ok, "α by class: iidAcceptor")
		for i := range r.slots {
			seed := rng.Uint64()
			r.seedAcc(int32(i), seed)
			twin.seedAcc(int32(i), seed)
			r.slots[i].class = rng.IntN(len(r.classes.list))
			twin.slots[i].class = r.slots[i].class
		}
		for range 2000 {
			ref, drafted := int32(rng.IntN(len(r.slots))), rng.IntN(s.Tokens+1)
			require.Equal(t, each.Accept(ref, drafted), one.Accept(ref, drafted))
		}
	}
}

// TestOneStepPlansWhatUntilWould holds a replica whose engine plans no
// run (speculative decoding), which asks its engine for one step a move,
// to the same replica asking for steps up to the stopping instant
// (askRuns), which its engine plans one at a time: the same bytes.
func TestOneStepPlansWhatUntilWould(t *testing.T) {
	for _, rg := range []regime{regimeNamed(t, "Speculation"), {name: "SpeculativeFleet", small: 200,
		build: func(tb testing.TB, n int) (Config, func() workload.Source) {
			rc := ReplicaConfig{Speculation: Speculation{Tokens: 3, Acceptance: 0.6}}
			cfg := Config{Fleet: Fleet{Replicas: Copies(3, rc), Router: LeastLoaded{}}, Timeout: 20 * time.Second}
			return cfg, func() workload.Source { return poisson(tb, 5, 8, n, workload.Fixed(800, 150)) }
		}}} {
		t.Run(rg.name, func(t *testing.T) {
			cfg, src := rg.build(t, rg.small)
			one, r, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			for i := range r.reps {
				require.True(t, r.reps[i].oneStep, "replica %d of a speculative fleet plans a step a move", i)
			}
			askRuns = true
			defer func() { askRuns = false }()
			until, r, err := runSourceScenario(cfg, src())
			require.NoError(t, err)
			require.False(t, r.reps[0].oneStep, "asked for runs")
			sameBytes(t, until.text, one.text)
		})
	}
}

// regimeNamed is the regime of that name.
func regimeNamed(t *testing.T, name string) regime {
	for _, rg := range regimes {
		if rg.name == name {
			return rg
		}
	}
	t.Fatalf("no regime %s", name)
	return regime{}
}
