package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/internal/accept"
	"github.com/servesim/servesim/internal/specrun"
)

// A speculative step, with prefill or without, is priced from
// specPrice's memo exactly as Frozen prices it: 300 random speculative engines (K, α,
// sequence caps, token budgets, chunk caps, block sizes, small pools, a
// Frozen of random figures), with the speculative cohort (OmitStreaks)
// or without it (its members listed), speculative runs allowed in some,
// serve requests arriving over time, a step a move, against the twin
// that asks the model every time (chunkMemo off): every plan and every
// outcome the same, and each engine's invariants held with every plan in
// flight (Check). The memo must answer: the steps it prices outnumber
// its slots filled.
func TestSpecPriceIsTheModel(t *testing.T) {
	answered := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 52))
		cfg := Config{
			MaxSeqs:           1 + rng.IntN(40),
			MaxBatchedTokens:  64 + rng.IntN(1000),
			ChunkCap:          rng.IntN(4) * 16,
			KVBlocks:          16 + rng.IntN(800),
			BlockSize:         []int{4, 16, 8, 32}[rng.IntN(4)],
			SpeculativeTokens: 1 + rng.IntN(6),
		}
		model := costmodel.Frozen{
			DecodeStep:      time.Duration(1+rng.IntN(60)) * time.Millisecond,
			PrefillBase:     time.Duration(rng.IntN(30)) * time.Millisecond,
			PrefillPerToken: time.Duration(1+rng.IntN(50)) * time.Microsecond,
			VerifyPerToken:  time.Duration(rng.IntN(3000)) * time.Microsecond,
		}
		alpha := float64(rng.IntN(11)) / 10
		omit, runs := rng.IntN(4) > 0, rng.IntN(2) == 0
		arr := make([]arrival, 2+rng.IntN(60))
		at := time.Duration(0)
		for i := range arr {
			at += time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
			arr[i] = arrival{at: at, in: 1 + rng.IntN(300), out: 1 + rng.IntN(80)}
		}
		drive := func(memo bool) ([]string, int) {
			chunkMemo = memo
			defer func() { chunkMemo = true }()
			e, err := New(cfg, model)
			require.NoError(t, err)
			var streams []accept.PCG
			e.SetAcceptor(accept.NewIID(&streams, alpha, cfg.SpeculativeTokens))
			e.Runner().SetStrict(true)
			e.Runner().OmitStreaks(omit)
			if runs {
				specrun.Allow(e, true)
			}
			priced := 0
			log := stepEach(t, e, arr, func(i int) {
				streams = append(streams, accept.NewPCG(seed, uint64(i)))
			}, func(p *Plan) {
				if memo && e.sc != nil && p.Batch.Verify != nil {
					priced++
				}
				require.NoError(t, e.Check())
			})
			if memo && e.sc != nil {
				for _, d := range e.sc.prices {
					if d > 0 {
						priced--
					}
				}
			}
			return log, priced
		}
		answered += sameLogs(t, seed, drive)
	}
	t.Logf("%d steps priced by the memo", answered)
	require.Greater(t, answered, 1000)
}
