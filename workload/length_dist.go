package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Normal is a normal length N(Mu, Sigma²) rounded and clipped to
// [max(Min, 1), Max] (Max 0: no upper bound). Clipping piles the tails'
// mass on the bounds; it does not resample.
type Normal struct {
	Mu, Sigma float64 // tokens; Sigma > 0
	Min, Max  int
}

func (n Normal) dist(r *rand.Rand) distuv.Normal {
	return distuv.Normal{Mu: n.Mu, Sigma: n.Sigma, Src: source(r)}
}

// source hands gonum r as its rand.Source, or nil (never a typed nil).
func source(r *rand.Rand) rand.Source {
	if r == nil {
		return nil
	}
	return r
}

func (n Normal) Sample(r *rand.Rand) int { return clip(n.dist(r).Rand(), n.Min, n.Max) }
func (n Normal) Quantile(p float64) int  { return clip(n.dist(nil).Quantile(clampP(p)), n.Min, n.Max) }
func (n Normal) Mean() float64           { return float64(clip(n.Mu, n.Min, n.Max)) }
func (n Normal) Validate() error         { return validateClipped("Normal", n.Sigma, n.Min, n.Max) }
func (n Normal) String() string {
	return fmt.Sprintf("normal(μ=%g, σ=%g) clipped to [%d,%s", n.Mu, n.Sigma, max(n.Min, 1), upper(n.Max))
}

// LogNormal is a lognormal length exp(N(Mu, Sigma²)) rounded and clipped to
// [max(Min, 1), Max] (Max 0: no upper bound). LogNormalMean builds one from
// a mean and a coefficient of variation.
type LogNormal struct {
	Mu, Sigma float64 // of the underlying normal (log tokens); Sigma > 0
	Min, Max  int
}

// LogNormalMean returns the LogNormal with the given mean (tokens) and
// coefficient of variation (> 0), before clipping.
func LogNormalMean(mean, cv float64) LogNormal {
	s2 := math.Log1p(cv * cv)
	return LogNormal{Mu: math.Log(mean) - s2/2, Sigma: math.Sqrt(s2)}
}

func (l LogNormal) dist(r *rand.Rand) distuv.LogNormal {
	return distuv.LogNormal{Mu: l.Mu, Sigma: l.Sigma, Src: source(r)}
}

func (l LogNormal) Sample(r *rand.Rand) int { return clip(l.dist(r).Rand(), l.Min, l.Max) }
func (l LogNormal) Quantile(p float64) int {
	return clip(l.dist(nil).Quantile(clampP(p)), l.Min, l.Max)
}
func (l LogNormal) Mean() float64   { return l.dist(nil).Mean() }
func (l LogNormal) Validate() error { return validateClipped("LogNormal", l.Sigma, l.Min, l.Max) }
func (l LogNormal) String() string {
	return fmt.Sprintf("lognormal(μ=%.4g, σ=%.4g, mean %.0f) clipped to [%d,%s", l.Mu, l.Sigma, l.Mean(), max(l.Min, 1), upper(l.Max))
}

func validateClipped(name string, sigma float64, lo, hi int) error {
	var errs []error
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		errs = append(errs, fmt.Errorf("workload: %s.Sigma must be > 0 and finite, got %v", name, sigma))
	}
	if hi != 0 && hi < max(lo, 1) {
		errs = append(errs, fmt.Errorf("workload: %s.Max must be 0 or >= Min (and 1), got %d < %d", name, hi, max(lo, 1)))
	}
	return errors.Join(errs...)
}

func upper(hi int) string {
	if hi <= 0 {
		return "∞)"
	}
	return fmt.Sprintf("%d]", hi)
}

// Zipf is a Zipf (power-law) length over 1..Max: length k+1 has probability
// proportional to (V+k)^−S, drawn with math/rand/v2's Zipf. S > 1, V >= 1,
// Max >= 1. Quantile and Mean scan all Max ranks (O(Max)).
type Zipf struct {
	S, V float64
	Max  int
}

func (z Zipf) Sample(r *rand.Rand) int {
	return int(rand.NewZipf(r, z.S, z.V, uint64(z.Max-1)).Uint64()) + 1
}

func (z Zipf) weight(k int) float64 { return math.Pow(z.V+float64(k), -z.S) }

func (z Zipf) norm() float64 {
	sum := 0.0
	for k := range z.Max {
		sum += z.weight(k)
	}
	return sum
}

func (z Zipf) Quantile(p float64) int {
	target := clampP(p) * z.norm()
	cum := 0.0
	for k := range z.Max {
		if cum += z.weight(k); cum >= target {
			return k + 1
		}
	}
	return z.Max
}

func (z Zipf) Mean() float64 {
	sum := 0.0
	for k := range z.Max {
		sum += float64(k+1) * z.weight(k)
	}
	return sum / z.norm()
}

func (z Zipf) String() string { return fmt.Sprintf("zipf(s=%g, v=%g) over [1,%d]", z.S, z.V, z.Max) }

func (z Zipf) Validate() error {
	var errs []error
	if !(z.S > 1) || math.IsInf(z.S, 0) {
		errs = append(errs, fmt.Errorf("workload: Zipf.S must be > 1, got %v", z.S))
	}
	if !(z.V >= 1) || math.IsInf(z.V, 0) {
		errs = append(errs, fmt.Errorf("workload: Zipf.V must be >= 1, got %v", z.V))
	}
	errs = append(errs, positive("Zipf.Max", z.Max))
	return errors.Join(errs...)
}
