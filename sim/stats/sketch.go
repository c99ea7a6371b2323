package stats

import (
	"fmt"
	"math"
	"slices"
)

// SketchAccuracy is the relative accuracy of the summary's sketches: a
// percentile read from one lies within 0.5 % of the exact percentile of
// the same values (the same Method, on the same ranks).
const SketchAccuracy = 0.005

// Sketch is a mergeable quantile sketch with a relative-error guarantee:
// DDSketch (Masson, Rim & Lee, "DDSketch: a fast and fully-mergeable
// quantile sketch with relative-error guarantees", VLDB 2019). A positive
// value x falls in the bucket i = ⌈log_γ x⌉ with γ = (1+α)/(1−α), and the
// bucket answers 2γ^i/(γ+1), within α of every value in it; counts are
// exact, so the k-th smallest value is answered within α, and so is a
// linear interpolation between two of them. Values below 1e-9 (ms: a
// femtosecond) count as zero and +Inf ("beyond every bound") as itself;
// the count, the mean, the standard deviation and the maximum are exact.
//
// Buckets are dense between the smallest and the largest index seen: a
// latency sample spanning a microsecond to a day at α = 0.5 % holds about
// 2,600 of them (21 KB), whatever the number of values.
//
// Why not github.com/DataDog/sketches-go: its mapping and stores are what
// this file does in a hundred lines, and the module links protobuf for its
// wire format; a servesim summary needs neither the format nor the
// negative values and collapsing stores it supports.
type Sketch struct {
	alpha, lnGamma float64
	invLnGamma     float64  // 1 / lnGamma, for index
	guard          float64  // index's margin: (10⁻¹⁰ + 7.1·10⁻¹¹) / lnGamma (sketchlog.go)
	bins           []uint64 // bins[j] counts bucket offset + j
	offset         int
	zero, inf      uint64
	n              uint64
	max            float64
	mean, m2       float64 // Welford's running moments of the finite values
	finite         uint64
	// The last finite value counted in a bucket and its bucket (AddN):
	// 0 (no such value is below sketchZero) until the first.
	lastX float64
	lastI int
}

// NewSketch returns an empty sketch of relative accuracy alpha in (0, 1).
func NewSketch(alpha float64) (*Sketch, error) {
	if !(alpha > 0 && alpha < 1) {
		return nil, fmt.Errorf("stats: sketch accuracy must be in (0, 1), got %v", alpha)
	}
	lg := math.Log((1 + alpha) / (1 - alpha))
	return &Sketch{alpha: alpha, lnGamma: lg, invLnGamma: 1 / lg, guard: (1e-10 + 7.1e-11) / lg, max: math.Inf(-1)}, nil
}

func newSketch() *Sketch {
	s, _ := NewSketch(SketchAccuracy)
	return s
}

// Accuracy is the sketch's relative accuracy α.
func (s *Sketch) Accuracy() float64 { return s.alpha }

// Clone is a deep copy of s.
func (s *Sketch) Clone() *Sketch {
	k := *s
	k.bins = slices.Clone(s.bins)
	return &k
}

// N is the number of values added.
func (s *Sketch) N() int { return int(s.n) }

const sketchZero = 1e-9

// Add adds x (non-negative; NaN and negative values count as zero).
func (s *Sketch) Add(x float64) { s.AddN(x, 1) }

// AddN adds x k times.
func (s *Sketch) AddN(x float64, k int) {
	if k <= 0 {
		return
	}
	n := uint64(k)
	// The buckets, the count and the maximum; then the moments, of the
	// finite values. (Here, the bucket's count added in place when the
	// dense range holds it, rather than in calls of a count method and
	// bump, and tableIndex's logarithm computed in it rather than called:
	// BenchmarkRunFleet64/workload=atlas/router=LeastLoaded, whose
	// summary sketches about 14 values a request past ExactSamples,
	// 9,747 then 9,143 instructions a request, the sketch's functions
	// 1,936 then 1,392; SERVESIM_BUDGET_FUNCS.)
	s.n += n
	if x > s.max || s.max < -math.MaxFloat64 { // the first value (max is -Inf), or x above it
		s.max = x
	}
	switch {
	case math.IsInf(x, 1):
		s.inf += n
		return
	case !(x >= sketchZero):
		s.zero += n
		x = 0
	default:
		// A value equal to the last one counted in a bucket is counted in
		// the same, not computed again: a summary's TPOTs repeat the one
		// before one time in two, its worst gaps 19 times in 20
		// (BenchmarkRunFleet64/workload=atlas/router=LeastLoaded called
		// tableIndex for 10 values a request, then 6.2; with the table's
		// shorter series and constant guard, sketchlog.go, 8,465 then
		// 8,207 instructions a request, cachegrind's marginal count;
		// TestSketchBucketsAreEachValues holds it to the definition).
		i := s.lastI
		if x != s.lastX {
			var ok bool
			if i, ok = s.tableIndex(x); !ok {
				i = s.index(x)
			}
			s.lastX, s.lastI = x, i
		}
		if j := i - s.offset; uint(j) < uint(len(s.bins)) {
			s.bins[j] += n
		} else {
			s.bump(i, n)
		}
	}
	s.finite += n
	// Counts are below 2⁶³, where a uint64 converts as its int64 does
	// (Go's uint64 conversion was a branchy sequence at every value).
	d, nf := x-s.mean, float64(k)
	s.mean += d * nf / float64(int64(s.finite))
	s.m2 += d * (x - s.mean) * nf
}

// bump adds n to bucket i, growing the dense range to hold it.
func (s *Sketch) bump(i int, n uint64) {
	switch {
	case len(s.bins) == 0:
		s.bins, s.offset = make([]uint64, 1, 64), i
	case i < s.offset:
		grown := make([]uint64, len(s.bins)+s.offset-i, cap(s.bins)+s.offset-i)
		copy(grown[s.offset-i:], s.bins)
		s.bins, s.offset = grown, i
	case i >= s.offset+len(s.bins):
		s.bins = append(s.bins, make([]uint64, i-s.offset-len(s.bins)+1)...)
	}
	s.bins[i-s.offset] += n
}

// Merge adds o's values to s. Both must have the same accuracy.
func (s *Sketch) Merge(o *Sketch) error {
	if o.alpha != s.alpha {
		return fmt.Errorf("stats: merging sketches of accuracy %v and %v", s.alpha, o.alpha)
	}
	for j, c := range o.bins {
		if c > 0 {
			s.bump(o.offset+j, c)
		}
	}
	if o.n > 0 && (o.max > s.max || s.n == 0) {
		s.max = o.max
	}
	s.n += o.n
	s.zero += o.zero
	s.inf += o.inf
	if o.finite > 0 { // Chan et al.'s pairwise update of the moments
		n := s.finite + o.finite
		d := o.mean - s.mean
		s.m2 += o.m2 + d*d*float64(s.finite)*float64(o.finite)/float64(n)
		s.mean += d * float64(o.finite) / float64(n)
		s.finite = n
	}
	return nil
}

// at answers the k-th smallest value (0-based, k < N).
func (s *Sketch) at(k int) float64 {
	rank := uint64(k)
	if rank < s.zero {
		return 0
	}
	seen := s.zero
	for j, c := range s.bins {
		if seen += c; rank < seen {
			v := 2 * math.Exp(float64(s.offset+j)*s.lnGamma) / (1 + math.Exp(s.lnGamma))
			return min(v, s.max) // the maximum is exact
		}
	}
	return math.Inf(1)
}

// Quantile is the p-quantile by m's rule, over the sketch's answers for
// the ranks it needs: within α of the exact quantile.
func (s *Sketch) Quantile(m Method, p float64) float64 {
	return m.quantileAt(p, int(s.n), s.at)
}

// Dist summarises the sketch as Dist: N, Mean, Std and Max exact (Mean and
// Std over the finite values), percentiles within α, RelErr = α.
func (s *Sketch) Dist(m Method) Dist {
	if s.n == 0 {
		return DistOf(nil, m)
	}
	d := Dist{N: int(s.n), Mean: math.NaN(), Std: math.NaN(), Max: s.max, RelErr: s.alpha,
		Median: s.Quantile(m, 0.5), P90: s.Quantile(m, 0.9), P95: s.Quantile(m, 0.95), P99: s.Quantile(m, 0.99)}
	if s.inf > 0 { // as gonum's moments over a sample holding +Inf
		d.Mean, d.Std = math.Inf(1), math.NaN()
	} else if s.finite > 0 {
		d.Mean, d.Std = s.mean, math.Sqrt(max(s.m2, 0)/float64(s.finite))
	}
	return d
}
