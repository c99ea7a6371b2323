package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Length is a distribution of token counts (prompt or response lengths).
// Every implementation yields lengths >= 1.
type Length interface {
	// Sample draws one length from r.
	Sample(r *rand.Rand) int
	// Quantile is the inverse CDF: the smallest length whose cumulative
	// probability is >= p, for p in (0, 1). The Gaussian copula uses it.
	Quantile(p float64) int
	// Mean is the distribution's mean length (of the clipped distribution
	// where clipping applies, approximately).
	Mean() float64
	// Validate reports every problem with the parameters.
	Validate() error
	// String describes the distribution for a benchmark card.
	String() string
}

// Constant is a fixed length: Tokens (>= 1) every time.
type Constant struct{ Tokens int }

func (c Constant) Sample(*rand.Rand) int { return c.Tokens }
func (c Constant) Quantile(float64) int  { return c.Tokens }
func (c Constant) Mean() float64         { return float64(c.Tokens) }
func (c Constant) String() string        { return fmt.Sprintf("constant(%d)", c.Tokens) }
func (c Constant) Validate() error       { return positive("Constant.Tokens", c.Tokens) }
func positive(field string, v int) error { // shared by the length types
	if v < 1 {
		return fmt.Errorf("workload: %s must be >= 1, got %d", field, v)
	}
	return nil
}

// Uniform is vLLM's random dataset length: an integer uniform on
// [floor(Center·(1−RangeRatio)), ceil(Center·(1+RangeRatio))], both ends
// included, the low end raised to 1. RangeRatio is in [0, 1); 0 is Constant.
type Uniform struct {
	Center     int // vLLM's --random-input-len (or -output-len); >= 1
	RangeRatio float64
}

func (u Uniform) bounds() (lo, hi int) {
	lo = int(math.Floor(float64(u.Center) * (1 - u.RangeRatio)))
	hi = int(math.Ceil(float64(u.Center) * (1 + u.RangeRatio)))
	return max(lo, 1), max(hi, 1)
}

func (u Uniform) Sample(r *rand.Rand) int {
	lo, hi := u.bounds()
	return lo + r.IntN(hi-lo+1)
}

func (u Uniform) Quantile(p float64) int {
	lo, hi := u.bounds()
	n := hi - lo + 1
	return lo + min(n-1, int(math.Ceil(clampP(p)*float64(n)))-1)
}

func (u Uniform) Mean() float64 {
	lo, hi := u.bounds()
	return float64(lo+hi) / 2
}

func (u Uniform) String() string {
	lo, hi := u.bounds()
	return fmt.Sprintf("uniform[%d,%d] (center %d, range ratio %g)", lo, hi, u.Center, u.RangeRatio)
}

func (u Uniform) Validate() error {
	var errs []error
	errs = append(errs, positive("Uniform.Center", u.Center))
	if u.Center > maxTokens {
		errs = append(errs, fmt.Errorf("workload: Uniform.Center must be <= %d, got %d", maxTokens, u.Center))
	}
	if !(u.RangeRatio >= 0 && u.RangeRatio < 1) {
		errs = append(errs, fmt.Errorf("workload: Uniform.RangeRatio must be in [0, 1), got %v", u.RangeRatio))
	}
	return errors.Join(errs...)
}

// Empirical resamples observed lengths uniformly (a bootstrap of the
// marginal). Samples must be sorted ascending and >= 1; NewEmpirical sorts a
// copy.
type Empirical struct{ Samples []int }

// NewEmpirical returns an Empirical over a sorted copy of samples.
func NewEmpirical(samples []int) Empirical {
	s := slices.Clone(samples)
	slices.Sort(s)
	return Empirical{Samples: s}
}

func (e Empirical) Sample(r *rand.Rand) int { return e.Samples[r.IntN(len(e.Samples))] }

func (e Empirical) Quantile(p float64) int {
	n := len(e.Samples)
	return e.Samples[min(n-1, max(0, int(math.Ceil(clampP(p)*float64(n)))-1))]
}

func (e Empirical) Mean() float64 {
	sum := 0.0
	for _, v := range e.Samples {
		sum += float64(v)
	}
	return sum / float64(max(len(e.Samples), 1))
}

func (e Empirical) String() string {
	return fmt.Sprintf("empirical(n=%d, mean %.1f)", len(e.Samples), e.Mean())
}

func (e Empirical) Validate() error {
	switch {
	case len(e.Samples) == 0:
		return errors.New("workload: Empirical.Samples is empty")
	case !slices.IsSorted(e.Samples):
		return errors.New("workload: Empirical.Samples must be sorted (use NewEmpirical)")
	case e.Samples[0] < 1:
		return fmt.Errorf("workload: Empirical.Samples must be >= 1, got %d", e.Samples[0])
	}
	return nil
}

// maxTokens bounds configured lengths far above any context window, so
// that integer arithmetic on them cannot overflow.
const maxTokens = 1 << 30

// clampP keeps a probability strictly inside (0, 1).
func clampP(p float64) float64 {
	const eps = 1e-12
	if !(p > eps) {
		return eps
	}
	return min(p, 1-eps)
}

// clip rounds x to a length in [max(lo, 1), hi] (hi <= 0: no upper bound).
func clip(x float64, lo, hi int) int {
	lo = max(lo, 1)
	if math.IsNaN(x) || x < float64(lo) {
		return lo
	}
	if hi > 0 && x > float64(hi) {
		return hi
	}
	if x > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(math.Round(x))
}
