// Package ascend measures runs of consecutive ids: how far a prompt's
// prefix ids count up by one from the first (a group's shared prefix, as
// workloads number it), for the engine's run pool and the router views'
// chains.
package ascend

import "github.com/servesim/servesim/internal/lcp"

// Len is the length of the run that ids (not empty) begin with, of ids
// each one more than the one before. A prompt's shared prefix is such a
// run of hundreds of ids, so it compares sixteen a pass, each against
// its place in the run, until one is out of place; then one at a time
// (Each, the slow twin, compares all one at a time; TestLenIsEach holds
// the two equal).
func Len(ids []uint64) int {
	d, rest := ids[0], ids
	for len(rest) >= 16 && rest[0] == d && rest[1] == d+1 && rest[2] == d+2 && rest[3] == d+3 &&
		rest[4] == d+4 && rest[5] == d+5 && rest[6] == d+6 && rest[7] == d+7 &&
		rest[8] == d+8 && rest[9] == d+9 && rest[10] == d+10 && rest[11] == d+11 &&
		rest[12] == d+12 && rest[13] == d+13 && rest[14] == d+14 && rest[15] == d+15 {
		d, rest = d+16, rest[16:]
	}
	for len(rest) >= 4 && rest[0] == d && rest[1] == d+1 && rest[2] == d+2 && rest[3] == d+3 {
		d, rest = d+4, rest[4:]
	}
	for len(rest) > 0 && rest[0] == d {
		d, rest = d+1, rest[1:]
	}
	return len(ids) - len(rest)
}

// Each is Len's slow twin: one id at a time.
func Each(ids []uint64) int {
	v := 1
	for v < len(ids) && ids[v] == ids[v-1]+1 {
		v++
	}
	return v
}

// Common is lcp.Len(a, b), the length of the longest common prefix of a
// and b, tried first at at: where a prompt's run of ids from its first
// ends (Len), another prompt of its group's shared prefix parts from it
// (its own ids follow). When the first at agree (compared as memory)
// and those at at do not, that is the answer, without lcp.Len's search
// of the range where they differ (256 ids, then 32, then one at a
// time); otherwise lcp.Len finds it.
// TestCommonIsLCP holds it to lcp.Len.
func Common(a, b []uint64, at int) int {
	if at <= 0 || at >= min(len(a), len(b)) || a[at] == b[at] || lcp.Len(a[:at], b[:at]) < at {
		return lcp.Len(a, b)
	}
	return at
}

// CommonTwo is Common(a, b, at) for a whose first at ids run on from
// its first (Len(a) ≥ at) and b that is at most two runs of consecutive
// ids (a Promise's Two): then b's first at agree with a's exactly when
// b[0] is a[0] and b[at−1] is b[0]+at−1, b's first run reaching at−1 (an
// id of a second run is never at its place in the first, as Two finds),
// so they are not compared as memory (a group's shared prefix:
// FleetHighReuse's 256 ids, 2 KiB a prompt). TestCommonTwoIsLCP holds it
// to lcp.Len.
func CommonTwo(a, b []uint64, at int) int {
	if at <= 0 || at >= min(len(a), len(b)) || a[0] != b[0] || b[at-1] != b[0]+uint64(at-1) || a[at] == b[at] {
		return Common(a, b, at)
	}
	return at
}

// Two is Len(ids) (ids not empty) for ids that are at most two runs of
// consecutive ids (a synthetic prompt's: its group's shared ids, then
// its own fresh ones), found by bisection: ids[i] is ids[0]+i before
// the first run ends and not after it, as the second run's ids are
// ids[k]+(i−k) and ids[k] is not ids[0]+k. ok says the ids passed a
// cheap check of that promise, their last id being the second run's
// (or the first's) at its place; when it is false the answer is not to
// be used (Len's is). guess is tried first: when ids[guess−1] is in the
// first run and ids[guess] is not, guess is where it ends, with no
// bisection (the prompts of a workload part where its shared prefix
// ends, at one place). TestTwoIsLen holds the two equal on ids of at
// most two runs, at every guess.
func Two(ids []uint64, guess int) (k int, ok bool) {
	first, last := ids[0], len(ids)-1
	if guess > 0 && guess <= last && ids[guess-1] == first+uint64(guess-1) && ids[guess] != first+uint64(guess) {
		// The guess's own return, its check at a known place: the
		// bisection's exit and min spared (Regime/Fleet8PrefixApprox,
		// two calls a request: 82 then 66 instructions).
		return guess, ids[last] == ids[guess]+uint64(last-guess)
	}
	lo, hi := 1, len(ids) // ids[lo-1] is in the first run; ids[hi] (when hi < len) is not
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m] == first+uint64(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, ids[last] == ids[min(lo, last)]+uint64(last-min(lo, last))
}

// Rise is Len(ids) (ids not empty) for ids that rise, each more than
// the one before (a conversation's prompt: its group's shared ids, then
// a fresh run for each turn, taken from one counter), found by
// bisection: ids[i]−ids[0] is at least i, and is i exactly while the
// first run goes on (an id past a gap is more); when the last id is at
// its place in the first run, all are, with no bisection. ok says the
// ids passed a cheap check of the promise, the last id and the one
// where the run ends above their places in it; when it is false the
// answer is not to be used (Len's is). A guess (> 0) that is the
// answer is found so in two compares, with no bisection (a
// conversation's first run is its group's shared ids, of one length in
// a workload: Guess). TestRiseIsLen holds the two equal on rising ids,
// at every guess.
func Rise(ids []uint64, guess int) (k int, ok bool) {
	first, last := ids[0], len(ids)-1
	if d := ids[last] - first; d == uint64(last) {
		return len(ids), true
	} else if ids[last] < first || d < uint64(last) {
		return 0, false
	}
	lo, hi := 1, last // ids[lo-1] is in the first run; ids[hi] is not
	if guess > 0 && guess <= last && ids[guess-1]-first == uint64(guess-1) && ids[guess]-first != uint64(guess) {
		lo, hi = guess, guess
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m]-first == uint64(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, ids[lo] > ids[lo-1]
}

// Guess is Two's or Rise's guess kept from call to call: where the last
// prompt's first run ended, which a workload's prompts share (their group's
// shared prefix is of one length). Its zero value guesses nothing.
type Guess struct{ at int }

// Two is Two(ids, the guess), the guess then moved to its answer.
func (g *Guess) Two(ids []uint64) (k int, ok bool) {
	k, ok = Two(ids, g.at)
	g.at = k
	return k, ok
}

// At is the guess; a nil Guess guesses nothing.
func (g *Guess) At() int {
	if g == nil {
		return 0
	}
	return g.at
}

// Set moves the guess to k, unless g is nil.
func (g *Guess) Set(k int) {
	if g != nil {
		g.at = k
	}
}

// Promise is a source's promise that a request's prefix ids are at most
// two runs of consecutive ids, so that Two may find where the first
// ends, or that they rise, so that Rise may find where each run ends
// (workload.Request.PrefixTwoRuns, engine.Request.PrefixTwoRuns).
// Its zero value promises nothing, and only this module's packages can
// make one that does (TwoRuns): a source outside the module cannot
// promise what no one checked (a promise broken in a way Two's check
// misses would change which blocks count as cached), and a request
// copied keeps its source's promise.
type Promise struct{ two, rise bool }

// TwoRuns is the promise of at most two runs.
func TwoRuns() Promise { return Promise{two: true} }

// Rising is the promise that the ids rise, each more than the one
// before, so that Rise may find where each run ends.
func Rising() Promise { return Promise{rise: true} }

// Two reports whether p promises at most two runs.
func (p Promise) Two() bool { return p.two }

// Rises reports whether p promises ids that rise.
func (p Promise) Rises() bool { return p.rise }
