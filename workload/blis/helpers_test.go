package blis

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// drain reads src to io.EOF.
func drain(t testing.TB, src workload.Source) []workload.Request {
	t.Helper()
	var out []workload.Request
	for {
		r, err := src.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		out = append(out, r)
	}
}

// richWorkload is workload's own test workload (trace_write_test.go):
// prefixes, correlated lengths and a class with a comma and quotes.
func richWorkload(t testing.TB) *workload.Generator {
	g, err := workload.NewSynthetic(workload.Synthetic{Seed: 8, Count: 300, Arrival: workload.Arrival{Process: workload.Gamma, Rate: 3, Burstiness: 0.5},
		Lengths: workload.Copula{Input: workload.LogNormalMean(800, 1), Output: workload.Uniform{Center: 200, RangeRatio: 0.9}, Spearman: 0.5},
		Prefix:  workload.LowReuse, Class: "chat, \"quoted\""})
	require.NoError(t, err)
	return g
}
