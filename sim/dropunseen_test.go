package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// dropOutcome is drop's answer for one key: 0 not gone, 1 gone unseen,
// 2 gone seen.
func dropOutcome(gone, seen bool) int8 {
	switch {
	case !gone:
		return 0
	case !seen:
		return 1
	}
	return 2
}

// dropRunFast drops keys for the replica of bit as eventIndex.apply
// does: the leading last copies unseen by dropUnseen, each other key by
// drop; it returns each key's outcome and how many dropUnseen took.
func dropRunFast(c *maskCounts, keys []uint64, bit uint64) (out []int8, fast int) {
	rk := replicaKeys{t: c, bit: bit}
	for len(keys) > 0 {
		n := rk.dropUnseen(keys)
		for range n {
			out = append(out, 1)
		}
		fast += n
		if keys = keys[n:]; len(keys) == 0 {
			break
		}
		gone, seen := rk.drop(keys[0])
		out = append(out, dropOutcome(gone, seen))
		keys = keys[1:]
	}
	return out, fast
}

// TestDropUnseenIsDrop holds a removal's keys dropped as apply drops
// them (maskCounts.dropUnseen, then drop at each key it stops at) to
// drop key by key (twins.dropEach): two tables shared by up to four
// replicas, given the same random adds, lookups (has, which marks a key
// seen), keeps (see) and runs of removals, answer every drop alike and
// are equal slot for slot (hashes, masks, marks, count, the copies past
// a replica's first, key 0's) after each. The keys are tableKeys', whose
// probe runs wrap around the table's end, and key 0. It requires keys
// dropped by dropUnseen, runs it stopped in, and runs met with copies
// past a replica's first (which dropUnseen leaves to drop).
func TestDropUnseenIsDrop(t *testing.T) {
	t.Parallel()
	pool := tableKeys()
	fast, stopped, more := 0, 0, 0
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 53))
		n := 1 + int(seed%4)
		bitOf := []uint64{1, 1 << 5, 1 << 63, 1 << 2}[:n]
		a, b := newMaskCounts(), newMaskCounts()
		if seed%3 == 1 {
			a.sizeFor(200)
			b.sizeFor(200)
		}
		keys := func(m int) []uint64 {
			ks := make([]uint64, m)
			for i := range ks {
				ks[i] = pool[rng.IntN(len(pool))]
			}
			return ks
		}
		for range 600 {
			bit := bitOf[rng.IntN(n)]
			switch op := rng.IntN(10); {
			case op < 4: // stored: a batch of keys, a copy past the first seldom
				ks := keys(1 + rng.IntN(30))
				if rng.IntN(8) > 0 {
					ks = slices.DeleteFunc(ks, func(k uint64) bool { return b.mask(k)&bit != 0 })
					slices.Sort(ks)
					ks = slices.Compact(ks)
				}
				a.add(ks, bit)
				b.add(ks, bit)
			case op < 5: // looked up: found, marked seen
				for _, k := range keys(1 + rng.IntN(4)) {
					require.Equal(t, b.has(k, bit), a.has(k, bit))
				}
			case op < 6: // kept: marked seen
				ks := keys(1 + rng.IntN(6))
				a.see(ks, bit)
				b.see(ks, bit)
			default: // removed: a run of keys, most held
				ks := keys(1 + rng.IntN(40))
				if rng.IntN(8) > 0 {
					ks = slices.DeleteFunc(ks, func(k uint64) bool { return b.mask(k)&bit == 0 })
				}
				if len(b.more) > 0 {
					more++
				}
				got, n := dropRunFast(a, ks, bit)
				var want []int8
				for _, k := range ks {
					want = append(want, dropOutcome(b.drop(k, bit)))
				}
				require.Equal(t, want, got, "seed %d", seed)
				fast += n
				if n > 0 && n < len(ks) {
					stopped++
				}
			}
			require.Equal(t, b.tab, a.tab, "seed %d", seed)
			require.Equal(t, b.more, a.more, "seed %d", seed)
			require.Equal(t, b.zero, a.zero, "seed %d", seed)
		}
	}
	t.Logf("%d keys dropped by dropUnseen, %d runs it stopped in, %d runs with copies past the first", fast, stopped, more)
	require.Positive(t, fast)
	require.Positive(t, stopped)
	require.Positive(t, more)
}

// TestUnseenDropsAreDropEach holds an index that drops a removal's last
// copies unseen in one loop (maskCounts.dropUnseen) to one that drops
// each key by drop (twins.dropEach): the same answers at every arrival,
// records and summary, over eventTwins' scenarios and
// twoReplicasFilled, whose pools fill. It requires keys dropped so.
func TestUnseenDropsAreDropEach(t *testing.T) {
	t.Parallel()
	requireFilledTwin(t, twins{dropEach: true}, "keys dropped unseen in one loop", func(x *eventIndex) int { return x.unseenRun })
}

// requireFilledTwin runs eventTwinsFilled with twin and requires count,
// summed over the indexes of the runs without it, positive: what it
// counts.
func requireFilledTwin(t *testing.T, twin twins, what string, count func(*eventIndex) int) {
	t.Helper()
	runs, n := eventTwinsFilled(t, twin, count)
	t.Logf("%d runs: %d %s", runs, n, what)
	require.Positive(t, n, what)
}

// TestRemovedLastFirstIsKVEvents holds an index's queue taking runs of
// removals last first (KVRemovedLastFirst) to its twin's taking them
// reversed (KVEvents), with stored runs between, over random streams
// with a lag, and with jitter (the two indexes drawing from streams of
// one seed): the same keys queued, in the same runs, seen at the same
// instants, after each call.
func TestRemovedLastFirstIsKVEvents(t *testing.T) {
	t.Parallel()
	taken := 0
	for seed := range uint64(40) {
		rng, xs := queueTwins(seed, 54, 2)
		x, twin := xs[0], xs[1]
		var at time.Duration
		for range 200 {
			at += time.Duration(rng.IntN(3)) * time.Millisecond / 2
			keys := make([]uint64, rng.IntN(6))
			for i := range keys {
				keys[i] = rng.Uint64N(50)
			}
			if rng.IntN(2) == 0 {
				x.KVEvents(at, keys, false)
				twin.KVEvents(at, keys, false)
			} else {
				x.KVRemovedLastFirst(at, keys)
				rev := slices.Clone(keys)
				slices.Reverse(rev)
				twin.KVEvents(at, rev, true)
				taken += len(keys)
			}
			require.Equal(t, twin.keys, x.keys, "seed %d", seed)
			require.Equal(t, twin.runs, x.runs, "seed %d", seed)
			require.Equal(t, twin.removed, x.removed, "seed %d", seed)
		}
	}
	require.Positive(t, taken)
}

// queueTwins is n indexes alike for a test of their queues, seed's: a
// lag of seed%3 ms, and on odd seeds a jitter of 3 ms drawn from
// streams of one seed; and the test's random stream (seed, salt).
func queueTwins(seed, salt uint64, n int) (*rand.Rand, []*eventIndex) {
	cfg := EventsView{Lag: time.Duration(seed%3) * time.Millisecond}
	xs := make([]*eventIndex, n)
	for i := range xs {
		xs[i] = &eventIndex{s: &eventsState{cfg: cfg}, held: ownKeys()}
		if seed%2 == 1 {
			xs[i].s.cfg.Jitter = 3 * time.Millisecond
			xs[i].rand = workload.NewStream(seed, "j")
		}
	}
	return rand.New(rand.NewPCG(seed, salt)), xs
}

// TestRemovalsLastFirstAreReversed holds an index that takes an
// eviction's removals in the blocks' order and reverses them as it
// queues them (eventIndex.KVRemovedLastFirst) to one whose engine
// reverses them first (twins.removedReversed): the same answers at
// every arrival, records and summary, over eventTwins' scenarios (some
// with jitter, where each removal is an event of its own) and
// twoReplicasFilled, whose pools fill. It requires removals taken so.
func TestRemovalsLastFirstAreReversed(t *testing.T) {
	t.Parallel()
	requireFilledTwin(t, twins{removedReversed: true}, "removals taken last first", func(x *eventIndex) int { return x.lastFirst })
}
