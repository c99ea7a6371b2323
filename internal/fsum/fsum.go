// Package fsum sums float64s in an order that does not depend on where
// the array lies in memory, so that a summary's mean is the same bytes in
// every run of one binary.
//
// gonum's floats.Sum (and stat.Mean, stat.MeanStdDev, stat.PopMeanStdDev
// and stat.RSquaredFrom with nil weights, which call it) adds with SSE2 in
// an order that depends on the array's address: an array that starts off
// a 16-byte boundary has its first value added alone before the pairs, so
// the same values can sum to a different last bit. Go places a 3-value
// slice (24 bytes, a size class that is not a multiple of 16) at either
// alignment, depending on which slot the allocator hands out, which
// depends on what was allocated and swept before. Sum adds in the order
// gonum uses for an aligned array, whatever the alignment, so every
// figure that was computed aligned keeps its bytes.
package fsum

import "math"

// Sum is the sum of x, added as gonum's floats.Sum adds an array that
// starts on a 16-byte boundary (four two-lane accumulators over blocks of
// sixteen, then the tails of eight, four, two and one), at any alignment.
func Sum(x []float64) float64 {
	// gonum's SUM, SUM_1, SUM_2 and SUM_3, two lanes each (a and b), held
	// as scalars so that they stay in registers.
	var s0a, s0b, s1a, s1b, s2a, s2b, s3a, s3b float64
	n := len(x)
	i := 0
	for ; i+16 <= n; i += 16 {
		b := (*[16]float64)(x[i:])
		s0a, s0b = s0a+b[0], s0b+b[1]
		s1a, s1b = s1a+b[2], s1b+b[3]
		s2a, s2b = s2a+b[4], s2b+b[5]
		s3a, s3b = s3a+b[6], s3b+b[7]
		s0a, s0b = s0a+b[8], s0b+b[9]
		s1a, s1b = s1a+b[10], s1b+b[11]
		s2a, s2b = s2a+b[12], s2b+b[13]
		s3a, s3b = s3a+b[14], s3b+b[15]
	}
	if n&8 != 0 {
		b := (*[8]float64)(x[i:])
		s0a, s0b = s0a+b[0], s0b+b[1]
		s1a, s1b = s1a+b[2], s1b+b[3]
		s2a, s2b = s2a+b[4], s2b+b[5]
		s3a, s3b = s3a+b[6], s3b+b[7]
		i += 8
	}
	s0a, s0b = s0a+s3a, s0b+s3b
	s1a, s1b = s1a+s2a, s1b+s2b
	if n&4 != 0 {
		b := (*[4]float64)(x[i:])
		s0a, s0b = s0a+b[0], s0b+b[1]
		s1a, s1b = s1a+b[2], s1b+b[3]
		i += 4
	}
	s0a, s0b = s0a+s1a, s0b+s1b
	if n&2 != 0 {
		b := (*[2]float64)(x[i:])
		s0a, s0b = s0a+b[0], s0b+b[1]
		i += 2
	}
	sum := s0a + s0b
	if n&1 != 0 {
		sum += x[i]
	}
	return sum
}

// MeanStdDev is x's mean and sample standard deviation (n − 1), as
// gonum's stat.MeanStdDev(x, nil) computes them (the corrected two-pass
// algorithm), with the mean from Sum. Both are NaN for an empty x, the
// deviation for one value.
func MeanStdDev(x []float64) (mean, std float64) {
	mean, unnormalised := meanUnnormalised(x)
	return mean, math.Sqrt(unnormalised / float64(len(x)-1))
}

// PopMeanStdDev is x's mean and population standard deviation (n), as
// gonum's stat.PopMeanStdDev(x, nil) computes them, with the mean from
// Sum.
func PopMeanStdDev(x []float64) (mean, std float64) {
	mean, unnormalised := meanUnnormalised(x)
	return mean, math.Sqrt(unnormalised / float64(len(x)))
}

// meanUnnormalised is gonum's meanUnnormalisedVarianceSumWeights for nil
// weights: Chan, Golub and LeVeque's corrected two-pass algorithm (1.7).
//
// The second pass takes four values a turn, each added in index order as
// one a turn adds them (the same sums, bit for bit): the loop's count,
// test and branch, four of nine instructions a value, once for four (a
// summary's five samples of 20,000 in BenchmarkRunAtlas: 5,102 then
// 5,093 instructions a request, the budget test's count).
func meanUnnormalised(x []float64) (mean, unnormalised float64) {
	n := float64(len(x))
	mean = Sum(x) / n
	var ss, compensation float64
	i := 0
	for ; i < len(x)-3; i += 4 {
		d := x[i] - mean
		ss += d * d
		compensation += d
		d = x[i+1] - mean
		ss += d * d
		compensation += d
		d = x[i+2] - mean
		ss += d * d
		compensation += d
		d = x[i+3] - mean
		ss += d * d
		compensation += d
	}
	for _, v := range x[i:] {
		d := v - mean
		ss += d * d
		compensation += d
	}
	return mean, ss - compensation*compensation/n
}

// RSquared is the coefficient of determination of estimates against
// values, as gonum's stat.RSquaredFrom(estimates, values, nil) computes
// it, with the mean from Sum. The slices have one length.
func RSquared(estimates, values []float64) float64 {
	mean := Sum(values) / float64(len(values))
	var res, tot float64
	for i, v := range values {
		d := v - estimates[i]
		res += d * d
		d = v - mean
		tot += d * d
	}
	return 1 - res/tot
}
