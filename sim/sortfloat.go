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
// the order-preserving bit pattern of each value, eight passes of a byte
// at most, a pass skipped when every value has the same byte there.
// Short slices and slices holding a NaN take slices.Sort. Equal values
// are the same bits, so the result is slices.Sort's, but for a -0 and a
// +0 in the same slice, which this puts in that order (no latency is -0).
func sortFloats(x, buf []float64) []float64 {
	if len(x) < 512 {
		slices.Sort(x)
		return buf
	}
	var count [8][256]int
	for _, v := range x {
		if v != v {
			slices.Sort(x)
			return buf
		}
		k := sortKey(v)
		for d := range 8 {
			count[d][byte(k>>(8*d))]++
		}
	}
	if cap(buf) < len(x) {
		buf = make([]float64, len(x))
	}
	buf = buf[:len(x)]
	src, dst := x, buf
	for d := range 8 {
		c := &count[d]
		if c[byte(sortKey(src[0])>>(8*d))] == len(src) {
			continue // every value has this byte: the pass changes nothing
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		shift := uint(8 * d)
		for _, v := range src {
			b := byte(sortKey(v) >> shift)
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

// sortKey maps a float64 (not NaN) to a uint64 in the same order: a
// positive value's sign bit set, a negative value's bits all flipped.
func sortKey(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}
