// Package lcp measures the longest common prefix of two id slices: how
// far a prompt's prefix ids agree with a remembered prompt's (the
// engine's key memo, the router views' trees and chains).
package lcp

import "unsafe"

// Len is the length of the longest common prefix of a and b. Most
// callers compare slices that agree throughout, so they are compared
// first as memory (the runtime's vectorised memequal, a tenth of the
// instructions of a loop an id at a time). On a mismatch, the range
// known to hold the first difference is halved, its first half compared
// as memory, down to 64 ids, which are compared one at a time: a prompt
// that agrees with a remembered one on a shared prefix of hundreds of
// ids, and not on its own ids after it (a group's system prompt), is not
// read an id at a time, and its ids before the difference are read
// about twice in all (a compare that fails stops at the difference).
// They were compared 256 ids at a time, then 32, from the first, each
// chunk an array of its own: the ids before the difference were read
// three times, with a call each 32 ids. Regime/Tiers (budget test,
// SERVESIM_BUDGET_FUNCS): 41,108 instructions a request so, 40,785 this
// way (40,916 halved down to 8 ids, 40,818 to 32, 40,796 to 128).
func Len(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	if asBytes(a) == asBytes(b) {
		return n
	}
	lo, hi := 0, n // they differ in [lo, hi)
	for hi-lo > 64 {
		mid := lo + (hi-lo)/2
		if asBytes(a[lo:mid]) == asBytes(b[lo:mid]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	for a[lo] == b[lo] { // they differ before hi
		lo++
	}
	return lo
}

// asBytes is the memory of x, as a string to compare without copying.
func asBytes(x []uint64) string {
	if len(x) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}

// Chain is Len for chains of keys in which a key names every key before
// it (the engine's content keys: a block's key mixes its parent's,
// engine.BlockKeys), so that where a[i] equals b[i] every key before i
// agrees too, and past the first difference none does: the agreement is
// a prefix, found by comparing single keys, the last first (chains that
// agree throughout, the common case), then by halving. A segment of a
// KV tier's list against a group's chain of hundreds of keys is read
// about nine keys, where Len read it whole as memory. On slices that
// are not such chains its answer is not Len's: the caller promises it.
func Chain(a, b []uint64) int {
	lo, hi := 0, min(len(a), len(b))
	if hi == 0 || a[hi-1] == b[hi-1] {
		return hi
	}
	hi-- // a[hi] differs: they agree on [0, lo), differ from hi on
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if a[mid-1] == b[mid-1] {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
