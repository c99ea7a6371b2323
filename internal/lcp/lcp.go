// Package lcp measures the longest common prefix of two id slices: how
// far a prompt's prefix ids agree with a remembered prompt's (the
// engine's key memo, the router views' trees and chains).
package lcp

import "unsafe"

// Len is the length of the longest common prefix of a and b. Most
// callers compare slices that agree throughout, so they are compared
// first as memory (the runtime's vectorised memequal, a tenth of the
// instructions of a loop an id at a time). Those that differ mostly
// agree a long way (a prompt's shared prefix, then its own ids), so the
// first difference is found by halving the range it lies in, each half
// compared as memory, down to a few ids compared one at a time.
func Len(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	if asBytes(a) == asBytes(b) {
		return n
	}
	lo, hi := 0, n // a[:lo] and b[:lo] agree; they differ in [lo, hi)
	for hi-lo > 8 {
		mid := lo + (hi-lo)/2
		if asBytes(a[lo:mid]) == asBytes(b[lo:mid]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	for a[lo] == b[lo] {
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
