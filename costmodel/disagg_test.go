package costmodel_test

// Issue 38: the capacity estimate's disaggregated bounds, checked by hand
// for Atlas TP4 in both pools (45 ms decode step at batch 32; 20 + 0.035·n
// ms a prefill step; a 2,048-token budget; 2,000-token prompts; 200-token
// answers; 80 KiB of KV per token per accelerator).

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// atlasDisagg is Atlas TP4 in both pools, joined by a link of bw bytes/s.
func atlasDisagg(bw float64) costmodel.Disaggregated {
	return costmodel.Disaggregated{Prefill: costmodel.AtlasTP4(), Decode: costmodel.AtlasTP4(), LinkBandwidth: bw}
}

// disaggEstimate is d's estimate, which must succeed.
func disaggEstimate(t *testing.T, d costmodel.Disaggregated) costmodel.DisaggEstimate {
	t.Helper()
	e, err := d.Estimate()
	require.NoError(t, err)
	return e
}

// Every figure of the Atlas estimate, by hand.
func TestDisaggAtlasByHand(t *testing.T) {
	e := disaggEstimate(t, atlasDisagg(50e9))

	// A saturated prefill replica fills each step's 2,048-token budget
	// (a prompt's end and the next one's start): 20 + 0.035 × 2048 =
	// 91.68 ms for 2048/2000 prompts.
	prefill := (2048.0 / 2000) / 0.09168
	assert.InDelta(t, prefill, e.PrefillCapacity.Value, 1e-9, "prompts/s")
	assert.Equal(t, 11.17, math.Round(100*e.PrefillCapacity.Value)/100)
	assert.Equal(t, "(2048 tokens a step / 2000-token prompt) / 91.68 ms a step (budget 2048, batch 32, no chunk cap; a 125-step cycle of a saturated prefill-only replica)", e.PrefillCapacity.Basis)

	// 32 sequences turn over every 199 decode steps of 45 ms: the first
	// of 200 tokens came from the prefill pool.
	decode := 32 / (199 * 0.045)
	assert.InDelta(t, decode, e.DecodeCapacity.Value, 1e-9, "req/s")
	assert.Equal(t, "32 seq / (199 decode steps × 45 ms at 2000 context): the first of 200 tokens comes from the prefill pool", e.DecodeCapacity.Basis)

	// 2,000 tokens × 80 KiB = 163.84 MB a prompt over 50 GB/s.
	assert.InDelta(t, 50e9/(2000*81920), e.TransferBound.Value, 1e-9, "req/s")
	assert.Equal(t, 305.0, math.Round(e.TransferBound.Value))
	assert.InDelta(t, 2000*81920/50e9*1e3, e.TransferTime.Value, 1e-12, "ms")
	assert.Equal(t, "2000 tokens × 80 KiB = 156.2 MiB / 50 GB/s, the link idle", e.TransferTime.Basis)

	// The pools keep pace at 0.32 prefill replicas per decode replica
	// (1P:3.13D), at 2.71 req/s a replica, link aside.
	assert.InDelta(t, decode/prefill, e.Ratio.Value, 1e-12)
	assert.Contains(t, e.Ratio.Basis, "(1P:3.13D)")
	assert.InDelta(t, 1/(1/prefill+1/decode), e.Balanced.Value, 1e-9)

	// The co-located figure is the co-located estimate's, reused.
	co := atlas(t).ServingCapacity
	assert.Equal(t, co.Value, e.CoLocated.Value)
	assert.Equal(t, co.Knob, e.CoLocated.Knob)
	assert.Equal(t, "the decode replica serving both phases: 1 / (200 × 45 ms / 32 + 90 ms prefill)", e.CoLocated.Basis)

	require.Len(t, e.Figures(), 7)
	for _, f := range e.Figures() {
		assert.NotEmpty(t, f.Name)
		assert.NotEmpty(t, f.Unit, f.Name)
		assert.NotEmpty(t, f.Basis, f.Name)
		assert.NotEmpty(t, f.Knob, f.Name)
		assert.True(t, f.Value > 0 && !math.IsInf(f.Value, 0), "%s = %v", f.Name, f.Value)
	}
}

// The prefill pool prices the steps the scheduler forms: a budget's worth
// of tokens a step while prompts wait, fewer when the chunk cap and the
// seats (batch, or the prompts the KV cache holds) leave it unfilled.
func TestDisaggPrefillPoolFillsTheBudget(t *testing.T) {
	at := func(edit func(p *costmodel.Replica)) costmodel.DisaggEstimate {
		t.Helper()
		d := atlasDisagg(0)
		edit(&d.Prefill)
		d.Decode.Point.PromptTokens = d.Prefill.Point.PromptTokens
		return disaggEstimate(t, d)
	}
	want := (2048.0 / 2000) / 0.09168
	for _, c := range []int{256, 512, 1024} {
		// 32 seats × c ≥ 2048: the budget still fills, and Frozen
		// prices a step by its tokens.
		e := at(func(p *costmodel.Replica) { p.Point.ChunkCap = c })
		assert.InDelta(t, want, e.PrefillCapacity.Value, 1e-9, "chunk cap %d", c)
	}
	// A smaller budget pays the step's 20 ms more often.
	e := at(func(p *costmodel.Replica) { p.Point.Budget = 512 })
	assert.InDelta(t, (512.0/2000)/(0.020+0.035e-3*512), e.PrefillCapacity.Value, 1e-9, "budget 512")
	// Short prompts fill the 32 seats first: 640 tokens a 42.4 ms step.
	e = at(func(p *costmodel.Replica) { p.Point.PromptTokens = 20 })
	assert.InDelta(t, 32/(0.020+0.035e-3*640), e.PrefillCapacity.Value, 1e-9, "20-token prompts")
	assert.Contains(t, e.PrefillCapacity.Basis, "(640 tokens a step / 20-token prompt) / 42.4 ms a step")
	// A KV cache that holds one prompt prefills one at a time: each step
	// a lone prompt, the co-located estimate's 90 ms prefill.
	e = at(func(p *costmodel.Replica) { p.Hardware.KVCapacity = 2000 * 81920 })
	assert.InDelta(t, 1/0.090, e.PrefillCapacity.Value, 1e-9, "one prompt at a time")
	assert.Contains(t, e.PrefillCapacity.Basis, "1 prompt in prefill at once: all the KV cache holds")
	// A prompt whose cycle outlasts 16,384 steps (16,411 tokens against
	// 2,048 a step close one only after 16,411 steps) is priced over the
	// steps run: with Frozen every one of them is full, so the figure is
	// still exact.
	e = at(func(p *costmodel.Replica) { p.Point.PromptTokens, p.Point.SeqTokens = 16411, 16611 })
	assert.InDelta(t, (2048.0/16411)/0.09168, e.PrefillCapacity.Value, 1e-9, "unclosed cycle")
	assert.Contains(t, e.PrefillCapacity.Basis, "the first 16384 steps of a saturated prefill-only replica, its cycle unclosed")
}

// The cycle is the scheduler's: under a cost model of 10 ms a chunk, a
// 125-step cycle computes 128 prompts of 2,000 tokens, each one chunk plus
// one more for every one of the 124 step ends that falls inside a prompt
// (2048·k is a multiple of 2000 only at k = 125): 252 chunks, 2.52 s.
func TestDisaggPrefillCycleIsTheSchedulers(t *testing.T) {
	d := atlasDisagg(0)
	d.Prefill.Cost = costmodel.Func(func(b costmodel.Batch) time.Duration {
		return time.Duration(len(b.Prefill)) * 10 * time.Millisecond
	})
	e := disaggEstimate(t, d)
	assert.InDelta(t, 128/2.52, e.PrefillCapacity.Value, 1e-9)
	assert.Contains(t, e.PrefillCapacity.Basis, "(2048 tokens a step / 2000-token prompt) / 20.16 ms a step")
	assert.Contains(t, e.PrefillCapacity.Basis, "a 125-step cycle")
}

// The decode pool's batch is bounded by the sequences its KV cache holds:
// 35 GiB / (20,000 tokens × 80 KiB) = 22.9, so 22 of the batch's 32.
func TestDisaggDecodePoolBoundedByKV(t *testing.T) {
	d := atlasDisagg(0)
	d.Decode.Point.SeqTokens = 20000
	e := disaggEstimate(t, d)
	assert.InDelta(t, 22/(199*0.045), e.DecodeCapacity.Value, 1e-9)
	assert.Contains(t, e.DecodeCapacity.Basis, "22 seq (batch 32, but the KV cache holds 22 sequences of 20000 tokens)")

	// Two output tokens: one from the prefill pool, one decode step.
	d = atlasDisagg(0)
	d.Prefill.Point.OutputTokens, d.Decode.Point.OutputTokens = 2, 2
	assert.InDelta(t, 32/0.045, disaggEstimate(t, d).DecodeCapacity.Value, 1e-9)
}

// In this arithmetic splitting moves no capacity: when the prefill pool's
// step costs what a lone prompt's does (a prompt of the whole budget,
// one a step), the balanced fleet's time per request is the co-located
// one's less the one decode step, 45/32 ms, that the prefill pool's first
// token saves.
func TestDisaggSplittingMovesNoCapacity(t *testing.T) {
	d := atlasDisagg(0)
	d.Prefill.Point.PromptTokens, d.Decode.Point.PromptTokens = 2048, 2048
	e := disaggEstimate(t, d)
	assert.InDelta(t, 1/0.09168, e.PrefillCapacity.Value, 1e-9, "one prompt a 91.68 ms step")
	assert.InDelta(t, 1e3/e.CoLocated.Value-45.0/32, 1e3/e.Balanced.Value, 1e-9, "ms a request")
	assert.InDelta(t, 1/(0.09168+199*0.045/32), e.Balanced.Value, 1e-9)
}

// A link of 0 bytes/s is unbounded: no transfer figures, and a fleet is
// bound by its pools alone.
func TestDisaggUnboundedLink(t *testing.T) {
	e := disaggEstimate(t, atlasDisagg(0))
	assert.Empty(t, e.TransferBound.Name)
	assert.Empty(t, e.TransferTime.Name)
	assert.Len(t, e.Figures(), 5)
	f, err := e.Fleet(1, 3)
	require.NoError(t, err)
	assert.Equal(t, "min(1 × 11.17, 3 × 3.573) req/s: the decode pool binds", f.Basis)
}

// A fleet is bound by the least of its pools and the link, and names it:
// for 4 Atlas replicas the balancing ratio puts 0.97 in prefill, so 1P:3D,
// decode-bound at 3 × 3.573 req/s; a 1 GB/s link (6.1 req/s) binds
// before either pool.
func TestDisaggFleetNamesItsBound(t *testing.T) {
	e := disaggEstimate(t, atlasDisagg(50e9))
	s, err := e.Split(4)
	require.NoError(t, err)
	require.Len(t, s, 1)
	assert.Equal(t, 1, s[0].Prefill)
	assert.Equal(t, 3, s[0].Decode)
	assert.InDelta(t, 3*32/(199*0.045), s[0].Capacity.Value, 1e-9)
	assert.Equal(t, "1P:3D fleet capacity", s[0].Capacity.Name)
	assert.Equal(t, "min(1 × 11.17, 3 × 3.573, 1 × 305.2 links) req/s: the decode pool binds", s[0].Capacity.Basis)
	assert.Equal(t, "decode replicas, decode capacity", s[0].Capacity.Knob)

	// 8 replicas: 1.94 in prefill, between 1P:7D (prefill-bound) and
	// 2P:6D (decode-bound).
	s, err = e.Split(8)
	require.NoError(t, err)
	require.Len(t, s, 2)
	assert.Equal(t, [2]int{1, 7}, [2]int{s[0].Prefill, s[0].Decode})
	assert.InDelta(t, e.PrefillCapacity.Value, s[0].Capacity.Value, 1e-12)
	assert.Equal(t, "prefill replicas, prefill capacity", s[0].Capacity.Knob)
	assert.Equal(t, [2]int{2, 6}, [2]int{s[1].Prefill, s[1].Decode})
	assert.InDelta(t, 6*e.DecodeCapacity.Value, s[1].Capacity.Value, 1e-12)

	slow := disaggEstimate(t, atlasDisagg(1e9))
	f, err := slow.Fleet(1, 3)
	require.NoError(t, err)
	assert.InDelta(t, 1e9/(2000*81920), f.Value, 1e-12)
	assert.Contains(t, f.Basis, "the link binds")
	assert.Equal(t, "link bandwidth", f.Knob)
}

// Split's better split is the best of every division of the fleet: the
// capacity rises with the prefill replicas until the pools balance.
func TestDisaggSplitIsTheBestDivision(t *testing.T) {
	for _, bw := range []float64{0, 1e9, 25e9} {
		for _, prompt := range []int{200, 2000, 8000} {
			d := atlasDisagg(bw)
			d.Prefill.Point.PromptTokens, d.Decode.Point.PromptTokens = prompt, prompt
			d.Prefill.Point.SeqTokens, d.Decode.Point.SeqTokens = prompt+200, prompt+200
			e := disaggEstimate(t, d)
			for n := 2; n <= 12; n++ {
				best := 0.0
				for p := 1; p < n; p++ {
					f, err := e.Fleet(p, n-p)
					require.NoError(t, err)
					best = max(best, f.Value)
				}
				s, err := e.Split(n)
				require.NoError(t, err)
				got := 0.0
				for _, x := range s {
					assert.Equal(t, n, x.Prefill+x.Decode)
					got = max(got, x.Capacity.Value)
				}
				assert.Equal(t, best, got, "bw %g, prompt %d, n %d", bw, prompt, n)
			}
		}
	}
}

// Nonsense is refused with an error naming the field, from Validate and
// from Estimate; nothing panics.
func TestDisaggValidateNamesTheField(t *testing.T) {
	edit := func(f func(d *costmodel.Disaggregated)) costmodel.Disaggregated {
		d := atlasDisagg(50e9)
		f(&d)
		return d
	}
	for name, tc := range map[string]struct {
		d    costmodel.Disaggregated
		want []string
	}{
		"negative bandwidth": {edit(func(d *costmodel.Disaggregated) { d.LinkBandwidth = -1 }), []string{"Disaggregated.LinkBandwidth must be >= 0, got -1"}},
		"NaN bandwidth":      {edit(func(d *costmodel.Disaggregated) { d.LinkBandwidth = math.NaN() }), []string{"Disaggregated.LinkBandwidth must be finite, got NaN"}},
		"infinite bandwidth": {edit(func(d *costmodel.Disaggregated) { d.LinkBandwidth = math.Inf(1) }), []string{"Disaggregated.LinkBandwidth must be finite"}},
		"prefill batch":      {edit(func(d *costmodel.Disaggregated) { d.Prefill.Point.Batch = -3 }), []string{"Disaggregated.Prefill.Point.Batch must be >= 1, got -3"}},
		"decode hardware":    {edit(func(d *costmodel.Disaggregated) { d.Decode.Hardware.MemBandwidth = 0 }), []string{"Disaggregated.Decode.Hardware.MemBandwidth must be > 0"}},
		"decode cost":        {edit(func(d *costmodel.Disaggregated) { d.Decode.Cost = costmodel.Frozen{DecodeStep: -1} }), []string{"Disaggregated.Decode.Cost:", "Frozen.DecodeStep must be >= 0"}},
		"prompts disagree": {edit(func(d *costmodel.Disaggregated) { d.Decode.Point.PromptTokens = 1000 }),
			[]string{"Disaggregated.Prefill.Point.PromptTokens (2000) and Disaggregated.Decode.Point.PromptTokens (1000) must agree"}},
		"outputs disagree": {edit(func(d *costmodel.Disaggregated) { d.Prefill.Point.OutputTokens = 100 }),
			[]string{"Disaggregated.Prefill.Point.OutputTokens (100) and Disaggregated.Decode.Point.OutputTokens (200) must agree"}},
		"one output token": {edit(func(d *costmodel.Disaggregated) { d.Prefill.Point.OutputTokens, d.Decode.Point.OutputTokens = 1, 1 }),
			[]string{"Disaggregated.Decode.Point.OutputTokens must be >= 2, got 1"}},
		"zero value": {costmodel.Disaggregated{}, []string{"Disaggregated.Prefill.Hardware.Accelerators", "Disaggregated.Decode.Point.Batch"}},
	} {
		t.Run(name, func(t *testing.T) {
			errorMentions(t, tc.d.Validate(), tc.want...)
			_, err := tc.d.Estimate()
			errorMentions(t, err, tc.want...)
		})
	}
	// A plain Replica's errors keep their own path.
	r := costmodel.AtlasTP4()
	r.Cost = costmodel.Frozen{DecodeStep: -1}
	assert.EqualError(t, r.Validate(), "costmodel: Frozen.DecodeStep must be >= 0 (0 means the Atlas default), got -1ns")
}

// Valid figures that cannot serve are refused too: a pool whose KV cache
// holds no request, a cost model that prices work at nothing, a fleet
// without a replica in each pool.
func TestDisaggRefusesWhatCannotServe(t *testing.T) {
	d := atlasDisagg(0)
	d.Prefill.Hardware.KVCapacity = 1 << 20
	_, err := d.Estimate()
	errorMentions(t, err, "Disaggregated.Prefill: a 2000-token prompt's KV (156.2 MiB) does not fit the prefill replica's KV cache (1 MiB)")
	d = atlasDisagg(0)
	d.Decode.Hardware.KVCapacity = 1 << 20
	_, err = d.Estimate()
	errorMentions(t, err, "Disaggregated.Decode: a sequence of 8000 tokens (625 MiB of KV) does not fit")
	free := costmodel.Func(func(costmodel.Batch) time.Duration { return 0 })
	d = atlasDisagg(0)
	d.Prefill.Cost = free
	_, err = d.Estimate()
	errorMentions(t, err, "Disaggregated.Prefill.Cost priced")
	d = atlasDisagg(0)
	d.Decode.Cost = free
	_, err = d.Estimate()
	errorMentions(t, err, "Disaggregated.Decode.Cost priced")

	e := disaggEstimate(t, atlasDisagg(0))
	_, err = e.Fleet(0, 4)
	errorMentions(t, err, "prefill 0, decode 4")
	for _, n := range []int{-1, 0, 1} {
		_, err = e.Split(n)
		errorMentions(t, err, "n >= 2")
	}
}
