package costmodel

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
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

// Fit is a least-squares fit of the Linear model to measured steps.
//
// Coefficients must be >= 0 for the model to be monotone, and an ordinary
// least-squares solution need not be; a term that comes out negative is
// dropped (set to 0) and the rest refitted, most negative first, as in the
// active-set method for non-negative least squares (which gonum lacks).
// FitResult.Dropped names them.
//
// The zero Fit estimates ThreeTerms.
type Fit struct {
	Terms Terms // terms to estimate; 0 means ThreeTerms
}

// FitResult is a fitted Linear model and how well it matches its samples.
type FitResult struct {
	Linear  Linear
	Dropped Terms   // requested terms fitted negative and set to 0
	N       int     // samples fitted
	MAPE    float64 // mean absolute percentage error over the samples, %
	R2      float64 // coefficient of determination over the samples
}

// Validate refuses unknown term bits.
func (f Fit) Validate() error {
	if f.Terms&^AllTerms != 0 {
		return fmt.Errorf("costmodel: Fit.Terms has unknown bits %#x", uint8(f.Terms&^AllTerms))
	}
	return nil
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
	coef, dropped, err := nonNegativeFit(shapes, ys, terms)
	if err != nil {
		return FitResult{}, err
	}
	l := linearOf(coef)
	mape, r2 := goodness(l, shapes, ys)
	return FitResult{Linear: l, Dropped: dropped, N: len(samples), MAPE: mape, R2: r2}, nil
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

// nonNegativeFit solves least squares over the active terms, dropping the
// most negative coefficient and refitting until none is negative.
func nonNegativeFit(shapes []shape, ys []float64, active Terms) (coef [numTerms]float64, dropped Terms, err error) {
	for active != 0 {
		coef, err = leastSquares(shapes, ys, active)
		if err != nil {
			return coef, dropped, err
		}
		worst := -1
		for j, c := range coef {
			if c < 0 && (worst < 0 || c < coef[worst]) {
				worst = j
			}
		}
		if worst < 0 {
			return coef, dropped, nil
		}
		active &^= 1 << worst
		dropped |= 1 << worst
	}
	return coef, dropped, errors.New("costmodel: Fit: every term fitted negative")
}

// leastSquares fits the active terms with gonum's QR least squares. Columns
// are scaled to a maximum of 1 first: the attention term runs to 1e7 where
// the per-step term is 1, and unscaled columns would look rank-deficient.
func leastSquares(shapes []shape, ys []float64, active Terms) ([numTerms]float64, error) {
	var coef [numTerms]float64
	cols := activeColumns(active)
	if len(shapes) < len(cols) {
		return coef, fmt.Errorf("costmodel: Fit needs at least %d samples for %d terms, got %d", len(cols), len(cols), len(shapes))
	}
	x := mat.NewDense(len(shapes), len(cols), nil)
	for i, s := range shapes {
		v := s.vector()
		for k, j := range cols {
			x.Set(i, k, v[j])
		}
	}
	scale, err := scaleColumns(x, cols)
	if err != nil {
		return coef, err
	}
	var beta mat.VecDense
	if err := beta.SolveVec(x, mat.NewVecDense(len(ys), ys)); err != nil {
		return coef, fmt.Errorf("costmodel: Fit: the samples cannot tell the terms apart (vary the batch shapes more, or fit fewer Terms): %w", err)
	}
	for k, j := range cols {
		coef[j] = beta.AtVec(k) / scale[k]
	}
	return coef, nil
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

// linearOf maps a coefficient vector back to a Linear.
func linearOf(c [numTerms]float64) Linear {
	return Linear{
		PerStep: c[0], PerSeq: c[1], PerDecodeToken: c[2],
		PerDecodeContext: c[3], PerPrefillToken: c[4], PerPrefillAttention: c[5],
	}
}

// goodness returns the MAPE (%) and R² of l over the samples. gonum's stat
// has R² but no MAPE, so MAPE is the one line below.
func goodness(l Linear, shapes []shape, ys []float64) (mape, r2 float64) {
	pred := make([]float64, len(ys))
	for i, s := range shapes {
		pred[i] = l.ms(s)
		mape += math.Abs(pred[i]-ys[i]) / ys[i]
	}
	return 100 * mape / float64(len(ys)), stat.RSquaredFrom(pred, ys, nil)
}
