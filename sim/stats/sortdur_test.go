package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// SortDurations sorts like slices.Sort, and SortDurationsMS too (its
// milliseconds are those of slices.Sort's order, bit for bit, unless it
// converts none): lognormal latencies, values with repeats, negatives,
// durations past its four digits and time.Duration(math.MaxInt64) (the
// fallback), values needing the fourth digit, short slices, and slices
// below smallRadix (10-bit digits, or 12 from 2⁴⁰ ns) and at it.
func TestSortDurationsIsSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	run := time.Duration(0) // the "few runs" value
	gens := map[string]func() time.Duration{
		"lognormal": func() time.Duration { return time.Duration(math.Exp(rng.NormFloat64()*1.5+5) * 1e6) },
		"repeats":   func() time.Duration { return time.Duration(rng.IntN(40)) * 12500 * time.Microsecond },
		"signed":    func() time.Duration { return time.Duration(rng.NormFloat64() * 1e9) },
		"infinite": func() time.Duration {
			if rng.IntN(10) == 0 {
				return time.Duration(math.MaxInt64)
			}
			return time.Duration(rng.Int64N(1e12))
		},
		"hours":             func() time.Duration { return time.Duration(rng.Int64N(1 << 47)) }, // the fourth digit
		"minutes":           func() time.Duration { return time.Duration(rng.Int64N(1 << 40)) }, // every bit of the 10-bit digits
		"constant":          func() time.Duration { return 600 * time.Millisecond },
		"zero":              func() time.Duration { return 0 },
		"constant infinite": func() time.Duration { return time.Duration(math.MaxInt64) },
		"constant negative": func() time.Duration { return -time.Millisecond },
		"zeros":             func() time.Duration { return time.Duration(rng.IntN(2)) },
		// fewTies': values of a few instants each, a 4 µs digit apart
		// at most (sortNearly's moves past its bound: slices.Sort), and
		// a 100 ms spread of 3 µs steps (a few moves each).
		"bunched": func() time.Duration {
			return time.Duration(rng.IntN(30))<<27 + time.Duration(rng.IntN(1<<12))
		},
		"steps": func() time.Duration { return time.Duration(rng.IntN(33_000)) * 3 * time.Microsecond },
		// fewDistinct's: up to its bound of distinct values, past it, and
		// a value it does not convert among few.
		"few":      func() time.Duration { return 45*time.Millisecond + time.Duration(rng.IntN(fewMax))*7919 },
		"over few": func() time.Duration { return time.Duration(rng.IntN(fewMax+1)) * time.Millisecond },
		// A run's worst gaps: 200 step times, between n/16 and n/8 of
		// 2,000 values.
		"worst gaps": func() time.Duration { return 45*time.Millisecond + time.Duration(rng.IntN(200))*555555 },
		// Runs of one value (a summary's worst gaps), a run's first
		// value sometimes one not converted.
		"few runs": func() time.Duration {
			if rng.IntN(8) > 0 {
				return run
			}
			switch rng.IntN(3000) {
			case 0:
				run = -1
			case 1:
				run = 1 << 48
			default:
				run = time.Duration(rng.IntN(24)) * 5 * time.Millisecond
			}
			return run
		},
		"few signed": func() time.Duration {
			if rng.IntN(5000) == 0 {
				return -1
			}
			return time.Duration(rng.IntN(8)) * time.Second
		},
		"few far": func() time.Duration {
			if rng.IntN(5000) == 0 {
				return 1 << 48
			}
			return time.Duration(rng.IntN(8)) * time.Second
		},
	}
	var buf []time.Duration
	for name, gen := range gens {
		for _, n := range []int{0, 1, radixMin - 1, radixMin, radixMin + 1, 511, 512, 513, 2_000, smallRadix - 1, smallRadix, 20_000} {
			x := make([]time.Duration, n)
			for i := range x {
				x[i] = gen()
			}
			want := slices.Clone(x)
			slices.Sort(want)
			y := slices.Clone(x)
			buf = SortDurations(x, buf)
			require.Equal(t, want, x, "%s, %d values", name, n)
			var ms []float64
			if ms, buf = SortDurationsMS(y, buf); ms == nil {
				require.Equal(t, want, y, "%s, %d values, not converted", name, n)
				continue
			}
			require.Len(t, ms, n)
			require.Same(t, &y[0], (*time.Duration)(unsafe.Pointer(&ms[0])), "%s: the milliseconds are in x's array", name)
			for i, d := range want {
				require.Equal(t, math.Float64bits(float64(d)/1e6), math.Float64bits(ms[i]), "%s, %d values: the %dth", name, n, i)
			}
		}
	}
}

// One value far above the others, at an even or an odd place, sorts as
// slices.Sort sorts: one of 68.7 s or more (2³⁶ ns) asks countDigits for
// the fourth digit, one of 2⁴⁸ ns or more for slices.Sort, whichever of
// the two values a turn it reads it is.
func TestSortDurationsOneFarValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var buf []time.Duration
	spread := func() time.Duration { return time.Duration(math.Exp(rng.NormFloat64()*1.5+5) * 1e6) }
	bunched := func() time.Duration { return time.Duration(rng.IntN(30))<<27 + time.Duration(rng.IntN(1<<12)) } // no insertion after the passes to mend an order
	for _, far := range []time.Duration{70 * time.Second, 1<<36 + 5, 1 << 48, 1<<48 + 7} {
		for _, at := range []int{0, 1, 2, 3, smallRadix} {
			x := make([]time.Duration, smallRadix+1)
			gen := spread
			if at%2 == 1 {
				gen = bunched
			}
			for i := range x {
				x[i] = gen()
			}
			x[at] = far
			want := slices.Clone(x)
			slices.Sort(want)
			y := slices.Clone(x)
			buf = SortDurations(x, buf)
			require.Equal(t, want, x, "%v at %d", far, at)
			var ms []float64
			if ms, buf = SortDurationsMS(y, buf); ms == nil {
				require.Equal(t, want, y, "%v at %d, not converted", far, at)
				continue
			}
			for i, d := range want {
				require.Equal(t, math.Float64bits(float64(d)/1e6), math.Float64bits(ms[i]), "%v at %d: the %dth", far, at, i)
			}
		}
	}
}

// A slice of few distinct values whose first one SortDurationsMS does
// not convert (negative, or 2⁴⁸ ns or more) is not converted, and is
// sorted: fewDistinct tests its first value apart from the others.
func TestFewDistinctFirstValue(t *testing.T) {
	for _, first := range []time.Duration{-1, -time.Second, 1 << 48, math.MaxInt64, 0, 45 * time.Millisecond} {
		x := make([]time.Duration, 2_000)
		for i := range x {
			x[i] = time.Duration(i/100) * 45 * time.Millisecond
		}
		x[0] = first
		want := slices.Clone(x)
		slices.Sort(want)
		ms, _ := SortDurationsMS(x, nil)
		if first < 0 || first >= 1<<48 {
			require.Nil(t, ms, "first %v", first)
			require.Equal(t, want, x, "first %v", first)
			continue
		}
		require.NotNil(t, ms, "first %v", first)
		for i, d := range want {
			require.Equal(t, math.Float64bits(float64(d)/1e6), math.Float64bits(ms[i]), "first %v: the %dth", first, i)
		}
	}
}

// BenchmarkSortDurations compares the radix sort with slices.Sort on a
// summary's 20,000 lognormal latencies.
func BenchmarkSortDurations(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]time.Duration, 20_000)
	for i := range x {
		x[i] = time.Duration(math.Exp(rng.NormFloat64()*1.5+5) * 1e6)
	}
	y := make([]time.Duration, len(x))
	b.Run("radix", func(b *testing.B) {
		var buf []time.Duration
		for b.Loop() {
			copy(y, x)
			buf = SortDurations(y, buf)
		}
	})
	b.Run("slices", func(b *testing.B) {
		for b.Loop() {
			copy(y, x)
			slices.Sort(y)
		}
	})
}

func bitsOf(x []float64) []uint64 {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	return b
}

// FuzzSortDurations holds SortDurations and SortDurationsMS to
// slices.Sort on samples of radixMin to radixMin + 8,191 values, each a spread part
// (to 2^(20+spread) ns) plus a jitter within the lowest digit, so that
// fewTies (from 4,096 values) and sortTop (below) take many and
// sortNearly moves some, or past its bound.
func FuzzSortDurations(f *testing.F) {
	f.Add(uint64(1), uint16(20_000), uint8(14), uint16(4095))
	f.Add(uint64(2), uint16(600), uint8(27), uint16(1))
	f.Add(uint64(3), uint16(8_000), uint8(6), uint16(4095))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, spread uint8, jitter uint16) {
		rng := rand.New(rand.NewPCG(seed, 7))
		x := make([]time.Duration, radixMin+int(n)%8192)
		for i := range x {
			v := time.Duration(rng.Int64N(1 << (20 + spread%28)))
			if jitter > 0 {
				v += time.Duration(rng.IntN(int(jitter%4096) + 1))
			}
			x[i] = v
		}
		want := slices.Clone(x)
		slices.Sort(want)
		y := slices.Clone(x)
		SortDurations(x, nil)
		require.Equal(t, want, x)
		if ms, _ := SortDurationsMS(y, nil); ms != nil {
			for i, d := range want {
				require.Equal(t, math.Float64bits(float64(d)/1e6), math.Float64bits(ms[i]), "the %dth", i)
			}
		} else {
			require.Equal(t, want, y)
		}
	})
}

// fewDistinct takes samples of up to its bound of distinct values drawn
// evenly (a run's worst gaps, 200 step times of 2,000 values, or 1,000
// of 20,000: most of its first values are new), on every seed tried,
// and leaves nearly distinct latencies early, x unchanged.
func TestFewDistinctTakesWorstGaps(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(8, seed))
		for _, c := range []struct{ n, distinct int }{{2_000, 200}, {2_000, 250}, {20_000, 1_000}} {
			x := make([]time.Duration, c.n)
			for i := range x {
				x[i] = 45*time.Millisecond + time.Duration(rng.IntN(c.distinct))*555555
			}
			require.True(t, fewDistinct(x), "seed %d, %d of %d values", seed, c.distinct, c.n)
			for i := range x {
				x[i] = time.Duration(math.Exp(rng.NormFloat64()*1.5+5) * 1e6)
			}
			y := slices.Clone(x)
			require.False(t, fewDistinct(x))
			require.Equal(t, y, x)
		}
	}
}
