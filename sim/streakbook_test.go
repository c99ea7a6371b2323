package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
)

// The streaks' bookkeeping (join, streakMove, leave, leaveAll and
// trimPeaks) against a brute force that adds each move to each member:
// two replicas' members by ref, joins and leaves at random, moves whose
// step times wander or fall for over a thousand moves (so that the
// peaks pass trimPeaks' bound with members of every age), and whole
// replicas' streaks ended at once (leaveAll, which no regime's run
// reaches with a member). Each leave's record is the brute force's, and
// every member of the other replica keeps its streak.
func TestStreakBookkeepingIsBruteForce(t *testing.T) {
	type want struct {
		in                bool
		emitted, over     int
		maxITL            time.Duration
		lastToken         time.Duration
		rep               int
		stepsIn, maxSince time.Duration
	}
	trims := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 41))
		r, err := newRunner(Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{})}}, &list{}, nil)
		require.NoError(t, err)
		const refs = 24
		r.slots = make([]slot, refs)
		bound := r.bounds[0].itl
		wants := make([]want, refs)
		ends := [2]time.Duration{}
		check := func(ref int) {
			t.Helper()
			rec, w := &r.slots[ref].rec, &wants[ref]
			require.Equal(t, w.emitted, rec.Emitted, "seed %d ref %d: emitted", seed, ref)
			require.Equal(t, w.maxITL, rec.MaxITL, "seed %d ref %d: MaxITL", seed, ref)
			require.Equal(t, w.maxITL, rec.MaxTokenITL, "seed %d ref %d: MaxTokenITL", seed, ref)
			require.Equal(t, w.over, rec.ITLOver, "seed %d ref %d: ITLOver", seed, ref)
			require.Equal(t, w.lastToken, rec.LastToken, "seed %d ref %d: LastToken", seed, ref)
		}
		leave := func(ref int) {
			w := &wants[ref]
			r.leave(&r.reps[w.rep], int32(ref))
			w.in = false
			check(ref)
		}
		var out engine.Outcome
		move := func(k int, d time.Duration, steps int) {
			rep := &r.reps[k]
			ends[k] += time.Duration(steps) * d
			if n := rep.streak.members; n > 0 {
				out.Steps, out.End = steps, ends[k]
				r.streakMove(rep, &out, d, n, 0, 0)
				for ref := range wants {
					if w := &wants[ref]; w.in && w.rep == k {
						w.emitted += steps
						w.maxITL = max(w.maxITL, d)
						if d > bound {
							w.over += steps
						}
						w.lastToken = ends[k]
					}
				}
			}
			rep.streak.end = ends[k]
		}
		fall := time.Duration(0)
		for range 6000 {
			k := rng.IntN(2)
			switch op := rng.IntN(12); {
			case op < 6 || fall > 0: // a move
				d := bound/2 + time.Duration(rng.Int64N(int64(bound)))
				if fall > 0 { // a long fall on replica 0: a peak a move
					k, d, fall = 0, bound/4+fall*time.Microsecond, fall-1
				}
				move(k, d, 1+rng.IntN(3))
				if len(r.reps[k].streak.peaks) >= 1000 {
					trims++
				}
			case op < 9: // a join
				ref := rng.IntN(refs)
				if w := &wants[ref]; !w.in {
					s := &r.slots[ref]
					s.rec.Replica, s.rec.Measured = k, rng.IntN(2) == 0
					*w = want{in: true, rep: k, emitted: s.rec.Emitted, maxITL: s.rec.MaxITL, over: s.rec.ITLOver, lastToken: s.rec.LastToken}
					r.join(&r.reps[k], int32(ref))
				}
			case op < 11: // a leave
				if ref := rng.IntN(refs); wants[ref].in {
					leave(ref)
				}
			case rng.IntN(4) == 0: // every member of a replica
				rep := &r.reps[k]
				r.leaveAll(rep)
				require.Zero(t, rep.streak.members)
				for ref := range wants {
					if w := &wants[ref]; w.in && w.rep == k {
						w.in = false
						check(ref)
					}
				}
			default:
				fall = 1500
			}
			for k := range r.reps {
				n := 0
				for ref := range wants {
					if w := &wants[ref]; w.in && w.rep == k {
						n++
						require.True(t, r.members[ref].in)
					}
				}
				require.Equal(t, n, r.reps[k].streak.members, "seed %d: replica %d's members", seed, k)
			}
		}
		for ref := range wants {
			if wants[ref].in {
				leave(ref)
			}
		}
	}
	require.Positive(t, trims, "no streak's peaks reached trimPeaks' bound")
}
