package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// GoodTokens is the good requests' output: with every request asking 200
// tokens (none length-capped), 200 × Good, below the knee (every request
// good: Tokens too) and past it (fewer than Tokens), and GoodTokenRate is
// Goodput × 200. Summarize, replaying the records, counts the same.
func TestGoodTokensAreTheGoodRequestsOutput(t *testing.T) {
	for _, rate := range []float64{1, 2.6} {
		cfg := Config{Timeout: 30 * time.Second, Window: Window{Warmup: 20 * time.Second, Horizon: 200 * time.Second}}
		var recs []Record
		sum, err := Run(cfg, poisson(t, 7, rate, int(rate*260), workload.Fixed(2000, 200)), ObserverFunc(func(r *Record) { recs = append(recs, *r) }))
		require.NoError(t, err)
		require.Positive(t, sum.Good, "rate %v", rate)
		assert.Equal(t, 200*sum.Good, sum.GoodTokens, "rate %v", rate)
		assert.InDelta(t, 200*sum.Goodput, sum.GoodTokenRate, 1e-9, "rate %v", rate)
		if rate == 1 {
			assert.Equal(t, sum.Offered, sum.Good, "below the knee every request is good")
			assert.Equal(t, sum.Tokens, sum.GoodTokens)
		} else {
			assert.Less(t, sum.GoodTokens, sum.Tokens, "past the knee some output is not good")
		}
		again, err := Summarize(cfg, recs)
		require.NoError(t, err)
		assert.Equal(t, sum.GoodTokens, again.GoodTokens, "rate %v: Summarize", rate)
	}
}
