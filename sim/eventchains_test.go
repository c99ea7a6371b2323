package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/kvchain"
	"github.com/servesim/servesim/workload"
)

// answerLog is PrefixAffinity that logs, at every arrival, what it reads
// of the view: longestCached with each replica as the least held. It
// only reads, so the run routes as PrefixAffinity alone does.
type answerLog struct {
	PrefixAffinity
	log *[]int
}

func (a answerLog) Route(r *workload.Request, v *View) int {
	for least := range v.Replicas() {
		best, longest := v.longestCached(least)
		*a.log = append(*a.log, best, longest)
	}
	return a.PrefixAffinity.Route(r, v)
}

// TestChainsAreKeys holds EventsView's index taking its engines' stored
// runs by name (KVStoredChain, their keys computed when they may be
// asked for: eventchains.go) to the index taking every key
// (eventsByKeys): every answer at every arrival, and every record and
// the summary, byte for byte. It runs the random scenarios routed by
// PrefixAffinity, over EventsView with lags of 0 to 60 ms (and some
// jitter, under which runs come by their keys), and
// Regime/Fleet8PrefixEvents and a tight-pool variant of it, whose
// replicas evict (every lazy run woken at a removal). It requires runs
// stored by name, and woken.
func TestChainsAreKeys(t *testing.T) {
	t.Parallel()
	chained, wakes, removed := 0, 0, 0
	runs := eventTwins(t, twins{eventsByKeys: true}, func(r *runner) {
		if s, ok := r.cache.(*eventsState); ok {
			for _, x := range s.reps {
				chained += x.chained
				wakes += x.woken[0] + x.woken[1] + x.woken[2] + x.eager
				if x.chained > 0 {
					removed += x.removed
				}
			}
		}
	})
	t.Logf("%d runs: %d blocks stored by name, %d runs woken, %d removals", runs, chained, wakes, removed)
	require.Positive(t, chained)
	require.Positive(t, wakes)
	require.Positive(t, removed)
}

// TestForgetBucketsAreEach holds walk past a kept run kept before its
// index dropped a key (walkStale: only the keys of the buckets that
// dropped one since looked up) to walk looking every key up
// (twins.noForgetBuckets), over eventTwins' scenarios (their tight pools
// evict): the same answers at every arrival, records and summary. It
// requires such walks, and runs stamped again.
func TestForgetBucketsAreEach(t *testing.T) {
	var stale, restamped int
	runs := eventTwins(t, twins{noForgetBuckets: true}, func(r *runner) {
		if s, ok := r.cache.(*eventsState); ok {
			for _, x := range s.reps {
				stale += x.stale[0]
				restamped += x.stale[1]
			}
		}
	})
	t.Logf("%d runs: %d walks past a kept run kept before a drop, %d stamped again", runs, stale, restamped)
	require.Positive(t, stale)
	require.Positive(t, restamped)
}

// TestRemovalWakesUnkeptAreKept holds an index that keeps none of the
// runs a removal wakes for walk (wakeAll, lazyRuns.unkept) to one that
// keeps them (twins.keepRemovalWakes): the same answers at every
// arrival, records and summary, over eventTwins' scenarios and
// twoReplicasFilled, whose pools fill early, so that the twin's arenas
// fill with the runs a removal woke and are dropped whole. It requires runs left
// unkept, and the twin's arenas dropped.
func TestRemovalWakesUnkeptAreKept(t *testing.T) {
	t.Parallel()
	runs, unkept := eventTwinsFilled(t, twins{keepRemovalWakes: true}, func(x *eventIndex) int { return x.unkept })
	cfg, src := twoReplicasFilled(t)
	_, r, err := runSourceScenarioWith(cfg, src(), twins{keepRemovalWakes: true})
	require.NoError(t, err)
	dropped := sumIndexes(r, func(x *eventIndex) int { return x.dropped })
	t.Logf("%d runs: %d runs a removal woke left unkept; the twin's arenas dropped %d times", runs, unkept, dropped)
	require.Positive(t, dropped, "the twin's arenas dropped whole")
	require.Positive(t, unkept)
}

// TestChainKeysPastRemovalsAreByName holds an index that takes its
// engine's stored runs along consecutive ids by their keys past its
// first removal (eventIndex.ChainKeys, KVStoredChainKeys) to one that
// takes them by name throughout (twins.chainsByName): the same answers
// at every arrival, records and summary, over eventTwins' scenarios
// (some with jitter, where each key is an event of its own) and
// twoReplicasFilled, whose pools fill. It requires blocks taken so.
func TestChainKeysPastRemovalsAreByName(t *testing.T) {
	t.Parallel()
	requireFilledTwin(t, twins{chainsByName: true}, "blocks of runs taken by their keys", func(x *eventIndex) int { return x.keyed })
}

// TestChainKeysQueueAsChains holds an index's queue taking stored runs
// by their keys (KVStoredChainKeys) to its twin's taking the same runs
// by name (KVStoredChain), with removals between, over random streams
// with a lag, and with jitter (the indexes drawing from streams of one
// seed): the same runs seen at the same instants after each call, and
// with jitter (each key an event of its own, by name too) the same keys
// queued; without, the keys queued as KVEvents queues them, none kept
// for walk.
func TestChainKeysQueueAsChains(t *testing.T) {
	t.Parallel()
	taken := 0
	for seed := range uint64(40) {
		rng, xs := queueTwins(seed, 55, 3)
		x, twin, ref := xs[0], xs[1], xs[2]
		var at time.Duration
		for range 100 {
			at += time.Duration(rng.IntN(3)) * time.Millisecond / 2
			if rng.IntN(3) == 0 {
				keys := []uint64{rng.Uint64N(50), rng.Uint64N(50)}
				for _, y := range []*eventIndex{x, twin, ref} {
					y.KVRemovedLastFirst(at, keys)
				}
				continue
			}
			c := kvchain.Run{Parent: rng.Uint64(), ID: rng.Uint64N(1000), R: rng.IntN(2), Per: 1 + rng.IntN(2), B: 16, N: 1 + rng.IntN(40)}
			c.R %= c.Per
			keys := make([]uint64, c.N)
			c.Keys(keys)
			x.KVStoredChainKeys(at, keys)
			twin.KVStoredChain(at, c)
			ref.KVEvents(at, keys, false)
			taken += c.N
			require.Equal(t, runsSeen(twin.runs), runsSeen(x.runs), "seed %d", seed)
			require.Equal(t, ref.runs, x.runs, "seed %d", seed)
			require.Equal(t, ref.keys, x.keys, "seed %d", seed)
			require.Empty(t, x.segs, "seed %d", seed)
			if x.rand != nil {
				require.Equal(t, twin.keys, x.keys, "seed %d", seed)
			}
		}
	}
	require.Positive(t, taken)
}

// runsSeen is the instants and kinds of a queue's runs, without their
// starts in its keys (a run by name queues none).
func runsSeen(runs []eventRun) []eventRun {
	out := make([]eventRun, len(runs))
	for i, r := range runs {
		out[i] = eventRun{seen: r.seen, gone: r.gone}
	}
	return out
}

// twoReplicasFilled is Regime/Fleet8PrefixEvents's workload on two of
// its replicas, at its rate a replica, with pools of 2,000 blocks,
// 2,400 requests: each index takes 1,200 requests' runs, its pool full
// early.
func twoReplicasFilled(t *testing.T) (Config, func() workload.Source) {
	cfg := Config{Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{Engine: engine.Config{KVBlocks: 2_000}}),
		Router: PrefixAffinity{View: EventsView{Lag: 50 * time.Millisecond}}}}
	return cfg, sharedPrefix(t, 2, 2, 2_400)
}

// eventTwinsFilled is eventTwins and twoReplicasFilled with the slow
// twins twin: it returns how many runs it made and count summed over
// the indexes of those without the twin.
func eventTwinsFilled(t *testing.T, twin twins, count func(*eventIndex) int) (runs, n int) {
	seen := func(r *runner) { n += sumIndexes(r, count) }
	runs = eventTwins(t, twin, seen) + 1
	cfg, src := twoReplicasFilled(t)
	eventTwin(t, twin, "Fleet8PrefixEvents's workload on 2 replicas", cfg, src, seen)
	return runs, n
}

// sumIndexes is count summed over r's EventsView indexes (0 without).
func sumIndexes(r *runner, count func(*eventIndex) int) (n int) {
	if s, ok := r.cache.(*eventsState); ok {
		for _, x := range s.reps {
			n += count(x)
		}
	}
	return n
}

// TestUnseenDropsAreForgotten holds an index that counts forgotten only
// the keys it drops that a walk found or a kept run holds
// (maskCounts.drop) to one that counts every key it drops
// (twins.forgetUnseen): the same answers at every arrival, records and
// summary, over eventTwins' scenarios and twoReplicasFilled, whose pools
// fill. It requires keys dropped unseen.
func TestUnseenDropsAreForgotten(t *testing.T) {
	t.Parallel()
	runs, unseen := eventTwinsFilled(t, twins{forgetUnseen: true}, func(x *eventIndex) int { return x.unseen })
	t.Logf("%d runs: %d keys dropped unseen", runs, unseen)
	require.Positive(t, unseen)
}

// eventTwins runs the random scenarios routed by PrefixAffinity, over
// EventsView with lags of 0 to 60 ms (and some jitter), and
// Regime/Fleet8PrefixEvents and a tight-pool variant of it, whose
// replicas evict, each without and with the slow twins twin, and
// holds the two to the same answers at every arrival (answerLog) and
// the same records and summary, byte for byte; seen is given each run
// without them. It returns how many scenarios it ran.
func eventTwins(t *testing.T, twin twins, seen func(*runner)) int {
	runs := 0
	check := func(name string, cfg Config, src func() workload.Source) {
		eventTwin(t, twin, name, cfg, src, seen)
		runs++
	}
	for seed := range uint64(600) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		pa, ok := cfg.Fleet.Router.(PrefixAffinity)
		if !ok || cfg.Fleet.Prefill.On() {
			continue
		}
		pa.View = EventsView{Lag: time.Duration(seed%4) * 20 * time.Millisecond}
		if seed%5 == 0 {
			pa.View = EventsView{Lag: 10 * time.Millisecond, Jitter: 7 * time.Millisecond}
		}
		cfg.Fleet.Router = pa
		check("seed "+string(rune('0'+seed%10)), cfg, func() workload.Source { src := append(list(nil), reqs...); return &src })
	}
	for _, rg := range regimes {
		if rg.name == "Fleet8PrefixEvents" {
			cfg, src := rg.build(t, 200)
			check(rg.name, cfg, src)
			for i := range cfg.Fleet.Replicas {
				cfg.Fleet.Replicas[i].Engine.KVBlocks = 2_000
			}
			check(rg.name+", tight", cfg, src)
		}
	}
	return runs
}

// eventTwin runs cfg on src, PrefixAffinity's, with the slow twins
// twin, without and with, and holds the two to the same answers at every
// arrival (answerLog) and the same records and summary, byte for byte;
// seen is given the run without them.
func eventTwin(t *testing.T, twin twins, name string, cfg Config, src func() workload.Source, seen func(*runner)) {
	var out [2]scenarioRun
	var logs [2][]int
	for i, on := range []bool{false, true} {
		c := cfg
		c.Fleet.Router = answerLog{PrefixAffinity: cfg.Fleet.Router.(PrefixAffinity), log: &logs[i]}
		tw := twins{}
		if on {
			tw = twin
		}
		run, r, err := runSourceScenarioWith(c, src(), tw)
		require.NoError(t, err, name)
		out[i] = run
		if !on {
			seen(r)
		}
	}
	require.Equal(t, logs[1], logs[0], "%s: the answers", name)
	require.Equal(t, string(out[1].text), string(out[0].text), "%s: the records", name)
}

// TestWalkIsEachOverChains holds an index taking stored runs by name
// (KVStoredChain) to its twin taking every key (KVEvents), over random
// streams on a few paths of chained blocks (runs of consecutive ids
// after a common root, sharing leading runs): runs stored by name or by
// key, from anywhere along a path (inside runs held already, so that
// their first keys are held, or begin inside a kept run), keys removed,
// and each path walked, from 0 and from its last answer while nothing
// was forgotten since (as runMemo). The two must hold the same copies of
// every key (a lazy run's keys computed), have forgotten as many, and
// walk every path as far. It requires runs left lazy, woken by a walk,
// by a kept run, and by a removal, and runs applied woken at once.
func TestWalkIsEachOverChains(t *testing.T) {
	t.Parallel()
	const root = 0x5e7e5e7e5e7e5e7e
	type seg struct{ id, n int }
	var lazyLeft, wokenWalk, wokenKeep, wokenAll, eager int
	{ // by hand: a run by name inside the path, then a kept run by key over its first key, which walk compares as memory
		c := kvchain.Run{Parent: root, ID: 7, Per: 1, B: 16, N: 40}
		keys := make([]uint64, c.N)
		c.Keys(keys)
		x := &eventIndex{s: &eventsState{}, held: ownKeys()}
		x.KVStoredChain(0, kvchain.Run{Parent: keys[4], ID: 7 + 5, Per: 1, B: 16, N: 35})
		x.catchUp(0)
		require.Equal(t, 0, x.walk(keys, 0), "the run by name begins at block 5")
		x.KVEvents(0, keys[:20], false)
		x.catchUp(0)
		require.Equal(t, 40, x.walk(keys, 0), "the kept run reaches into the run by name")
		require.Equal(t, 1, x.woken[1], "woken by the kept run")
		// By hand too: a run by name whose first key a lazy run begins
		// with (woken at once, and kept), shorter than the lazy one,
		// which it wakes: walk compares it as memory and goes on into
		// the lazy one's keys past it.
		y := &eventIndex{s: &eventsState{}, held: ownKeys()}
		y.KVStoredChain(0, kvchain.Run{Parent: root, ID: 7, Per: 1, B: 16, N: 40})
		y.catchUp(0)
		y.KVStoredChain(0, kvchain.Run{Parent: root, ID: 7, Per: 1, B: 16, N: 20})
		y.catchUp(0)
		require.Equal(t, 1, y.eager, "the second run comes woken")
		require.Equal(t, 40, y.walk(keys, 0), "the kept run wakes the lazy one it begins")
	}
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 43))
		// Paths: each a list of segments of consecutive ids; a new one
		// shares a leading part of an earlier one.
		var paths [][]seg
		for range 8 {
			var p []seg
			if len(paths) > 0 && rng.IntN(3) > 0 {
				q := paths[rng.IntN(len(paths))]
				p = append(p, q[:rng.IntN(len(q)+1)]...)
			}
			for range 1 + rng.IntN(3) {
				p = append(p, seg{id: rng.IntN(50), n: 1 + rng.IntN(40)})
			}
			paths = append(paths, p)
		}
		// A path's keys, and the runs by name of its segments.
		keysOf := func(p []seg) ([]uint64, []kvchain.Run) {
			var keys []uint64
			var runs []kvchain.Run
			k := uint64(root)
			for _, s := range p {
				c := kvchain.Run{Parent: k, ID: uint64(s.id), Per: 1, B: 16, N: s.n}
				ks := make([]uint64, s.n)
				k = c.Keys(ks)
				keys = append(keys, ks...)
				runs = append(runs, c)
			}
			return keys, runs
		}
		x := &eventIndex{s: &eventsState{}, held: ownKeys()}
		twin := &eventIndex{s: &eventsState{}, held: ownKeys()}
		last := make([]int, len(paths))
		lastForgot := make([]uint64, len(paths))
		for i := range last {
			lastForgot[i] = ^uint64(0)
		}
		now := time.Duration(0)
		for op := range 400 {
			p := rng.IntN(len(paths))
			keys, runs := keysOf(paths[p])
			if len(keys) == 0 {
				continue
			}
			switch rng.IntN(6) {
			case 0, 1, 2: // a run of a segment by name, from any block of it
				s := rng.IntN(len(runs))
				c := runs[s]
				off := 0
				for _, r := range runs[:s] {
					off += r.N
				}
				lo := rng.IntN(c.N)
				hi := lo + 1 + rng.IntN(c.N-lo)
				if lo > 0 {
					c.Parent = keys[off+lo-1]
				}
				c.ID += uint64(lo)
				c.N = hi - lo
				x.KVStoredChain(now, c)
				twin.KVEvents(now, keys[off+lo:off+hi], false)
			case 3: // keys by key, from the path's first in half (a kept run walk compares as memory from there)
				lo := 0
				if rng.IntN(2) == 0 {
					lo = rng.IntN(len(keys))
				}
				hi := lo + 1 + rng.IntN(len(keys)-lo)
				x.KVEvents(now, keys[lo:hi], false)
				twin.KVEvents(now, keys[lo:hi], false)
			case 4: // removed
				if rng.IntN(3) == 0 {
					lo := rng.IntN(len(keys))
					hi := lo + 1 + rng.IntN(min(4, len(keys)-lo))
					x.KVEvents(now, keys[lo:hi], true)
					twin.KVEvents(now, keys[lo:hi], true)
				}
			}
			if rng.IntN(2) == 0 {
				now += time.Millisecond
			}
			x.catchUp(now)
			twin.catchUp(now)
			for q := range paths {
				if rng.IntN(2) == 0 {
					continue
				}
				keys, _ := keysOf(paths[q])
				want := twin.walkEach(keys, 0)
				from := 0
				if lastForgot[q] == x.forgot && rng.IntN(4) > 0 {
					from = min(last[q], len(keys))
				}
				got := x.walk(keys, from)
				require.Equal(t, want, got, "seed %d op %d path %d from %d", seed, op, q, from)
				last[q], lastForgot[q] = got, x.forgot
			}
			held := x.held.asMap()
			for _, c := range x.lazy.runs {
				if c.N > 0 {
					lazyLeft++
					ks := make([]uint64, c.N)
					c.Keys(ks)
					for _, k := range ks[1:] {
						held[k]++
					}
				}
			}
			require.Equal(t, twin.held.asMap(), held, "seed %d op %d: the copies", seed, op)
			// Dropped keys alike; those counted forgotten are the ones a
			// walk found or a kept run holds (maskCounts.drop), which walk
			// and walkEach find each their own way.
			require.Equal(t, twin.forgot+uint64(twin.unseen), x.forgot+uint64(x.unseen), "seed %d op %d: dropped", seed, op)
			if x.lazy.live == 0 && x.lazy.bits != nil { // the filter empty (clearBits)
				require.Equal(t, make([]uint64, len(x.lazy.bits)), x.lazy.bits, "seed %d op %d: the filter of no lazy run", seed, op)
			}
		}
		eager += x.eager
		wokenWalk += x.woken[0]
		wokenKeep += x.woken[1]
		wokenAll += x.woken[2]
	}
	t.Logf("lazy runs left at a check %d; woken by a walk %d, by a kept run %d, by a removal %d; applied woken %d", lazyLeft, wokenWalk, wokenKeep, wokenAll, eager)
	require.Positive(t, lazyLeft)
	require.Positive(t, wokenWalk)
	require.Positive(t, wokenKeep)
	require.Positive(t, wokenAll)
	require.Positive(t, eager)
}
