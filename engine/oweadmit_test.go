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
// (the cohort) or not, requests added over time, a step or a run a move:
// every plan and outcome, and the free, cached and evictable blocks after
// each, the same, strict mode on (Check at each plan).
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
		byBlocks, omit, ahead := rng.IntN(3) == 0, rng.IntN(4) > 0, rng.IntN(2) == 0
		bs, groups := cfg.BlockSize, 1+rng.IntN(4)
		reqs := make([]Request, 2+rng.IntN(60))
		at := time.Duration(0)
		for i := range reqs {
			at += time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
			in := 1 + rng.IntN(400)
			r := Request{Ref: int32(i), Arrival: at, Input: in, Output: 1 + rng.IntN(80), Priority: rng.IntN(3)}
			if rng.IntN(2) == 0 {
				g, shared := rng.IntN(groups), rng.IntN(in/bs+1)
				for j := range in / bs {
					if j < shared {
						r.Prefix = append(r.Prefix, uint64(g+1)<<32|uint64(j))
					} else {
						r.Prefix = append(r.Prefix, uint64(1)<<48|uint64(i)<<16|uint64(j))
					}
				}
				r.PrefixBlockTokens = bs
			}
			reqs[i] = r
		}
		drive := func(apart bool) ([]string, int) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.noRuns = byBlocks
			e.fast.takeApart = apart
			e.decideFast()
			e.Runner().OmitStreaks(omit)
			e.Runner().SetStrict(true)
			var log []string
			owed := 0
			now, i := time.Duration(0), 0
			for i < len(reqs) || !e.Idle() {
				for i < len(reqs) && reqs[i].Arrival <= now {
					if err := e.Add(now, reqs[i]); err != nil {
						log = append(log, err.Error())
					}
					i++
				}
				until := now
				if ahead && i < len(reqs) {
					until = reqs[i].Arrival
				}
				p, err := e.Runner().ScheduleUntil(now, until)
				require.NoError(t, err)
				if p == nil {
					if i == len(reqs) {
						break
					}
					now = reqs[i].Arrival
					continue
				}
				if len(p.Started) > 0 && p.Cohort+len(p.Batch.Decode) > 0 {
					owed++ // an admission beside decodes, whose blocks the running loop owed
				}
				log = append(log, fmt.Sprintf("%+v", *p))
				out, err := e.Complete(p.End)
				require.NoError(t, err)
				log = append(log, fmt.Sprintf("%+v free %d cached %d evictable %d", *out, e.FreeBlocks(), e.CachedBlocks(), e.EvictableBlocks()))
				now = p.End
			}
			require.Equal(t, cfg.KVBlocks, e.FreeBlocks(), "seed %d: blocks held at the end", seed)
			return log, owed
		}
		fast, n := drive(false)
		slow, _ := drive(true)
		require.Equal(t, slow, fast, "seed %d", seed)
		together += n
	}
	t.Logf("%d admissions beside decodes", together)
	require.Greater(t, together, 1000)
}
