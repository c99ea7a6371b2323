package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStepEndsIsAnOrderedSet holds the step ends, scanned (a fleet of at
// most smallEnds) or in a heap, to a plain map of replica → instant,
// whose earliest entry (ties to the lower replica) is found by a scan,
// over random sets, moves, removals and pops, and replicas added (a fleet
// that grows past smallEnds moves into a heap with its ends in flight);
// and a small fleet's kept second and third earliest ends (keptAreNext).
func TestStepEndsIsAnOrderedSet(t *testing.T) {
	t.Parallel()
	aloneKnown, notAlone, thirdsKept := 0, 0, 0
	for _, n := range []int{1, 2, 3, 8, smallEnds, smallEnds + 1, 33} {
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		h := newStepEnds(n)
		require.Equal(t, n <= smallEnds, h.small)
		ref := map[int]time.Duration{}
		earliest := func() (int, time.Duration) {
			best := -1
			for i, at := range ref {
				if best < 0 || at < ref[best] || at == ref[best] && i < best {
					best = i
				}
			}
			return best, ref[best]
		}
		for op := range 20_000 {
			i := rng.IntN(len(h.pos))
			switch rng.IntN(40) {
			case 0:
				if len(h.pos) < 2*smallEnds+3 {
					h.add()
				}
			case 1:
				h.set(i, idleEnd) // a move that ends no earlier than an idle replica's mark
				ref[i] = idleEnd
			default:
				switch rng.IntN(4) {
				case 0, 1:
					at := time.Duration(rng.IntN(50)) // small: many ties
					h.set(i, at)
					ref[i] = at
				case 2:
					h.remove(i)
					delete(ref, i)
				case 3:
					if len(ref) == 0 {
						continue
					}
					wi, wat := earliest()
					got := h.pop()
					require.Equal(t, stepEnd{at: wat, rep: int32(wi)}, got, "n %d, op %d", n, op)
					delete(ref, wi)
				}
			}
			require.Equal(t, len(ref), h.len(), "n %d, op %d", n, op)
			require.Equal(t, len(h.pos) <= smallEnds, h.small, "n %d, op %d", n, op)
			for i := range h.pos {
				at, in := h.end(i)
				_, want := ref[i]
				require.Equal(t, want, in, "n %d, op %d: replica %d", n, op, i)
				if in {
					require.Equal(t, ref[i], at)
				}
			}
			if len(ref) > 0 {
				wi, wat := earliest()
				require.Equal(t, stepEnd{at: wat, rep: int32(wi)}, h.peek())
				if h.small && !h.one && keptAreNext(t, &h, ref, n, op) {
					thirdsKept++
				}
				// aloneTill, where it knows, is the map's answer: no
				// other replica's end at or before the earliest's
				// instant (stepEnd's), nor before one a little later.
				for _, at := range []time.Duration{wat, wat + time.Duration(rng.IntN(3))} {
					alone, known := h.aloneTill(wi, at)
					if !known {
						continue
					}
					want := true
					for j, jat := range ref {
						if j != wi && jat <= at {
							want = false
						}
					}
					require.Equal(t, want, alone, "n %d, op %d: aloneTill(%d, %d)", n, op, wi, at)
					aloneKnown++
					if !want {
						notAlone++ // a tie or a later instant: the kept second is read
					}
				}
				if _, known := h.aloneTill((wi+1)%len(h.pos), wat); known {
					require.Len(t, ref, 1, "n %d, op %d: aloneTill knows only of the earliest", n, op)
				}
			}
		}
	}
	require.Greater(t, aloneKnown, 2_000, "aloneTill too seldom knew")
	require.Greater(t, thirdsKept, 500, "a third end too seldom kept")
	require.Greater(t, notAlone, 100, "aloneTill too seldom found another end")
}

// TestPackedStepEndsIsAnOrderedSet is TestStepEndsIsAnOrderedSet for a
// large fleet's packed tournament (stepEnds.key), whose ends are all
// before packLimit until the last part of a run, where ends at and past
// it turn it into the wide one: both held to a plain map, over random
// sets, moves, removals, pops and replicas added; the widest fleets that
// pack (keyCap/2 replicas: their matches index the array by a byte) and
// the narrowest that do not, which keep win's from the start or from
// the replica added past keyCap/2.
func TestPackedStepEndsIsAnOrderedSet(t *testing.T) {
	for _, n := range []int{smallEnds, smallEnds + 1, 33, 64, keyCap/2 - 1, keyCap / 2, keyCap/2 + 1} {
		rng := rand.New(rand.NewPCG(uint64(n), 44))
		h := newStepEnds(n)
		ref := map[int]time.Duration{}
		earliest := func() stepEnd { // by replica, ties to the lower
			best := stepEnd{rep: -1}
			for i := range h.pos {
				if at, ok := ref[i]; ok && (best.rep < 0 || at < best.at) {
					best = stepEnd{at: at, rep: int32(i)}
				}
			}
			return best
		}
		packed := 0
		for op := range 20_000 {
			i := rng.IntN(len(h.pos))
			at := time.Duration(rng.IntN(50)) // small: many ties
			switch {
			case rng.IntN(100) == 0:
				at = packLimit - 1 - time.Duration(rng.IntN(2)) // the latest that pack
			case op > 15_000 && rng.IntN(50) == 0:
				at = packLimit + time.Duration(rng.IntN(2)) // none packs from here
			}
			switch rng.IntN(8) {
			case 0:
				if len(h.pos) < max(2*smallEnds+3, n+2) && rng.IntN(20) == 0 {
					h.add()
					if len(h.pos) > keyCap/2 {
						require.Nil(t, h.key, "n %d, op %d: past keyCap/2 replicas none packs", n, op)
					}
				}
			case 1, 2, 3, 4:
				h.set(i, at)
				ref[i] = at
			case 5:
				h.remove(i)
				delete(ref, i)
			default:
				if len(ref) == 0 {
					continue
				}
				want := earliest()
				require.Equal(t, want, h.pop(), "n %d, op %d", n, op)
				delete(ref, int(want.rep))
			}
			if h.key != nil {
				packed++
			}
			got := map[int]time.Duration{} // the ends as end reads them
			for i := range h.pos {
				if at, in := h.end(i); in {
					got[i] = at
				}
			}
			require.Equal(t, ref, got, "n %d, op %d", n, op)
			require.Equal(t, len(ref), h.len())
			if len(ref) > 0 {
				require.Equal(t, earliest(), h.peek(), "n %d, op %d", n, op)
			}
		}
		if !h.small {
			require.Nil(t, h.key, "n %d: an end past packLimit turns the tournament wide", n)
			switch {
			case n > keyCap/2:
				require.Zero(t, packed, "n %d: too wide to pack", n)
			case len(h.pos) <= keyCap/2:
				require.Greater(t, packed, 10_000, "n %d: ops with the tournament packed", n)
			}
		}
	}
}

// keptAreNext checks a small fleet's second and third earliest ends,
// where it keeps them (ok2, ok3), against the map: each the earliest of
// the replicas but those before it (ties to the lower replica).
func keptAreNext(t *testing.T, h *stepEnds, ref map[int]time.Duration, n, op int) (third bool) {
	t.Helper()
	next := func(skip ...int32) stepEnd {
		best := stepEnd{rep: -1}
		for i, at := range ref {
			if slices.Contains(skip, int32(i)) {
				continue
			}
			if x := (stepEnd{at: at, rep: int32(i)}); best.rep < 0 || x.before(best) {
				best = x
			}
		}
		return best
	}
	if h.ok2 {
		require.Equal(t, next(h.first.rep), h.second, "n %d, op %d: the second", n, op)
	}
	if h.ok3 {
		require.True(t, h.ok2, "n %d, op %d: a third without a second", n, op)
		require.Equal(t, next(h.first.rep, h.second.rep), h.third, "n %d, op %d: the third", n, op)
	}
	return h.ok3
}
