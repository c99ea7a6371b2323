package sim

import (
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/kvchain"
)

// An engine's stored runs of blocks along consecutive ids (a request's
// own, mostly) come to the index by name (KVStoredChain: the key before
// them, their first unit and how many), and are applied without their
// keys: the first is computed and held, the rest (the run's interior)
// are computed only when the index may be asked about them (wake). A
// key is chained on the one before it, so an arrival's chain holds a
// run's interior key only where it holds the run's first key, at the
// place before (a collision of different chains is a 2⁻⁶⁴ event, as in
// the engine's run pool, which names its blocks by content too). The
// index finds that first key held in one of three ways, each of which
// wakes the run before the interior is looked up:
//
//   - walk looks it up (and finds it held): it wakes the run whose first
//     key it is (wakeKey);
//   - a memo of an earlier walk (runMemo) covers it: the key was held
//     then, and nothing forgotten since, so it was held when the run
//     came, which is then applied with its keys (storeChain: a run whose
//     first key is held already is woken at once);
//   - walk compares it as memory in a kept run (keep): a kept run's keys
//     wake the runs whose first keys they are, when kept (wakeIn: only
//     if adding them met a key held already, as a lazy run's first is).
//
// A removal wakes every run first (wakeAll): the engine names a removed
// block by its key.
//
// Regime/Fleet8PrefixEvents, TestInstructionBudget: 17,832 then 16,241
// instructions a request with a Go map of the lazy runs (cachegrind's
// marginal count: the engine's chainRun (now kvchain.Fill) 1,552 then 450, the group
// prefixes' keys alone, the requests' own no longer computed;
// keyCounts.addSome 1,263 then 439), and 15,857 with the changes noted
// below (lazyRuns, maybe, keyCounts.addOne; keep 62 then 211, its loop
// over a kept run's keys for the lazy runs they begin). No run is woken
// there: its pools do not fill. So the index holds the same copies as if every key
// had come, and walk and run answer as they would: TestChainsAreKeys
// holds a fleet's every answer and routing to the index fed key by key
// (eventsByKeys), and TestWalkIsEachOverChains walk to its twin over
// runs stored by name, woken and not.

// queuedChain is a stored run of blocks by name, queued in run `run`
// of the index's queue (eventIndex.runs).
type queuedChain struct {
	run int32
	c   kvchain.Run
}

// lazyRuns are an index's applied runs by name whose keys, but the
// first, it has not computed: at most one a first key (a run whose first
// key is held comes woken; a removal wakes every run, and at is cleared
// once none is lazy, its only deletion). In a table of their own, not a
// Go map: Regime/Fleet8PrefixEvents, TestInstructionBudget, 16,241 then
// 16,135 instructions a request (the map's inserts and growth were 260,
// cachegrind's marginal count).
//
// The table is brought up to date only when it is read (indexTo, from
// queueWake): a run applied is appended to runs, its first key beside
// it (firsts), and put in at only when a key the filter lets by is
// looked up, which the requests' own runs, never asked about, seldom
// meet. Put at every storeChain, the table's inserts and its doublings
// (its runs pile up while none is woken) cost Regime/Fleet8PrefixEvents
// about 125 instructions a request (runStarts.put 57, grow 67,
// cachegrind's marginal count). Each run is put once, in the order
// applied, before any lookup, so at holds what it held when put at
// once: TestChainsAreKeys and TestWalkIsEachOverChains.
type lazyRuns struct {
	runs    []kvchain.Run // in the order applied; N 0: woken
	firsts  []uint64      // by run: its first key
	indexed int           // the runs put in at, runs[:indexed]
	at      runStarts     // by first key: its run (off; woken too, until none is lazy), doubling
	bits    []uint64      // a filter of the first keys: bit hash>>lazyShift, set while one may be lazy
	live    int           // runs not woken
	woken   []int32       // runs to wake (drain)
	buf     []uint64      // the keys of the run being woken
	unkept  bool          // the runs drain wakes are not kept (a removal's: wakeAll)
}

// lazyShift picks a filter bit from a key's hash (key × keyMul): 2¹⁶
// bits (8 KiB).
const lazyShift = 64 - 16

// keysOnly is an index publishing takes by keys alone (eventsByKeys).
type keysOnly struct{ x *eventIndex }

func (k keysOnly) KVEvent(ev engine.KVEvent) { k.x.KVEvent(ev) }

func (k keysOnly) KVEvents(at time.Duration, keys []uint64, removed bool) {
	k.x.KVEvents(at, keys, removed)
}

// KVStoredChain queues the stored run c of the replica's engine, made at
// at, by name (its keys computed when applied, and then only the first
// while none is asked for); with jitter, each event with its own draw,
// by its key.
func (x *eventIndex) KVStoredChain(at time.Duration, c kvchain.Run) {
	if x.rand != nil || c.N < 2 {
		x.KVEvents(at, x.chainKeys(c), false)
		return
	}
	x.enqueue(at+x.s.cfg.Lag, false, c.N)
	x.qchains = append(x.qchains, queuedChain{run: int32(len(x.runs) - 1), c: c})
	x.chained += c.N
}

// ChainKeys reports whether the index takes its engine's stored runs
// along consecutive ids by their keys (KVStoredChainKeys), not by name
// (KVStoredChain): past its first removal, unless twins.chainsByName.
// There every removal wakes every run taken by name (wakeAll), before
// any walk asks about the requests' own runs, which are nearly all of
// them: their keys were computed twice, by the index at the wake and by
// the engine at their eviction (kvchain.Fill 2,206 instructions a
// request in Regime/Fleet8PrefixEvents past its pools' fill), and each
// run was queued, filtered and woken. The engine computes them once,
// at the store, and keeps them for the eviction.
// TestChainKeysPastRemovalsAreByName holds it to the twin.
func (x *eventIndex) ChainKeys() bool { return x.removed > 0 && !x.byName }

// KVStoredChainKeys queues the stored run of keys, made at at, along
// consecutive ids (the engine's kvChainKeysSink): KVStoredChain of the
// run they are the keys of. Its keys are held at once, as a run by name
// woken by a removal, and kept for walk no more than such a run is
// (wakeAll: the requests' own runs, which no arrival asks about).
func (x *eventIndex) KVStoredChainKeys(at time.Duration, keys []uint64) {
	x.keyed += len(keys)
	if x.rand != nil {
		x.KVEvents(at, keys, false)
		return
	}
	x.enqueue(at+x.s.cfg.Lag, false, len(keys))
	x.keys = append(x.keys, keys...)
}

// chainKeys is c's keys, in the index's buffer.
func (x *eventIndex) chainKeys(c kvchain.Run) []uint64 {
	l := &x.lazy
	if cap(l.buf) < c.N {
		l.buf = make([]uint64, c.N)
	}
	keys := l.buf[:c.N]
	c.Keys(keys)
	return keys
}

// storeChains applies the runs by name queued in run i of the queue.
func (x *eventIndex) storeChains(i int) {
	for x.chainHead < len(x.qchains) && int(x.qchains[x.chainHead].run) == i {
		x.storeChain(x.qchains[x.chainHead].c)
		x.chainHead++
	}
	x.drain()
}

// storeChain applies the stored run c: its first key held, the rest
// left to wake, unless the first was held already (or is key 0, which
// the filter does not take), when every key is.
func (x *eventIndex) storeChain(c kvchain.Run) {
	first := c.First()
	h := first * keyMul
	if h == 0 {
		x.materialize(c, false)
		return
	}
	if !x.held.addOne(first) { // held already: woken at once
		x.eager++
		x.materialize(c, true)
		return
	}
	l := &x.lazy
	if l.bits == nil {
		l.bits = make([]uint64, 1<<(64-lazyShift)/64)
	}
	l.runs, l.firsts = append(l.runs, c), append(l.firsts, first) // put in at when read (indexTo)
	l.bits[h>>lazyShift/64] |= 1 << (h >> lazyShift % 64)
	l.live++
}

// maybe reports whether a lazy run may begin with key k (the filter):
// inline in its callers' loops, a call to queueWake only when it may
// (a kept run's keys, walk's keys held): with the test in queueWake,
// called a key, Regime/Fleet8PrefixEvents, TestInstructionBudget, 16,135
// then 15,900 instructions a request (keep 147 and queueWake 275 so,
// cachegrind's marginal count).
func (l *lazyRuns) maybe(k uint64) bool {
	h := k * keyMul
	return l.bits[h>>lazyShift/64]&(1<<(h>>lazyShift%64)) != 0
}

// queueWake notes the run whose first key is k, if it is lazy, to be
// woken (drain).
func (x *eventIndex) queueWake(k uint64, by int) {
	l := &x.lazy
	if l.indexed < len(l.runs) {
		l.indexTo()
	}
	if r, ok := l.at.get(k); ok && l.runs[r.off].N > 0 {
		l.woken = append(l.woken, r.off)
		x.woken[by]++
	}
}

// indexTo puts the runs applied since the table was last read in it, by
// their first keys, in the order applied.
func (l *lazyRuns) indexTo() {
	l.at.doubles = true
	for i := l.indexed; i < len(l.runs); i++ {
		l.at.put(l.firsts[i], storedRun{off: int32(i)})
	}
	l.indexed = len(l.runs)
}

// wakeKey wakes the run whose first key is k, if it is lazy (walk found
// k held, and the filter let it by: maybe), and those it wakes in turn.
func (x *eventIndex) wakeKey(k uint64) {
	x.queueWake(k, 0)
	x.drain()
}

// wakeAll wakes every lazy run, in the order they came, and keeps none
// of them for walk (unkept), unless twins.keepRemovalWakes.
//
// They are a removal's: past the pools' fill, the runs of the
// requests' own blocks, which no arrival asks about. Kept, they filled
// an index's arena (maxArena keys), which is then dropped whole, and
// with it the group prefixes' runs, stored once and kept then: walk
// looked every key of a prefix up, 1.83 million keys between 6,400 and
// 12,800 requests of Regime/Fleet8PrefixEvents (286 a request; 25,000
// so). Whether a run is kept changes no answer (walk's twin, walkEach,
// looks every key up); a run not kept needs no wakeIn, since walk looks
// its keys up, waking the lazy runs they begin, and here every lazy run
// is woken anyway. Regime/Fleet8PrefixEvents, TestInstructionBudget's
// marginal count between 6,400 and 12,800 requests: 39,251 then 29,699
// instructions a request (walk 15,650 then 400; walkStale 141 then
// 5,224, the prefixes' runs kept now). TestRemovalWakesUnkeptAreKept
// holds it to the twin.
func (x *eventIndex) wakeAll() {
	l := &x.lazy
	for i, c := range l.runs {
		if c.N > 0 {
			l.woken = append(l.woken, int32(i))
			x.woken[2]++
		}
	}
	l.unkept = !x.keepAll
	x.drain()
	l.unkept = false
}

// drain wakes the runs noted (queueWake), and those their keys note in
// turn: each gets its keys but the first, held already, and is kept for
// walk when long, as store keeps an engine's call of many keys.
func (x *eventIndex) drain() {
	l := &x.lazy
	for len(l.woken) > 0 {
		i := l.woken[len(l.woken)-1]
		l.woken = l.woken[:len(l.woken)-1]
		c := l.runs[i]
		if c.N == 0 { // noted twice
			continue
		}
		l.runs[i].N = 0
		l.live--
		x.materialize(c, true)
	}
	if l.live == 0 && len(l.runs) > 0 {
		l.clearBits()
		l.runs, l.firsts, l.indexed = l.runs[:0], l.firsts[:0], 0
		l.at.clear()
	}
}

// clearBits empties the filter once no run is lazy: the words of the
// runs' first keys, the only bits set (storeChain), when they are few
// against its 1,024, else every word. Past the pools' fill a removal
// wakes the few runs that came since the last (wakeAll), and the whole
// filter's clear (8 KiB) was most of the cost of emptying it:
// Regime/Fleet8PrefixEvents at 6,400 requests, TestInstructionBudget's
// marginal count between 3,200 and 6,400, 32,151 then 31,285
// instructions a request (memclrNoHeapPointers 963, then under 523).
// TestWalkIsEachOverChains holds the filter empty whenever no run is
// lazy.
func (l *lazyRuns) clearBits() {
	if len(l.firsts) >= len(l.bits)/8 {
		clear(l.bits)
		return
	}
	for _, f := range l.firsts {
		l.bits[f*keyMul>>lazyShift/64] = 0
	}
}

// materialize adds c's keys, but the first with held (its first is
// held already), and keeps them for walk when they are many, unless
// unkept (a removal's wakes: wakeAll); the keys kept note the lazy runs
// they begin (queueWake, via keep).
func (x *eventIndex) materialize(c kvchain.Run, held bool) {
	keys := x.chainKeys(c)
	again := x.held.t.repeats
	if held {
		x.held.add(keys[1:])
	} else {
		x.held.add(keys)
	}
	if len(keys) >= minStored && len(keys) <= maxArena {
		if x.lazy.unkept {
			x.unkept++
			return
		}
		x.keep(keys)
		x.held.see(keys)
		// A key held already may begin a lazy run (wakeIn); the first,
		// held before with held, needs no look: walk looks a kept run's
		// first key up itself, waking the run it begins, before it
		// compares the rest as memory.
		if x.held.t.repeats != again && x.lazy.live > 0 {
			x.wakeIn(keys)
		}
	}
}
