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
	assert.Equal(t, "a prompt of 1000000 tokens is at or above the KV cache's 458752 tokens, the most a vLLM-like engine's max_model_len can be: an engine refuses every such request at arrival, at any load (nothing is served, nothing preempted); shorter prompts, or more KV memory, move it", e.Warnings[0])
	for _, w := range e.Warnings {
		assert.NotContains(t, w, "expect preemption")
	}
}

// A prompt that fits but a sequence that does not is served and cut at
// max_model_len (at most the KV capacity), as vLLM serves it: the
// estimate says so, not that it is refused.
func TestEstimateSaysASequenceIsLengthCapped(t *testing.T) {
	r := costmodel.AtlasTP4()
	r.Point.PromptTokens, r.Point.OutputTokens = 400_000, 100_000
	r.Point.SeqTokens = r.Point.PromptTokens + r.Point.OutputTokens
	e, err := r.Estimate()
	require.NoError(t, err)
	require.NotEmpty(t, e.Warnings)
	assert.Equal(t, "a sequence of 500000 tokens exceeds the KV cache's 458752 tokens, the most a vLLM-like engine's max_model_len can be: an engine stops every such request there, length-capped, its user getting fewer output tokens than asked, and this estimate of full sequences does not hold; shorter outputs, or more KV memory, move it", e.Warnings[0])
}
