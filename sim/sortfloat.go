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
// the bit pattern of each value, six passes of 11 bits at most, a pass
// skipped when every value has the same digit there. A value whose sign
// bit is clear orders as its bits do, and latencies are never negative:
// short slices, and slices holding a NaN or a value with its sign bit set
// (a negative or a -0), take slices.Sort. Equal values with clear sign
// bits are the same bits, so the result is slices.Sort's.
func sortFloats(x, buf []float64) []float64 {
	if len(x) < 512 {
		slices.Sort(x)
		return buf
	}
	var count [digits][1 << digitBits]int32
	var sign uint64
	for _, v := range x {
		if v != v {
			slices.Sort(x)
			return buf
		}
		k := math.Float64bits(v) // the six digits, unrolled: the loop was a sixth of the sort
		sign |= k
		count[0][k&digitMask]++
		count[1][(k>>digitBits)&digitMask]++
		count[2][(k>>(2*digitBits))&digitMask]++
		count[3][(k>>(3*digitBits))&digitMask]++
		count[4][(k>>(4*digitBits))&digitMask]++
		count[5][(k>>(5*digitBits))&digitMask]++
	}
	if sign>>63 != 0 { // a negative value or a -0
		slices.Sort(x)
		return buf
	}
	if cap(buf) < len(x) {
		buf = make([]float64, len(x))
	}
	buf = buf[:len(x)]
	src, dst := x, buf
	for d := range digits {
		c := &count[d]
		shift := uint(digitBits * d)
		if int(c[(math.Float64bits(src[0])>>shift)&digitMask]) == len(src) {
			continue // every value has this digit: the pass changes nothing
		}
		sum := int32(0)
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, v := range src {
			b := (math.Float64bits(v) >> shift) & digitMask
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
