package costmodel

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAtlasProfiledShapeIsTheProfilesFit refits rtxProfileFit from the
// RTX PRO 6000 / Llama-3.1-8B bundle shipped with examples/validate (see
// its testdata/NOTICE.md) as atlasshapes.go describes, and holds the
// constants to the fit at the precision FitResult prints.
func TestAtlasProfiledShapeIsTheProfilesFit(t *testing.T) {
	p, err := ReadProfile(os.DirFS("../examples/validate/testdata/rtxpro6000-llama-3.1-8b"), "profile", 1)
	require.NoError(t, err)
	p.Layers = 32
	m, err := p.Build()
	require.NoError(t, err)
	var samples []Sample
	for _, b := range []int{1, 2, 4, 8, 16, 32, 64, 128} {
		for _, c := range []int{128, 512, 1024, 2048, 4096, 8192} {
			samples = append(samples, Sample{Batch: uniformDecode(b, c)})
		}
	}
	for _, n := range []int{16, 32, 64, 128, 256, 512, 1024, 2048} {
		samples = append(samples, Sample{Batch: lonePrefill(n)})
	}
	for i := range samples {
		s := m.Price(samples[i].Batch)
		require.Empty(t, s.Warning, "every sample inside the profile")
		samples[i].Time = s.Time
	}
	require.Len(t, samples, 56)
	res, err := Fit{Terms: TermStep | TermDecodeToken | TermDecodeContext | TermPrefillToken | TermPrefillAttention}.Run(samples)
	require.NoError(t, err)
	assert.Zero(t, res.Dropped)
	want := rtxProfileFit()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"PerStep", res.Linear.PerStep, want.PerStep},
		{"PerDecodeToken", res.Linear.PerDecodeToken, want.PerDecodeToken},
		{"PerDecodeContext", res.Linear.PerDecodeContext, want.PerDecodeContext},
		{"PerPrefillToken", res.Linear.PerPrefillToken, want.PerPrefillToken},
		{"PerPrefillAttention", res.Linear.PerPrefillAttention, want.PerPrefillAttention},
	} {
		assert.Equal(t, fmt.Sprintf("%.4g", c.want), fmt.Sprintf("%.4g", c.got), c.name)
	}
	assert.Equal(t, "1.72", fmt.Sprintf("%.2f", res.MAPE), "MAPE %")
	assert.Equal(t, "0.9991", fmt.Sprintf("%.4f", res.R2), "R²")
	assert.Zero(t, want.PerSeq)
}

// The factors and the coefficients AtlasProfiledShape's doc prints.
func TestAtlasProfiledShapeFactors(t *testing.T) {
	p, a := rtxProfileFit(), AtlasProfiledShape()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"α", a.PerStep / p.PerStep, 2.085},
		{"β", a.PerDecodeToken / p.PerDecodeToken, 3.488},
		{"β", a.PerDecodeContext / p.PerDecodeContext, 3.488},
		{"γ", a.PerPrefillToken / p.PerPrefillToken, 0.9494},
		{"γ", a.PerPrefillAttention / p.PerPrefillAttention, 0.9494},
		{"context token / decoding sequence", a.PerDecodeContext / a.PerDecodeToken, 0.003675},
		{"prefill token / attention pair", a.PerPrefillToken / a.PerPrefillAttention, 1783},
		{"PerStep", a.PerStep, 23.13},
		{"PerDecodeToken", a.PerDecodeToken, 0.08186},
		{"PerDecodeContext", a.PerDecodeContext, 3.009e-04},
		{"PerPrefillToken", a.PerPrefillToken, 0.02126},
		{"PerPrefillAttention", a.PerPrefillAttention, 1.192e-05},
	} {
		assert.Equal(t, fmt.Sprintf("%.4g", c.want), fmt.Sprintf("%.4g", c.got), c.name)
	}
	assert.Equal(t, "51", fmt.Sprintf("%.0f", 100*a.PerStep/45), "the step term's share of the decode point, %")
	assert.Equal(t, "64", fmt.Sprintf("%.0f", 100*p.PerStep/p.ms(shapeOf(uniformDecode(32, 2000)))), "in the profile, %")
}
