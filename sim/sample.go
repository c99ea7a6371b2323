package sim

import (
	"math"
	"sync"
)

// sample is one latency's values: exact up to a limit, a Sketch beyond.
//
// The exact values are kept in fixed chunks drawn from a pool shared by
// every run of the process, and gathered into one slice of exactly their
// number when the summary reads them: a run's samples then cost that one
// slice, not a slice grown by doubling (about twice the bytes, each value
// copied again at every growth), and a sweep's runs reuse one another's
// chunks. BenchmarkRunAtlas keeps seven such samples of 20,000 values.
type sample struct {
	x      []float64    // the exact values gathered so far (values)
	chunks []*[]float64 // the exact values added since, in order; the last chunk may be partial
	n      int          // how many values the chunks hold
	sk     *Sketch
}

// sampleChunk is how many values a chunk holds: 32 KiB.
const sampleChunk = 4096

var chunkPool = sync.Pool{New: func() any {
	c := make([]float64, 0, sampleChunk)
	return &c
}}

func (s *sample) add(v float64, limit int) {
	if s.sk == nil {
		if len(s.x)+s.n < limit {
			if s.n%sampleChunk == 0 {
				s.chunks = append(s.chunks, chunkPool.Get().(*[]float64))
			}
			c := s.chunks[len(s.chunks)-1]
			*c = append(*c, v)
			s.n++
			return
		}
		s.sk = newSketch()
		for _, y := range s.x {
			s.sk.Add(y)
		}
		s.x = nil
		for _, c := range s.chunks { // in add order
			for _, y := range *c {
				s.sk.Add(y)
			}
		}
		s.free()
	}
	s.sk.Add(v)
}

// free returns the chunks to the pool.
func (s *sample) free() {
	for _, c := range s.chunks {
		*c = (*c)[:0]
		chunkPool.Put(c)
	}
	s.chunks, s.n = nil, 0
}

// values gathers the exact values into one slice, in add order (nil when
// sketched, or when there are none): a chunk at a time, not a call a
// value (a closure a value was 3 % of BenchmarkRunAtlas's instructions).
func (s *sample) values() []float64 {
	if s.n > 0 {
		x := make([]float64, len(s.x), len(s.x)+s.n)
		copy(x, s.x)
		for _, c := range s.chunks {
			x = append(x, *c...)
		}
		s.free()
		s.x = x
	}
	return s.x
}

// summarise sorts the exact values and returns them with their Dist, or
// nil and the sketch's Dist.
// buf is sortFloats' scratch, shared by a summary's samples.
func (s *sample) summarise(m Method, buf *[]float64) ([]float64, Dist) {
	if s.sk != nil {
		return nil, s.sk.Dist(m)
	}
	x := s.values()
	*buf = sortFloats(x, *buf)
	return x, dist(x, m)
}

// same reports whether s and t keep the same exact values in the same
// order (bit for bit: the sort of one is then the sort of the other).
func (s *sample) same(t *sample) bool {
	if s.sk != nil || t.sk != nil {
		return false
	}
	x, y := s.values(), t.values()
	if len(x) != len(y) {
		return false
	}
	for i, v := range x {
		if math.Float64bits(v) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}

// summariseAs is summarise for a sample that, when same is set, held the
// values of another, already sorted into sorted: it copies them instead
// of sorting again.
func (s *sample) summariseAs(m Method, buf *[]float64, same bool, sorted []float64) ([]float64, Dist) {
	if !same {
		return s.summarise(m, buf)
	}
	x := s.values()
	copy(x, sorted)
	return x, dist(x, m)
}
