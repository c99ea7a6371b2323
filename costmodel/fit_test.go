package costmodel_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// synthetic draws n steps of random shape priced by truth, with seeded
// multiplicative noise of the given relative standard deviation.
func synthetic(truth costmodel.Linear, n int, noise float64) []costmodel.Sample {
	rng := rand.New(rand.NewPCG(1, 1))
	samples := make([]costmodel.Sample, 0, n)
	for len(samples) < n {
		var b costmodel.Batch
		for range rng.IntN(64) {
			b.Decode = append(b.Decode, rng.IntN(8000))
		}
		for range rng.IntN(3) {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(4096)})
		}
		if b.Empty() {
			continue
		}
		d := float64(truth.StepTime(b)) * (1 + noise*rng.NormFloat64())
		samples = append(samples, costmodel.Sample{Batch: b, Time: time.Duration(d)})
	}
	return samples
}

// coefficientsWithin fails t unless every coefficient of got is within rel
// of want's.
func coefficientsWithin(t *testing.T, got, want costmodel.Linear, rel float64) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"PerStep", got.PerStep, want.PerStep},
		{"PerSeq", got.PerSeq, want.PerSeq},
		{"PerDecodeToken", got.PerDecodeToken, want.PerDecodeToken},
		{"PerDecodeContext", got.PerDecodeContext, want.PerDecodeContext},
		{"PerPrefillToken", got.PerPrefillToken, want.PerPrefillToken},
		{"PerPrefillAttention", got.PerPrefillAttention, want.PerPrefillAttention},
	} {
		assert.InDelta(t, c.want, c.got, rel*c.want, c.name)
	}
}

func TestFitRecoversTheThreeCoefficientsWithin1Percent(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	res, err := costmodel.Fit{}.Run(synthetic(truth, 2000, 0.01))
	require.NoError(t, err)
	coefficientsWithin(t, res.Linear, truth, 0.01)
	between(t, "MAPE %", res.MAPE, 0.5, 1.5) // the 1 % noise, no more
	between(t, "R²", res.R2, 0.99, 1)
	assert.Equal(t, 2000, res.N)
	assert.Zero(t, res.Dropped)
}

func TestFitRecoversAllSixCoefficientsWithin1Percent(t *testing.T) {
	truth := costmodel.Linear{
		PerStep: 8, PerSeq: 0.5, PerDecodeToken: 0.3, PerDecodeContext: 2e-4,
		PerPrefillToken: 0.03, PerPrefillAttention: 4e-6,
	}
	res, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(truth, 5000, 0.002))
	require.NoError(t, err)
	coefficientsWithin(t, res.Linear, truth, 0.01)
}

// A term whose true coefficient is 0 may fit slightly negative; it is
// dropped, so the fitted model stays valid and monotone.
func TestFitDropsNegativeTerms(t *testing.T) {
	truth := costmodel.NewLinear3(10, 0.035, 0.5)
	res, err := costmodel.Fit{Terms: costmodel.AllTerms}.Run(synthetic(truth, 500, 0.05))
	require.NoError(t, err)
	assert.NoError(t, res.Linear.Validate(), "dropped %b", res.Dropped)
}

func TestFitRefusesWhatItCannotFit(t *testing.T) {
	onlyDecodes := []costmodel.Sample{
		{Batch: decodes(1, 0), Time: 30 * time.Millisecond},
		{Batch: decodes(2, 0), Time: 31 * time.Millisecond},
		{Batch: decodes(4, 0), Time: 33 * time.Millisecond},
	}
	for _, tc := range []struct {
		name    string
		fit     costmodel.Fit
		samples []costmodel.Sample
		want    string
	}{
		{"no samples", costmodel.Fit{}, nil, "at least 3 samples"},
		{"term never seen", costmodel.Fit{}, onlyDecodes, "PerPrefillToken is zero in every sample"},
		{"terms inseparable", costmodel.Fit{Terms: costmodel.TermStep | costmodel.TermSeq | costmodel.TermDecodeToken}, onlyDecodes, "cannot tell the terms apart"},
		{"unknown terms", costmodel.Fit{Terms: 1 << 7}, onlyDecodes, "Fit.Terms"},
		{"bad sample", costmodel.Fit{}, []costmodel.Sample{{Batch: decodes(1, -1), Time: -1}, {}}, "samples[0].Time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.fit.Run(tc.samples)
			errorMentions(t, err, tc.want)
		})
	}
}
