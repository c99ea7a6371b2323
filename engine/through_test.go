package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/runthrough"
	"github.com/stretchr/testify/require"
)

// finishes is what a driver learns of each request from an engine's
// outcomes: the instant of its last token, by Ref; with the block-steps
// of every outcome, times its step time, summed.
type finishes struct {
	at   map[int32]time.Duration
	area time.Duration
}

func (f *finishes) note(out *Outcome, d time.Duration) {
	f.area += time.Duration(out.BlockSteps) * d
	for _, em := range out.Emitted {
		if em.Done {
			f.at[em.Ref] = out.End - time.Duration(out.Steps-min(em.Tokens, out.Steps))*d
		}
	}
}

// A run through finishes (through.go) is the steps one by one: 400 random
// engines (few blocks, sequence caps, block sizes) serve requests added
// together, one driven by continued runs through finishes, collected at
// random instants inside them (CompleteUntil, the run left in flight),
// the other a step a move (ScheduleUntil to the instant itself), its
// outcomes listing every emit. Each request finishes at the same instant
// (its last Emit's, which a finisher inside a run dates by its Tokens),
// the steps hold the same blocks over time, the
// engines end idle with the same free blocks, and the first passes Check
// after every collection. Enough of the engines must run through
// finishes.
func TestRunsThroughFinishesAreSteps(t *testing.T) {
	through := 0
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 44))
		cfg := Config{BlockSize: 8 << rng.IntN(2), KVBlocks: 200 + rng.IntN(2000), MaxSeqs: 2 + rng.IntN(30)}
		type req struct{ in, out int }
		reqs := make([]req, 2+rng.IntN(40))
		for i := range reqs {
			reqs[i] = req{in: 16 + rng.IntN(400), out: 1 + rng.IntN(300)}
		}
		drive := func(thru bool) (finishes, int) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.Runner().OmitStreaks(thru)
			runthrough.Allow(e, thru)
			for i, r := range reqs {
				require.NoError(t, e.Add(0, Request{Ref: int32(i), Input: r.in, Output: r.out}))
			}
			f := finishes{at: map[int32]time.Duration{}}
			now, inside := time.Duration(0), 0
			for !e.Idle() {
				end, out := driveMove(t, e, rng, thru, now, &f, seed, nil)
				for _, em := range out.Emitted {
					if em.Done && em.Tokens < out.Steps {
						inside++
					}
				}
				now = end
			}
			require.Equal(t, cfg.KVBlocks, e.FreeBlocks(), "seed %d", seed)
			return f, inside
		}
		fast, inside := drive(true)
		slow, _ := drive(false)
		require.Equal(t, slow.at, fast.at, "seed %d: finish instants", seed)
		require.Equal(t, slow.area, fast.area, "seed %d: blocks held over time", seed)
		if inside > 0 {
			through++
		}
	}
	t.Logf("%d of 400 engines ran through finishes", through)
	require.Greater(t, through, 100)
}

// A run through finishes on a pool with cached blocks (through.go:
// skipBlocks) is the steps one by one: 300 random engines with small
// pools, whose requests share prefixes (a group's ids, then their own:
// every full block of a prompt is cached), added in waves, each once the
// last has drained, so that a wave's admissions find, or not, the blocks
// the runs before it left cached or evicted. One engine is driven by
// continued runs through finishes, collected at random instants inside
// them, the other a step a move; some keep the pool by blocks (noRuns),
// some take never-cached blocks first (FreeBlocksFirst). Each request
// finishes at the same instant, its admission finds the same cached
// tokens, the steps hold the same blocks over time, and after each wave
// the engines hold the same free, cached and evictable blocks. Enough of
// the engines must run through finishes on a pool holding cached blocks
// whose runs evict some.
func TestRunsThroughCachedFinishesAreSteps(t *testing.T) {
	through, evicting := 0, 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 45))
		cfg := Config{BlockSize: 16, KVBlocks: 120 + rng.IntN(700), MaxSeqs: 2 + rng.IntN(24), FreeBlocksFirst: rng.IntN(4) == 0}
		byBlocks := rng.IntN(3) == 0
		groups := 1 + rng.IntN(4)
		waves := make([][]Request, 2+rng.IntN(4))
		ref := int32(0)
		for w := range waves {
			for range 2 + rng.IntN(20) {
				in := 16 + rng.IntN(300)
				g, shared := rng.IntN(groups), rng.IntN(in/16+1)
				ids := make([]uint64, 0, in/16)
				for i := range in / 16 {
					if i < shared {
						ids = append(ids, uint64(g+1)<<32|uint64(i))
					} else {
						ids = append(ids, uint64(1)<<48|uint64(ref)<<16|uint64(i))
					}
				}
				waves[w] = append(waves[w], Request{Ref: ref, Input: in, Output: 1 + rng.IntN(120), Prefix: ids, PrefixBlockTokens: 16})
				ref++
			}
		}
		type reading struct{ free, cached, evict int }
		drive := func(thru bool) (finishes, map[int32]int, []reading, int, int) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			e.noRuns = byBlocks
			e.Runner().OmitStreaks(thru)
			runthrough.Allow(e, thru)
			f := finishes{at: map[int32]time.Duration{}}
			hits := map[int32]int{}
			var after []reading
			now, inside, cachedInside := time.Duration(0), 0, 0
			for _, wave := range waves {
				for _, r := range wave {
					r.Arrival = now
					require.NoError(t, e.Add(now, r))
				}
				for !e.Idle() {
					skips, cached := false, 0
					end, out := driveMove(t, e, rng, thru, now, &f, seed, func(p *Plan) {
						for i, r := range p.Started {
							hits[r] = p.Cached[i]
						}
						skips, cached = e.thruAt != noFinish && e.thruSkip, e.pool.cached
					})
					for _, em := range out.Emitted {
						if em.Done && em.Tokens < out.Steps {
							inside++
							if skips && e.pool.cached < cached {
								cachedInside++
							}
						}
					}
					if e.thru != nil {
						require.Zero(t, e.thru.skipped, "seed %d: blocks not taken for finishers left uncollected", seed)
						require.Zero(t, len(e.thru.held), "seed %d: finishers with blocks of content left unreleased", seed)
					}
					now = end
				}
				after = append(after, reading{e.FreeBlocks(), e.CachedBlocks(), e.EvictableBlocks()})
			}
			require.Equal(t, cfg.KVBlocks, e.FreeBlocks(), "seed %d", seed)
			return f, hits, after, inside, cachedInside
		}
		fast, fastHits, fastAfter, inside, cachedInside := drive(true)
		slow, slowHits, slowAfter, _, _ := drive(false)
		require.Equal(t, slow.at, fast.at, "seed %d: finish instants", seed)
		require.Equal(t, slowHits, fastHits, "seed %d: cached tokens found at admission", seed)
		require.Equal(t, slow.area, fast.area, "seed %d: blocks held over time", seed)
		require.Equal(t, slowAfter, fastAfter, "seed %d: free, cached and evictable blocks after each wave", seed)
		if inside > 0 {
			through++
		}
		if cachedInside > 0 {
			evicting++
		}
	}
	t.Logf("%d of 300 engines ran through finishes, %d of them on a pool whose cached blocks such a run evicted", through, evicting)
	require.Greater(t, through, 100)
	require.Greater(t, evicting, 30)
}

// driveMove plans e's next move at now, a run continued through finishes
// when thru (else ScheduleUntil's, when Continue declines), a step a move
// otherwise, tells planned of it (if not nil), and collects it: a run
// through finishes at random instants inside it first (CompleteUntil),
// then whole (Complete), each outcome noted in f and Check passed after
// each. It returns the move's end and its last outcome.
func driveMove(t *testing.T, e *Engine, rng *rand.Rand, thru bool, now time.Duration, f *finishes, seed uint64, planned func(*Plan)) (time.Duration, *Outcome) {
	t.Helper()
	var p *Plan
	var err error
	if thru {
		if p = e.Runner().Continue(now, time.Hour); p == nil {
			p, err = e.Runner().ScheduleUntil(now, time.Hour)
			require.NoError(t, err)
		}
	} else {
		p, err = e.Runner().ScheduleUntil(now, now)
		require.NoError(t, err)
	}
	require.NotNil(t, p, "seed %d: nothing planned with requests held", seed)
	if planned != nil {
		planned(p)
	}
	d := p.StepTime
	for thru && e.thruAt != noFinish && rng.IntN(2) == 0 {
		cut := e.thruAt + time.Duration(rng.Int64N(int64(p.End-e.thruAt)))
		out, err := e.Runner().CompleteUntil(cut)
		require.NoError(t, err)
		f.note(out, d)
		require.NoError(t, e.Check(), "seed %d", seed)
	}
	end := p.End
	out, err := e.Complete(end)
	require.NoError(t, err)
	f.note(out, d)
	require.NoError(t, e.Check(), "seed %d", seed)
	return end, out
}
