// Package lcp measures the longest common prefix of two id slices: how
// far a prompt's prefix ids agree with a remembered prompt's (the
// engine's key memo, the router views' trees and chains).
package lcp

import "unsafe"

// Len is the length of the longest common prefix of a and b. Most
// callers compare slices that agree throughout, so they are compared
// first as memory (the runtime's vectorised memequal, a tenth of the
// instructions of a loop an id at a time, which only a mismatch then
// runs).
func Len(a, b []uint64) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	if asBytes(a) == asBytes(b) {
		return n
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// asBytes is the memory of x, as a string to compare without copying.
func asBytes(x []uint64) string {
	if len(x) == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}
