package costmodel

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/fsum"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Sample is one measured step: its batch shape and how long it took.
type Sample struct {
	Batch Batch
	Time  time.Duration // > 0
}

// Terms selects the Linear coefficients a Fit estimates; the others stay 0.
type Terms uint8

// The terms of the Linear form, one bit each.
const (
	TermStep             Terms = 1 << iota // Linear.PerStep
	TermSeq                                // Linear.PerSeq
	TermDecodeToken                        // Linear.PerDecodeToken
	TermDecodeContext                      // Linear.PerDecodeContext
	TermPrefillToken                       // Linear.PerPrefillToken
	TermPrefillAttention                   // Linear.PerPrefillAttention

	ThreeTerms = TermStep | TermPrefillToken | TermDecodeToken // b0 + b1·prefill_tokens + b2·decode_tokens
	AllTerms   = 1<<numTerms - 1
)

// Fit is a non-negative least-squares fit of the Linear model to measured
// steps.
//
// A coefficient of time is never negative (a Linear with one is refused:
// more work would cost less), so the fit minimises the squared error
// subject to every coefficient >= 0 (Lawson and Hanson's active-set
// method, nnls.go). A term the constraint holds at 0 is named in
// FitResult.Dropped. An ordinary least-squares fit with its negative terms
// dropped one by one, which Fit did before, is not that optimum: on
// random shapes it dropped the per-step term and priced a batch-1 decode
// at a fiftieth of its time.
//
// Relative minimises the squared relative error, Σ((predicted − t)/t)²,
// instead of the absolute one: a 1 ms error on a 10 ms decode step then
// weighs as much as 10 ms on a 100 ms prefill, and the per-step term
// that small steps need is not traded for a better fit of large ones.
//
// A fit is only as good as the shapes it was fitted on are close to the
// shapes it will price. With Visited (the shapes an engine configuration
// and workload visit, from the step observer), the result carries a
// Coverage report and warns when the samples do not cover them; Shapes.Draw
// picks shapes to measure from the visited ones.
//
// The zero Fit estimates ThreeTerms by absolute error, with 95 %
// intervals.
type Fit struct {
	Terms    Terms // terms to estimate; 0 means ThreeTerms
	Relative bool  // minimise relative rather than absolute squared error
	// Confidence is the coverage of the coefficient intervals, in (0, 1);
	// 0 means 0.95.
	Confidence float64
	// Visited, when set, are the shapes the fitted model will price:
	// FitResult.Coverage says how the samples lie against them.
	Visited *Shapes
}

// FitResult is a fitted Linear model and how well it matches its samples.
type FitResult struct {
	Linear Linear
	// Dropped are the requested terms the non-negativity constraint holds
	// at 0 (the samples would fit them below 0).
	Dropped Terms
	N       int     // samples fitted
	MAPE    float64 // mean absolute percentage error over the samples, %
	R2      float64 // coefficient of determination over the samples
	// Coefficients are the requested terms, in Linear's order, each with
	// its interval.
	Coefficients []Coefficient
	// Coverage is how the samples lie against Fit.Visited; nil without.
	Coverage *Coverage
	// Warnings say why the fit should not be trusted as it is: no
	// residual degrees of freedom for intervals, samples that do not
	// cover the visited shapes.
	Warnings []string

	fitted *fitted // what ErrorOn needs; nil in a FitResult not made by Run
}

// Coefficient is one fitted coefficient, ms per unit (see Linear), with
// its confidence interval [Lo, Hi]. The interval is the t interval of
// the least-squares fit over the free terms (those above 0), the
// non-negative solution being that fit once the terms at 0 are known,
// cut at 0 below (a coefficient of time is never negative). A term held
// at 0 has AtBound set and Lo = Hi = 0.
type Coefficient struct {
	Name          string
	Value, Lo, Hi float64
	AtBound       bool
}

func (c Coefficient) String() string {
	if c.AtBound {
		return fmt.Sprintf("%s = 0 (held at the bound)", c.Name)
	}
	return fmt.Sprintf("%s = %.4g [%.4g, %.4g]", c.Name, c.Value, c.Lo, c.Hi)
}

// Validate refuses unknown term bits and a confidence outside (0, 1).
func (f Fit) Validate() error {
	var errs []error
	if f.Terms&^AllTerms != 0 {
		errs = append(errs, fmt.Errorf("costmodel: Fit.Terms has unknown bits %#x", uint8(f.Terms&^AllTerms)))
	}
	if f.Confidence != 0 && !(f.Confidence > 0 && f.Confidence < 1) {
		errs = append(errs, fmt.Errorf("costmodel: Fit.Confidence must be in (0, 1) (0 means 0.95), got %v", f.Confidence))
	}
	return errors.Join(errs...)
}

// Run fits the samples. It needs at least as many valid, non-empty samples
// as terms, and samples that tell the terms apart.
func (f Fit) Run(samples []Sample) (FitResult, error) {
	terms := f.Terms
	if terms == 0 {
		terms = ThreeTerms
	}
	if err := errors.Join(f.Validate(), validSamples(samples)); err != nil {
		return FitResult{}, err
	}
	shapes, ys := make([]shape, len(samples)), make([]float64, len(samples))
	for i, s := range samples {
		shapes[i], ys[i] = shapeOf(s.Batch), milliseconds(s.Time)
	}
	d, err := newDesign(shapes, ys, terms, f.Relative)
	if err != nil {
		return FitResult{}, err
	}
	x, free, err := nnls(d.x, d.y)
	if err != nil {
		return FitResult{}, fmt.Errorf("costmodel: Fit: the samples cannot tell the terms apart (vary the batch shapes more, or fit fewer Terms): %w", err)
	}
	res := FitResult{N: len(samples)}
	var coef [numTerms]float64
	for k, j := range d.cols {
		coef[j] = x[k] / d.scale[k]
		if !free[k] {
			res.Dropped |= 1 << j
		}
	}
	res.Linear = linearOf(coef)
	res.MAPE, res.R2 = goodness(res.Linear, shapes, ys)
	res.Coefficients, res.Warnings = d.intervals(x, free, f.confidence())
	res.fitted = &fitted{fit: f, terms: terms, d: d, x: x, free: free, shapes: shapes, ys: ys}
	if f.Visited != nil {
		batches := make([]Batch, len(samples))
		for i, s := range samples {
			batches[i] = s.Batch
		}
		c := CoverageOf(batches, f.Visited)
		res.Coverage = &c
		if c.Warning != "" {
			res.Warnings = append(res.Warnings, c.Warning)
		}
	}
	return res, nil
}

func (f Fit) confidence() float64 {
	if f.Confidence == 0 {
		return 0.95
	}
	return f.Confidence
}

func validSamples(samples []Sample) error {
	var errs []error
	for i, s := range samples {
		if s.Batch.Empty() {
			errs = append(errs, fmt.Errorf("costmodel: samples[%d].Batch is empty", i))
		}
		if s.Time <= 0 {
			errs = append(errs, fmt.Errorf("costmodel: samples[%d].Time must be > 0, got %v", i, s.Time))
		}
		if err := s.Batch.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("samples[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// design is a fit's least-squares problem: the active terms' features as
// columns scaled to a maximum of 1 (the attention term runs to 1e7 where
// the per-step term is 1, and unscaled columns would look rank-deficient),
// each row divided by its time when the fit is relative.
type design struct {
	x     *mat.Dense
	y     []float64
	cols  []int     // the feature index of each column
	scale []float64 // each column's divisor
}

func newDesign(shapes []shape, ys []float64, active Terms, relative bool) (*design, error) {
	d := &design{cols: activeColumns(active), y: make([]float64, len(ys))}
	if len(shapes) < len(d.cols) {
		return nil, fmt.Errorf("costmodel: Fit needs at least %d samples for %d terms, got %d", len(d.cols), len(d.cols), len(shapes))
	}
	d.x = mat.NewDense(len(shapes), len(d.cols), nil)
	for i, s := range shapes {
		w := 1.0
		if relative {
			w = 1 / ys[i]
		}
		v := s.vector()
		for k, j := range d.cols {
			d.x.Set(i, k, w*v[j])
		}
		d.y[i] = w * ys[i]
	}
	var err error
	if d.scale, err = scaleColumns(d.x, d.cols); err != nil {
		return nil, err
	}
	var svd mat.SVD
	if !svd.Factorize(d.x, mat.SVDNone) || svd.Rank(1e-10) < len(d.cols) {
		return nil, errors.New("costmodel: Fit: the samples cannot tell the terms apart (vary the batch shapes more, or fit fewer Terms)")
	}
	return d, nil
}

// activeColumns lists the feature indices of the active terms.
func activeColumns(active Terms) []int {
	var cols []int
	for j := range numTerms {
		if active&(1<<j) != 0 {
			cols = append(cols, j)
		}
	}
	return cols
}

// scaleColumns divides each column of x by its largest magnitude and returns
// the divisors; a column that is zero in every sample cannot be fitted.
func scaleColumns(x *mat.Dense, cols []int) ([]float64, error) {
	rows, _ := x.Dims()
	scale := make([]float64, len(cols))
	names := Linear{}.coefficients()
	for k, j := range cols {
		for i := range rows {
			scale[k] = max(scale[k], math.Abs(x.At(i, k)))
		}
		if scale[k] == 0 {
			return nil, fmt.Errorf("costmodel: Fit: term %s is zero in every sample; leave it out of Fit.Terms", names[j].name)
		}
		for i := range rows {
			x.Set(i, k, x.At(i, k)/scale[k])
		}
	}
	return scale, nil
}

// intervals gives each requested coefficient its t interval from the
// least-squares fit over the free columns: σ² (XᵀX)⁻¹ with σ² the residual
// variance on n − p degrees of freedom (in the weighted problem when the
// fit is relative).
func (d *design) intervals(x []float64, free []bool, confidence float64) ([]Coefficient, []string) {
	names := Linear{}.coefficients()
	out := make([]Coefficient, len(d.cols))
	var freeCols []int
	for k, j := range d.cols {
		out[k] = Coefficient{Name: names[j].name, Value: x[k] / d.scale[k], AtBound: !free[k]}
		if free[k] {
			freeCols = append(freeCols, k)
		}
	}
	rows, _ := d.x.Dims()
	df := rows - len(freeCols)
	if df <= 0 {
		return withoutIntervals(out), []string{fmt.Sprintf("costmodel: Fit: %d samples for %d free terms leave no residual degrees of freedom: no intervals", rows, len(freeCols))}
	}
	cov, sigma2, ok := d.covariance(x, freeCols)
	if !ok {
		return withoutIntervals(out), []string{"costmodel: Fit: the free terms' normal matrix is singular: no intervals"}
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-confidence)/2)
	for c, k := range freeCols {
		half := tq * math.Sqrt(sigma2*cov.At(c, c)) / d.scale[k]
		out[k].Lo, out[k].Hi = max(0, out[k].Value-half), out[k].Value+half
	}
	return out, nil
}

func withoutIntervals(cs []Coefficient) []Coefficient {
	for i := range cs {
		cs[i].Lo, cs[i].Hi = math.NaN(), math.NaN()
		if cs[i].AtBound {
			cs[i].Lo, cs[i].Hi = 0, 0
		}
	}
	return cs
}

// covariance is (XᵀX)⁻¹ over the free columns and the residual variance.
func (d *design) covariance(x []float64, freeCols []int) (*mat.Dense, float64, bool) {
	rows, _ := d.x.Dims()
	sub := mat.NewDense(rows, len(freeCols), nil)
	rss := 0.0
	for i := range rows {
		pred := 0.0
		for c, k := range freeCols {
			sub.Set(i, c, d.x.At(i, k))
			pred += d.x.At(i, k) * x[k]
		}
		rss += (d.y[i] - pred) * (d.y[i] - pred)
	}
	var xtx, inv mat.Dense
	xtx.Mul(sub.T(), sub)
	if err := inv.Inverse(&xtx); err != nil {
		return nil, 0, false
	}
	return &inv, rss / float64(rows-len(freeCols)), true
}

// linearOf maps a coefficient vector back to a Linear.
func linearOf(c [numTerms]float64) Linear {
	return Linear{
		PerStep: c[0], PerSeq: c[1], PerDecodeToken: c[2],
		PerDecodeContext: c[3], PerPrefillToken: c[4], PerPrefillAttention: c[5],
	}
}

// goodness returns the MAPE (%) and R² of l over the samples. R² is
// gonum's stat.RSquaredFrom's, from fsum so that it does not depend on
// where ys lies in memory.
func goodness(l Linear, shapes []shape, ys []float64) (mape, r2 float64) {
	pred := make([]float64, len(ys))
	for i, s := range shapes {
		pred[i] = l.ms(s)
		mape += math.Abs(pred[i]-ys[i]) / ys[i]
	}
	return 100 * mape / float64(len(ys)), fsum.RSquared(pred, ys)
}

// String is the fit's report: each coefficient with its interval, the
// goodness of fit, the coverage and the warnings.
func (r FitResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fit of %d samples: MAPE %.2f %%, R² %.4f\n", r.N, r.MAPE, r.R2)
	for _, c := range r.Coefficients {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	if r.Coverage != nil {
		fmt.Fprintf(&b, "%s\n", r.Coverage)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}
