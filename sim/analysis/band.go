package analysis

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// ModelError declares, before a sweep runs, how far its cost model may be
// off: a knee's interval across seeds says nothing of that, and the
// chapter's "confident wrong number" hides there. The sweep runs the same
// grid on the same seeds (common random numbers) under each variant of the
// model, and the Curve's Band reports the knee and the peak under the
// slowest and the fastest. The zero value declares nothing.
type ModelError struct {
	// Scale is the relative error of every step time: 0.1 runs the model
	// at ×0.9 and ×1.1 (costmodel.Scaled). 0 means none.
	Scale float64
	// Alternatives are other models of the same replica (of every replica
	// of a fleet), e.g. costmodel.AtlasRoofline() beside Frozen.
	Alternatives []costmodel.Model
	// Fragile is how far the knee may move across the band, as a fraction
	// of the nominal knee, before the curve warns that its result rests
	// on the cost model's accuracy. 0 means 0.5.
	Fragile float64
}

// DefaultFragile is ModelError.Fragile's default.
const DefaultFragile = 0.5

// Declared reports whether anything is declared.
func (m ModelError) Declared() bool { return m.Scale != 0 || len(m.Alternatives) > 0 }

// Validate refuses a scale outside [0, 1) and a negative threshold.
func (m ModelError) Validate() error {
	var errs []error
	if !(m.Scale >= 0 && m.Scale < 1) {
		errs = append(errs, fmt.Errorf("sim: ModelError.Scale must be in [0, 1) (0.1 is ±10 %%), got %v", m.Scale))
	}
	if !(m.Fragile >= 0) || math.IsInf(m.Fragile, 0) {
		errs = append(errs, fmt.Errorf("sim: ModelError.Fragile must be a fraction >= 0 (0 means %v), got %v", DefaultFragile, m.Fragile))
	}
	for i, a := range m.Alternatives {
		if a == nil {
			errs = append(errs, fmt.Errorf("sim: ModelError.Alternatives[%d] is nil", i))
		}
	}
	return errors.Join(errs...)
}

func (m ModelError) String() string {
	var parts []string
	if m.Scale > 0 {
		parts = append(parts, fmt.Sprintf("step times ±%.0f %%", 100*m.Scale))
	}
	for _, a := range m.Alternatives {
		parts = append(parts, modelName(a))
	}
	if len(parts) == 0 {
		return "none declared"
	}
	return strings.Join(parts, ", ")
}

// variants are the models the band runs beside the nominal one, each with
// its name and how it replaces a replica's model.
func (m ModelError) variants() []Variant {
	var out []Variant
	if m.Scale > 0 {
		for _, f := range []float64{1 + m.Scale, 1 - m.Scale} {
			out = append(out, Variant{Name: fmt.Sprintf("step times ×%g", f), scale: f, replace: func(base costmodel.Model) costmodel.Model {
				return costmodel.Scaled{Model: base, Factor: f}
			}})
		}
	}
	for _, a := range m.Alternatives {
		out = append(out, Variant{Name: modelName(a), replace: func(costmodel.Model) costmodel.Model { return a }})
	}
	return out
}

func modelName(m costmodel.Model) string {
	if s, ok := m.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", m)
}

// Band is a curve's model range: the same sweep under each declared
// variant of the cost model, on the same seeds.
type Band struct {
	Declared ModelError
	Variants []Variant // in declaration order: slower, faster, alternatives
	// Knee and Peak are the range of the knee's centre and of the peak
	// goodput over the nominal model and every variant.
	Knee, Peak Range
	// Fragile: the knee moves across the band by more than
	// Declared.Fragile of the nominal knee (the curve's warning says why).
	Fragile bool
}

// Variant is one model of a band and the curve it gave.
type Variant struct {
	Name    string
	Curve   *Curve
	replace func(costmodel.Model) costmodel.Model
	scale   float64 // the factor of a Scale variant (0 for an alternative): it scales a drafter too
}

// Range is the span of a figure across a band. LoBelow says the lowest
// comes from a curve whose knee lies below the loads it ran (so the true
// low end is lower still); HiAbove, from one whose knee lies above them.
type Range struct {
	Lo, Hi           float64
	LoBelow, HiAbove bool
}

func (r Range) String() string {
	if math.IsNaN(r.Lo) && math.IsNaN(r.Hi) {
		return "none: no curve of the band placed it"
	}
	lo, hi := fmt.Sprintf("%.4g", r.Lo), fmt.Sprintf("%.4g", r.Hi)
	if r.LoBelow {
		lo = "< " + lo
	}
	if r.HiAbove {
		hi = "> " + hi
	}
	return "[" + lo + ", " + hi + "]"
}

// kneeValue is where a curve puts its knee: found, or the edge of the
// loads it ran beyond which it lies.
func kneeValue(k Knee) (v float64, below, above, ok bool) {
	switch {
	case k.Found:
		return k.Load.Center, false, false, true
	case k.Censored == BelowLowest:
		return k.FirstMiss, true, false, true
	case k.Censored == AboveHighest:
		return k.LastMet, false, true, true
	}
	return math.NaN(), false, false, false
}

// withModel returns cfg with every replica's cost model replaced, its
// speculation kept; a scale other than 0 scales a draft model's step too
// (drafting heads, a fraction of the step, follow the step already).
func withModel(cfg sim.Config, replace func(costmodel.Model) costmodel.Model, scale float64) sim.Config {
	drafter := func(s sim.Speculation) sim.Speculation {
		if scale > 0 {
			s.DraftStep = time.Duration(math.Round(float64(s.DraftStep) * scale))
		}
		return s
	}
	if cfg.Fleet.Replicas == nil {
		cfg.Model = replace(cfg.Model)
		cfg.Speculation = drafter(cfg.Speculation)
		return cfg
	}
	reps := make([]sim.ReplicaConfig, len(cfg.Fleet.Replicas))
	for i, r := range cfg.Fleet.Replicas {
		reps[i] = sim.ReplicaConfig{Engine: r.Engine, Model: replace(r.Model), Speculation: drafter(r.Speculation)}
	}
	cfg.Fleet.Replicas = reps
	return cfg
}

// runBand runs the sweep under every variant of the declared model error
// and attaches the band to the nominal curve c.
func (s Sweep) runBand(c *Curve) error {
	b := &Band{Declared: s.ModelError}
	for _, v := range s.ModelError.variants() {
		vs := s
		vs.ModelError = ModelError{}
		vs.Observe = nil
		vs.Config = withModel(s.Config, v.replace, v.scale)
		vc, err := vs.Run()
		if err != nil {
			return fmt.Errorf("sim: model band, %s: %w", v.Name, err)
		}
		v.Curve = vc
		b.Variants = append(b.Variants, v)
	}
	curves := []*Curve{c}
	for _, v := range b.Variants {
		curves = append(curves, v.Curve)
	}
	b.Knee = Range{Lo: math.Inf(1), Hi: math.Inf(-1)}
	b.Peak = Range{Lo: math.Inf(1), Hi: math.Inf(-1)}
	for _, vc := range curves {
		if v, below, above, ok := kneeValue(vc.Knee); ok {
			if v < b.Knee.Lo || (v == b.Knee.Lo && below) {
				b.Knee.Lo, b.Knee.LoBelow = v, below
			}
			if v > b.Knee.Hi || (v == b.Knee.Hi && above) {
				b.Knee.Hi, b.Knee.HiAbove = v, above
			}
		}
		if g := vc.Peak.Goodput.Center; !math.IsNaN(g) { // a curve that measured nothing has no peak
			b.Peak.Lo, b.Peak.Hi = min(b.Peak.Lo, g), max(b.Peak.Hi, g)
		}
	}
	// A range no curve placed anything in is unknown, not [+Inf, −Inf].
	for _, r := range []*Range{&b.Knee, &b.Peak} {
		if r.Lo > r.Hi {
			*r = Range{Lo: math.NaN(), Hi: math.NaN()}
		}
	}
	c.Band = b
	nominal, _, _, ok := kneeValue(c.Knee)
	fragile := s.ModelError.Fragile
	if fragile == 0 {
		fragile = DefaultFragile
	}
	if ok && nominal > 0 && !math.IsInf(b.Knee.Lo, 0) && (b.Knee.Hi-b.Knee.Lo)/nominal > fragile {
		b.Fragile = true
		c.warn(s.fragility(b))
	}
	return nil
}

// fragility says why the knee moves across the band, naming the mechanism
// and the knob: a step the configuration can form close to the ITL bound,
// or else the step times themselves.
func (s Sweep) fragility(b *Band) Warning {
	w := Warning{Kind: WarnModelFragile, Declared: b.Declared, KneeRange: b.Knee, Unit: s.Axis.Unit()}
	slo := s.Config.SLO.WithDefaults()
	worst := s.Config.LargestStep()
	if slo.ITL < sim.Unbounded && float64(worst)*(1+b.Declared.Scale) >= 0.8*float64(slo.ITL) {
		w.LargestStep, w.ITLBound = worst, slo.ITL
	}
	return w
}
