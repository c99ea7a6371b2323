// Package lcp measures the longest common prefix of two id slices: how
// far a prompt's prefix ids agree with a remembered prompt's (the
// engine's key memo, the router views' trees and chains).
package lcp

import "unsafe"

// Len is the length of the longest common prefix of a and b. Most
// callers compare slices that agree throughout, so they are compared
// first as memory (the runtime's vectorised memequal, a tenth of the
// instructions of a loop an id at a time). On a mismatch, they are
// compared as memory 256 ids at a time, then 32, and only the last ids
// one at a time: a prompt that agrees with a remembered one on a shared
// prefix of hundreds of ids, and not on its own ids after it (a group's
// system prompt), is not read an id at a time. (An array compares by one
// call of memequal of its size; compared as subslices, or as strings, a
// chunk cost 30 instructions of servesim's own, bounds and spills.)
func Len(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	if asBytes(a) == asBytes(b) {
		return n
	}
	pa, pb := unsafe.Pointer(unsafe.SliceData(a)), unsafe.Pointer(unsafe.SliceData(b))
	i := 0
	for n-i >= 256 && *(*[256]uint64)(unsafe.Add(pa, 8*i)) == *(*[256]uint64)(unsafe.Add(pb, 8*i)) {
		i += 256
	}
	for n-i >= 32 && *(*[32]uint64)(unsafe.Add(pa, 8*i)) == *(*[32]uint64)(unsafe.Add(pb, 8*i)) {
		i += 32
	}
	for a[i] == b[i] { // they differ before n
		i++
	}
	return i
}

// asBytes is the memory of x, as a string to compare without copying.
func asBytes(x []uint64) string {
	if len(x) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}
