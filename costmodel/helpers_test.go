package costmodel_test

import (
	"math"
	"strings"
	"testing"

	"github.com/servesim/servesim/costmodel"
)

// near fails t unless got is within tol of want.
func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.6g, want %.6g ± %.3g", what, got, want, tol)
	}
}

// between fails t unless lo <= got <= hi.
func between(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if !(got >= lo && got <= hi) {
		t.Errorf("%s = %.6g, want in [%.6g, %.6g]", what, got, lo, hi)
	}
}

// errorMentions fails t unless err is non-nil and mentions every part.
func errorMentions(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one mentioning %q", parts)
	}
	mentions(t, err.Error(), parts...)
}

// mentions fails t unless text contains every part.
func mentions(t *testing.T, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("%q does not mention %q", text, p)
		}
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
