package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/mixedrun"
	"github.com/servesim/servesim/internal/runthrough"
)

// A mixed move (mixed.go: a step that prefills a prompt whole beside the
// cohort's decodes, planned with the decode run after it as one move) is
// the steps one by one: 400 random engines (few blocks, sequence caps,
// block sizes, chunk caps and token budgets that keep some prompts from
// one chunk) serve requests that arrive over time, one engine driven by
// mixed moves and continued runs, each arrival inside a move added there
// and the move cut unless the join changes nothing (Truncate, inside its
// first step or after it), its steps sometimes collected first
// (CompleteUntil), the other a step a move (ScheduleUntil to the instant
// itself), every emit listed. Each request emits its first token and
// finishes at the same instants, the steps hold the same blocks over time
// (a mixed move's first step's blocks for its own length: mixedrun.Out),
// the engines end idle with every block free, and the first passes Check
// after every plan and collection. Enough of the engines must run mixed
// moves. In half the engines that do not run through finishes the
// prompts share prefixes and both engines publish KV events (the mixed
// one to a sink that takes runs, or runs by name, or neither), brought
// to an arrival's instant first (SyncTo, as sim's EventsView does at
// every arrival), and publish the same events, stamped alike, in the
// same order: a mixed move's later steps start lead after its grid.
func TestMixedMovesAreSteps(t *testing.T) {
	mixes, through, chunkLed, refusedHead := 0, 0, 0, 0 // chunkLed: mixed moves led by a prompt's last chunk; refusedHead: planned with the waiting head refused for its blocks
	pubMixes, pubEvents := 0, 0                         // engines publishing KV events that ran mixed moves; the events compared
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 45))
		cfg := Config{BlockSize: 8 << rng.IntN(2), KVBlocks: 100 + rng.IntN(1500), MaxSeqs: 1 + rng.IntN(12)}
		switch rng.IntN(5) {
		case 0:
			cfg.ChunkCap = 32 + rng.IntN(300)
		case 1:
			cfg.MaxBatchedTokens = 64 + rng.IntN(400)
		}
		type arrival struct {
			at      time.Duration
			in, out int
		}
		arr := make([]arrival, 2+rng.IntN(40))
		at := time.Duration(0)
		for i := range arr {
			at += time.Duration(rng.Int64N(int64(300*time.Millisecond))) + 1
			arr[i] = arrival{at: at, in: 16 + rng.IntN(400), out: 1 + rng.IntN(120)}
		}
		thru := seed%2 == 0 // mixed moves that go on through finishes
		pub := seed%4 == 1  // KV events published, prompts of shared prefixes
		prefixes := make([][]uint64, len(arr))
		if pub {
			for i := range arr {
				if rng.IntN(3) > 0 {
					for j := range arr[i].in / 8 {
						prefixes[i] = append(prefixes[i], uint64(rng.IntN(2)*1000+j))
					}
				}
			}
		}
		var events [2]eventLog // the step-by-step engine's, the mixed one's
		drive := func(mixed bool) (finishes, map[int32]time.Duration, int, int) {
			e, err := New(cfg, nil)
			require.NoError(t, err)
			run := e.Runner()
			run.OmitStreaks(mixed)
			if pub {
				if mixed {
					publishTo(e, &events[1], int(seed/4%3))
				} else {
					publishTo(e, &events[0], 0)
				}
			}
			var firstOn *bool
			var firstBlocks *int
			var finAt *time.Duration
			if mixed {
				mixedrun.Allow(e, true)
				firstOn, firstBlocks = mixedrun.Out(e)
				if thru {
					runthrough.Allow(e, true)
					finAt = runthrough.FinAt(e)
				}
			}
			inMixed, inside := false, 0 // the move in flight is a mixed move; finishes inside such moves
			finOf := func() time.Duration {
				if finAt == nil {
					return 0
				}
				return *finAt
			}
			f := finishes{at: map[int32]time.Duration{}}
			firsts := map[int32]time.Duration{}
			moves := 0
			var moveAt time.Duration
			// note takes an outcome, collected when the engine's first
			// finish inside its move was fin (runthrough.FinAt; 0: none),
			// which must be its first finish when it reaches fin, and
			// come after every finish it holds when it does not.
			note := func(out *Outcome, d, fin time.Duration) {
				f.note(out, d)
				if fin != 0 {
					first := time.Duration(-1)
					for _, em := range out.Emitted {
						if at := out.End - time.Duration(out.Steps-min(em.Tokens, out.Steps))*d; em.Done && (first < 0 || at < first) {
							first = at
						}
					}
					if out.End >= fin {
						require.Equal(t, fin, first, "seed %d: the first finish inside a run", seed)
					} else {
						require.Equal(t, time.Duration(-1), first, "seed %d: a finish before the first inside a run", seed)
					}
				}
				for _, em := range out.Emitted {
					if inMixed && em.Done && em.Tokens < out.Steps {
						inside++
					}
				}
				for _, em := range out.Emitted {
					if em.First {
						firsts[em.Ref] = out.End - time.Duration(em.Tokens-1)*d
					}
				}
				if firstOn != nil && *firstOn {
					*firstOn = false
					moves++
					lead := out.End - time.Duration(out.Steps)*d - moveAt
					f.area += time.Duration(*firstBlocks) * lead
				}
				require.NoError(t, e.Check(), "seed %d", seed)
			}
			add := func(i int) {
				req := Request{Ref: int32(i), Input: arr[i].in, Output: arr[i].out}
				if prefixes[i] != nil {
					req.Prefix, req.PrefixBlockTokens = prefixes[i], 8
				}
				require.NoError(t, e.Add(arr[i].at, req))
			}
			now, i := time.Duration(0), 0
			for i < len(arr) || !e.Idle() {
				for i < len(arr) && arr[i].at <= now {
					add(i)
					i++
				}
				var p *Plan
				if mixed {
					p = run.Continue(now, time.Hour)
				}
				if p == nil {
					until := now
					if mixed {
						until = time.Hour
					}
					p, err = run.ScheduleUntil(now, until)
					require.NoError(t, err)
				}
				if p == nil { // idle, or every request rejected: the next arrival
					require.Less(t, i, len(arr), "seed %d: nothing planned with requests held", seed)
					now = arr[i].at
					continue
				}
				require.NoError(t, e.Check(), "seed %d", seed)
				d, end := p.StepTime, p.End
				moveAt = p.Start
				inMixed = p.End-p.Start != time.Duration(p.Steps)*d
				if m := e.co.members; inMixed && len(m) > 0 && m[len(m)-1].admitted != e.move+1 {
					chunkLed++ // its prompt admitted in an earlier move: the step is its last chunk
				}
				if inMixed && e.waiting.len() > 0 && !e.AtSeqCap() {
					refusedHead++
				}
				for i < len(arr) && arr[i].at < end {
					a := arr[i].at
					// A run through finishes is collected before an
					// instant after a finish inside it (runthrough.FinAt).
					if collect := mixed && rng.IntN(3) == 0; collect || finAt != nil && *finAt != 0 && *finAt <= a {
						fin := finOf()
						out, err := run.CompleteUntil(a)
						require.NoError(t, err)
						note(out, d, fin)
					} else if pub && rng.IntN(2) == 0 {
						run.SyncTo(a) // the events of the steps started by a
					}
					if pub && e.inFlight { // nextStart, sim's EventsView's probe: no step starts in [a, next), one at next
						next, k := e.nextStart(a), e.started(a)
						require.Equal(t, k, e.started(next), "seed %d: a step starts before the next start after %v", seed, a)
						if next < e.plan.End {
							require.Equal(t, k+1, e.started(next+1), "seed %d: no step starts at the next start after %v", seed, a)
						}
					}
					add(i)
					i++
					if mixed && !run.JoinChangesNothing() {
						_, end, err = run.Truncate(a)
						require.NoError(t, err, "seed %d", seed)
					}
				}
				fin := finOf()
				out, err := e.Complete(end)
				require.NoError(t, err)
				note(out, d, fin)
				now = end
			}
			require.Equal(t, cfg.KVBlocks, e.FreeBlocks(), "seed %d", seed)
			return f, firsts, moves, inside
		}
		fast, fastFirst, moves, inside := drive(true)
		slow, slowFirst, _, _ := drive(false)
		require.Equal(t, slowFirst, fastFirst, "seed %d: first tokens", seed)
		require.Equal(t, slow.at, fast.at, "seed %d: finish instants", seed)
		require.Equal(t, slow.area, fast.area, "seed %d: blocks held over time", seed)
		require.Equal(t, events[0], events[1], "seed %d: KV events", seed)
		if moves > 0 {
			mixes++
			if pub {
				pubMixes++
				pubEvents += len(events[0])
			}
		}
		if inside > 0 {
			through++
		}
	}
	t.Logf("%d of 400 engines ran mixed moves, %d finished requests inside them; %d mixed moves led by a last chunk, %d planned with the waiting head refused; %d ran them publishing KV events, %d events compared", mixes, through, chunkLed, refusedHead, pubMixes, pubEvents)
	require.Greater(t, pubMixes, 30)
	require.Greater(t, mixes, 100)
	require.Greater(t, through, 40)
	require.Greater(t, chunkLed, 300)
	require.Greater(t, refusedHead, 25)
}
