package analysis

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/sim"
)

// erlangC is the probability that an arrival waits in an M/M/c queue
// offered a = λ/μ erlangs (a < c): Erlang's B by its stable recursion,
// then C (costmodel's, which is unexported).
func erlangC(c int, a float64) float64 {
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	rho := a / float64(c)
	return b / (1 - rho + rho*b)
}

// mmcAttainment is P(T ≤ t) for the sojourn T = W + S of an M/M/c queue:
// W is 0 unless the arrival waits (Erlang C), then exponential of rate
// θ = cμ − λ, and S is exponential of rate μ, so the tail of W + S is the
// hypoexponential (θe^−μt − μe^−θt)/(θ − μ).
func mmcAttainment(c int, lambda, mu, t float64) float64 {
	if lambda >= float64(c)*mu {
		return 0
	}
	pc := erlangC(c, lambda/mu)
	theta := float64(c)*mu - lambda
	both := (theta*math.Exp(-mu*t) - mu*math.Exp(-theta*t)) / (theta - mu)
	if math.Abs(theta-mu) < 1e-9 {
		both = (1 + mu*t) * math.Exp(-mu*t)
	}
	return 1 - ((1-pc)*math.Exp(-mu*t) + pc*both)
}

// Sizing against Erlang C. LeastLoaded sends each arrival to the replica
// with the least outstanding tokens: with batch 1 and a step priced per
// prompt token that is the replica with the least work left (the request
// in service counted whole until its step ends), and routing to the least
// work left with FCFS at each server waits exactly as one shared FCFS
// queue does. So the fleet is nearly M/M/c, and the sized n must be the
// smallest c whose M/M/c sojourn tail (Erlang C, then the hypoexponential
// wait plus service) meets the target, ± 1 where the theory's attainment
// at c or c − 1 lies within 2 points of the target; every count the
// search ran must attain what M/M/c says within 2 points or inside its
// interval. Measured: λ 12 req/s, sized 4 = Erlang C's 4 (0.9902; 3
// attain 0.9236); λ 36, sized 9 against 8 (0.9527, within a point of the
// target: simulated 0.9482); λ 72, sized 16 = 16 (long only). The TTFT bound, 1 s, is 5 mean services: service alone
// attains 1 − e^−5 = 0.993, and the waits decide.
func TestSizingLeastLoadedMatchesErlangC(t *testing.T) {
	window := sim.Window{Warmup: 60 * time.Second, Horizon: 600 * time.Second}
	const b, target = 1.0, 0.95
	for _, load := range []float64{10, 30, 60} {
		t.Run(fmt.Sprint(load), func(t *testing.T) {
			if load == 60 {
				testlong.Skip(t, "16 replicas at 72 req/s, about 4 s")
			}
			cfg := mm1Config(window, time.Second)
			cfg.Fleet.Router = sim.LeastLoaded{}
			s := Sizing{Config: cfg, Workload: mm1Workload, Load: load, Headroom: 0.2, Target: target, Reps: 5, BaseSeed: 7}
			res, err := s.Run()
			require.NoError(t, err)
			lambda := load * 1.2
			c := 1
			for mmcAttainment(c, lambda, mmMu, b) < target {
				c++
			}
			near := math.Abs(mmcAttainment(c, lambda, mmMu, b)-target) < 0.02 ||
				math.Abs(mmcAttainment(c-1, lambda, mmMu, b)-target) < 0.02
			t.Logf("λ %.4g: sized %d (seed range [%d, %d]), Erlang C %d (%.4f; %d: %.4f; near %v); %d runs",
				lambda, res.Replicas, res.SeedLo, res.SeedHi, c, mmcAttainment(c, lambda, mmMu, b), c-1, mmcAttainment(c-1, lambda, mmMu, b), near, res.Runs)
			for _, p := range res.Probes {
				want := mmcAttainment(p.Replicas, lambda, mmMu, b)
				t.Logf("  %2d replicas: attainment %v, M/M/c %.4f", p.Replicas, p.Attainment, want)
				assert.True(t, p.Attainment.Contains(want) || math.Abs(p.Attainment.Center-want) <= 0.02,
					"%d replicas: attainment %v, M/M/c %.4f", p.Replicas, p.Attainment, want)
			}
			if near {
				assert.InDelta(t, c, res.Replicas, 1)
			} else {
				assert.Equal(t, c, res.Replicas)
			}
		})
	}
}
