package costmodel

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// Shapes collects the batch shapes an engine configuration and workload
// visit, one entry per Add, for Fit's coverage report and for drawing the
// shapes worth measuring (Draw). Feed it from a step observer, each step
// of a run expanded (sim.Step.All):
//
//	var visited costmodel.Shapes
//	... ObserveStep(s *sim.Step) { for one := range s.All() {
//		visited.Add(costmodel.Batch{Prefill: one.Prefill, Decode: one.Decode, Verify: one.Verify}, 1)
//	}}
//
// It keeps a copy of every batch it is given (8 bytes per decode and 16
// per chunk). The zero Shapes is empty and ready.
type Shapes struct {
	batches []Batch
	counts  []int
	steps   int
}

// Add records count steps (>= 1) of shape b, copying it.
func (s *Shapes) Add(b Batch, count int) {
	if b.Empty() || count < 1 {
		return
	}
	c := Batch{Prefill: slices.Clone(b.Prefill), Decode: slices.Clone(b.Decode), Verify: slices.Clone(b.Verify)}
	s.batches, s.counts = append(s.batches, c), append(s.counts, count)
	s.steps += count
}

// Len is the number of shapes added; Steps the steps they stand for.
func (s *Shapes) Len() int   { return len(s.batches) }
func (s *Shapes) Steps() int { return s.steps }

// Batch is the i-th shape added (shared: do not modify it).
func (s *Shapes) Batch(i int) Batch { return s.batches[i] }

// Draw picks n of the shapes to measure, without replacement, each with
// probability proportional to the steps it stands for (Efraimidis and
// Spirakis's weighted sampling: the n largest keys u^(1/count)), in the
// order they were added. With n >= Len it returns them all. The batches
// are copies; rng makes the draw repeatable.
func (s *Shapes) Draw(rng *rand.Rand, n int) []Batch {
	idx := make([]int, len(s.batches))
	for i := range idx {
		idx[i] = i
	}
	if n < len(idx) {
		keys := make([]float64, len(idx))
		for i, c := range s.counts {
			keys[i] = math.Pow(rng.Float64(), 1/float64(c))
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(keys[b], keys[a]) })
		idx = idx[:max(n, 0)]
		slices.Sort(idx)
	}
	out := make([]Batch, len(idx))
	for k, i := range idx {
		b := s.batches[i]
		out[k] = Batch{Prefill: slices.Clone(b.Prefill), Decode: slices.Clone(b.Decode), Verify: slices.Clone(b.Verify)}
	}
	return out
}

// Coverage is where a fit's samples lie against the shapes a
// configuration visits, over the features of the Linear form.
type Coverage struct {
	Steps int // visited steps
	// Near is the fraction of visited steps with a sample within Radius
	// of them on every feature, the distance on a feature measured as a
	// fraction of its visited range; Inside the fraction that lies within
	// the samples' range on every feature (where a fit interpolates
	// rather than extrapolates).
	Near, Inside float64
	Radius       float64
	Features     []FeatureRange
	// Warning says why the samples do not cover the visited shapes; ""
	// when they do (Near and Inside both >= 0.9).
	Warning string
}

// FeatureRange is one feature's sampled range and visited distribution.
type FeatureRange struct {
	Name                      string
	SampledMin, SampledMax    float64
	VisitedMin, VisitedMedian float64
	VisitedMax                float64
}

// coverageRadius is the distance, per feature as a fraction of its
// visited range, within which a sample counts as near a visited step.
const coverageRadius = 0.1

// featureNames name shape.vector's entries after the per-step 1.
var featureNames = [numTerms - 1]string{"sequences", "decodes", "decode context", "prefill tokens", "attention pairs"}

// CoverageOf reports how the sampled batches lie against the visited
// shapes.
func CoverageOf(sampled []Batch, visited *Shapes) Coverage {
	c := Coverage{Steps: visited.Steps(), Radius: coverageRadius}
	if len(sampled) == 0 || visited.Len() == 0 {
		c.Warning = "costmodel: Fit: no samples or no visited shapes to compare"
		return c
	}
	ss, vs := features(sampled), make([][numTerms - 1]float64, visited.Len())
	for i, b := range visited.batches {
		vs[i] = featuresOf(b)
	}
	c.Features = ranges(ss, vs, visited.counts)
	span := make([]float64, len(c.Features))
	for f, r := range c.Features {
		span[f] = max(r.VisitedMax-r.VisitedMin, 1)
	}
	near, inside := 0, 0
	for i, v := range vs {
		if nearest(v, ss, span) <= coverageRadius {
			near += visited.counts[i]
		}
		if within(v, c.Features) {
			inside += visited.counts[i]
		}
	}
	c.Near, c.Inside = float64(near)/float64(c.Steps), float64(inside)/float64(c.Steps)
	c.Warning = c.warning()
	return c
}

func featuresOf(b Batch) [numTerms - 1]float64 {
	v := shapeOf(b).vector()
	return [numTerms - 1]float64(v[1:])
}

func features(bs []Batch) [][numTerms - 1]float64 {
	out := make([][numTerms - 1]float64, len(bs))
	for i, b := range bs {
		out[i] = featuresOf(b)
	}
	return out
}

// ranges is each feature's sampled range and visited (step-weighted)
// minimum, median and maximum.
func ranges(ss, vs [][numTerms - 1]float64, counts []int) []FeatureRange {
	out := make([]FeatureRange, numTerms-1)
	for f := range out {
		r := FeatureRange{Name: featureNames[f], SampledMin: math.Inf(1), SampledMax: math.Inf(-1)}
		for _, s := range ss {
			r.SampledMin, r.SampledMax = min(r.SampledMin, s[f]), max(r.SampledMax, s[f])
		}
		type wv struct {
			v float64
			n int
		}
		ws := make([]wv, len(vs))
		for i, v := range vs {
			ws[i] = wv{v[f], counts[i]}
		}
		slices.SortFunc(ws, func(a, b wv) int { return cmp.Compare(a.v, b.v) })
		total, acc := 0, 0
		for _, w := range ws {
			total += w.n
		}
		r.VisitedMin, r.VisitedMax = ws[0].v, ws[len(ws)-1].v
		for _, w := range ws {
			if acc += w.n; 2*acc >= total {
				r.VisitedMedian = w.v
				break
			}
		}
		out[f] = r
	}
	return out
}

// nearest is the distance from v to the closest sample: the largest
// per-feature gap as a fraction of span.
func nearest(v [numTerms - 1]float64, ss [][numTerms - 1]float64, span []float64) float64 {
	best := math.Inf(1)
	for _, s := range ss {
		d := 0.0
		for f := range v {
			if d = max(d, math.Abs(s[f]-v[f])/span[f]); d >= best {
				break
			}
		}
		best = min(best, d)
	}
	return best
}

func within(v [numTerms - 1]float64, rs []FeatureRange) bool {
	for f, r := range rs {
		if v[f] < r.SampledMin || v[f] > r.SampledMax {
			return false
		}
	}
	return true
}

func (c Coverage) warning() string {
	if c.Near >= 0.9 && c.Inside >= 0.9 {
		return ""
	}
	var off []string
	for _, r := range c.Features {
		if r.VisitedMin < r.SampledMin || r.VisitedMax > r.SampledMax {
			off = append(off, fmt.Sprintf("%s visited %.4g–%.4g, sampled %.4g–%.4g", r.Name, r.VisitedMin, r.VisitedMax, r.SampledMin, r.SampledMax))
		}
	}
	msg := fmt.Sprintf("costmodel: Fit: the samples do not cover the shapes it will price: %.0f %% of the %d visited steps have a sample within %.0f %% of their shape, %.0f %% lie inside the sampled range",
		100*c.Near, c.Steps, 100*c.Radius, 100*c.Inside)
	if len(off) > 0 {
		msg += " (" + strings.Join(off, "; ") + ")"
	}
	return msg + "; measure shapes drawn from the visited ones (Shapes.Draw)"
}

// String is the coverage as a few lines of text.
func (c Coverage) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "coverage of %d visited steps: %.1f %% near a sample (within %.0f %%), %.1f %% inside the sampled range", c.Steps, 100*c.Near, 100*c.Radius, 100*c.Inside)
	for _, r := range c.Features {
		fmt.Fprintf(&b, "\n  %-16s visited %.4g / %.4g / %.4g (min / median / max), sampled %.4g–%.4g", r.Name, r.VisitedMin, r.VisitedMedian, r.VisitedMax, r.SampledMin, r.SampledMax)
	}
	return b.String()
}
