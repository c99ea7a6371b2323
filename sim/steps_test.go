package sim

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// stepLog keeps every step, one by one, and every record.
type stepLog struct {
	steps   []Step
	records []Record
}

func (l *stepLog) Observe(r *Record) {
	k := *r
	k.Tokens = append([]time.Duration(nil), r.Tokens...)
	l.records = append(l.records, k)
}

func (l *stepLog) ObserveStep(s *Step) {
	for one := range s.All() {
		k := *one
		k.Decode = append([]int(nil), one.Decode...)
		k.Prefill = append(k.Prefill[:0:0], one.Prefill...)
		k.KVUsed = append([]int(nil), one.KVUsed...)
		k.KVCached = append([]int(nil), one.KVCached...)
		l.steps = append(l.steps, k)
	}
}

// Issue 11's checks of the step timeline, on the Atlas replica with a
// 256-token chunk cap near its knee:
//   - every step holding 31 decodes and one 256-token chunk lasts
//     20 + 0.035 × 256 + 45 = 73.96 ms, the chapter's mixed step;
//   - the steps' durations add up to the replica's busy time;
//   - every inter-token gap of every request is a sum of consecutive steps
//     of its replica (one when it decodes in each, more across a stall).
func TestStepTimeline(t *testing.T) {
	cfg := Config{Engine: engine.Config{ChunkCap: 256}, KeepTokens: true}
	log := &stepLog{}
	src, err := workload.NewPoisson(3, 1.8, 400, workload.Fixed(2000, 200))
	require.NoError(t, err)
	sum, err := Run(cfg, src, log)
	require.NoError(t, err)

	var total time.Duration
	mixed := 0
	end := map[time.Duration]int{} // step end instant -> index
	for i, s := range log.steps {
		total += s.Duration
		end[s.Start+s.Duration] = i
		if len(s.Decode) == 31 && len(s.Prefill) == 1 && s.Prefill[0].NewTokens == 256 {
			mixed++
			assert.Equal(t, 73960*time.Microsecond, s.Duration, "step at %v", s.Start)
		}
		if i > 0 {
			assert.GreaterOrEqual(t, s.Start, log.steps[i-1].Start+log.steps[i-1].Duration, "steps do not overlap")
		}
		assert.Equal(t, s.KVBlocks, 28672)
		assert.LessOrEqual(t, s.KVUsed[0], s.KVBlocks)
	}
	assert.Greater(t, mixed, 100, "the load forms the chapter's mixed step")
	busy := sum.Replicas[0].Busy * sum.Window.Seconds()
	assert.InDelta(t, total.Seconds(), busy, 1e-6, "step durations add up to the busy time")

	for _, r := range log.records {
		for k := 1; k < len(r.Tokens); k++ {
			i, ok := end[r.Tokens[k]]
			require.True(t, ok, "request %d's token %d at %v ends a step", r.ID, k, r.Tokens[k])
			gap := r.Tokens[k] - r.Tokens[k-1]
			var steps time.Duration
			for j := i; j >= 0 && steps < gap; j-- {
				steps += log.steps[j].Duration
				if j > 0 && log.steps[j-1].Start+log.steps[j-1].Duration != log.steps[j].Start {
					break // the replica idled: no gap spans it
				}
			}
			assert.Equal(t, gap, steps, "request %d, gap %d", r.ID, k)
		}
	}

	// The step mix: shares add up, decode-only steps last 45 ms.
	mix := sum.Steps
	assert.InDelta(t, 1, mix.Decode.Share+mix.Mixed.Share+mix.Prefill.Share, 1e-9)
	assert.Equal(t, 45.0, mix.Decode.Dist.Median)
	assert.Equal(t, mix.Decode.Steps+mix.Mixed.Steps+mix.Prefill.Steps, len(log.steps))
	assert.False(t, math.IsNaN(mix.Mixed.Dist.P99))
}
