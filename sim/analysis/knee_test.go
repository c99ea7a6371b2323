package analysis

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// md1WaitCDF is Erlang's M/D/1 waiting-time distribution (FIFO):
// P(W <= x) = (1-ρ) Σ_{k=0}^{⌊x/D⌋} [λ(kD-x)]^k / k! · e^{-λ(kD-x)}.
func md1WaitCDF(lambda, d, x float64) float64 {
	sum := 0.0
	for k := 0; float64(k)*d <= x; k++ {
		a := lambda * (float64(k)*d - x)
		sum += math.Pow(a, float64(k)) / math.Gamma(float64(k+1)) * math.Exp(-a)
	}
	return (1 - lambda*d) * sum
}

// md1Knee is the highest arrival rate at which P(W <= x) still meets target.
func md1Knee(d, x, target float64) float64 {
	lo, hi := 0.0, 1/d
	for range 100 {
		mid := (lo + hi) / 2
		if md1WaitCDF(mid, d, x) >= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// With a batch cap of 1 and fixed lengths the replica is an M/D/1 queue; a
// request is good iff its TTFT = wait + 23.5 ms prefill is within 1 s, so
// attainment is Erlang's waiting-time CDF at 976.5 ms and the knee at a 0.95
// target is where that CDF falls to 0.95: λ ≈ 1.2438 req/s (ρ ≈ 0.533). The
// sweep's knee lands there, inside its interval.
func TestKneeMatchesMD1Theory(t *testing.T) {
	testlong.Skip(t, "a sweep of 7 loads × 5 replications of 10,100 s")
	d := serviceTime(100, 10).Seconds() // 428.5 ms
	x := 1.0 - 0.0235
	theory := md1Knee(d, x, 0.95)
	require.InDelta(t, 1.2438, theory, 1e-3)
	s := Sweep{
		Config: sim.Config{
			Engine: engine.Config{MaxSeqs: 1},
			SLO:    sim.SLO{TTFT: time.Second},
			Window: sim.Window{Warmup: 100 * time.Second, Horizon: 10_100 * time.Second},
		},
		Workload: WorkloadFunc(func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*10_200), workload.Fixed(100, 10))
		}),
		Grid: Grid{Loads: []float64{0.8, 1.0, 1.1, 1.2, 1.3, 1.4, 1.6}},
		Reps: 5,
	}
	c, err := s.Run()
	require.NoError(t, err)
	for _, p := range c.Points { // attainment follows Erlang's formula at every load
		assert.InDelta(t, md1WaitCDF(p.Load, d, x), p.Attainment.Center, 0.01, "load %v", p.Load)
	}
	require.True(t, c.Knee.Found)
	t.Logf("knee %v, theory %.4f", c.Knee.Load, theory)
	assert.InEpsilon(t, theory, c.Knee.Load.Center, 0.03)
	assert.True(t, c.Knee.Load.Contains(theory), "theory %.4f outside %v", theory, c.Knee.Load)
}

// The sweep is deterministic, and the same on one worker as on many.
func TestSweepSerialEqualsParallel(t *testing.T) {
	s := atlasSweep()
	s.Grid = Grid{Loads: []float64{1, 2, 2.5}}
	s.Workers = 1
	serial, err := s.Run()
	require.NoError(t, err)
	s.Workers = 4
	parallel, err := s.Run()
	require.NoError(t, err)
	sameCurve(t, serial, parallel)
	again, err := s.Run()
	require.NoError(t, err)
	sameCurve(t, parallel, again)
}

// sameCurve compares two curves as text: a curve holds NaNs (an empty
// distribution, a figure without an interval), which equal nothing.
func sameCurve(t *testing.T, want, got *Curve) {
	t.Helper()
	sameBytes(t, []byte(fmt.Sprintf("%+v", *want)), []byte(fmt.Sprintf("%+v", *got)))
}
