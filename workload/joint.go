package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// Joint draws a request's (input, output) lengths together, so that their
// correlation can be kept. in and out are the streams "input" and "output":
// an implementation draws input-side randomness from in and the rest from
// out, so that changing the output distribution leaves inputs untouched.
type Joint interface {
	Sample(in, out *rand.Rand) (input, output int)
	Validate() error
	String() string
}

// Independent samples Input and Output independently (no correlation).
type Independent struct{ Input, Output Length }

// Fixed is Independent{Constant{input}, Constant{output}}.
func Fixed(input, output int) Independent {
	return Independent{Input: Constant{input}, Output: Constant{output}}
}

func (j Independent) Sample(in, out *rand.Rand) (int, int) {
	return j.Input.Sample(in), j.Output.Sample(out)
}

func (j Independent) String() string {
	return fmt.Sprintf("independent input %v, output %v", j.Input, j.Output)
}

func (j Independent) Validate() error {
	return errors.Join(validateLength("Independent.Input", j.Input), validateLength("Independent.Output", j.Output))
}

func validateLength(field string, l Length) error {
	if l == nil {
		return fmt.Errorf("workload: %s is nil", field)
	}
	return l.Validate()
}

// Pair is one observed (input, output) pair.
type Pair struct{ Input, Output int }

// Resample draws observed (input, output) pairs uniformly with replacement,
// which keeps their joint distribution (and so their correlation) exactly.
// ResampleFrom fills it from a trace.
type Resample struct{ Pairs []Pair }

// ResampleFrom reads up to limit requests (0 = all) from src and keeps their
// (input, output) pairs, skipping failed ones. Its memory is 16 bytes per
// kept pair.
func ResampleFrom(src Source, limit int) (Resample, error) {
	var pairs []Pair
	for limit <= 0 || len(pairs) < limit {
		r, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Resample{}, err
		}
		if !r.Failed && r.InputTokens > 0 && r.OutputTokens > 0 {
			pairs = append(pairs, Pair{r.InputTokens, r.OutputTokens})
		}
	}
	return Resample{Pairs: pairs}, nil
}

func (j Resample) Sample(in, _ *rand.Rand) (int, int) {
	p := j.Pairs[in.IntN(len(j.Pairs))]
	return p.Input, p.Output
}

func (j Resample) String() string { return fmt.Sprintf("joint resample of %d pairs", len(j.Pairs)) }

func (j Resample) Validate() error {
	if len(j.Pairs) == 0 {
		return errors.New("workload: Resample.Pairs is empty")
	}
	for i, p := range j.Pairs {
		if p.Input < 1 || p.Output < 1 {
			return fmt.Errorf("workload: Resample.Pairs[%d] must have both lengths >= 1, got %v", i, p)
		}
	}
	return nil
}

// Copula couples two marginals through a Gaussian copula with a target
// Spearman rank correlation in [−1, 1]: it draws a standard normal pair with
// Pearson correlation ρ = 2·sin(π·Spearman/6) (the exact map for a Gaussian
// copula), turns each into a uniform with Φ, and reads each marginal at that
// quantile. The marginals are kept exactly; discrete marginals with many
// ties realise a slightly smaller rank correlation than the target.
type Copula struct {
	Input, Output Length
	Spearman      float64
}

func (c Copula) Sample(in, out *rand.Rand) (int, int) {
	rho := 2 * math.Sin(math.Pi*c.Spearman/6)
	z1 := in.NormFloat64()
	z2 := rho*z1 + math.Sqrt(max(0, 1-rho*rho))*out.NormFloat64()
	return c.Input.Quantile(phi(z1)), c.Output.Quantile(phi(z2))
}

// phi is the standard normal CDF.
func phi(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func (c Copula) String() string {
	return fmt.Sprintf("gaussian copula (spearman %g) of input %v, output %v", c.Spearman, c.Input, c.Output)
}

func (c Copula) Validate() error {
	errs := []error{validateLength("Copula.Input", c.Input), validateLength("Copula.Output", c.Output)}
	if !(c.Spearman >= -1 && c.Spearman <= 1) {
		errs = append(errs, fmt.Errorf("workload: Copula.Spearman must be in [-1, 1], got %v", c.Spearman))
	}
	return errors.Join(errs...)
}
