package costmodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/servesim/servesim/costmodel"
)

func TestLinearAddsEveryTerm(t *testing.T) {
	l := costmodel.Linear{
		PerStep: 5, PerSeq: 0.1, PerDecodeToken: 0.2, PerDecodeContext: 1e-4,
		PerPrefillToken: 0.03, PerPrefillAttention: 1e-6,
	}
	// Two decodes at 1,000 context and one 100-token chunk on 50 context,
	// which attends 100·50 + 100·101/2 = 10,050 pairs.
	b := decodes(2, 1000)
	b.Prefill = []costmodel.Chunk{{NewTokens: 100, Context: 50}}
	want := 5 + 0.1*3 + 0.2*2 + 1e-4*2000 + 0.03*100 + 1e-6*10050
	assert.InDelta(t, want, float64(l.StepTime(b))/1e6, 1e-6, "Linear ms")
	assert.Zero(t, l.StepTime(costmodel.Batch{}), "empty batch")
}

func TestNewLinear3IsTheThreeCoefficientForm(t *testing.T) {
	l := costmodel.NewLinear3(10, 0.035, 0.5)
	assert.Equal(t, msDuration(10+0.035*256+0.5*31), l.StepTime(mixed(31, 2000, 256)), "b0 + b1·256 + b2·31")
	assert.NoError(t, l.Validate())
}

func TestLinearNeverFreeForRealWork(t *testing.T) {
	tiny := costmodel.Linear{PerDecodeContext: 1e-12}
	assert.Equal(t, time.Nanosecond, tiny.StepTime(decodes(1, 0)), "a negligible step costs the 1ns floor")
}

// msDuration rounds float milliseconds to a Duration.
func msDuration(ms float64) time.Duration { return time.Duration(ms*1e6 + 0.5) }
