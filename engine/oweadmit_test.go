package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The blocks planChunked's running loop owes (the cohort's, the inline
// decodes') taken with the first admission's own in one take (oweAdmit)
// leave every engine as taking them apart does (takeApart): 300 random
// engines, the prefix cache on or off, prompts of a few shared groups and
// private ones (hits walked, blocks cached as they are taken: the take
// comes first), small pools under KV pressure (preemptions, refusals),
// pools by runs or by blocks, FreeBlocksFirst, FCFS or Priority, chunk
// caps, budgets, chunked prefill off, AdmitOnFirstChunk, streaks omitted
// (the cohort) or not, requests added over time, a step a move: every
// plan and outcome, and the free, cached and evictable blocks once each
// plan took its blocks, the same, strict mode on (Check at each plan).
func TestOwedAdmissionsTakeApart(t *testing.T) {
	t.Parallel()
	together := 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 55))
		cfg := Config{BlockSize: 8 << rng.IntN(2), KVBlocks: 40 + rng.IntN(600), MaxSeqs: 1 + rng.IntN(24),
			FreeBlocksFirst: rng.IntN(4) == 0, DisablePrefixCache: rng.IntN(3) == 0, AdmitOnFirstChunk: rng.IntN(4) == 0}
		switch rng.IntN(5) {
		case 0:
			cfg.ChunkCap = 16 + rng.IntN(300)
		case 1:
			cfg.MaxBatchedTokens = 64 + rng.IntN(600)
		case 2:
			cfg.DisableChunkedPrefill = true
		}
		if rng.IntN(3) == 0 {
			cfg.Policy = Priority{}
		}
		byBlocks, omit := rng.IntN(3) == 0, rng.IntN(4) > 0
		bs, groups := cfg.BlockSize, 1+rng.IntN(4)
		arr := make([]arrival, 2+rng.IntN(60))
		at := time.Duration(0)
		for i := range arr {
			at += time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
			a := arrival{at: at, in: 1 + rng.IntN(400), out: 1 + rng.IntN(80)}
			if rng.IntN(2) == 0 {
				g, shared := rng.IntN(groups), rng.IntN(a.in/bs+1)
				for j := range a.in / bs {
					if j < shared {
						a.prefix = append(a.prefix, uint64(g+1)<<32|uint64(j))
					} else {
						a.prefix = append(a.prefix, uint64(1)<<48|uint64(i)<<16|uint64(j))
					}
				}
				a.bt = bs
			}
			arr[i] = a
		}
		together += sameLogs(t, seed, func(fast bool) ([]string, int) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.noRuns = byBlocks
			e.fast.takeApart = !fast
			e.decideFast()
			e.Runner().OmitStreaks(omit)
			e.Runner().SetStrict(true)
			var pools []string
			owed := 0
			log := stepEach(t, e, arr, nil, func(p *Plan) {
				if len(p.Started) > 0 && p.Cohort+len(p.Batch.Decode) > 0 {
					owed++ // an admission beside decodes, whose blocks the running loop owed
				}
				pools = append(pools, fmt.Sprintf("free %d cached %d evictable %d", e.FreeBlocks(), e.CachedBlocks(), e.EvictableBlocks()))
			})
			require.Equal(t, cfg.KVBlocks, e.FreeBlocks(), "seed %d: blocks held at the end", seed)
			return append(log, pools...), owed
		})
	}
	t.Logf("%d admissions beside decodes", together)
	require.Greater(t, together, 1000)
}
