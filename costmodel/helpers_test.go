package costmodel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// between asserts lo <= got <= hi: the chapter's "two to three percent".
func between(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	assert.GreaterOrEqual(t, got, lo, what)
	assert.LessOrEqual(t, got, hi, what)
}

// errorMentions requires an error and asserts that it mentions every part.
func errorMentions(t *testing.T, err error, parts ...string) {
	t.Helper()
	require.Error(t, err, "want an error mentioning %q", parts)
	for _, p := range parts {
		assert.ErrorContains(t, err, p)
	}
}

// decodes is a batch of n decoding sequences at ctx context each.
func decodes(n, ctx int) costmodel.Batch {
	d := make([]int, n)
	for i := range d {
		d[i] = ctx
	}
	return costmodel.Batch{Decode: d}
}

// prefill is a batch holding one n-token chunk on no context.
func prefill(n int) costmodel.Batch {
	return costmodel.Batch{Prefill: []costmodel.Chunk{{NewTokens: n}}}
}

// mixed is n decodes at ctx plus one chunk-token prefill chunk.
func mixed(n, ctx, chunk int) costmodel.Batch {
	b := decodes(n, ctx)
	b.Prefill = prefill(chunk).Prefill
	return b
}
