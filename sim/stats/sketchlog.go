package stats

import "math"

// A sketch's bucket index, ⌈ln x / ln γ⌉, is computed for every value it
// counts: in a fleet or a long run every latency of every request past
// Config.ExactSamples, where math.Log was a twentieth of a run. index
// computes the logarithm from a table instead (about a third of the
// cost) and keeps it only where its error cannot change the bucket.
//
// The table's logarithm: x = 2^e · m with m in [1, 2); m's top eight
// mantissa bits pick c_j = 1 + (j + ½)/256, so r = m/c_j − 1 lies within
// ±1/513, and ln x = e·ln 2 + ln c_j + ln(1 + r), the last by its series
// to r⁴ (the rest is below 6·10⁻¹⁵; a table of 128 values and the series
// to r⁵, the rest below 6·10⁻¹⁶, took a product, a sum and a load more).
// Every rounding on the way, and math.Log's own (within an ulp), keeps the
// two within 10⁻¹² of each other for every finite x ≥ sketchZero (the
// largest error is at the top of the range, where ln x ≈ 710 and an ulp
// is 10⁻¹³). So t = ln x / ln γ by the table and the same by math.Log
// differ by at most 10⁻¹²/ln γ plus a few ulps of t, below 10⁻¹³·|t| ≤
// 7.1·10⁻¹¹/ln γ (|ln x| < 710 for every finite x ≥ sketchZero); index
// takes the table's ceiling only when t lies farther than the sketch's
// guard, (10⁻¹⁰ + 7.1·10⁻¹¹)/ln γ, from every integer (a hundred times
// the first bound, plus the second), and otherwise asks math.Log — the
// definition — so the buckets are exactly those of math.Log
// (TestSketchIndexIsTheDefinition, FuzzSketchIndex). The guard was
// 10⁻¹⁰/ln γ + 10⁻¹³·|t|, the second term computed for each value.

var logTable, invTable [256]float64

func init() {
	for j := range logTable {
		c := 1 + (float64(j)+0.5)/256
		logTable[j], invTable[j] = math.Log(c), 1/c
	}
}

// index is the bucket of a finite x ≥ sketchZero: ⌈math.Log(x)/ln γ⌉.
func (s *Sketch) index(x float64) int {
	if i, ok := s.tableIndex(x); ok {
		return i
	}
	return int(math.Ceil(math.Log(x) / s.lnGamma))
}

// tableIndex is index by the table's logarithm, and false when that lies
// too near a bucket boundary to decide. The table's logarithm (lnx: ln x
// for a normal, positive, finite x, within 10⁻¹² of math.Log(x)) is
// computed here, not called: AddN's comment gives the worth.
func (s *Sketch) tableIndex(x float64) (int, bool) {
	b := math.Float64bits(x)
	e := int(b>>52) - 1023
	j := (b >> 44) & 255
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52)
	r := m*invTable[j] - 1
	p := r * (1 + r*(-1.0/2+r*(1.0/3+r*(-1.0/4))))
	lnx := float64(float64(e)*math.Ln2 + logTable[j] + p) // rounded here, as a function's result was
	t := lnx * s.invLnGamma
	c := math.Ceil(t)
	if d := c - t; d > s.guard && d < 1-s.guard {
		return int(c), true
	}
	return 0, false
}
