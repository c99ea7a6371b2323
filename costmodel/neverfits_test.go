package costmodel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// Issue 32: a sequence longer than the whole KV cache warned "batch 32
// exceeds the 0 sequences ...: expect preemption", though an engine
// refuses every such request at arrival and preempts nothing. The
// estimate names the request's size and the KV capacity instead.
func TestEstimateSaysASequenceNeverFits(t *testing.T) {
	r := costmodel.AtlasTP4()
	r.Point.PromptTokens = 1_000_000
	r.Point.SeqTokens = r.Point.PromptTokens + r.Point.OutputTokens
	e, err := r.Estimate()
	require.NoError(t, err)
	require.NotEmpty(t, e.Warnings)
	assert.Equal(t, "a sequence of 1000200 tokens never fits in the KV cache, which holds 458752 tokens: an engine refuses every such request at arrival, at any load (nothing is served, nothing preempted); shorter prompts or outputs, or more KV memory, move it", e.Warnings[0])
	for _, w := range e.Warnings {
		assert.NotContains(t, w, "expect preemption")
	}
}
