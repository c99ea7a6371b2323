package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// numpy: np.percentile([1, 2, 3, 4, 10], [50, 90, 99]) = 3, 7.6, 9.76.
func TestLinearMatchesNumpy(t *testing.T) {
	x := []float64{1, 2, 3, 4, 10}
	assert.InDelta(t, 3.0, LinearInterpolation.Quantile(0.5, x), 1e-12)
	assert.InDelta(t, 7.6, LinearInterpolation.Quantile(0.9, x), 1e-12)
	assert.InDelta(t, 9.76, LinearInterpolation.Quantile(0.99, x), 1e-12)
	// The inverted CDF (gonum's Empirical): the smallest x with F(x) >= p.
	assert.Equal(t, 3.0, InvertedCDF.Quantile(0.5, x))
	assert.Equal(t, 10.0, InvertedCDF.Quantile(0.9, x))
	assert.True(t, math.IsNaN(LinearInterpolation.Quantile(0.5, nil)))
}

func TestQuantileOfCountsEqualsExpanded(t *testing.T) {
	rng := workload.NewStream(2, "test")
	sorted := []float64{1, 2, 2, 5, 7, 9, 11, 20}
	for range 100 {
		counts := make([]int, len(sorted))
		var flat []float64
		for range sorted {
			i := rng.IntN(len(sorted))
			counts[i]++
		}
		for i, c := range counts {
			for range c {
				flat = append(flat, sorted[i])
			}
		}
		for _, p := range []float64{0, 0.5, 0.9, 0.99, 1} {
			require.InDelta(t, LinearInterpolation.Quantile(p, flat), quantileOfCounts(p, sorted, counts), 1e-12)
		}
	}
}

// The bootstrap interval of a median covers the true median of a known
// distribution about as often as its confidence says.
func TestBootstrapCoverage(t *testing.T) {
	src := BootstrapStream(3, "test")
	rng := rand.New(src) // the same draws as workload.NewStream(3, "test")
	covered := 0
	const trials = 200
	for range trials {
		reps := make([][]float64, 3)
		for r := range reps {
			for range 100 {
				reps[r] = append(reps[r], rng.ExpFloat64())
			}
			slices.Sort(reps[r])
		}
		e := QuantileIntervals(reps, []float64{0.5}, 0.9, src)[0]
		if e.Contains(math.Ln2) {
			covered++
		}
	}
	assert.InDelta(t, 0.9, float64(covered)/trials, 0.07)
}

func TestMeanCI(t *testing.T) {
	e := MeanInterval([]float64{1, 2, 3, 4, 5}, 0.95)
	// mean 3, s = 1.5811, t(4, 0.975) = 2.7764: half-width 1.9632.
	assert.InDelta(t, 3, e.Center, 1e-12)
	assert.InDelta(t, 3-1.9632, e.Lo, 1e-3)
	assert.InDelta(t, 3+1.9632, e.Hi, 1e-3)
	one := MeanInterval([]float64{7}, 0.95)
	assert.True(t, math.IsNaN(one.Lo))
}

// The one-walk quantiles are quantileOfCounts's, bit for bit, for any
// ps (repeats, out of order, the ends) and counts (empty places, all in
// one place).
func TestCountWalkIsQuantileOfCounts(t *testing.T) {
	rng := workload.NewStream(4, "test")
	for _, n := range []int{1, 2, 3, 10, 257} {
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = float64(i/3) + rng.Float64() // repeats of a sort
		}
		slices.Sort(sorted)
		for _, ps := range [][]float64{{0.5, 0.9, 0.99}, {0, 1}, {0.99, 0.5, 0.5, 0.9}, {0.3}} {
			w := newCountWalk(ps, n)
			for round := range 50 {
				counts := make([]int, n)
				for range n {
					if round%10 == 0 {
						counts[n/2]++ // every draw the same value
					} else {
						counts[rng.IntN(n)]++
					}
				}
				w.quantiles(sorted, counts)
				for i, p := range ps {
					require.Equal(t, math.Float64bits(quantileOfCounts(p, sorted, counts)), math.Float64bits(w.q[i]), "n %d, ps %v, p %v", n, ps, p)
				}
			}
		}
	}
}

// The bootstrap's source is workload.NewStream's, draw for draw.
func TestBootstrapStreamIsNewStream(t *testing.T) {
	for _, name := range []string{"", "sim/bootstrap/1.5", "sim/bootstrap/class/chat/0.25"} {
		a, b := rand.New(BootstrapStream(42, name)), workload.NewStream(42, name)
		for range 1000 {
			require.Equal(t, b.Uint64(), a.Uint64(), name)
		}
	}
}

// Merging the sorted replications pools them exactly as the stable sort
// does: ties across and within replications, +Inf, NaN (which
// cmp.Compare puts first), empty replications, and more replications than
// poolRanks merges.
func TestPoolRanksIsTheStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, reps := range []int{1, 2, 5, mergeReps, mergeReps + 1} {
		for range 50 {
			samples := make([][]float64, reps)
			for r := range samples {
				for range rng.IntN(40) {
					v := float64(rng.IntN(10)) // ties
					switch rng.IntN(20) {
					case 0:
						v = math.Inf(1)
					case 1:
						v = math.NaN()
					}
					samples[r] = append(samples[r], v)
				}
				slices.Sort(samples[r])
			}
			wantPooled, wantRank := poolRanksSort(samples)
			pooled, rank := poolRanks(samples)
			require.Equal(t, bitsOf(wantPooled), bitsOf(pooled), "%d replications", reps)
			require.Equal(t, wantRank, rank, "%d replications", reps)
		}
	}
}
