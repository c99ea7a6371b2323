package costmodel_test

// Issue 39: the restore bounds of KV tiers below HBM, checked by hand for
// Atlas TP4 (80 KiB of KV per token per accelerator, four accelerators;
// 20 + 0.035·n ms a prefill; 2,000-token prompts).

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
)

// atlasTiers is Atlas TP4 with a host link and a shared store's link
// shared by replicas replicas.
func atlasTiers(host, shared costmodel.TierLink, replicas int) costmodel.Tiers {
	return costmodel.Tiers{Replica: costmodel.AtlasTP4(), Host: host, Shared: shared, Replicas: replicas}
}

// tiersEstimate is t's estimate, which must succeed.
func tiersEstimate(t *testing.T, x costmodel.Tiers) costmodel.TiersEstimate {
	t.Helper()
	e, err := x.Estimate()
	require.NoError(t, err)
	return e
}

// The prefill's marginal rate: a hit of the 1,999-token prefix saves
// 90 − 20.035 ms, 0.035 ms a token, 28,571 tokens/s.
func TestTiersPrefillRateIsMarginal(t *testing.T) {
	e := tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{}, 0))
	assert.InDelta(t, 1/0.035e-3, e.PrefillRate.Value, 1e-6)
	assert.Equal(t, 28571.0, math.Floor(e.PrefillRate.Value))
	assert.Equal(t, "1999 prefix tokens / (90 − 20.035 ms): a lone 2000-token prefill less its last token's step on 1999 context", e.PrefillRate.Basis)

	// Another cost model's own slope: 10 ms + 0.05 ms a prefill token is
	// 20,000 tokens/s, whatever the prompt.
	x := atlasTiers(costmodel.TierLink{}, costmodel.TierLink{}, 0)
	x.Replica.Cost = costmodel.Func(func(b costmodel.Batch) time.Duration {
		if b.Empty() {
			return 0
		}
		return 10*time.Millisecond + time.Duration(b.PrefillTokens())*50*time.Microsecond
	})
	for _, p := range []int{2, 500, 8000} {
		x.Replica.Point.PromptTokens, x.Replica.Point.SeqTokens = p, p+200
		assert.InDelta(t, 20000, tiersEstimate(t, x).PrefillRate.Value, 1e-6, "prompt %d", p)
	}
}

// The host tier: each of the four ranks restores its 80 KiB shard of a
// token over its own 50 GB/s PCIe path, 50e9 / 81,920 = 610,351.6
// tokens/s a replica, 21.36 × the prefill's 28,571: restoring pays above
// 0.1 ms / (0.035 − 0.0016384 ms) = 2.997 tokens with 100 µs latency, from
// the first token with none.
func TestTiersHostByHand(t *testing.T) {
	e := tiersEstimate(t, atlasTiers(costmodel.TierLink{Bandwidth: 50e9, Latency: 100 * time.Microsecond}, costmodel.TierLink{}, 0))
	h := e.Host
	assert.InDelta(t, 610351.5625, h.Restore.Value, 1e-6)
	assert.Equal(t, "host restore bound", h.Restore.Name)
	assert.Equal(t, "50 GB/s / 80 KiB a token on each accelerator's path (4 ranks restore their shards in parallel)", h.Restore.Basis)
	assert.Contains(t, h.Restore.Knob, "Tiers.Host.Bandwidth")
	assert.InDelta(t, 610351.5625*0.035e-3, h.Ratio.Value, 1e-9)
	assert.Equal(t, 21.36, math.Round(100*h.Ratio.Value)/100)
	assert.True(t, h.Pays)
	assert.InDelta(t, 0.1/(0.035-81920/50e9*1e3), h.BreakEven.Value, 1e-9)
	assert.Equal(t, 3.0, math.Round(h.BreakEven.Value))
	assert.Equal(t, "100µs latency / (0.035 − 0.001638 ms a token): a longer prefix restores faster than it recomputes", h.BreakEven.Basis)
	assert.Equal(t, "Tiers.Host.Latency, Tiers.Host.Bandwidth; prefill cost per token", h.BreakEven.Knob)
	assert.Empty(t, e.Shared.Restore.Name, "no shared store declared")
	require.Len(t, e.Figures(), 4)

	e = tiersEstimate(t, atlasTiers(costmodel.TierLink{Bandwidth: 50e9}, costmodel.TierLink{}, 0))
	assert.Equal(t, 0.0, e.Host.BreakEven.Value)
	assert.Equal(t, "no latency: a prefix of any length restores faster than it recomputes", e.Host.BreakEven.Basis)
}

// The shared store: one 12.5 GB/s (100 GbE) link carries every rank's
// shard, 4 × 80 KiB = 320 KiB a token, 38,147 tokens/s to a lone replica
// and 4,768.4 tokens/s each to 8 restoring at once: 0.167 × the
// prefill's rate, so under load recompute wins at every prefix length.
func TestTiersSharedByHand(t *testing.T) {
	e := tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{Bandwidth: 12.5e9, Latency: time.Millisecond}, 8))
	s := e.Shared
	assert.InDelta(t, 12.5e9/(4*81920)/8, s.Restore.Value, 1e-9)
	assert.Equal(t, 4768.4, math.Round(10*s.Restore.Value)/10)
	assert.Equal(t, "shared-store restore bound", s.Restore.Name)
	assert.Equal(t, "12.5 GB/s / (4 × 80 KiB = 320 KiB a token, every rank's shard over the one link) / 8 replicas restoring at once (a lone replica on the idle link: 38147 tokens/s)", s.Restore.Basis)
	assert.Contains(t, s.Restore.Knob, "Tiers.Shared.Bandwidth")
	assert.Contains(t, s.Restore.Knob, "Tiers.Replicas")
	assert.False(t, s.Pays)
	assert.InDelta(t, s.Restore.Value*0.035e-3, s.Ratio.Value, 1e-12)
	assert.Less(t, s.Ratio.Value, 1.0)
	assert.Contains(t, s.Ratio.Basis, "at every prefix length recomputing is faster")
	assert.Empty(t, s.BreakEven.Name, "no break-even when restoring never wins")
	assert.Empty(t, e.Host.Restore.Name, "no host tier declared")
	require.Len(t, e.Figures(), 3)

	// A lone replica on the idle link restores 38,147 tokens/s, 1.335 ×
	// the prefill: with 1 ms latency restoring pays above
	// 1 / (0.035 − 0.0262144) = 113.8 tokens.
	e = tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{Bandwidth: 12.5e9, Latency: time.Millisecond}, 1))
	assert.InDelta(t, 12.5e9/(4*81920), e.Shared.Restore.Value, 1e-9)
	assert.Equal(t, "12.5 GB/s / (4 × 80 KiB = 320 KiB a token, every rank's shard over the one link)", e.Shared.Restore.Basis)
	assert.True(t, e.Shared.Pays)
	assert.InDelta(t, 1/(0.035-4*81920/12.5e9*1e3), e.Shared.BreakEven.Value, 1e-9)
	assert.Equal(t, 113.8, math.Round(10*e.Shared.BreakEven.Value)/10)
	assert.Equal(t, e.Shared.Restore.Value, tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{Bandwidth: 12.5e9}, 0)).Shared.Restore.Value, "Replicas 0 means 1")

	// A replica of one accelerator with 80 KiB a token sends 80 KiB a
	// token over the link: 12.5e9 / 81,920 / 8 = 19,073.5 tokens/s, still
	// under the prefill's 28,571.
	x := atlasTiers(costmodel.TierLink{}, costmodel.TierLink{Bandwidth: 12.5e9, Latency: time.Millisecond}, 8)
	x.Replica.Hardware.Accelerators = 1
	e = tiersEstimate(t, x)
	assert.Equal(t, 19073.5, math.Round(10*e.Shared.Restore.Value)/10)
	assert.False(t, e.Shared.Pays)
	x.Host = costmodel.TierLink{Bandwidth: 50e9}
	assert.Equal(t, "50 GB/s / 80 KiB a token on each accelerator's path (one accelerator: the whole KV)", tiersEstimate(t, x).Host.Restore.Basis)

	// With 100 ms latency the lone replica's break-even, 11,382 tokens,
	// is beyond the 1,999-token prefix of the operating point's prompt.
	e = tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{Bandwidth: 12.5e9, Latency: 100 * time.Millisecond}, 1))
	assert.Equal(t, 11382.0, math.Round(e.Shared.BreakEven.Value))
	assert.Contains(t, e.Shared.BreakEven.Basis, "but the operating point's prompt has a 1999-token prefix: at that length restoring does not win")
}

// Paired identities over a grid of links: at the break-even a prefix's
// restore time (latency + tokens at the Restore rate) equals its
// recompute time; the bound times the bytes of a token on the path is
// the bandwidth; twice the replicas halve the shared bound; a tier pays
// exactly when its ratio exceeds 1.
func TestTiersIdentities(t *testing.T) {
	for _, bw := range []float64{1e9, 5e9, 12.5e9, 25e9, 50e9, 400e9} {
		for _, lat := range []time.Duration{0, 10 * time.Microsecond, time.Millisecond, 30 * time.Millisecond} {
			for _, n := range []int{1, 2, 3, 8, 64} {
				l := costmodel.TierLink{Bandwidth: bw, Latency: lat}
				e := tiersEstimate(t, atlasTiers(l, l, n))
				perToken := 1e3 / e.PrefillRate.Value // ms
				assert.InDelta(t, bw, e.Host.Restore.Value*81920, 1e-3)
				assert.InDelta(t, bw, e.Shared.Restore.Value*4*81920*float64(n), 1e-3)
				two := tiersEstimate(t, atlasTiers(l, l, 2*n))
				assert.InDelta(t, e.Shared.Restore.Value/2, two.Shared.Restore.Value, 1e-9)
				for _, x := range []costmodel.TierEstimate{e.Host, e.Shared} {
					assert.Equal(t, x.Ratio.Value > 1, x.Pays, "%s at %g B/s", x.Restore.Name, bw)
					assert.InDelta(t, x.Restore.Value/e.PrefillRate.Value, x.Ratio.Value, 1e-12)
					if !x.Pays {
						assert.Empty(t, x.BreakEven.Name)
						continue
					}
					k := x.BreakEven.Value
					restore := float64(lat)/1e6 + k*1e3/x.Restore.Value
					assert.InDelta(t, k*perToken, restore, 1e-9, "%s at %g B/s, %v", x.Restore.Name, bw, lat)
					assert.GreaterOrEqual(t, k, 0.0)
				}
			}
		}
	}
}

// Zero bandwidth is no tier: its figures are absent, and the other
// tier's are unchanged by it.
func TestTiersZeroIsNoTier(t *testing.T) {
	host := costmodel.TierLink{Bandwidth: 50e9, Latency: 100 * time.Microsecond}
	shared := costmodel.TierLink{Bandwidth: 12.5e9, Latency: time.Millisecond}
	both := tiersEstimate(t, atlasTiers(host, shared, 8))
	none := tiersEstimate(t, atlasTiers(costmodel.TierLink{}, costmodel.TierLink{}, 8))
	assert.Equal(t, costmodel.TierEstimate{}, none.Host)
	assert.Equal(t, costmodel.TierEstimate{}, none.Shared)
	assert.Equal(t, []costmodel.Figure{none.PrefillRate}, none.Figures())
	assert.Equal(t, both.Host, tiersEstimate(t, atlasTiers(host, costmodel.TierLink{}, 8)).Host)
	assert.Equal(t, both.Shared, tiersEstimate(t, atlasTiers(costmodel.TierLink{}, shared, 8)).Shared)
	assert.Equal(t, []costmodel.Figure{both.PrefillRate, both.Host.Restore, both.Host.Ratio, both.Host.BreakEven, both.Shared.Restore, both.Shared.Ratio}, both.Figures())
	for _, f := range both.Figures() {
		assert.NotEmpty(t, f.Name)
		assert.NotEmpty(t, f.Unit, f.Name)
		assert.NotEmpty(t, f.Basis, f.Name)
		assert.NotEmpty(t, f.Knob, f.Name)
		assert.True(t, f.Value > 0 && !math.IsInf(f.Value, 0), "%s = %v", f.Name, f.Value)
	}
}

// Nonsense is refused with an error naming the field, from Validate and
// from Estimate; nothing panics.
func TestTiersValidateNamesTheField(t *testing.T) {
	edit := func(f func(x *costmodel.Tiers)) costmodel.Tiers {
		x := atlasTiers(costmodel.TierLink{Bandwidth: 50e9}, costmodel.TierLink{Bandwidth: 12.5e9}, 8)
		f(&x)
		return x
	}
	for name, tc := range map[string]struct {
		x    costmodel.Tiers
		want []string
	}{
		"negative host bandwidth": {edit(func(x *costmodel.Tiers) { x.Host.Bandwidth = -1 }), []string{"Tiers.Host.Bandwidth must be >= 0, got -1"}},
		"NaN shared bandwidth":    {edit(func(x *costmodel.Tiers) { x.Shared.Bandwidth = math.NaN() }), []string{"Tiers.Shared.Bandwidth must be finite, got NaN"}},
		"infinite host bandwidth": {edit(func(x *costmodel.Tiers) { x.Host.Bandwidth = math.Inf(1) }), []string{"Tiers.Host.Bandwidth must be finite"}},
		"negative latency":        {edit(func(x *costmodel.Tiers) { x.Shared.Latency = -time.Millisecond }), []string{"Tiers.Shared.Latency must be >= 0, got -1ms"}},
		"latency without a tier": {edit(func(x *costmodel.Tiers) { x.Host = costmodel.TierLink{Latency: time.Millisecond} }),
			[]string{"Tiers.Host.Latency is 1ms but Tiers.Host.Bandwidth is 0, which means no such tier"}},
		"negative replicas": {edit(func(x *costmodel.Tiers) { x.Replicas = -2 }), []string{"Tiers.Replicas must be >= 0, got -2"}},
		"one-token prompt":  {edit(func(x *costmodel.Tiers) { x.Replica.Point.PromptTokens = 1 }), []string{"Tiers.Replica.Point.PromptTokens must be >= 2, got 1"}},
		"replica KV bytes":  {edit(func(x *costmodel.Tiers) { x.Replica.Model.KVBytesPerToken = 0 }), []string{"Tiers.Replica.Model.KVBytesPerToken"}},
		"replica cost":      {edit(func(x *costmodel.Tiers) { x.Replica.Cost = costmodel.Frozen{PrefillPerToken: -1} }), []string{"Tiers.Replica.Cost:", "Frozen.PrefillPerToken must be >= 0"}},
		"zero value":        {costmodel.Tiers{}, []string{"Tiers.Replica.Hardware.Accelerators", "Tiers.Replica.Point.PromptTokens"}},
		"several at once":   {edit(func(x *costmodel.Tiers) { x.Host.Bandwidth, x.Shared.Latency = -1, -1 }), []string{"Tiers.Host.Bandwidth", "Tiers.Shared.Latency"}},
	} {
		t.Run(name, func(t *testing.T) {
			errorMentions(t, tc.x.Validate(), tc.want...)
			_, err := tc.x.Estimate()
			errorMentions(t, err, tc.want...)
		})
	}
	// A cost model that prices a prefix at nothing is refused too.
	x := edit(func(x *costmodel.Tiers) {
		x.Replica.Cost = costmodel.Func(func(b costmodel.Batch) time.Duration {
			if b.Empty() {
				return 0
			}
			return 50 * time.Millisecond
		})
	})
	require.NoError(t, x.Validate())
	_, err := x.Estimate()
	errorMentions(t, err, "Tiers.Replica.Cost priced a lone 2000-token prefill at 50 ms, no more than its last token's step on 1999 context (50 ms)")
}
