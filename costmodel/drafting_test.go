package costmodel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

func verifying(n, positions int) costmodel.Batch {
	b := costmodel.Batch{Decode: make([]int, n), Verify: make([]int, n)}
	for i := range b.Verify {
		b.Verify[i] = positions
	}
	return b
}

// Frozen prices each verified draft like a prefill token by default: batch
// 32 with 4 drafts each is 45 + 128 × 0.035 = 49.48 ms; a declared
// VerifyPerToken replaces the rate; no drafts is the plain decode step.
func TestFrozenPricesVerifiedDrafts(t *testing.T) {
	f := costmodel.Frozen{}
	assert.Equal(t, 45*time.Millisecond, f.StepTime(verifying(32, 1)))
	assert.Equal(t, 49480*time.Microsecond, f.StepTime(verifying(32, 5)))
	assert.Equal(t, 45*time.Millisecond+128*10*time.Microsecond, costmodel.Frozen{VerifyPerToken: 10 * time.Microsecond}.StepTime(verifying(32, 5)))
	mixed := verifying(31, 3)
	mixed.Prefill = []costmodel.Chunk{{NewTokens: 256}}
	assert.Equal(t, 73960*time.Microsecond+62*35*time.Microsecond, f.StepTime(mixed))
}

// Linear prices a verified draft as a prefill token with its attention
// pairs on the context: 31 decodes at context 1000 with 2 drafts each add
// 62 prefill tokens and 31 × (2 × 1001 + 3) attention pairs.
func TestLinearPricesVerifiedDraftsAsPrefill(t *testing.T) {
	l := costmodel.Linear{PerStep: 10, PerPrefillToken: 0.1, PerPrefillAttention: 0.001}
	b := verifying(31, 3)
	for i := range b.Decode {
		b.Decode[i] = 1000
	}
	want := 10 + 0.1*62 + 0.001*31*(2*1001+3)
	assert.InDelta(t, want, float64(l.StepTime(b))/1e6, 1e-6)
}

// Table prices the drafts at the prefill curve's mean slope: samples
// (0, 20 ms) and (1000, 55 ms) give 0.035 ms a draft.
func TestTablePricesVerifiedDraftsAtThePrefillSlope(t *testing.T) {
	m, err := costmodel.Table{Decode: []costmodel.TablePoint{{X: 1, Ms: 40}, {X: 32, Ms: 45}}, Prefill: []costmodel.TablePoint{{X: 0, Ms: 20}, {X: 1000, Ms: 55}}}.Build()
	require.NoError(t, err)
	assert.Equal(t, 45*time.Millisecond, m.StepTime(verifying(32, 1)))
	assert.Equal(t, 49480*time.Microsecond, m.StepTime(verifying(32, 5)))
}

// The drafters: a draft model adds K draft steps, heads K times a fraction
// of the step, n-gram nothing; a step that verifies no draft pays none.
func TestDraftingCosts(t *testing.T) {
	b := verifying(32, 5) // 49.48 ms verified
	assert.Equal(t, 49480*time.Microsecond+4*5*time.Millisecond, costmodel.Drafting{DraftStep: 5 * time.Millisecond}.StepTime(b))
	assert.Equal(t, 49480*time.Microsecond+4*4948*time.Microsecond, costmodel.Drafting{Overhead: 0.1}.StepTime(b))
	assert.Equal(t, 49480*time.Microsecond, costmodel.Drafting{}.StepTime(b))
	assert.Equal(t, 45*time.Millisecond, costmodel.Drafting{DraftStep: 5 * time.Millisecond, Overhead: 0.1}.StepTime(verifying(32, 1)))
	assert.ErrorContains(t, costmodel.Drafting{DraftStep: -1, Overhead: -0.5}.Validate(), "DraftStep")
	for _, m := range []costmodel.Model{costmodel.Drafting{}, costmodel.Drafting{DraftStep: 5 * time.Millisecond}, costmodel.Drafting{Overhead: 0.2}} {
		require.NoError(t, costmodeltest.Check(m))
	}
	assert.Error(t, costmodel.Batch{Decode: []int{1, 2}, Verify: []int{1}}.Validate())
	assert.Error(t, costmodel.Batch{Decode: []int{1}, Verify: []int{0}}.Validate())
}
