package costmodel_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/costmodel/costmodeltest"
)

// BLIS-like overheads in µs: 126 µs per step (trained-physics β₇), 4 µs
// per scheduled request (β₆), 20 µs per prefill token.
var blisLike = costmodel.NewLinear3Requests(time.Microsecond, 126, 20, 4)

func TestLinearCoefficientsInMicroseconds(t *testing.T) {
	// 31 decodes + one 256-token chunk: 126 + 20·256 + 4·32 = 5,374 µs.
	assert.Equal(t, 5374*time.Microsecond, blisLike.StepTime(mixed(31, 2000, 256)))
	// The same model in the default milliseconds prices the same.
	ms := costmodel.Linear{PerStep: 0.126, PerPrefillToken: 0.020, PerSeq: 0.004}
	assert.Equal(t, ms.StepTime(mixed(31, 2000, 256)), blisLike.StepTime(mixed(31, 2000, 256)))
	assert.NoError(t, blisLike.Validate())
}

func TestLinearUnitZeroIsMilliseconds(t *testing.T) {
	l := costmodel.NewLinear3(10, 0.035, 0.5)
	explicit := l
	explicit.Unit = time.Millisecond
	b := mixed(31, 2000, 256)
	assert.Equal(t, l.StepTime(b), explicit.StepTime(b))
	assert.Equal(t, msDuration(10+0.035*256+0.5*31), l.StepTime(b), "10 + 8.96 + 15.5 = 34.46 ms")
}

// The third coefficient: NewLinear3 charges it per decoding sequence,
// NewLinear3Requests per scheduled request (BLIS's β₆·B, B the requests
// with tokens in the step, prefill chunks included).
func TestThirdTermPerDecodeOrPerRequest(t *testing.T) {
	perDecode := costmodel.NewLinear3(0.126, 0.020, 0.004)
	// A prefill-only step of 256 tokens: 126 + 20·256 = 5,246 µs per
	// decode form, + 4 µs for its one request in the per-request form.
	assert.Equal(t, 5246*time.Microsecond, perDecode.StepTime(prefill(256)))
	assert.Equal(t, 5250*time.Microsecond, blisLike.StepTime(prefill(256)))
	// 32 decodes and no chunk: both charge 32 terms.
	assert.Equal(t, (126+4*32)*time.Microsecond, perDecode.StepTime(decodes(32, 100)))
	assert.Equal(t, (126+4*32)*time.Microsecond, blisLike.StepTime(decodes(32, 100)))
}

func TestLinearTickTruncatesAsBLIS(t *testing.T) {
	l := costmodel.NewLinear3Requests(time.Microsecond, 126.7, 0.35, 4.2)
	b := mixed(2, 100, 3) // 126.7 + 0.35·3 + 4.2·3 = 140.35 µs
	assert.Equal(t, 140350*time.Nanosecond, l.StepTime(b), "no tick: nearest ns")
	l.Tick = time.Microsecond
	assert.Equal(t, 140*time.Microsecond, l.StepTime(b), "tick: truncated to whole µs")
	l.PerStep = 126.99 // 140.64 µs: truncated, not rounded
	assert.Equal(t, 140*time.Microsecond, l.StepTime(b))

	tiny := costmodel.Linear{PerDecodeContext: 1e-9, Unit: time.Microsecond, Tick: time.Microsecond}
	assert.Equal(t, time.Microsecond, tiny.StepTime(decodes(1, 1)), "at least one tick, as max(1, ·)")
	assert.Zero(t, tiny.StepTime(costmodel.Batch{}), "the empty batch costs 0")

	coarse := costmodel.NewLinear3(45, 0.035, 0)
	coarse.Tick = 10 * time.Millisecond // 45 + 0.035·256 = 53.96 ms
	assert.Equal(t, 50*time.Millisecond, coarse.StepTime(prefill(256)))

	huge := costmodel.Linear{PerStep: 1e300, Unit: time.Microsecond, Tick: time.Microsecond}
	d := huge.StepTime(decodes(1, 0))
	assert.Positive(t, d, "saturates, never wraps")
	assert.Zero(t, d%time.Microsecond)
}

// blisBlackbox is BLIS's blackbox StepTime as it stood before its removal
// (sim/latency/latency.go at 90522ded^): β₀ + β₁·cache-miss (prefill)
// tokens + β₂·decode tokens, in µs, int64() truncation, max(1, ·).
func blisBlackbox(beta [3]float64, b costmodel.Batch) int64 {
	t := beta[0]
	t += beta[1] * float64(b.PrefillTokens())
	t += beta[2] * float64(len(b.Decode))
	return max(1, int64(t))
}

// blisRequests is the per-request part of BLIS's trained-physics StepTime
// (sim/latency/trained_physics_model.go): β₇ + β₆·B with B = len(batch),
// the requests scheduled in the step, plus a prefill term per token.
func blisRequests(step, perToken, perReq float64, b costmodel.Batch) int64 {
	t := perToken * float64(b.PrefillTokens())
	t += perReq * float64(b.Seqs())
	t += step
	return max(1, int64(t))
}

func TestLinearReproducesBLISFormulasToTheMicrosecond(t *testing.T) {
	beta := [3]float64{6910.42, 17.67, 2.84}
	bb := costmodel.NewLinear3(beta[0], beta[1], beta[2])
	bb.Unit, bb.Tick = time.Microsecond, time.Microsecond
	tp := costmodel.NewLinear3Requests(time.Microsecond, 126.3, 0.0213, 4.17)
	tp.Tick = time.Microsecond
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 2000 {
		b := randomShape(rng)
		if b.Empty() {
			continue
		}
		require.Equal(t, time.Duration(blisBlackbox(beta, b))*time.Microsecond, bb.StepTime(b), "blackbox, shape %d", i)
		require.Equal(t, time.Duration(blisRequests(126.3, 0.0213, 4.17, b))*time.Microsecond, tp.StepTime(b), "per request, shape %d", i)
	}
}

func randomShape(rng *rand.Rand) costmodel.Batch {
	var b costmodel.Batch
	for range rng.IntN(4) {
		b.Prefill = append(b.Prefill, costmodel.Chunk{NewTokens: 1 + rng.IntN(2048), Context: rng.IntN(8000)})
	}
	for range rng.IntN(64) {
		b.Decode = append(b.Decode, rng.IntN(8000))
	}
	return b
}

func TestLinearWithUnitsPassesTheContract(t *testing.T) {
	for name, m := range map[string]costmodel.Model{
		"per request µs":  blisLike,
		"tick µs":         costmodel.Linear{PerStep: 126.7, PerSeq: 4.2, PerDecodeContext: 0.07, PerPrefillToken: 0.35, PerPrefillAttention: 1e-4, Unit: time.Microsecond, Tick: time.Microsecond},
		"ns, coarse tick": costmodel.Linear{PerStep: 45e6, PerPrefillToken: 35e3, Unit: time.Nanosecond, Tick: time.Millisecond},
	} {
		assert.NoError(t, costmodeltest.Check(m), name)
		assert.NoError(t, m.(costmodel.Linear).Validate(), name)
	}
}

// A factor-1000 mistake: the Atlas prefill (20 ms + 0.035 ms per token)
// written in µs into the default milliseconds.
func TestValidateRefusesImplausibleCoefficients(t *testing.T) {
	l := costmodel.Linear{PerStep: 20000, PerPrefillToken: 35}
	err := l.Validate()
	require.ErrorIs(t, err, costmodel.ErrImplausible)
	errorMentions(t, err, "Linear.PerStep is 20000 ms = 20 s", "over the 10s", "set Linear.Unit to time.Microsecond")
	l.Unit = time.Microsecond
	assert.NoError(t, l.Validate(), "the same numbers in µs are the Atlas prefill")

	for _, tc := range []struct {
		l    costmodel.Linear
		want string
	}{
		{costmodel.Linear{PerSeq: 1500}, "Linear.PerSeq is 1500 ms = 1.5 s, over the 1s"},
		{costmodel.Linear{PerDecodeToken: 2e6, Unit: time.Microsecond}, "Linear.PerDecodeToken is 2e+06 µs = 2 s"},
		{costmodel.Linear{PerPrefillToken: 2}, ""}, // 2 ms a token is slow, not impossible
		{costmodel.Linear{PerDecodeContext: 2}, "Linear.PerDecodeContext is 2 ms = 0.002 s, over the 1ms"},
		{costmodel.Linear{PerPrefillAttention: 5e6, Unit: time.Nanosecond}, "Linear.PerPrefillAttention is 5e+06 ns = 0.005 s, over the 1ms a real replica could take (check Linear.Unit (now ns))"},
	} {
		err := tc.l.Validate()
		if tc.want == "" {
			assert.NoError(t, err)
			continue
		}
		assert.True(t, errors.Is(err, costmodel.ErrImplausible), "%v", tc.l)
		assert.ErrorContains(t, err, tc.want)
	}
}

func TestValidateRefusesNegativeUnitAndTick(t *testing.T) {
	err := costmodel.Linear{PerStep: 1, Unit: -time.Microsecond, Tick: -1}.Validate()
	errorMentions(t, err, "Linear.Unit must be >= 0, got -1µs", "Linear.Tick must be >= 0, got -1ns")
	assert.NotErrorIs(t, err, costmodel.ErrImplausible)
	assert.NoError(t, costmodel.Linear{PerStep: math.SmallestNonzeroFloat64}.Validate())
}

func TestLinearString(t *testing.T) {
	l := blisLike
	l.Tick = time.Microsecond
	assert.Equal(t, "Linear{PerStep 126 µs, PerSeq 4 µs, PerPrefillToken 20 µs; tick 1µs}", l.String())
	assert.Equal(t, "Linear{PerStep 10 ms, PerDecodeToken 0.5 ms, PerPrefillToken 0.035 ms}", costmodel.NewLinear3(10, 0.035, 0.5).String())
}
