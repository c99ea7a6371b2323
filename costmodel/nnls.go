package costmodel

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// errInseparable is nnls's error when the free columns of a subproblem are
// (numerically) linearly dependent.
var errInseparable = errors.New("the columns are linearly dependent")

// nnls solves min ‖a·x − b‖₂ subject to x >= 0 by Lawson and Hanson's
// active-set method (Solving Least Squares Problems, 1974, chapter 23;
// the algorithm of scipy.optimize.nnls and MATLAB's lsqnonneg). gonum has
// least squares (QR) but no bounds, so the active-set loop is here: the
// passive set P starts empty; the column whose gradient w = aᵀ(b − a·x)
// is largest joins P; least squares over P gives z; if a coefficient of z
// is not positive, x moves towards z until the first coefficient reaches
// 0, which leaves P, and z is solved again; when every w outside P is
// <= tol, x is optimal (the Karush–Kuhn–Tucker conditions hold).
//
// It returns x and whether each coefficient is free (in P, > 0).
func nnls(a *mat.Dense, b []float64) (x []float64, free []bool, err error) {
	m, n := a.Dims()
	x, free = make([]float64, n), make([]bool, n)
	bv := mat.NewVecDense(m, b)
	eps := math.Nextafter(1, 2) - 1
	tol := 10 * eps * mat.Norm(a, 1) * float64(max(m, n))
	for range 3 * n {
		w := gradient(a, bv, x)
		j := -1
		for k := range n {
			if !free[k] && w[k] > tol && (j < 0 || w[k] > w[j]) {
				j = k
			}
		}
		if j < 0 {
			return x, free, nil
		}
		free[j] = true
		if err := inner(a, bv, x, free, tol); err != nil {
			return x, free, err
		}
	}
	return x, free, errors.New("nnls: no convergence")
}

// inner is Lawson–Hanson's inner loop: solve over the free columns, and
// while that solution has a coefficient <= 0, step towards it and free
// no more the coefficients that reach 0.
func inner(a *mat.Dense, b *mat.VecDense, x []float64, free []bool, tol float64) error {
	for range len(x) + 1 {
		z, err := subsetLeastSquares(a, b, free)
		if err != nil {
			return err
		}
		step, blocked := 1.0, false
		for k := range x {
			if free[k] && z[k] <= 0 {
				blocked = true
				if s := x[k] / (x[k] - z[k]); s < step {
					step = s
				}
			}
		}
		if !blocked {
			copy(x, z)
			return nil
		}
		for k := range x {
			x[k] += step * (z[k] - x[k])
			if free[k] && x[k] <= tol {
				x[k], free[k] = 0, false
			}
		}
	}
	return errors.New("nnls: the inner loop did not settle")
}

// gradient is aᵀ(b − a·x), the negative gradient of ½‖a·x − b‖².
func gradient(a *mat.Dense, b *mat.VecDense, x []float64) []float64 {
	var r, w mat.VecDense
	r.MulVec(a, mat.NewVecDense(len(x), x))
	r.SubVec(b, &r)
	w.MulVec(a.T(), &r)
	return w.RawVector().Data
}

// subsetLeastSquares solves least squares over the free columns of a (QR),
// the others held at 0.
func subsetLeastSquares(a *mat.Dense, b *mat.VecDense, free []bool) ([]float64, error) {
	m, n := a.Dims()
	var cols []int
	for k := range n {
		if free[k] {
			cols = append(cols, k)
		}
	}
	z := make([]float64, n)
	if m < len(cols) {
		return z, errInseparable
	}
	sub := mat.NewDense(m, len(cols), nil)
	for i := range m {
		for c, k := range cols {
			sub.Set(i, c, a.At(i, k))
		}
	}
	var beta mat.VecDense
	if err := beta.SolveVec(sub, b); err != nil {
		return z, errInseparable
	}
	for c, k := range cols {
		z[k] = beta.AtVec(c)
	}
	return z, nil
}
