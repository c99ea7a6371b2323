package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// With a batch cap of 1 the replica is a single server: a request's service
// time is its prefill step plus one 45 ms decode step per further token, and
// the queue delay (arrival to first scheduled) is the M/G/1 waiting time.
func serviceTime(in, out int) time.Duration {
	return costmodel.Frozen{}.PrefillTime(in) + time.Duration(out-1)*costmodel.AtlasDecodeStep
}

func batchOfOne() Config { return Config{Engine: engine.Config{MaxSeqs: 1}} }

// Pollaczek–Khinchine for M/D/1: Wq = ρ·S / (2(1-ρ)).
func TestQueueDelayMatchesMD1(t *testing.T) {
	const n = 100_000
	s := serviceTime(100, 10) // 23.5 + 9 × 45 = 428.5 ms
	require.Equal(t, 428500*time.Microsecond, s)
	for _, rho := range []float64{0.5, 0.8} {
		lambda := rho / s.Seconds()
		want := rho * s.Seconds() / (2 * (1 - rho)) * 1e3
		sum, err := Run(batchOfOne(), poisson(t, 1, lambda, n, workload.Fixed(100, 10)), nil)
		require.NoError(t, err)
		require.Equal(t, n, sum.Count(StatusOK))
		assert.InEpsilon(t, want, sum.QueueDelay.Mean, 0.02, "rho %v: M/D/1 mean wait %.1f ms, simulated %.1f ms", rho, want, sum.QueueDelay.Mean)
		assertLittle(t, sum)
	}
}

// Pollaczek–Khinchine for M/G/1: Wq = λ·E[S²] / (2(1-ρ)), output lengths
// uniform on 1…39.
func TestQueueDelayMatchesMG1(t *testing.T) {
	const n, in, maxOut = 100_000, 100, 39
	var es, es2 float64
	for o := 1; o <= maxOut; o++ {
		x := serviceTime(in, o).Seconds()
		es += x / maxOut
		es2 += x * x / maxOut
	}
	const rho = 0.7
	lambda := rho / es
	want := lambda * es2 / (2 * (1 - rho)) * 1e3
	// vLLM's range ratio: uniform on [floor(20·0.05), ceil(20·1.95)] = [1, 39].
	src := poisson(t, 2, lambda, n, workload.Independent{Input: workload.Constant{Tokens: in}, Output: workload.Uniform{Center: 20, RangeRatio: 0.95}})
	sum, err := Run(batchOfOne(), src, nil)
	require.NoError(t, err)
	assert.InEpsilon(t, want, sum.QueueDelay.Mean, 0.02, "M/G/1 mean wait %.1f ms, simulated %.1f ms", want, sum.QueueDelay.Mean)
	assertLittle(t, sum)
}

// Little's law, L = λW: the time-average number of requests in the replica
// (integrated from the engine's occupancy) equals the accepted arrival rate
// times the mean time in the replica (from the per-request records).
func assertLittle(t *testing.T, s Summary) {
	t.Helper()
	l := s.ArrivalRate * s.MeanSojourn.Seconds()
	assert.InEpsilon(t, s.MeanInSystem, l, 0.02, "Little: L=%.4f, λW=%.4f", s.MeanInSystem, l)
	t.Logf("L=%.4f λW=%.4f wait=%.1fms offered=%d ok=%d", s.MeanInSystem, l, s.QueueDelay.Mean, s.Offered, s.Count(StatusOK))
}

func TestLittleAtTheAtlasOperatingPoint(t *testing.T) {
	for _, rate := range []float64{1, 2, 2.5} { // stable loads: past the knee the queue grows and the window has no steady state
		cfg := Config{Window: Window{Warmup: 60 * time.Second, Horizon: 1060 * time.Second}}
		sum, err := Run(cfg, poisson(t, 3, rate, int(rate*1200), workload.Fixed(2000, 200)), nil)
		require.NoError(t, err)
		assert.Greater(t, sum.Offered, int(rate*900))
		assertLittle(t, sum)
		assert.False(t, math.IsNaN(sum.TTFT.Mean))
	}
}
