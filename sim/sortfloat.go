package sim

import (
	"math"
	"slices"
)

// sortFloats sorts x ascending, as slices.Sort does, with buf as scratch
// (grown as needed and returned for the next call). A summary sorts
// every exact latency sample it keeps, up to Config.ExactSamples values
// each, and a comparison sort of float64 (with its NaN checks) was a
// tenth of a run's time: this is a least-significant-digit radix sort on
// the order-preserving bit pattern of each value, six passes of 11 bits
// at most, a pass skipped when every value has the same digit there.
// Short slices and slices holding a NaN take slices.Sort. Equal values
// are the same bits, so the result is slices.Sort's, but for a -0 and a
// +0 in the same slice, which this puts in that order (no latency is -0).
func sortFloats(x, buf []float64) []float64 {
	if len(x) < 512 {
		slices.Sort(x)
		return buf
	}
	var count [digits][1 << digitBits]int32
	for _, v := range x {
		if v != v {
			slices.Sort(x)
			return buf
		}
		k := sortKey(v) // the six digits, unrolled: the loop was a sixth of the sort
		count[0][k&digitMask]++
		count[1][(k>>digitBits)&digitMask]++
		count[2][(k>>(2*digitBits))&digitMask]++
		count[3][(k>>(3*digitBits))&digitMask]++
		count[4][(k>>(4*digitBits))&digitMask]++
		count[5][(k>>(5*digitBits))&digitMask]++
	}
	if cap(buf) < len(x) {
		buf = make([]float64, len(x))
	}
	buf = buf[:len(x)]
	src, dst := x, buf
	for d := range digits {
		c := &count[d]
		shift := uint(digitBits * d)
		if int(c[(sortKey(src[0])>>shift)&digitMask]) == len(src) {
			continue // every value has this digit: the pass changes nothing
		}
		sum := int32(0)
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, v := range src {
			b := (sortKey(v) >> shift) & digitMask
			dst[c[b]] = v
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &x[0] {
		copy(x, src)
	}
	return buf
}

// The radix sort's digits: six passes of 11 bits cover 64 (the last
// digit has 9), against eight of a byte; the counts (48 KB) still fit the
// L2 cache.
const (
	digitBits = 11 // sortFloats counts the six digits unrolled
	digits    = (64 + digitBits - 1) / digitBits
	digitMask = 1<<digitBits - 1
)

// sortKey maps a float64 (not NaN) to a uint64 in the same order: a
// positive value's sign bit set, a negative value's bits all flipped.
func sortKey(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}
