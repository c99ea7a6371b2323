package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// Summary.WorstITL is the records' MaxITL, one value a measured request
// with two tokens or more, whatever its status; and since each request's
// worst gap is one of its gaps and at least every other, its maximum is
// the maximum over every gap (ITL's). Causes.ITL, the requests whose
// worst gap passes the bound, is its count above the bound when every
// request ended ok.
func TestWorstITLIsTheRecordsMaxITL(t *testing.T) {
	for _, c := range []struct {
		name      string
		cfg       Config
		rate      float64
		itlMisses bool // the bound is passed: a step can hold two whole prompts
	}{
		{"below the knee", Config{Window: Window{Warmup: 20 * time.Second, Horizon: 3 * time.Minute}}, 1.5, false},
		{"past the knee, with timeouts", Config{Window: Window{Warmup: 20 * time.Second, Horizon: 3 * time.Minute}, Timeout: 15 * time.Second}, 3.5, false},
		{"chunk cap 256", Config{Engine: engine.Config{ChunkCap: 256}, Window: Window{Warmup: 20 * time.Second, Horizon: 3 * time.Minute}}, 2, false},
		{"budget 8192", Config{Engine: engine.Config{MaxBatchedTokens: 8192}, Window: Window{Warmup: 20 * time.Second, Horizon: 3 * time.Minute}}, 2.5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var worst []float64
			allOK := true
			sum, err := Run(c.cfg, poisson(t, 11, c.rate, 700, workload.Fixed(2000, 200)), ObserverFunc(func(r *Record) {
				if r.Measured && r.Emitted > 1 {
					worst = append(worst, ms(r.MaxITL))
				}
				allOK = allOK && (!r.Measured || r.Status == StatusOK)
			}))
			require.NoError(t, err)
			slices.Sort(worst)
			require.NotEmpty(t, worst)
			assert.Equal(t, worst, sum.Samples.WorstITL)
			assert.Equal(t, len(worst), sum.WorstITL.N)
			assert.Equal(t, sum.ITL.Max, sum.WorstITL.Max, "the worst gap of all is a request's worst")
			assert.LessOrEqual(t, sum.WorstITL.Median, sum.WorstITL.P99)
			assert.Equal(t, c.itlMisses, sum.Causes.ITL > 0)
			if allOK {
				over := 0
				for _, v := range worst {
					if v > ms(sum.SLO.ITL) {
						over++
					}
				}
				assert.Equal(t, over, sum.Causes.ITL, "a request misses ITL when its worst gap passes the bound")
			} else {
				assert.Greater(t, sum.WorstITL.N, sum.Count(StatusOK), "timed-out requests keep their worst gap")
			}
		})
	}
}

// Atlas's decode step is 45 ms flat: 32 requests prefilled together in
// one step and then decoding together see only 45 ms gaps, so every
// request's worst gap is 45 ms.
func TestWorstITLOfPureDecodeIsTheDecodeStep(t *testing.T) {
	reqs := list{}
	for i := range 32 {
		reqs = append(reqs, workload.Request{ID: uint64(i), InputTokens: 64, OutputTokens: 30})
	}
	sum, err := Run(Config{}, &reqs, nil)
	require.NoError(t, err)
	require.Equal(t, 32, sum.Good)
	assert.Equal(t, 32, sum.WorstITL.N)
	for _, v := range []float64{sum.WorstITL.Median, sum.WorstITL.P99, sum.WorstITL.Max, sum.WorstITL.Mean} {
		assert.InDelta(t, 45.0, v, 1e-9)
	}
	assert.Equal(t, slices.Repeat([]float64{45}, 32), sum.Samples.WorstITL)
}

// With chunked prefill a 2,000-token prompt arriving among 31 decoders
// stretches each decoder's gap to the mixed step of a full chunk,
// 45 + 20 + 0.035·cap ms (the chapter's prefill line); that step is
// every decoder's worst gap and the worst gap of all. The long request
// itself, prefilled over the last chunk, sees its one gap at the next
// step, pure decode: 45 ms.
func TestWorstITLWithChunkedPrefillIsTheLargestMixedStep(t *testing.T) {
	for _, chunk := range []int{128, 256, 512} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			reqs := list{}
			for i := range 31 {
				reqs = append(reqs, workload.Request{ID: uint64(i), InputTokens: 64, OutputTokens: 40})
			}
			reqs = append(reqs, workload.Request{ID: 99, Arrival: 500 * time.Millisecond, InputTokens: 2000, OutputTokens: 2})
			sum, err := Run(Config{Engine: engine.Config{ChunkCap: chunk}}, &reqs, nil)
			require.NoError(t, err)
			mixed := 45 + 20 + 0.035*float64(chunk)
			assert.Equal(t, 32, sum.WorstITL.N)
			assert.InDelta(t, mixed, sum.WorstITL.Max, 1e-9)
			assert.InDelta(t, mixed, sum.ITL.Max, 1e-9)
			assert.InDelta(t, 45.0, sum.Samples.WorstITL[0], 1e-9, "the long request's one gap")
			for _, v := range sum.Samples.WorstITL[1:] {
				assert.InDelta(t, mixed, v, 1e-9, "a decoder's worst gap")
			}
		})
	}
}
