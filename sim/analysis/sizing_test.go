package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// geometric is a prompt length drawn geometric on {1, 2, …} with the
// given mean: priced at a fixed time per prompt token it makes a service
// time exponential up to the grid of one token (its squared coefficient
// of variation is 1 − 1/mean).
type geometric struct{ mean float64 }

func (g geometric) q() float64 { return 1 - 1/g.mean }
func (g geometric) Sample(r *rand.Rand) int {
	return 1 + int(math.Floor(math.Log(1-r.Float64())/math.Log(g.q())))
}
func (g geometric) Quantile(p float64) int {
	return max(1, int(math.Ceil(math.Log(1-p)/math.Log(g.q()))))
}
func (g geometric) Mean() float64   { return g.mean }
func (g geometric) Validate() error { return nil }
func (g geometric) String() string  { return fmt.Sprintf("geometric(mean %g)", g.mean) }

// The degenerate replica of the theory test: one request at a time
// (MaxSeqs 1), each a prompt and a single output token, so its one
// prefill is its whole service: perToken × a geometric prompt length,
// exponential of rate mu = 1/(perToken × mean). The step has no fixed
// cost, so however the engine chunks a long prompt its chunks add up to
// the same time.
const (
	mmPerToken = 200 * time.Microsecond
	mmMean     = 1000.0 // tokens: mean service 0.2 s, mu = 5/s
	mmMu       = 5.0
)

func mm1Config(window sim.Window, ttft time.Duration) sim.Config {
	model := costmodel.Func(func(b costmodel.Batch) time.Duration {
		return time.Duration(b.PrefillTokens()) * mmPerToken
	})
	return sim.Config{
		Fleet:  sim.Fleet{Replicas: []sim.ReplicaConfig{{Engine: engine.Config{MaxSeqs: 1}, Model: model}}, Router: sim.Random{}},
		SLO:    sim.SLO{TTFT: ttft},
		Window: window,
	}
}

var mm1Workload = Poisson(workload.Independent{Input: geometric{mmMean}, Output: workload.Constant{Tokens: 1}})

// mm1Attainment is P(T ≤ b) in an M/M/1 queue (FCFS) offered lambda:
// the sojourn time T, which is the TTFT here (the first token ends the
// service), is exponential of rate mu − lambda.
func mm1Attainment(lambda, mu, b float64) float64 {
	if lambda >= mu {
		return 0
	}
	return 1 - math.Exp(-(mu-lambda)*b)
}

// Sizing against theory. Random routing thins the Poisson arrivals into
// c independent Poisson streams of rate λ/c (a router that keeps one
// shared queue, M/M/c and Erlang C, is not what a fleet that routes at
// arrival does), so each replica is an M/M/1 queue and the fleet's
// attainment is the M/M/1 sojourn tail at λ/c: the sized n must be the
// smallest c with 1 − exp(−(μ − λ/c)·b) ≥ target. Where the theory's
// attainment at c or c − 1 lies within 2 points of the target, the
// simulated mean over 5 replications (each a few thousand correlated
// waits, standard error near a point) may fall on either side of it, so
// n may be c ± 1 there; elsewhere it must be c. Every count the search
// ran must also attain what the theory says: within 2 points, or inside
// its interval (near ρ = 1 the waits are long and few, and the interval
// wide).
func TestSizingMatchesMM1(t *testing.T) {
	window := sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}
	const b, target = 2.0, 0.95
	for _, load := range []float64{10, 30} {
		t.Run(fmt.Sprint(load), func(t *testing.T) {
			s := Sizing{Config: mm1Config(window, 2*time.Second), Workload: mm1Workload, Load: load, Headroom: 0.2, Target: target, Reps: 5, BaseSeed: 7}
			res, err := s.Run()
			require.NoError(t, err)
			lambda := load * 1.2
			c := 1
			for mm1Attainment(lambda/float64(c), mmMu, b) < target {
				c++
			}
			near := math.Abs(mm1Attainment(lambda/float64(c), mmMu, b)-target) < 0.02 ||
				math.Abs(mm1Attainment(lambda/float64(c-1), mmMu, b)-target) < 0.02
			t.Logf("λ %.4g: sized %d (seed range [%d, %d]), theory %d (near %v); %d runs", lambda, res.Replicas, res.SeedLo, res.SeedHi, c, near, res.Runs)
			for _, p := range res.Probes {
				want := mm1Attainment(lambda/float64(p.Replicas), mmMu, b)
				t.Logf("  %2d replicas: attainment %v, M/M/1 %.4f", p.Replicas, p.Attainment, want)
				assert.True(t, p.Attainment.Contains(want) || math.Abs(p.Attainment.Center-want) <= 0.02,
					"%d replicas: attainment %v, M/M/1 %.4f", p.Replicas, p.Attainment, want)
			}
			if near {
				assert.InDelta(t, c, res.Replicas, 1)
			} else {
				assert.Equal(t, c, res.Replicas)
			}
		})
	}
}

func quickSizing(load float64) Sizing {
	return Sizing{
		Config:   mm1Config(sim.Window{Warmup: 30 * time.Second, Horizon: 200 * time.Second}, 2*time.Second),
		Workload: mm1Workload, Load: load, Headroom: 0.2, Reps: 3, BaseSeed: 1, Price: 10,
	}
}

// The same seeds give the same answer, figure for figure, whatever the
// number of workers.
func TestSizingDeterministic(t *testing.T) {
	s := quickSizing(10)
	a, err := s.Run()
	require.NoError(t, err)
	s.Workers = 1
	b, err := s.Run()
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%+v", *a), fmt.Sprintf("%+v", *b))
}

// More load never needs fewer replicas (on common random numbers, the
// same seeds at every load), and the cost per million tokens is the
// replicas' price over the tokens they emit: here one a request, so
// about the sizing load's rate.
func TestSizingMonotoneInLoad(t *testing.T) {
	prev := 0
	for _, load := range []float64{2, 5, 10, 20} {
		res, err := quickSizing(load).Run()
		require.NoError(t, err)
		t.Logf("load %v (sized at %v): %d replicas, seeds [%d, %d], attainment %v, below %v, $%.4g/M tokens",
			load, res.Load, res.Replicas, res.SeedLo, res.SeedHi, res.Attainment, res.Below, res.CostPerMillion.Center)
		assert.GreaterOrEqual(t, res.Replicas, prev, "load %v", load)
		prev = res.Replicas
		assert.GreaterOrEqual(t, res.Attainment.Center, 0.95)
		if res.Replicas > 1 {
			assert.Less(t, res.Below.Center, 0.95)
		}
		assert.LessOrEqual(t, res.SeedLo, res.Replicas+1)
		assert.GreaterOrEqual(t, res.SeedHi, res.Replicas-1)
		// The identity, then the tokens: one a request, so the sizing
		// load's rate within its Poisson noise (3 runs of 200 s at 2.4
		// req/s count about 1,440 arrivals: 2.6 % standard deviation).
		want := float64(res.Replicas) * 10 / (3600 * res.OutputThroughput.Center) * 1e6
		assert.InDelta(t, want, res.CostPerMillion.Center, 1e-9*want)
		assert.InEpsilon(t, res.Load, res.OutputThroughput.Center, 0.1)
		assert.True(t, res.CostPerMillion.Lo <= res.CostPerMillion.Center && res.CostPerMillion.Center <= res.CostPerMillion.Hi)
		// The good tokens are those of the good requests (one a
		// request): their rate is the attainment × the load, and a
		// million of them costs the cost of a million tokens emitted
		// over the attainment, within the same Poisson noise.
		wantGood := float64(res.Replicas) * 10 / (3600 * res.GoodTokenRate.Center) * 1e6
		assert.InDelta(t, wantGood, res.GoodCostPerMillion.Center, 1e-9*wantGood)
		assert.InEpsilon(t, res.Attainment.Center*res.Load, res.GoodTokenRate.Center, 0.1, "one good token a good request")
		assert.InEpsilon(t, res.CostPerMillion.Center/res.Attainment.Center, res.GoodCostPerMillion.Center, 0.1)
	}
}

// A bound too small to meet the target says so, naming it, and never
// searches past it.
func TestSizingUnmet(t *testing.T) {
	s := quickSizing(10)
	s.MaxReplicas = 3
	_, err := s.Run()
	var unmet *SizingUnmetError
	require.ErrorAs(t, err, &unmet)
	assert.Equal(t, 3, unmet.MaxReplicas)
	assert.Less(t, unmet.Attainment.Center, 0.95)
	assert.Contains(t, err.Error(), "at most 3 replicas (MaxReplicas)")
}

func TestSizingValidate(t *testing.T) {
	assert.Error(t, Sizing{}.Validate())
	s := quickSizing(1)
	require.NoError(t, s.Validate())
	for name, mod := range map[string]func(*Sizing){
		"Load":        func(s *Sizing) { s.Load = 0 },
		"Headroom":    func(s *Sizing) { s.Headroom = -0.1 },
		"Target":      func(s *Sizing) { s.Target = 1.5 },
		"MaxReplicas": func(s *Sizing) { s.MaxReplicas = sim.MaxReplicas + 1 },
		"Price":       func(s *Sizing) { s.Price = math.Inf(1) },
		"Workload":    func(s *Sizing) { s.Workload = nil },
		"Horizon":     func(s *Sizing) { s.Config.Window.Horizon = 0 },
		"Replicas":    func(s *Sizing) { s.Config.Fleet.Replicas = sim.Copies(2, sim.ReplicaConfig{}) },
	} {
		c := s
		mod(&c)
		err := c.Validate()
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), name)
		}
	}
}

// From any guess, the search finds the same smallest count as doubling
// from 1, for every monotone criterion (a count meets it iff n >= answer)
// and every bound; and from a guess at the answer it runs only counts
// within a factor 2 of it.
func TestSmallestMeetingFromAnyGuess(t *testing.T) {
	for max := 1; max <= 40; max++ {
		for answer := 1; answer <= max+1; answer++ {
			meets := func(n int) bool {
				require.True(t, n >= 1 && n <= max, "probe %d outside [1, %d]", n, max)
				return n >= answer
			}
			want, wantOK := smallestMeeting(0, max, meets)
			require.Equal(t, answer <= max, wantOK)
			for from := 0; from <= max; from++ {
				got, ok := smallestMeeting(from, max, meets)
				require.Equal(t, wantOK, ok, "max %d answer %d from %d", max, answer, from)
				if ok {
					require.Equal(t, want, got, "max %d answer %d from %d", max, answer, from)
				}
			}
			if answer <= max {
				var probes []int
				_, _ = smallestMeeting(answer, max, func(n int) bool { probes = append(probes, n); return n >= answer })
				for _, n := range probes {
					require.True(t, n >= answer/2 && n <= 2*answer, "from the answer %d, probe %d", answer, n)
				}
				require.LessOrEqual(t, len(probes), 2, "from the answer: it meets, the count below fails")
			}
		}
	}
}

// A guess changes which counts run, not the answer: the same replicas,
// attainments and seed range as the doubling from 1, in fewer runs when
// the guess is near.
func TestSizingFromAGuess(t *testing.T) {
	s := quickSizing(20)
	plain, err := s.Run()
	require.NoError(t, err)
	for _, from := range []int{1, plain.Replicas, plain.Replicas + 3, 2 * plain.Replicas} {
		s.From = from
		got, err := s.Run()
		require.NoError(t, err)
		assert.Equal(t, plain.Replicas, got.Replicas, "from %d", from)
		assert.Equal(t, plain.Attainment, got.Attainment, "from %d", from)
		assert.Equal(t, plain.Below, got.Below, "from %d", from)
		assert.Equal(t, plain.PerSeed, got.PerSeed, "from %d", from)
		if from == plain.Replicas {
			assert.Less(t, got.Runs, plain.Runs, "from the answer")
		}
	}
	s.From = -1
	assert.ErrorContains(t, s.Validate(), "Sizing.From must be in [0, MaxReplicas]")
	s.From, s.MaxReplicas = 9, 8
	assert.ErrorContains(t, s.Validate(), "got 9")
}
