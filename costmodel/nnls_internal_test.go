package costmodel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// bruteNNLS solves min ‖a·x − b‖ over x >= 0 by trying every set of free
// columns: the optimum is the least-squares fit over some set whose
// coefficients are all >= 0, and no feasible set does better.
func bruteNNLS(a *mat.Dense, b []float64) (best []float64, bestRSS float64) {
	_, n := a.Dims()
	bestRSS = math.Inf(1)
	for set := range 1 << n {
		free := make([]bool, n)
		for k := range n {
			free[k] = set>>k&1 == 1
		}
		z := make([]float64, n)
		if set != 0 {
			var err error
			if z, err = subsetLeastSquares(a, mat.NewVecDense(len(b), b), free); err != nil {
				continue
			}
		}
		feasible := true
		for _, v := range z {
			feasible = feasible && v >= -1e-12
		}
		if r := residual(a, b, z); feasible && r < bestRSS {
			best, bestRSS = z, r
		}
	}
	return best, bestRSS
}

func residual(a *mat.Dense, b, x []float64) float64 {
	var r mat.VecDense
	r.MulVec(a, mat.NewVecDense(len(x), x))
	s := 0.0
	for i, v := range b {
		s += (r.AtVec(i) - v) * (r.AtVec(i) - v)
	}
	return s
}

// With a non-negative least-squares solution, NNLS is least squares.
func TestNNLSIsLeastSquaresWhenThatIsNonNegative(t *testing.T) {
	a := mat.NewDense(4, 2, []float64{1, 0, 1, 1, 1, 2, 1, 3})
	x, free, err := nnls(a, []float64{1, 2, 3, 4})
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{1, 1}, x, 1e-12)
	assert.Equal(t, []bool{true, true}, free)
}

// Dropping the most negative least-squares coefficient and refitting, as
// Fit did before, is not the constrained optimum: here it drops the
// column the optimum keeps, and its residual is 6 against 4.6.
func TestNNLSBeatsDroppingTheMostNegativeCoefficient(t *testing.T) {
	a := mat.NewDense(5, 3, []float64{2, 3, 3, 1, 1, 0, 1, 3, 4, 3, 4, 1, 0, 1, 3})
	b := []float64{1, 0, 1, 2, -2}
	ols, err := subsetLeastSquares(a, mat.NewVecDense(5, b), []bool{true, true, true})
	require.NoError(t, err)
	assert.Less(t, ols[0], min(ols[1], ols[2]), "least squares has the first coefficient most negative")

	x, free, err := nnls(a, b)
	require.NoError(t, err)
	assert.InDeltaSlice(t, []float64{0.6, 0, 0}, x, 1e-12)
	assert.Equal(t, []bool{true, false, false}, free)
	assert.InDelta(t, 4.6, residual(a, b, x), 1e-12)
	dropped, err := subsetLeastSquares(a, mat.NewVecDense(5, b), []bool{false, true, false})
	require.NoError(t, err)
	assert.InDelta(t, 6.0, residual(a, b, dropped), 1e-12, "the old way's answer, column 0 dropped then column 2")
}

// On seeded random problems with some true coefficients negative, NNLS
// finds the brute-force optimum and its conditions: x >= 0, no free
// coefficient with a gradient, no held one that could lower the residual.
func TestNNLSMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 300 {
		m, n := 6+rng.IntN(20), 1+rng.IntN(6)
		a := mat.NewDense(m, n, nil)
		truth := make([]float64, n)
		for j := range truth {
			truth[j] = rng.NormFloat64()
		}
		b := make([]float64, m)
		for i := range m {
			for j := range n {
				a.Set(i, j, rng.Float64())
				b[i] += a.At(i, j) * truth[j]
			}
			b[i] += 0.1 * rng.NormFloat64()
		}
		x, free, err := nnls(a, b)
		require.NoError(t, err, "trial %d", trial)
		_, want := bruteNNLS(a, b)
		assert.InDelta(t, want, residual(a, b, x), 1e-9*max(1, want), "trial %d", trial)
		w := gradient(a, mat.NewVecDense(m, b), x)
		for j := range x {
			assert.GreaterOrEqual(t, x[j], 0.0)
			if free[j] {
				assert.InDelta(t, 0, w[j], 1e-9, "trial %d: a free coefficient at a stationary point", trial)
			} else {
				assert.LessOrEqual(t, w[j], 1e-9, "trial %d: no held coefficient could lower the residual", trial)
			}
		}
	}
}
