package sim

import (
	"time"

	"github.com/servesim/servesim/engine"
)

// plainChunks accounts out's emits from the i-th on while they are plain
// chunks, as accountChunk would, and returns the index of the first that
// is not (len(out.Emitted) when none) and the tokens of those it
// accounted, which accountChunks adds to the window's (r.tokens). A chunk is plain when its step
// drafted a full K (K + 1 < gapLanes) and it accepted n − 1 of them for
// its n tokens, it is not the request's last, and its request's last
// token was the first plain chunk's (so that its gap is theirs), without
// classes or kept tokens: the usual emit, a speculative step's member.
// Off with Config.Stepwise, which accounts every emit with accountChunk,
// its twin, and with eachChunk, which keeps the engine's fast paths
// (FuzzPlainChunksAreEachChunk, TestPlainChunksAreEachChunk).
//
// Their gaps are all g, the step's: a chunk of n tokens adds g to the
// fleet's series and g/n, n times, to the retokenized one, and its
// record takes the same g, g/n and verdict against the bound as every
// chunk of n with that gap. So the loop reads them from a table by n
// (chunkTable, made again only when g, K or the replica changes) and
// counts the measured chunks by n; the counts reach the gap runs and the
// specStats when the table changes and before the summary (chunkCounts):
// the histograms' counts are integers, the same whatever the grouping
// (weighted). Each chunk costs its record's fields and a count, where it
// cost its gap's division, its runs' tests and the specStats' sums. In
// BenchmarkRegime/Speculation 31,098 then 29,928 instructions a request
// (the budget test's count); counting a step's chunks and adding them at
// its end, the table made each step, was 31,324, the runs' adds through
// the histograms' pending values 30,708 (chunkCounts counts past them, as
// addHeld did, the runs ended there mostly a changed gap's). Its loop
// reads K and the gap from the table and adds the window's tokens in its
// caller: with K, the gap and the window's weight (inW) in registers, it
// spilled and reloaded the gap and its emits' length a chunk (22,444
// then 22,408 a request, plainChunks 2,047 then 2,013).
func (r *runner) plainChunks(rep *replica, out *engine.Outcome, i int) (int, int) {
	// Its four switches, tested once a run (plainOff), not a call:
	// servesim's own 18,986 then 18,968 instructions a request in
	// BenchmarkRegime/Speculation (the budget test).
	if r.plainOff {
		return i, 0
	}
	ems, drafts, end := out.Emitted, out.Drafts[:len(out.Emitted)], out.End
	k := rep.spec.Tokens
	if i == len(ems) || drafts[i].Drafted != k || ems[i].Done || k+1 >= gapLanes {
		return i, 0 // accountChunk's, before the table is read
	}
	last := r.slots[ems[i].Ref].rec.LastToken
	t := r.chunks.cur
	if g := end - last; t == nil || g != t.g || k != t.k || rep.idx != t.rep {
		t = r.tableOf(g, k, rep.idx)
	}
	// The slots in a local: read through r, which the records' stores
	// might alias, they were loaded again a chunk (plainChunks 1,928 then
	// 1,904 instructions a request, servesim's own 19,833 then 19,809,
	// in BenchmarkRegime/Speculation, the budget test).
	tokens, slots := 0, r.slots
	for ; i < len(ems); i++ {
		em, d := &ems[i], drafts[i]
		n := em.Tokens
		if d.Drafted != t.k || d.Accepted != n-1 || em.Done {
			break
		}
		rec := &slots[em.Ref].rec
		if rec.LastToken != last {
			break
		}
		// n − 1 = d.Accepted <= d.Drafted = K, and K + 1 < gapLanes: n
		// masked, the table's reads below take no bounds check
		// (plainChunks 1,729 then 1,700 instructions a request in
		// BenchmarkRegime/Speculation, the budget test).
		n &= gapLanes - 1
		rec.Drafted += d.Drafted
		// d.Accepted, n − 1 (tested above), one ADD to memory: with
		// n − 1 folded into it, a load, two LEAs and a store
		// (plainChunks 2,013 then 1,928 instructions a request, 21,335
		// then 21,242 in all, in BenchmarkRegime/Speculation, the
		// budget test).
		rec.Accepted += d.Accepted
		rec.MaxITL = max(rec.MaxITL, t.g)
		rec.MaxTokenITL = max(rec.MaxTokenITL, t.td[n])
		rec.ITLOver += t.over[n]
		if rec.Measured {
			t.cnt[n]++
		}
		rec.Emitted += n
		rec.LastToken = end
		tokens += n
	}
	return i, tokens
}

// eachChunk makes plainChunks account no chunk: each goes through
// accountChunk, the engine's paths unchanged (a test's switch).
var eachChunk = false

// chunkTable is what a full step's chunk of n tokens (K drafts, n − 1
// accepted) with the gap g adds, by n: its gap over its tokens
// (chunkGap's) and its gaps over the class's bound (chunkRecord's); and
// the measured chunks plainChunks counted by n, not yet added. Kept in
// the runner's chunkTables, made again when the gap or K changes.
type chunkTable struct {
	g    time.Duration
	k    int
	rep  int // the replica whose chunks are counted
	td   [gapLanes]time.Duration
	over [gapLanes]int
	cnt  [gapLanes]int
}

// make fills the table for K = k drafts (k + 1 < gapLanes) with the gap
// g, against the bound b, for replica rep.
func (t *chunkTable) make(g time.Duration, b *classBound, k, rep int) {
	t.g, t.k, t.rep = g, k, rep
	for n := 1; n <= k+1; n++ {
		td := time.Duration(uint64(g) / uint64(n)) // g >= 0: chunkGap's division
		t.td[n] = td
		t.over[n] = 0
		if b.perToken {
			if td > b.itl {
				t.over[n] = n
			}
		} else if g > b.itl {
			t.over[n] = 1
		}
	}
}

// chunkTables are plainChunks' tables, each a gap's (with K and the
// replica), kept by the gap's hash: a step whose gap is that of a table
// kept goes on counting in it, its counts added only when another gap
// takes its place or before the summary (chunkCounts). The gaps of a
// replica's steps recur (a speculative step's price is a function of
// its members' verified positions and its prefill tokens, which repeat;
// in BenchmarkRegime/Speculation the one table changed three times a
// request), and the counts reach only the histograms' counts, integers,
// the same whatever the grouping and the order (weighted; its sketch,
// past ExactSamples distinct gaps, sums them too): with one table, made
// again and its counts added at each change of gap, 25,157 then 23,533
// instructions a request in BenchmarkRegime/Speculation (the budget
// test).
type chunkTables struct {
	cur  *chunkTable             // the last table read (nil before the first)
	tabs *[chunkSlots]chunkTable // by the gap's hash (chunkSlot); nil until the first
}

// chunkSlots is how many tables chunkTables keeps (a power of two), 216
// KiB; 64 of them, 25,157 then 24,294 instructions a request; 256,
// 23,743.
const chunkSlots = 1024

// chunkShift is 64 − log2(chunkSlots): a gap's hash keeps its top bits.
// Tests raise it, so that gaps share few slots and take each other's
// places (TestPlainChunksAreEachChunk).
var chunkShift = uint(64 - 10)

// chunkSlot is the slot of gap g's table.
func chunkSlot(g time.Duration) int {
	return int(uint64(g) * 0x9e3779b97f4a7c15 >> (chunkShift & 63))
}

// tableOf is the table of gap g, K = k drafts and replica rep, made
// (its slot's previous table's counts added first) unless it is kept,
// and now the current one.
func (r *runner) tableOf(g time.Duration, k, rep int) *chunkTable {
	c := &r.chunks
	if c.tabs == nil {
		c.tabs = new([chunkSlots]chunkTable)
	}
	t := &c.tabs[chunkSlot(g)]
	if t.k == 0 || g != t.g || k != t.k || rep != t.rep {
		r.tableCounts(t)                // the counts of the slot's gap, before it changes
		t.make(g, &r.bounds[0], k, rep) // without classes, the default class's bound (newClasses)
	}
	c.cur = t
	return t
}

// chunkCounts adds every table's counts (tableCounts): before the
// summary (flushGaps).
func (r *runner) chunkCounts() {
	if c := &r.chunks; c.tabs != nil {
		for i := range c.tabs {
			r.tableCounts(&c.tabs[i])
		}
	}
}

// tableCounts adds the measured chunks plainChunks counted by size in t,
// each of a full step, to the gap runs and the specStats (its full steps
// counted by their tokens, flushGaps), as accountChunk adds them a chunk
// at a time, and clears the counts: when the table's slot changes gap,
// and before the summary (chunkCounts). Counts held across steps change
// nothing, as the runs' do (gapRuns).
func (r *runner) tableCounts(t *chunkTable) {
	m, accepted := 0, 0
	for n := 1; n <= t.k+1; n++ {
		c := t.cnt[n]
		if c == 0 {
			continue
		}
		t.cnt[n] = 0
		m += c
		accepted += c * (n - 1)
		r.gaps.full[n] += c
		if run := &r.gaps.tok[n]; t.td[n] == run.d || run.k == 0 {
			run.d, run.k = t.td[n], run.k+c*n
		} else { // newTokRun's, counted past the pending values (addHeld's reason)
			r.col.itlTok.count(run.d, run.k)
			run.d, run.k = t.td[n], c*n
		}
	}
	if m == 0 {
		return
	}
	spec := &r.col.spec
	spec.steps += m
	spec.drafted += m * t.k
	spec.accepted += accepted
	if run := &r.gaps.run; t.g == run.d && t.rep == run.rep {
		run.k += m
	} else {
		r.newRun(t.g, m, t.rep)
	}
}
