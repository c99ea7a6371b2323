package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSampleChunks: a sample's exact values come back in add order across
// chunk boundaries, and after a first gathering; past the limit they all
// go to the sketch, the earlier ones first.
func TestSampleChunks(t *testing.T) {
	const n = 3*sampleChunk + 17
	var s sample
	for i := range n {
		s.add(time.Duration(i), 10*sampleChunk)
	}
	x := s.values()
	require.Len(t, x, n)
	for i, v := range x {
		require.Equal(t, time.Duration(i), v)
	}
	assert.Equal(t, x, s.values(), "gathering twice changes nothing")
	for i := n; i < n+sampleChunk+1; i++ {
		s.add(time.Duration(i), 10*sampleChunk)
	}
	x = s.values()
	require.Len(t, x, n+sampleChunk+1)
	for i, v := range x {
		require.Equal(t, time.Duration(i), v)
	}

	// Past the limit: every value is counted once by the sketch, in order
	// (the Welford mean of 0..k-1 is (k-1)/2, the maximum k-1).
	var t2 sample
	const limit = sampleChunk + 5
	for i := range 2 * limit {
		t2.add(time.Duration(i)*time.Millisecond, limit)
	}
	require.NotNil(t, t2.sk)
	assert.Nil(t, t2.values())
	assert.Equal(t, 2*limit, t2.sk.N())
	d := t2.sk.Dist(stats.LinearInterpolation)
	assert.InDelta(t, float64(2*limit-1)/2, d.Mean, 1e-9)
	assert.Equal(t, float64(2*limit-1), d.Max)

	var empty sample
	assert.Nil(t, empty.values())
	got, d0 := empty.summarise(stats.LinearInterpolation, new(scratch))
	assert.Nil(t, got)
	assert.Zero(t, d0.N)
}

// A sample holds exactly limit values exactly, whatever the limit's place
// among the chunks, and sketches them all at the next: the chunk being
// filled never has room past the limit.
func TestSampleLimit(t *testing.T) {
	for _, limit := range []int{1, 3, sampleChunk - 1, sampleChunk, sampleChunk + 1, 2 * sampleChunk} {
		var s sample
		for i := range limit {
			s.add(time.Duration(i), limit)
		}
		require.Nil(t, s.sk, "limit %d", limit)
		x := s.values()
		require.Len(t, x, limit)
		for i, v := range x {
			require.Equal(t, time.Duration(i), v)
		}
		s.add(time.Duration(limit)*time.Millisecond, limit)
		require.NotNil(t, s.sk, "limit %d: one more sketches", limit)
		assert.Equal(t, limit+1, s.sk.N())
		assert.Equal(t, float64(limit), s.sk.Dist(stats.LinearInterpolation).Max, "the sketch takes milliseconds")

		var u sample // the same, never gathered before the limit
		for i := range limit + 1 {
			u.add(time.Duration(i), limit)
		}
		require.NotNil(t, u.sk, "limit %d", limit)
		assert.Equal(t, limit+1, u.sk.N())
	}
}

// A run that measures more requests than Config.ExactSamples reports the
// same counts, goodput and attainment as an exact run (the sketch touches
// only the latency distributions), each distribution's N, mean and max
// exactly, its percentiles within SketchAccuracy, says so (RelErr) and
// keeps no samples; and it is deterministic.
func TestRunPastExactSamplesSketches(t *testing.T) {
	run := func(exact int) Summary {
		cfg := Config{Window: Window{Warmup: 30 * time.Second}, ExactSamples: exact, Timeout: 20 * time.Second}
		s, err := Run(cfg, poisson(t, 5, 2.4, 3000, workload.Fixed(2000, 200)), nil)
		require.NoError(t, err)
		return s
	}
	exact, sk := run(0), run(500)
	assert.Equal(t, exact.Offered, sk.Offered)
	assert.Equal(t, exact.Good, sk.Good)
	assert.Equal(t, exact.Status, sk.Status)
	assert.Equal(t, exact.Goodput, sk.Goodput)
	assert.False(t, exact.Sketched())
	assert.True(t, sk.Sketched())
	assert.Greater(t, exact.TTFT.N, 500)
	sketchedWithin(t, exact, sk)
	assert.Nil(t, sk.Samples.TTFT)
	assert.NotNil(t, exact.Samples.TTFT)
	assert.Nil(t, sk.Samples.WorstITL)
	assert.Len(t, exact.Samples.WorstITL, exact.WorstITL.N)
	// The ITL's distinct values stay exact (a few dozen step durations).
	assert.Equal(t, exact.ITL, sk.ITL)
	assert.Equal(t, fmt.Sprintf("%+v", sk), fmt.Sprintf("%+v", run(500)), "same seed, same bytes")

	// Distinct inter-token gaps past the limit sketch too, in an order
	// that does not depend on map iteration.
	tiny := run(3)
	assert.Equal(t, stats.SketchAccuracy, tiny.ITL.RelErr)
	assert.Nil(t, tiny.Samples.ITL)
	assert.Equal(t, exact.ITL.N, tiny.ITL.N)
	assert.InEpsilon(t, exact.ITL.P99, tiny.ITL.P99, stats.SketchAccuracy*(1+1e-9))
	assert.Equal(t, fmt.Sprintf("%+v", tiny), fmt.Sprintf("%+v", run(3)))
}

// sketchedWithin holds each latency sketched past ExactSamples in sk to
// the exact one of the same run: the same count, maximum and mean, and
// each percentile within the sketch's stated relative error.
func sketchedWithin(t *testing.T, exact, sk Summary) {
	t.Helper()
	for name, pair := range map[string][2]stats.Dist{"TTFT": {exact.TTFT, sk.TTFT}, "TPOT": {exact.TPOT, sk.TPOT}, "E2E": {exact.E2E, sk.E2E},
		"Queue": {exact.QueueDelay, sk.QueueDelay}, "TTFTOffered": {exact.TTFTOffered, sk.TTFTOffered},
		"WorstITL": {exact.WorstITL, sk.WorstITL}} {
		e, s := pair[0], pair[1]
		assert.Equal(t, e.N, s.N, name)
		assert.Equal(t, e.Max, s.Max, name)
		assert.InEpsilon(t, e.Mean, s.Mean, 1e-9, name)
		assert.Equal(t, stats.SketchAccuracy, s.RelErr, name)
		for _, q := range [][2]float64{{e.Median, s.Median}, {e.P90, s.P90}, {e.P99, s.P99}} {
			if q[0] == 0 {
				assert.Zero(t, q[1], name)
				continue
			}
			assert.InEpsilon(t, q[0], q[1], stats.SketchAccuracy*(1+1e-9), name)
		}
	}
}

func TestExactSamplesValidates(t *testing.T) {
	assert.ErrorContains(t, Config{ExactSamples: -1}.Validate(), "ExactSamples")
}

// A sketched ITL sample comes out the same to the bit however its gaps
// were grouped (a fast-forwarded run adds a gap once for many tokens, a
// stepwise one once a step), with the exact mean and deviation.
func TestSketchedGapsAreGroupingFree(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var gaps []time.Duration
	for range 3000 {
		gaps = append(gaps, time.Duration(r.IntN(200_000_000))+time.Duration(r.IntN(3))*time.Hour)
	}
	one, many := weighted{limit: 10}, weighted{limit: 10}
	exact := weighted{}
	for i, d := range gaps {
		k := 1 + i%7
		many.add(d, k)
		exact.add(d, k)
		for range k {
			one.add(d, 1)
		}
	}
	a, b, e := weightedDist(&one, stats.LinearInterpolation), weightedDist(&many, stats.LinearInterpolation), weightedDist(&exact, stats.LinearInterpolation)
	assert.Equal(t, fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b))
	assert.Equal(t, stats.SketchAccuracy, a.RelErr)
	assert.Equal(t, e.N, a.N)
	assert.Equal(t, e.Max, a.Max)
	assert.InEpsilon(t, e.Mean, a.Mean, 1e-12)
	assert.InEpsilon(t, e.Std, a.Std, 1e-9)
	assert.InEpsilon(t, e.P99, a.P99, stats.SketchAccuracy*(1+1e-9))
}

// A weighted sample's counts are those of a plain map of value → count,
// whatever runs and alternations its gaps come in (it holds the last two
// values back from the map), and a sketched one is the sketch of every
// gap counted one by one.
func TestWeightedCountsAreTheMap(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := range 200 {
		values := 1 + r.IntN(5)
		limit := 0
		if trial%3 == 0 {
			limit = 1 + r.IntN(4) // sketched when more values than that come
		}
		w, one := weighted{limit: limit}, weighted{limit: limit}
		want := map[time.Duration]int{}
		for range r.IntN(300) {
			d := time.Duration(1+r.IntN(values)) * time.Millisecond
			n := r.IntN(4) // 0 too: a move of no measured member
			w.add(d, n)
			one.count(d, n)
			want[d] += n
		}
		got := map[time.Duration]int{}
		for _, vc := range valueCounts(&w) {
			got[time.Duration(vc.Value*1e6)] = vc.Count
		}
		if one.sk != nil {
			require.NotNil(t, w.sk, "trial %d", trial)
			assert.Equal(t, fmt.Sprintf("%#v", weightedDist(&one, stats.LinearInterpolation)), fmt.Sprintf("%#v", weightedDist(&w, stats.LinearInterpolation)), "trial %d", trial)
			continue
		}
		assert.Equal(t, want, got, "trial %d", trial)
	}
}

// The milliseconds of the sorted durations are the sorted milliseconds,
// bit for bit (sample.summarise relies on it): the conversion keeps the
// order, and equal milliseconds are the same bits; and sortedToMS is
// toMS on sorted durations.
func TestMillisecondsOfSortedAreSortedMilliseconds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]time.Duration, 50_000)
	for i := range x {
		switch i % 4 {
		case 0:
			x[i] = time.Duration(rng.Int64N(1 << 62)) // beyond float64's 53 bits: neighbours round together
		case 1:
			x[i] = infMS
		default:
			x[i] = time.Duration(math.Exp(rng.NormFloat64()*2+5) * 1e6)
		}
	}
	want := toMS(slices.Clone(x))
	slices.Sort(want)
	stats.SortDurations(x, nil)
	require.Equal(t, bitsOf(want), bitsOf(sortedToMS(slices.Clone(x))))
	require.Equal(t, bitsOf(want), bitsOf(toMS(x)))
	for n := range 6 { // short ones, all infMS or none
		y := slices.Repeat([]time.Duration{infMS}, n)
		require.Equal(t, bitsOf(toMS(slices.Clone(y))), bitsOf(sortedToMS(y)))
		y = x[:n]
		require.Equal(t, bitsOf(toMS(slices.Clone(y))), bitsOf(sortedToMS(slices.Clone(y))))
	}
}

// The weighted form (ITLs as value counts) equals the expanded sample.
func TestWeightedQuantileEqualsExpanded(t *testing.T) {
	rng := workload.NewStream(1, "test")
	var w weighted
	var flat []float64
	for range 200 {
		v, n := rng.IntN(20), 1+rng.IntN(5)
		w.add(durationMs(v), n)
		for range n {
			flat = append(flat, float64(v))
		}
	}
	slices.Sort(flat)
	vals, cum := w.runs()
	for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.99, 1} {
		for _, m := range []stats.Method{stats.LinearInterpolation, stats.InvertedCDF} {
			assert.InDelta(t, m.Quantile(p, flat), m.QuantileCounts(p, vals, cum), 1e-9, "p=%v %v", p, m)
		}
	}
}

// bitsOf is x as bits, for comparing floats exactly (NaN included).
func bitsOf(x []float64) []uint64 {
	b := make([]uint64, len(x))
	for i, v := range x {
		b[i] = math.Float64bits(v)
	}
	return b
}

func durationMs(v int) (d time.Duration) { return time.Duration(v) * 1e6 }

// A fleet's gaps gathered from its replicas' samples (mergedGaps) are
// summarised to the same bytes as one sample every gap was added to, as
// the fleet's was: exact or sketched, whether some, all or none of the
// replicas' samples were sketched, zero counts and all.
func TestMergedGapsAreOneSample(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 41))
	sketched, parted := 0, 0
	for trial := range 600 {
		limit := 0
		switch trial % 3 {
		case 1:
			limit = 1 + r.IntN(6)
		case 2:
			limit = 1 + r.IntN(40)
		}
		values := 1 + r.IntN(30)
		parts := make([]weighted, 1+r.IntN(8))
		for i := range parts {
			parts[i].limit = limit
		}
		one := weighted{limit: limit}
		addSome := func() {
			for range r.IntN(500) {
				d := time.Duration(r.IntN(values)) * 250 * time.Microsecond
				if r.IntN(50) == 0 {
					d = time.Duration(r.Int64N(int64(3 * time.Hour)))
				}
				n := r.IntN(4) // 0 too: a move of no measured member
				parts[r.IntN(len(parts))].add(d, n)
				one.add(d, n)
			}
		}
		addSome()
		ptrs := make([]*weighted, len(parts))
		for i := range parts {
			ptrs[i] = &parts[i]
		}
		got := mergedGaps(limit, ptrs)
		if trial%2 == 1 {
			// A summary read the parts (weighted.sorted keeps what it
			// found), then the run went on: the next merge reads the
			// gaps added since too, and so does a merged sample counted
			// on.
			for _, p := range ptrs {
				p.settle()
				if p.sk == nil {
					p.runs()
				}
			}
			addSome()
			got = mergedGaps(limit, ptrs)
			if got.sk == nil && r.IntN(2) == 0 {
				d := time.Duration(r.IntN(values)) * 250 * time.Microsecond
				got.add(d, 1)
				one.add(d, 1)
			}
		}
		for _, p := range parts {
			if p.sk != nil {
				parted++
			}
		}
		for _, m := range []stats.Method{stats.LinearInterpolation, stats.InvertedCDF} {
			require.Equal(t, fmt.Sprintf("%#v", weightedDist(&one, m)), fmt.Sprintf("%#v", weightedDist(&got, m)), "trial %d", trial)
		}
		require.Equal(t, fmt.Sprintf("%#v", valueCounts(&one)), fmt.Sprintf("%#v", valueCounts(&got)), "trial %d", trial)
		require.Equal(t, one.sk != nil, got.sk != nil, "trial %d", trial)
		if one.sk != nil {
			sketched++
		}
	}
	assert.Greater(t, sketched, 100, "trials sketched")
	assert.Greater(t, parted, 100, "replicas' samples sketched")
}

// valueCounts lists a weighted sample's distinct values with their
// counts; nil when it was sketched.
func valueCounts(w *weighted) []ValueCount {
	w.settle()
	if w.sk != nil {
		return nil
	}
	return countsOfRuns(w.runs())
}

// TestGapCountsIsAMap holds a weighted sample's table of gaps to a Go
// map of gap → count, the table it replaced: random gaps (repeats, zero
// counts, runs of a few values and thousands of distinct ones, so that
// the table grows), every gap's count and the gaps held compared.
func TestGapCountsIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for round := range 200 {
		var g gapCounts
		ref := map[time.Duration]int{}
		distinct := 1 + rng.IntN([]int{4, 70, 5_000}[round%3])
		for range rng.IntN(20_000) {
			d := time.Duration(rng.IntN(distinct)) * 35 * time.Microsecond
			if rng.IntN(50) == 0 {
				d = time.Duration(rng.Int64N(1 << 62)) // any gap
			}
			n := rng.IntN(40)
			g.add(d, n)
			ref[d] += n
		}
		require.Equal(t, len(ref), g.n, "round %d", round)
		got := map[time.Duration]int{}
		for d, n := range g.all() {
			_, dup := got[d]
			require.False(t, dup, "round %d: %v twice", round, d)
			got[d] = n
		}
		require.Equal(t, ref, got, "round %d", round)
		for d, n := range ref {
			require.Equal(t, n, g.get(d), "round %d: %v", round, d)
		}
		require.Zero(t, g.get(-1))
	}
}

// A weighted sample's totals (stepMix's steps and time by composition)
// are its values' count and sum as added one by one, in its table and
// past its limit in its sketch.
func TestWeightedTotalsAreTheSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 41))
	for _, limit := range []int{0, 3, 40, 1000} {
		for range 50 {
			w := weighted{limit: limit}
			n, sum := 0, time.Duration(0)
			for range rng.IntN(300) {
				d := time.Duration(1 + rng.Int64N(int64(50*time.Millisecond)))
				if rng.IntN(3) > 0 { // repeats, as a run's steps do
					d = time.Duration(1+rng.IntN(30)) * time.Millisecond
				}
				k := 1 + rng.IntN(40)
				w.add(d, k)
				n, sum = n+k, sum+time.Duration(k)*d
			}
			gotN, gotSum := w.totals()
			require.Equal(t, n, gotN, "limit %d", limit)
			require.Equal(t, sum, gotSum, "limit %d", limit)
		}
	}
}
