package stats

import (
	"math/bits"
	"slices"
	"time"
	"unsafe"
)

// SortDurations sorts x ascending, as slices.Sort does, with buf as
// scratch (grown as needed and returned for the next call). A summary
// sorts every exact latency sample it keeps, up to Config.ExactSamples
// values each, as the durations they are (converted to milliseconds
// after: the conversion keeps their order, see sample.summarise): a
// least-significant-digit radix sort of four 12-bit digits, a pass
// skipped when every value has the same digit there, so a sample under
// 68.7 s (2³⁶ ns) takes three passes (and its fourth digit is not even
// counted); a sample spread so wide that few values share their three
// higher digits, two, and then an insertion of the few out of order
// (fewTies, sortNearly). Short slices, and slices holding a negative
// duration or one of 78 hours or more (2⁴⁸ ns), take slices.Sort.
//
// A slice of fewer than smallRadix values, each under 18.3 minutes (2⁴⁰
// ns), takes 10-bit digits instead: a pass's prefix sums over 4,096
// counts cost more than its scatter of 2,000 values (a disaggregated
// fleet's summary of 2,000 requests spent 425 instructions a request on
// them), over 1,024 a quarter of that. It takes two of them, the 20 bits
// below the highest at which its values differ, and then sortNearly
// (sortTop): four digits from the lowest bit took three passes, four on
// values of 1.07 s (2³⁰ ns) or more.
func SortDurations(x, buf []time.Duration) []time.Duration {
	buf, _ = sortDurations(x, buf, false)
	return buf
}

// SortDurationsMS is SortDurations, and, when it returns ms, x's array
// holds in place of each sorted duration d its milliseconds, float64(d) /
// 1e6, as the float64s ms: the radix sort's last pass writes them as it
// places each value, where a conversion after the sort would read and
// write every value once more (48 of BenchmarkRunAtlas's 6,328 servesim
// instructions a request, sim's toMS). It returns nil, and x holds the
// sorted durations, for a slice slices.Sort sorts (short, or holding a
// negative duration or one of 78 hours or more), or whose values are all
// one such duration. A slice of radixMin values or more, all equal, is sorted
// as it is: its milliseconds are written without a count of its digits.
func SortDurationsMS(x, buf []time.Duration) (ms []float64, _ []time.Duration) {
	buf, ok := sortDurations(x, buf, true)
	if !ok {
		return nil, buf
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x)), buf
}

// sortDurations is SortDurations, and SortDurationsMS with ms: it reports
// whether x holds the milliseconds.
func sortDurations(x, buf []time.Duration, ms bool) ([]time.Duration, bool) {
	if len(x) < radixMin {
		slices.Sort(x)
		return buf, false
	}
	if allEqual(x) { // sorted: a run's client waits, all 0 without a gateway
		return buf, ms && fillMS(x)
	}
	if ms && fewDistinct(x) {
		return buf, true
	}
	if len(x) < smallRadix {
		if varying, ok := varyingBits(x); ok {
			return sortTop(x, buf, varying, ms)
		}
	}
	var count [durDigits][1 << durDigitBits]int32
	if !countDigits(&count, x) {
		slices.Sort(x)
		return buf, false
	}
	first := 0
	if fewTies(&count, x[0], len(x)) {
		first = 1
		count[0][digit(x[0], 0)] = int32(len(x)) // as if every value shared it: no pass
	} else {
		countLowDigit(&count[0], x)
	}
	last := lastPass(ms, x[0], len(x), durDigitBits, count[0][:], count[1][:], count[2][:], count[3][:])
	buf, conv := radixSort(x, buf, first, durDigits, last, func(d int, src, dst []time.Duration) bool {
		return radixPass(&count[d], d, src, dst, d == last)
	})
	if first > 0 { // sorted by all but the lowest digit
		if conv {
			sortNearly(unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x)))
		} else {
			sortNearly(x)
		}
	}
	return buf, conv
}

// fewTies reports whether the radix sort may leave out its lowest
// digit's pass, x's values sorted by the others and then by sortNearly,
// which moves each value past those before it that share its higher
// digits and exceed it: when the highest digit at which the n values
// (x0 among them) differ is the third or fourth, and the values, spread
// evenly within each of its buckets, would share their higher digits
// with few others (the buckets' squared counts, over the lower buckets
// each holds, at most n/2). A summary's TTFTs, E2Es and queue delays
// (of 20,000 values in BenchmarkRunAtlas, spread over 0.1 to 22 s) take
// it, about one value in ten out of order: RunAtlas 5,952 then 5,928
// instructions a request (the budget test's count; radixPass and
// countDigits 186 then 135, the insertion's scan seven instructions a
// value in order). Values bunched more tightly than evenly cost
// sortNearly more moves, and past n of them a slices.Sort.
func fewTies(count *[durDigits][1 << durDigitBits]int32, x0 time.Duration, n int) bool {
	h := durDigits - 1
	for h > 0 && int(count[h][digit(x0, h)]) == n {
		h--
	}
	if h < 2 {
		return false
	}
	var sq uint64
	for _, c := range count[h] {
		sq += uint64(c) * uint64(c)
	}
	return sq>>(durDigitBits*uint(h-1)) <= uint64(n/2)
}

// sortNearly sorts x, which is sorted but for its values' lowest digits
// (fewTies): each value out of order is moved back past the greater ones
// before it; past len(x) moves in all, slices.Sort sorts the rest. The
// milliseconds (float64s) are sorted as the durations they were
// converted from (the conversion keeps their order, and makes values it
// makes equal the same bits).
func sortNearly[T int64 | float64 | time.Duration](x []T) {
	if len(x) == 0 {
		return
	}
	moves, prev := 0, x[0]
	for i, v := range x {
		if v < prev { // x[i] is then prev again
			if moves += moveBack(x[:i+1]); moves > len(x) {
				slices.Sort(x)
				return
			}
			continue
		}
		prev = v
	}
}

// moveBack moves y's last value back past the greater ones before it,
// and returns how many it passed.
func moveBack[T int64 | float64 | time.Duration](y []T) int {
	i := len(y) - 1
	v, j := y[i], i
	for j > 0 && y[j-1] > v {
		y[j] = y[j-1]
		j--
	}
	y[j] = v
	return i - j
}

// allEqual reports whether every value of x, which has one, is x[0]: it
// returns at the first that is not, the second of most samples, where a
// sample of one value (BenchmarkRunAtlas's client waits) took its
// digits' count and a conversion after, 28 instructions a value.
func allEqual(x []time.Duration) bool {
	v := x[0]
	for _, y := range x {
		if y != v {
			return false
		}
	}
	return true
}

// fewDistinct sorts x and writes its milliseconds as SortDurationsMS,
// and reports true, when its values are at most min(len(x)/8,
// fewMax) distinct ones, each under 2⁴⁸ ns and not negative (the radix
// sort's to convert): it counts each value in a small hash table, sorts
// the distinct values (slices.Sort) and writes each one's milliseconds
// as many times as it occurred, where the radix sort counted three
// digits and scattered every value three times (about 60 instructions a
// value). Otherwise it reports false, x unchanged, having read at most
// the values up to the first distinct one past the bound, or nearly
// all distinct early. A summary's
// worst gaps (20 step times) and TPOTs (500 distinct of 20,000 in
// BenchmarkRunAtlas) take it, about 24 instructions a value: RunAtlas
// 6,227 then 6,160 instructions a request (the marginal count,
// SERVESIM_BUDGET_FUNCS); its TTFTs, E2Es and queue delays, nearly all
// distinct, leave it after 1,025 values. The bound was len(x)/16, which
// left the worst gaps of a run of 2,000 requests (160 to 230 distinct)
// to the radix sort: Regime/MooncakeReplay 11,882 then 11,861
// instructions a request, AzureReplay 6,861 then 6,818 (fewDistinct and
// the sort's functions), Conversations 13,841 then 13,840 (the budget
// test's count); a sample past the bound is read twice as far before
// it leaves, fewDistinct's count 15 more in Regime/Disagg (a sample of
// 429 distinct values in 2,000, read to its 1,182nd), 20 more in
// RunFleet64 prefix/single (14 with the early leave below).
func fewDistinct(x []time.Duration) bool {
	limit := min(len(x)/8, fewMax)
	var keys [2 * fewMax]uint64 // a value + 1; 0 is an empty slot
	var counts [2 * fewMax]int32
	const mask = 2*fewMax - 1
	var vals [fewMax]time.Duration
	// A value equal to the one before is counted in its slot, found
	// again without its hash and probe: a summary's worst gaps repeat
	// the one before 19 times in 20, its TPOTs one time in two, in
	// BenchmarkRunAtlas (6,038 then 6,025 instructions a request, the
	// budget test's count). The first value (x has radixMin or more) goes in
	// first, to an empty table, so that the loop always has one before
	// (TestFewDistinctFirstValue).
	last := x[0]
	if uint64(last) >= 1<<(durDigits*durDigitBits) {
		return false
	}
	lh := fewHash(last)
	keys[lh], counts[lh], vals[0] = uint64(last)+1, 1, last
	n := 1
	for r, v := range x[1:] {
		if v == last {
			counts[lh]++
			continue
		}
		if uint64(v) >= 1<<(durDigits*durDigitBits) {
			return false // negative, or past the four digits
		}
		k, h := uint64(v)+1, fewHash(v)
		for keys[h] != k {
			if keys[h] == 0 {
				// Past the bound it leaves; and with fewer than 8 of
				// the rr values read repeats, once rr² reaches 32 times
				// the bound: a TTFT, E2E or queue delay sample, nearly
				// all distinct, leaves after sqrt(32·limit) values (89
				// of 2,000, 181 of 20,000), not after the bound's, while
				// limit values drawn evenly repeat about 16 times by
				// then (TestFewDistinctTakesWorstGaps); RunFleet64
				// prefix/single's fewDistinct 119 then 113 instructions
				// a request, Regime/MooncakeReplay's count 11,759 then
				// 11,751 (the budget test's).
				if rr := r + 1; n == limit || rr-n < 8 && rr*rr >= 32*limit {
					return false
				}
				keys[h] = k
				vals[n] = v
				n++
				break
			}
			h = (h + 1) & mask
		}
		counts[h]++
		last, lh = v, h
	}
	d := vals[:n]
	slices.Sort(d)
	y := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
	i := 0
	for _, v := range d {
		k, h := uint64(v)+1, fewHash(v)
		for keys[h] != k {
			h = (h + 1) & mask
		}
		f := float64(v) / 1e6
		w := y[i : i+int(counts[h])]
		for j := range w {
			w[j] = f
		}
		i += len(w)
	}
	return true
}

// fewHash is v's first slot in fewDistinct's table, which keys it as v
// + 1.
func fewHash(v time.Duration) uint64 {
	return ((uint64(v) + 1) * 0x9e3779b97f4a7c15) >> (64 - fewBits)
}

// fewDistinct's bound on the distinct values, and its table's size in
// bits (twice as many slots).
const (
	fewMax  = 1024
	fewBits = 11
)

// fillMS writes, in place of each of x's values, all x[0], its
// milliseconds, as SortDurationsMS, and reports true; or false, x
// unchanged, for a value the radix sort does not convert (negative, or
// 2⁴⁸ ns or more: infinite to sim).
func fillMS(x []time.Duration) bool {
	v := x[0]
	if uint64(v) >= 1<<(durDigits*durDigitBits) {
		return false
	}
	y := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
	if v == 0 {
		clear(y) // 0 ms is +0, all bits 0
		return true
	}
	f := float64(v) / 1e6
	for i := range y {
		y[i] = f
	}
	return true
}

// lastPass is, with ms, the last digit whose pass runs: the last of the
// counts (by digit, of bits bits) at which the n values, x0 among them,
// differ; -1 without ms, or when none runs. Which passes run does not
// depend on the values' order.
func lastPass(ms bool, x0 time.Duration, n int, bits uint, count ...[]int32) int {
	last := -1
	for d, c := range count {
		if ms && int(c[(uint64(x0)>>(uint(d)*bits&63))&uint64(len(c)-1)]) != n {
			last = d
		}
	}
	return last
}

// radixSort sorts x by its digits, counted, with buf as scratch (grown
// and returned): pass scatters src into dst by digit d and reports
// whether it did; the pass of digit last, when one is named, writes the
// milliseconds (SortDurationsMS), and radixSort reports it.
func radixSort(x, buf []time.Duration, first, digits, last int, pass func(d int, src, dst []time.Duration) bool) ([]time.Duration, bool) {
	if last >= 0 {
		digits = last + 1 // the later digits' passes would not run (and would read milliseconds)
	}
	buf = grow(buf, len(x))
	src, dst := x, buf
	for d := first; d < digits; d++ {
		if pass(d, src, dst) {
			src, dst = dst, src
		}
	}
	if &src[0] != &x[0] {
		copy(x, src) // as bits: durations, or the milliseconds
	}
	return buf, last >= 0
}

// scatterMS is a radix pass's scatter of src into dst by the digit at
// shift, c holding each digit's first place, that writes each value's
// milliseconds, float64(v) / 1e6, in its place (SortDurationsMS): 17
// instructions a value where the pass's 13 and a conversion's 11 were
// 24; 15 with its stores unchecked, as scatter's.
func scatterMS(c []int32, shift uint, src, dst []time.Duration) {
	y := unsafe.Pointer(unsafe.SliceData(dst[:len(src)]))
	mask := uint64(len(c) - 1)
	for _, v := range src {
		b := (uint64(v) >> (shift & 63)) & mask
		*(*float64)(unsafe.Add(y, uintptr(c[b])*8)) = float64(v) / 1e6 // unchecked: see scatter
		c[b]++
	}
}

// scatter is a radix pass's scatter of src into dst by the digit at
// shift, c holding each digit's first place (its counts' prefix sums).
// Its stores are unchecked: the counts are src's own, so every place is
// below len(src), and dst is as long (grow). Checked, a value took 13
// instructions, 11 unchecked (the sort's twin, slices.Sort, holds it:
// TestSortDurationsIsSlicesSort, FuzzSortDurations).
func scatter(c []int32, shift uint, src, dst []time.Duration) {
	y := unsafe.Pointer(unsafe.SliceData(dst[:len(src)]))
	mask := uint64(len(c) - 1)
	for _, v := range src {
		b := (uint64(v) >> (shift & 63)) & mask
		*(*time.Duration)(unsafe.Add(y, uintptr(c[b])*8)) = v
		c[b]++
	}
}

// varyingBits returns the bits that differ among x's values (set in one
// and clear in another), and reports false when a value is negative or
// 2⁴⁰ ns or more (the 12-bit digits' to sort).
func varyingBits(x []time.Duration) (uint64, bool) {
	or, and := uint64(0), ^uint64(0)
	for _, v := range x {
		or |= uint64(v)
		and &= uint64(v)
	}
	return or &^ and, or>>(smallDigits*smallDigitBits) == 0
}

// sortTop sorts x, fewer than smallRadix values under 2⁴⁰ ns whose
// varying bits (varyingBits) are given, by the two 10-bit digits below
// the highest of those bits (the bits above it every value shares),
// then, when bits below those digits vary, by sortNearly. With 2,000
// values, two values share those 20 bits only when within a millionth
// of the sample's spread of each other: the regimes' samples leave at
// most one value in six out of order after the two passes, mostly none
// (the TTFTs, E2Es, queue delays and TPOTs of Regime/MooncakeReplay,
// Conversations, Disagg, Tiers and AzureReplay), where the four digits
// from the lowest bit took three or four passes and a count of four
// digits a value: Regime/MooncakeReplay 11,967 then 11,882 instructions
// a request (the budget test's count; the sort's functions 501 then
// 347, SERVESIM_BUDGET_FUNCS).
func sortTop(x, buf []time.Duration, varying uint64, ms bool) ([]time.Duration, bool) {
	lo := uint(max(bits.Len64(varying)-2*smallDigitBits, 0))
	var count [2][1 << smallDigitBits]int32
	c0, c1 := &count[0], &count[1]
	i := 0
	for ; i < len(x)-1; i += 2 { // two a turn, as countDigits: Regime/Disagg's sortTop 109 then 96 instructions a request
		k, l := uint64(x[i])>>(lo&63), uint64(x[i+1])>>(lo&63)
		c0[k&smallDigitMask]++
		c1[(k>>smallDigitBits)&smallDigitMask]++
		c0[l&smallDigitMask]++
		c1[(l>>smallDigitBits)&smallDigitMask]++
	}
	if i < len(x) {
		k := uint64(x[i]) >> (lo & 63)
		c0[k&smallDigitMask]++
		c1[(k>>smallDigitBits)&smallDigitMask]++
	}
	last := lastPass(ms, time.Duration(uint64(x[0])>>(lo&63)), len(x), smallDigitBits, count[0][:], count[1][:])
	buf, conv := radixSort(x, buf, 0, 2, last, func(d int, src, dst []time.Duration) bool {
		return smallPass(&count[d], lo+uint(d)*smallDigitBits, src, dst, d == last)
	})
	if lo > 0 { // sorted by all but the bits below lo
		if conv {
			sortNearly(unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x)))
		} else {
			sortNearly(x)
		}
	}
	return buf, conv
}

// smallPass is radixPass with the 10-bit digit at shift.
func smallPass(c *[1 << smallDigitBits]int32, shift uint, src, dst []time.Duration, ms bool) bool {
	shift &= 63
	if int(c[(uint64(src[0])>>shift)&smallDigitMask]) == len(src) {
		return false
	}
	sum := int32(0)
	for i, n := range c {
		c[i] = sum
		sum += n
	}
	if ms {
		scatterMS(c[:], shift, src, dst)
		return true
	}
	scatter(c[:], shift, src, dst)
	return true
}

// countDigits counts the digits of x's values above the lowest (which
// countLowDigit counts, for a sort that passes over it), and reports
// false when one is negative or 2⁴⁸ ns or more (slices.Sort's to sort).
// The fourth digit is counted only when some value needs it.
func countDigits(count *[durDigits][1 << durDigitBits]int32, x []time.Duration) bool {
	var or uint64
	c1, c2 := &count[1], &count[2]
	i := 0
	for ; i < len(x)-1; i += 2 { // two a turn: 11 instructions a value where one a turn took 14 (RunAtlas 5,412 then 5,403 a request)
		k, l := uint64(x[i]), uint64(x[i+1])
		or |= k | l
		c1[(k>>durDigitBits)&durDigitMask]++
		c2[(k>>(2*durDigitBits))&durDigitMask]++
		c1[(l>>durDigitBits)&durDigitMask]++
		c2[(l>>(2*durDigitBits))&durDigitMask]++
	}
	if i < len(x) {
		k := uint64(x[i])
		or |= k
		c1[(k>>durDigitBits)&durDigitMask]++
		c2[(k>>(2*durDigitBits))&durDigitMask]++
	}
	if or>>(durDigits*durDigitBits) != 0 {
		return false
	}
	if or>>(3*durDigitBits) != 0 { // 68.7 s or more: the fourth digit too
		for _, v := range x {
			count[3][(uint64(v)>>(3*durDigitBits))&durDigitMask]++
		}
	} else {
		count[3][0] = int32(len(x)) // every value's fourth digit is 0
	}
	return true
}

// countLowDigit counts the lowest digit of x's values (countDigits
// leaves it to the sorts that pass over it: fewTies).
func countLowDigit(count *[1 << durDigitBits]int32, x []time.Duration) {
	for _, v := range x {
		count[uint64(v)&durDigitMask]++
	}
}

// radixPass scatters src into dst by digit d, counted in c, and reports
// whether it did: a digit every value shares changes nothing and is
// skipped. With ms it writes the values' milliseconds (scatterMS).
func radixPass(c *[1 << durDigitBits]int32, d int, src, dst []time.Duration, ms bool) bool {
	if int(c[digit(src[0], d)]) == len(src) {
		return false
	}
	prefixSums(c)
	shift := uint(durDigitBits*d) & 63
	if ms {
		scatterMS(c[:], shift, src, dst)
		return true
	}
	scatter(c[:], shift, src, dst)
	return true
}

// prefixSums turns counts into the first place of each digit.
func prefixSums(c *[1 << durDigitBits]int32) {
	sum := int32(0)
	for i, n := range c {
		c[i] = sum
		sum += n
	}
}

func digit(v time.Duration, d int) uint64 {
	return (uint64(v) >> (uint(durDigitBits*d) & 63)) & durDigitMask
}

func grow(buf []time.Duration, n int) []time.Duration {
	if cap(buf) < n {
		buf = make([]time.Duration, n)
	}
	return buf[:n]
}

// The radix sort's digits: four of 12 bits (the counts, 64 KB, fit the
// L2 cache).
const (
	durDigitBits = 12
	durDigits    = 4
	durDigitMask = 1<<durDigitBits - 1
)

// radixMin is the fewest values SortDurations sorts by their digits:
// fewer take slices.Sort. sortTop's count and two prefix sums over 1,024
// counts cost some 16,000 instructions a slice and about 55 a value, and
// slices.Sort 145 to 165 a value on random latencies: per value, 154
// against 181 at 128 values, 144 against 121 at 256, 158 against 94 at
// 384 and 165 against 86 at 511 (cachegrind, each sorted 100 times). It
// was 512, where a disaggregated fleet's decode replicas' shares of
// 2,000 requests (500 each) took slices.Sort: Regime/Disagg 11,152 then
// 11,025 instructions a request (the budget test).
const radixMin = 256

// The small slices' digits (SortDurations): four of 10 bits, for fewer
// than smallRadix values.
const (
	smallRadix     = 4096
	smallDigitBits = 10
	smallDigits    = 4
	smallDigitMask = 1<<smallDigitBits - 1
)
