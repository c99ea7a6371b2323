package sim

import (
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// sample is one latency's values: exact up to a limit, a Sketch beyond.
//
// The values are held as the durations they are, and converted to
// milliseconds (ms) only when the summary reads them, sorted: the
// conversion never reverses two values' order (float64 of an integer and
// division by a positive constant, both correctly rounded, are
// non-decreasing), and values it makes equal become the same bits, so the
// milliseconds sorted are exactly the milliseconds of the durations
// sorted, and durations sort twice as fast as floats (sortDurations).
// infMS stands for a latency beyond every bound (+Inf ms).
//
// The exact values are kept in fixed chunks drawn from a pool shared by
// every run of the process, and gathered into one slice of exactly their
// number when the summary reads them: a run's samples then cost that one
// slice, not a slice grown by doubling (about twice the bytes, each value
// copied again at every growth), and a sweep's runs reuse one another's
// chunks. BenchmarkRunAtlas keeps seven such samples of 20,000 values.
//
// The chunk being filled is also held as a slice (cur) whose capacity is
// the room left in it, never past the limit: an add within it is a store,
// inlined into the collector's count, and every other add takes addSlow.
// (The split is worth 1.0 % of RunAtlas's instructions and of
// RunBatch256's, measured 2026-12-04; it stays as one of five splits worth
// 3.9 % together: docs/scale.md, "What the inlining contortions are
// worth".)
type sample struct {
	x      []time.Duration    // the exact values gathered so far (values)
	chunks []*[]time.Duration // the exact values added since, in order; the last is cur's
	cur    []time.Duration    // the last chunk's values (its slice's length is written back by sync)
	n      int                // how many values the chunks before the last hold
	sk     *Sketch
}

// sampleChunk is how many values a chunk holds: 32 KiB.
const sampleChunk = 4096

var chunkPool = sync.Pool{New: func() any {
	c := make([]time.Duration, 0, sampleChunk)
	return &c
}}

// infMS is the duration a sample holds for +Inf ms (offered, in summary.go): no
// latency reaches it (a run's instants are below it).
const infMS = time.Duration(math.MaxInt64)

// msOf is a held value in milliseconds.
func msOf(d time.Duration) float64 {
	if d == infMS {
		return math.Inf(1)
	}
	return ms(d)
}

// add adds a value: exactly while the sample holds fewer than limit
// values (the same limit at every call), to the sketch after.
func (s *sample) add(v time.Duration, limit int) {
	if c := s.cur; len(c) < cap(c) {
		s.cur = append(c, v) // never grows
		return
	}
	s.addSlow(v, limit)
}

// addSlow is add with no room in the chunk being filled: a new chunk, or
// the sketch.
func (s *sample) addSlow(v time.Duration, limit int) {
	if s.sk == nil {
		s.sync()
		if held := len(s.x) + s.n; held < limit {
			c := chunkPool.Get().(*[]time.Duration)
			s.chunks = append(s.chunks, c)
			s.cur = (*c)[:1:min(sampleChunk, limit-held)]
			s.cur[0] = v
			return
		}
		s.sk = newSketch()
		for _, y := range s.x {
			s.sk.Add(msOf(y))
		}
		s.x = nil
		for _, c := range s.chunks { // in add order
			for _, y := range *c {
				s.sk.Add(msOf(y))
			}
		}
		s.free()
	}
	s.sk.Add(msOf(v))
}

// sync writes the chunk being filled back into its place, and counts it
// among the chunks before the next.
func (s *sample) sync() {
	if len(s.chunks) > 0 && s.cur != nil {
		c := s.chunks[len(s.chunks)-1]
		*c = (*c)[:len(s.cur)] // its length: cur's capacity may be cut short
		s.n += len(s.cur)
		s.cur = nil
	}
}

// free returns the chunks to the pool.
func (s *sample) free() {
	for _, c := range s.chunks {
		*c = (*c)[:0]
		chunkPool.Put(c)
	}
	s.chunks, s.cur, s.n = nil, nil, 0
}

// values gathers the exact values into one slice, in add order (nil when
// sketched, or when there are none): a chunk at a time, not a call a
// value (a closure a value was 3 % of BenchmarkRunAtlas's instructions).
func (s *sample) values() []time.Duration {
	s.sync()
	if s.n > 0 {
		x := make([]time.Duration, len(s.x), len(s.x)+s.n)
		copy(x, s.x)
		for _, c := range s.chunks {
			x = append(x, *c...)
		}
		s.free()
		s.x = x
	}
	return s.x
}

// scratch is a summary's scratch space: sortDurations' buffer, and the
// values of a sample whose Dist alone is kept. It is reused across runs
// (scratchPool): a sweep summarises every run, and the two were a fifth
// of what a BenchmarkRunAtlas run allocated.
type scratch struct{ sort, vals []time.Duration }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// summarise sorts the exact values and returns them in milliseconds with
// their Dist, or nil and the sketch's Dist.
func (s *sample) summarise(m Method, sc *scratch) ([]float64, Dist) {
	if s.sk != nil {
		return nil, s.sk.Dist(m)
	}
	x := s.values()
	sc.sort = sortDurations(x, sc.sort)
	s.x = nil // its array now holds the milliseconds
	y := toMS(x)
	return y, dist(y, m)
}

// distOnly is summarise's Dist, its values gathered into the scratch and
// not kept.
func (s *sample) distOnly(m Method, sc *scratch) Dist {
	if s.sk != nil {
		return s.sk.Dist(m)
	}
	s.sync()
	x := append(sc.vals[:0], s.x...)
	for _, c := range s.chunks {
		x = append(x, *c...)
	}
	s.free()
	s.x = nil
	sc.sort = sortDurations(x, sc.sort)
	d := dist(toMS(x), m)
	sc.vals = x[:0]
	return d
}

// toMS converts x to milliseconds in place, and returns them in x's array
// (nil for nil): both are 8-byte values without pointers, so the summary
// allocates one array a sample, as when it kept milliseconds.
func toMS(x []time.Duration) []float64 {
	y := asFloats(x)
	for i, d := range x {
		y[i] = msOf(d) // x[i] is read before y[i], the same 8 bytes, is written
	}
	return y
}

// asFloats is x's array as float64s (nil for an empty x).
func asFloats(x []time.Duration) []float64 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
}

// clone is a deep copy of s (its chunks gathered first).
func (s *sample) clone() sample {
	if s.sk != nil {
		k := *s.sk
		k.bins = slices.Clone(s.sk.bins)
		return sample{sk: &k}
	}
	return sample{x: slices.Clone(s.values())}
}
