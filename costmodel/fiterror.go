package costmodel

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// fitted is what FitResult.ErrorOn needs of a fit: its problem, solution
// and samples.
type fitted struct {
	fit    Fit
	terms  Terms
	d      *design
	x      []float64 // the solution, in d's scaled columns
	free   []bool
	shapes []shape
	ys     []float64 // ms
}

// FitError is how far a fitted model's step times may be off on the
// shapes a run visits (FitResult.ErrorOn): a relative error a model band
// can declare (sim/analysis.FitBand turns it into one).
//
// Each visited step gets the half-width of its prediction interval at the
// fit's Confidence, as a fraction of its predicted time:
//
//   - Inside the samples' range on every feature, the Student t
//     prediction interval of the least-squares fit over the free terms,
//     t·σ·√(1 + h), where σ is the residual standard deviation (in ms for
//     an absolute fit, relative for a Relative one) and h = xᵀ(XᵀX)⁻¹x the
//     step's leverage. It is a prediction interval, not the interval of
//     the mean: residuals cannot tell measurement noise from the linear
//     form's misfit, and misfit is systematic, so an unmeasured shape may
//     be off by as much as a sample is.
//   - Beyond the samples' range on a feature (a visited step that needs
//     more decodes, more context, a longer chunk than any sample has),
//     the interval says nothing of the misfit, which grows with the
//     distance. There the error is measured on the samples themselves by
//     a held-out extrapolation (cross-validation in the direction of the
//     run): for a step d sampled spans beyond the range, the samples in
//     the 1/(1 + d) of the range nearest the other end are refitted, the
//     refit extrapolates up to d of its own spans to the remaining
//     samples, and the step's error is the Confidence quantile of those
//     samples' relative errors. d is rounded up to a power of 2 (at least
//     1/16), so a few refits serve every step and none is measured
//     nearer than it lies. A step beyond on several features takes the
//     largest, and never less than its interval.
//
// Scale aggregates the steps' errors rᵢ over the run, weighted by the
// time each step stands for (its count nᵢ × its predicted time tᵢ),
// Σ nᵢtᵢrᵢ / Σ nᵢtᵢ over the steps whose error is measured: the relative
// error of the run's total step time if every step were off by its own
// error in the same direction, as one fit's biased coefficients move
// every step, and as ModelError.Scale runs the model. It is not reduced
// by √N as independent errors would be: misfit does not average out
// over a run.
//
// Neither part sees what the samples never vary together: a fit that
// leaves a term out (ThreeTerms has no decode context) on samples whose
// context per decode differs from the run's is off by more than both
// say. Outside counts such steps (the hull is over all five features,
// whichever terms were fitted), and a band should not rest on an
// estimate whose steps lie outside (sim/analysis.FitBand refuses one
// with more than 1 − Confidence of them).
//
// The zero FitError estimates nothing: no visited steps (Steps 0).
type FitError struct {
	// Scale is the relative error of the run's step times at Confidence
	// (0.1 is ±10 %), over the steps whose error the samples measure:
	// a step beyond what they can measure (Unmeasured says why) has an
	// error of +Inf (Widest), lies outside, and is left out of Scale;
	// +Inf when every step is.
	Scale      float64
	Confidence float64
	// Steps are the visited steps; Outside the fraction of them outside
	// the samples' hull: beyond their range on some feature, or with a
	// leverage over the five features above every sample's (outside the
	// ellipsoid that holds the samples' convex hull).
	Steps   int
	Outside float64
	// Widest is the largest error of one visited step.
	Widest float64
	// Extrapolations are the features on which visited steps lie beyond
	// the sampled range, each with the error its held-out extrapolation
	// measured.
	Extrapolations []Extrapolation
	// Unmeasured says why some visited step's error could not be
	// measured; "" when every step's was.
	Unmeasured string
}

// Extrapolates reports whether some visited step lies outside the
// samples' hull.
func (e FitError) Extrapolates() bool { return e.Outside > 0 }

// Extrapolation is one feature on which visited steps lie beyond the
// samples' range: how far the farthest lies, in spans of the sampled
// range, and the relative error the held-out extrapolation that far
// measured (+Inf when the samples cannot measure it).
type Extrapolation struct {
	Feature                string
	SampledMin, SampledMax float64
	Farthest               float64 // the visited value farthest beyond
	Spans                  float64 // its distance beyond, in sampled spans (+Inf for a feature the samples never vary)
	Steps                  int     // visited steps beyond on this feature
	Error                  float64 // the largest held-out error of those steps
}

// ErrorOn estimates the fit's error on the visited shapes (see
// FitError). A FitResult not made by Fit.Run, or empty shapes, give the
// zero FitError.
func (r FitResult) ErrorOn(visited *Shapes) FitError {
	f := r.fitted
	if f == nil || visited == nil || visited.Len() == 0 {
		return FitError{}
	}
	conf := f.fit.confidence()
	e := FitError{Confidence: conf, Steps: visited.Steps()}
	var freeCols []int
	for k := range f.d.cols {
		if f.free[k] {
			freeCols = append(freeCols, k)
		}
	}
	rows, _ := f.d.x.Dims()
	df := rows - len(freeCols)
	cov, sigma2, ok := f.d.covariance(f.x, freeCols)
	if df <= 0 || !ok {
		e.Scale, e.Widest = math.Inf(1), math.Inf(1)
		e.Unmeasured = fmt.Sprintf("%d samples for %d free terms leave no residual to estimate an error from", rows, len(freeCols))
		return e
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-conf)/2)

	// leverage is xᵀ(XᵀX)⁻¹x over the free columns of a design row.
	u := mat.NewVecDense(len(freeCols), nil)
	var cu mat.VecDense
	leverage := func(row func(k int) float64) float64 {
		for c, k := range freeCols {
			u.SetVec(c, row(k))
		}
		cu.MulVec(cov, u)
		return mat.Dot(u, &cu)
	}
	hull := newHull(f.shapes)
	lo, hi := sampledRange(f.shapes)
	holdout := map[holdoutKey]float64{}
	ext := map[holdoutKey]*Extrapolation{}

	var num, den float64
	outside := 0
	for i, b := range visited.batches {
		n := float64(visited.counts[i])
		s := shapeOf(b)
		p := r.Linear.ms(s)
		if !(p > 0) { // a real step priced at nothing: no relative error bounds it
			outside += visited.counts[i]
			e.Widest = math.Inf(1)
			if e.Unmeasured == "" {
				e.Unmeasured = fmt.Sprintf("the fit prices a visited step (%d decodes, %d prefill chunks) at 0 ms", len(b.Decode), len(b.Prefill))
			}
			continue
		}
		w := 1.0
		if f.fit.Relative {
			w = 1 / p
		}
		v := s.vector()
		h := leverage(func(k int) float64 { return w * v[f.d.cols[k]] / f.d.scale[k] })
		err := tq * math.Sqrt(sigma2*(1+h))
		if !f.fit.Relative {
			err /= p
		}
		out := hull.leverage(v) > hull.max*(1+1e-9)
		for ft, x := range v[1:] {
			above, below := x > hi[ft], x < lo[ft]
			if !above && !below {
				continue
			}
			out = true
			span := hi[ft] - lo[ft]
			d := math.Inf(1)
			if span > 0 {
				d = max(x-hi[ft], lo[ft]-x) / span
			}
			key := holdoutKey{feature: ft, above: above, spans: roundSpans(d)}
			he, ok := holdout[key]
			if !ok {
				he = f.holdoutError(key, lo[ft], hi[ft], conf)
				holdout[key] = he
			}
			err = max(err, he)
			xk := holdoutKey{feature: ft, above: above}
			x0 := ext[xk]
			if x0 == nil {
				x0 = &Extrapolation{Feature: featureNames[ft], SampledMin: lo[ft], SampledMax: hi[ft], Farthest: x, Spans: d}
				ext[xk] = x0
			}
			x0.Steps += visited.counts[i]
			if d > x0.Spans {
				x0.Farthest, x0.Spans = x, d
			}
			x0.Error = max(x0.Error, he)
		}
		if out {
			outside += visited.counts[i]
		}
		e.Widest = max(e.Widest, err)
		if !math.IsInf(err, 1) {
			num += n * p * err
			den += n * p
		}
	}
	e.Outside = float64(outside) / float64(e.Steps)
	e.Scale = math.Inf(1)
	if den > 0 {
		e.Scale = num / den
	}
	for _, x := range ext {
		e.Extrapolations = append(e.Extrapolations, *x)
	}
	slices.SortFunc(e.Extrapolations, func(a, b Extrapolation) int {
		return cmp.Or(cmp.Compare(slices.Index(featureNames[:], a.Feature), slices.Index(featureNames[:], b.Feature)), cmp.Compare(a.Farthest, b.Farthest))
	})
	for _, x := range e.Extrapolations {
		if math.IsInf(x.Error, 1) && e.Unmeasured == "" {
			e.Unmeasured = fmt.Sprintf("visited steps reach %s %.4g, %.3g spans beyond the sampled %.4g–%.4g, farther than a held-out extrapolation of the samples can measure; measure shapes drawn from the visited ones (Shapes.Draw)",
				x.Feature, x.Farthest, x.Spans, x.SampledMin, x.SampledMax)
			break
		}
	}
	return e
}

// hull is the samples' features with an intercept, for the leverage of
// any shape against them: h(x) = xᵀ(ZᵀZ)⁺x over all five features,
// whichever terms the fit estimates (a term left out of the fit still
// moves the true step time), its columns scaled to a largest value of 1.
// No shape with a leverage above every sample's lies inside the samples'
// convex hull: the ellipsoid h <= max hᵢ holds it.
type hull struct {
	scale [numTerms]float64
	proj  *mat.Dense // Σ⁻¹Vᵀ over the singular values kept
	hs    []float64  // each sample's leverage
	max   float64
}

func newHull(shapes []shape) *hull {
	h := &hull{}
	for _, s := range shapes {
		for j, x := range s.vector() {
			h.scale[j] = max(h.scale[j], math.Abs(x))
		}
	}
	z := mat.NewDense(len(shapes), numTerms, nil)
	for i, s := range shapes {
		z.SetRow(i, h.row(s.vector()))
	}
	var svd mat.SVD
	if !svd.Factorize(z, mat.SVDThin) {
		return h
	}
	vals := svd.Values(nil)
	var v mat.Dense
	svd.VTo(&v)
	keep := 0
	for _, sv := range vals {
		if sv > 1e-10*vals[0] {
			keep++
		}
	}
	h.proj = mat.NewDense(keep, numTerms, nil)
	for k := range keep {
		for j := range numTerms {
			h.proj.Set(k, j, v.At(j, k)/vals[k])
		}
	}
	h.hs = make([]float64, len(shapes))
	for i, s := range shapes {
		h.hs[i] = h.leverage(s.vector())
		h.max = max(h.max, h.hs[i])
	}
	return h
}

// row is a feature vector with its columns scaled.
func (h *hull) row(v [numTerms]float64) []float64 {
	out := make([]float64, numTerms)
	for j, x := range v {
		if h.scale[j] > 0 {
			out[j] = x / h.scale[j]
		}
	}
	return out
}

// leverage is the shape's leverage against the samples; 0 without any.
func (h *hull) leverage(v [numTerms]float64) float64 {
	if h.proj == nil {
		return 0
	}
	var y mat.VecDense
	y.MulVec(h.proj, mat.NewVecDense(numTerms, h.row(v)))
	return mat.Dot(&y, &y)
}

// holdoutKey is one held-out extrapolation: a feature, its direction and
// the distance in spans (a power of 2).
type holdoutKey struct {
	feature int
	above   bool
	spans   float64
}

// roundSpans rounds a distance beyond the sampled range up to a power of
// 2, at least 1/16; +Inf stays.
func roundSpans(d float64) float64 {
	if math.IsInf(d, 1) {
		return d
	}
	return math.Max(1.0/16, math.Pow(2, math.Ceil(math.Log2(d))))
}

// sampledRange is each feature's smallest and largest sampled value.
func sampledRange(shapes []shape) (lo, hi [numTerms - 1]float64) {
	for f := range lo {
		lo[f], hi[f] = math.Inf(1), math.Inf(-1)
	}
	for _, s := range shapes {
		v := s.vector()
		for f, x := range v[1:] {
			lo[f], hi[f] = min(lo[f], x), max(hi[f], x)
		}
	}
	return lo, hi
}

// holdoutError refits the samples within the first 1/(1 + spans) of the
// feature's range (from the side the visited steps stay on) and returns
// the Confidence quantile of the relative errors of that refit on the
// others, which lie up to spans of its range beyond it; +Inf when too
// few samples remain on either side or the refit fails.
func (f *fitted) holdoutError(k holdoutKey, lo, hi, conf float64) float64 {
	if math.IsInf(k.spans, 1) || hi <= lo {
		return math.Inf(1)
	}
	cut := lo + (hi-lo)/(1+k.spans)
	if !k.above {
		cut = hi - (hi-lo)/(1+k.spans)
	}
	var train, test []int
	for i, s := range f.shapes {
		x := s.vector()[1+k.feature]
		if (k.above && x <= cut) || (!k.above && x >= cut) {
			train = append(train, i)
		} else {
			test = append(test, i)
		}
	}
	return f.heldOut(train, test, conf)
}

// heldOut refits the train samples and returns the Confidence quantile of
// its relative errors on the test samples; +Inf when too few samples
// remain on either side or the refit fails.
func (f *fitted) heldOut(train, test []int, conf float64) float64 {
	if len(train) <= len(f.d.cols) || len(test) == 0 {
		return math.Inf(1)
	}
	shapes, ys := make([]shape, len(train)), make([]float64, len(train))
	for j, i := range train {
		shapes[j], ys[j] = f.shapes[i], f.ys[i]
	}
	d, err := newDesign(shapes, ys, f.terms, f.fit.Relative)
	if err != nil {
		return math.Inf(1)
	}
	x, _, err := nnls(d.x, d.y)
	if err != nil {
		return math.Inf(1)
	}
	var coef [numTerms]float64
	for c, j := range d.cols {
		coef[j] = x[c] / d.scale[c]
	}
	l := linearOf(coef)
	errs := make([]float64, len(test))
	for j, i := range test {
		errs[j] = math.Abs(l.ms(f.shapes[i])-f.ys[i]) / f.ys[i]
	}
	slices.Sort(errs)
	return errs[max(0, int(math.Ceil(conf*float64(len(errs))))-1)]
}

// String is the estimate in a few lines.
func (e FitError) String() string {
	if e.Steps == 0 {
		return "fit error: no visited steps"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fit error on %d visited steps: ±%.1f %% at %.0f %% (widest step ±%.1f %%), %.1f %% of steps outside the samples' hull",
		e.Steps, 100*e.Scale, 100*e.Confidence, 100*e.Widest, 100*e.Outside)
	for _, x := range e.Extrapolations {
		dir := "above, up to"
		if x.Farthest < x.SampledMin {
			dir = "below, down to"
		}
		fmt.Fprintf(&b, "\n  %-16s sampled %.4g–%.4g, %d steps %s %.4g (%.3g spans): held-out error ±%.1f %%",
			x.Feature, x.SampledMin, x.SampledMax, x.Steps, dir, x.Farthest, x.Spans, 100*x.Error)
	}
	if e.Unmeasured != "" {
		fmt.Fprintf(&b, "\n  unmeasured: %s", e.Unmeasured)
	}
	return b.String()
}
