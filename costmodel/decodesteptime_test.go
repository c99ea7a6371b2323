package costmodel_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// TestDecodeStepTimeIsStepTime holds Frozen's DecodeStepTime to its
// StepTime: random Frozens (zeros for the defaults, negative figures
// too) and batches that decode, with and without Verify and prefill
// chunks, priced from their sums alone and walked.
func TestDecodeStepTimeIsStepTime(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 41))
	fig := func() time.Duration {
		if rng.IntN(5) == 0 {
			return 0
		}
		return time.Duration(rng.Int64N(80_000_000) - 8_000_000)
	}
	for range 20_000 {
		f := costmodel.Frozen{DecodeStep: fig(), PrefillBase: fig(), PrefillPerToken: fig() / 1000, VerifyPerToken: fig() / 1000}
		var b costmodel.Batch
		for range 1 + rng.IntN(8) {
			b.Decode = append(b.Decode, rng.IntN(4000))
		}
		if rng.IntN(4) > 0 {
			for range 1 + rng.IntN(8) {
				b.Verify = append(b.Verify, 1+rng.IntN(9))
			}
		}
		for range rng.IntN(3) {
			b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: rng.IntN(2000)})
		}
		require.Equal(t, f.StepTime(b), f.DecodeStepTime(b.ExtraVerified(), b.PrefillTokens()), "%+v %+v", f, b)
	}
}
