package analysis

import (
	"errors"
	"fmt"
	"math"
	"reflect"
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
	// Shapes are alternatives of another shape, each with the name the
	// band and its verdict print (costmodel.AtlasShapes(): atlas-linear,
	// atlas-roofline, atlas-profiled). They run after Alternatives.
	Shapes []costmodel.NamedModel
	// Calibrated is the nominal model the Shapes were calibrated to (they
	// hold its operating point and differ from it in shape only), nil when
	// none is declared. A sweep whose replicas run another model is
	// refused: beside it a shape would differ in level too, and its knee
	// would say nothing of the model's shape. AtlasBand sets it to
	// costmodel.Frozen{} (Atlas's defaults).
	Calibrated costmodel.Model
	// Reps is the replications each variant runs, the first Reps of the
	// sweep's seeds (so each shares its random numbers with the nominal
	// curve's first replications); 0 means the sweep's Reps. Fewer make
	// a wide band cheaper, at the price of a noisier knee per variant.
	Reps int
	// Fragile is how far the knee may move across the band, as a fraction
	// of the nominal knee, before the curve warns that its result rests
	// on the cost model's accuracy. 0 means 0.5.
	Fragile float64
}

// DefaultFragile is ModelError.Fragile's default.
const DefaultFragile = 0.5

// AtlasBand is the model band of a study of the Atlas TP4 replica under
// costmodel.Frozen's defaults: every step time ±scale, and the three
// shape alternatives of costmodel.AtlasShapes, each holding Frozen's
// operating point (45 ms at batch 32, 2,000 context) with a batch- and
// context-dependent step. A shape calibrated to Atlas prices only an
// Atlas-like replica, so the band declares Calibrated: a sweep whose
// replicas run any model but Frozen's defaults (another decode step,
// another model) is refused, naming ModelError.Calibrated.
func AtlasBand(scale float64) ModelError {
	return ModelError{Scale: scale, Shapes: costmodel.AtlasShapes(), Calibrated: costmodel.Frozen{}}
}

// FitBand is the model band a fitted cost model earned on the shapes a
// run visits: ±e.Scale on every step time (ModelError{Scale: e.Scale}),
// e being costmodel.FitResult.ErrorOn of the visited shapes (each step's
// prediction interval at the fit's confidence, widened beyond the
// samples' range by a held-out extrapolation, aggregated over the run's
// step time). A sweep or an experiment of the fitted model that declares
// it carries the band its fit earned, not a number chosen beside it:
//
//	res, _ := costmodel.Fit{Relative: true, Visited: &visited}.Run(samples)
//	band, err := analysis.FitBand(res.ErrorOn(&visited))
//	... Sweep{Config: sim.Config{Model: res.Linear}, ModelError: band, ...}
//
// The band is the scale alone, the same as the ModelError declared by
// hand with that Scale, and covers the steps inside the samples' hull
// and those beyond it that a held-out extrapolation measured. It refuses
// an estimate no band can rest on, with the reason: none (no visited
// steps); one whose visited steps lie outside the samples' hull for more
// than 1 − Confidence of them (FitError.Outside; the steps whose error
// is unmeasured are among them): there a fit can be off by more than any
// estimate from its samples says (a term it left out, a shape it never
// saw), and the remedy is to measure the visited shapes
// (costmodel.Shapes.Draw), not a wider band; and one of ±100 % or more
// (the fast end would run at no time).
func FitBand(e costmodel.FitError) (ModelError, error) {
	outside := fmt.Sprintf("%.1f %% of the %d visited steps lie outside the fit's samples", 100*e.Outside, e.Steps)
	if e.Unmeasured != "" {
		outside += " (" + e.Unmeasured + ")"
	}
	switch {
	case e.Steps == 0:
		return ModelError{}, errors.New("sim: FitBand: the fit error has no visited steps (FitResult.ErrorOn of the shapes the run visits)")
	case e.Outside > 1-e.Confidence:
		return ModelError{}, fmt.Errorf("sim: FitBand: %s, more than 1 − confidence (%.0f %%): there no estimate from the samples bounds the fit's error; measure shapes drawn from the visited ones (costmodel.Shapes.Draw)",
			outside, 100*(1-e.Confidence))
	case math.IsInf(e.Scale, 1):
		return ModelError{}, fmt.Errorf("sim: FitBand: the fit's error is unmeasured on every visited step: %s", e.Unmeasured)
	case !(e.Scale < 1):
		return ModelError{}, fmt.Errorf("sim: FitBand: the fit's error on the visited steps is ±%.0f %%, beyond any band (step times ×(1 − scale) must stay > 0); measure shapes drawn from the visited ones (costmodel.Shapes.Draw)", 100*e.Scale)
	}
	return ModelError{Scale: e.Scale}, nil
}

// Declared reports whether anything is declared.
func (m ModelError) Declared() bool {
	return m.Scale != 0 || len(m.Alternatives) > 0 || len(m.Shapes) > 0
}

// Validate refuses a scale outside [0, 1) and a negative threshold.
func (m ModelError) Validate() error {
	var errs []error
	if !(m.Scale >= 0 && m.Scale < 1) {
		errs = append(errs, fmt.Errorf("sim: ModelError.Scale must be in [0, 1) (0.1 is ±10 %%), got %v", m.Scale))
	}
	if m.Reps < 0 {
		errs = append(errs, fmt.Errorf("sim: ModelError.Reps must be >= 0 (0 means the sweep's), got %d", m.Reps))
	}
	if !(m.Fragile >= 0) || math.IsInf(m.Fragile, 0) {
		errs = append(errs, fmt.Errorf("sim: ModelError.Fragile must be a fraction >= 0 (0 means %v), got %v", DefaultFragile, m.Fragile))
	}
	for i, a := range m.Alternatives {
		if a == nil {
			errs = append(errs, fmt.Errorf("sim: ModelError.Alternatives[%d] is nil", i))
		}
	}
	for i, a := range m.Shapes {
		if a.Model == nil {
			errs = append(errs, fmt.Errorf("sim: ModelError.Shapes[%d] (%q) has no model", i, a.Name))
		}
		if a.Name == "" {
			errs = append(errs, fmt.Errorf("sim: ModelError.Shapes[%d] has no name: the band's verdict names the model it rests on", i))
		}
	}
	return errors.Join(errs...)
}

// checkCalibrated refuses a configuration whose replicas run a model other
// than the one the Shapes were calibrated to (none when Calibrated is nil).
func (m ModelError) checkCalibrated(cfg sim.Config) error {
	if m.Calibrated == nil {
		return nil
	}
	want := normalModel(m.Calibrated)
	for _, got := range replicaModels(cfg) {
		if !reflect.DeepEqual(normalModel(got), want) {
			return fmt.Errorf("sim: ModelError.Calibrated: the shape alternatives hold the operating point of %s, but the sweep's replicas run %s: beside it they differ in level, not only in shape (declare shapes calibrated to that model, or leave Shapes out)",
				modelName(want), modelName(normalModel(got)))
		}
	}
	return nil
}

// normalModel is m with its defaults, as sim runs it: nil is Frozen's.
func normalModel(m costmodel.Model) costmodel.Model {
	switch f := m.(type) {
	case nil:
		return costmodel.Frozen{}.WithDefaults()
	case costmodel.Frozen:
		return f.WithDefaults()
	}
	return m
}

func (m ModelError) String() string {
	var parts []string
	if m.Scale > 0 {
		parts = append(parts, fmt.Sprintf("step times ±%.0f %%", 100*m.Scale))
	}
	for _, a := range m.Alternatives {
		parts = append(parts, modelName(a))
	}
	for _, a := range m.Shapes {
		parts = append(parts, a.Name)
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
			out = append(out, Variant{Name: fmt.Sprintf("step times ×%.4g", f), scale: f, replace: func(base costmodel.Model) costmodel.Model {
				return costmodel.Scaled{Model: base, Factor: f}
			}})
		}
	}
	for _, a := range m.Alternatives {
		out = append(out, Variant{Name: modelName(a), replace: func(costmodel.Model) costmodel.Model { return a }})
	}
	for _, a := range m.Shapes {
		out = append(out, Variant{Name: a.Name, replace: func(costmodel.Model) costmodel.Model { return a.Model }})
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
	// A knee not Fragile holds under every model of the band; a Fragile
	// one rests on the model (Curve.ModelVerdict says which in words).
	Fragile bool
	// Mover is the variant whose knee lies farthest from the nominal
	// knee, and its knee there: the model a fragile knee rests on. Its
	// Model is "" when the nominal curve or every variant placed no knee.
	Mover Move
}

// Move is where one model of a band puts the knee: its centre, or the
// edge of the loads it ran beyond which it lies (Below: under it;
// Above: over it), and its distance from the nominal knee as a fraction
// of it (Rel, signed).
type Move struct {
	Model        string
	Knee, Rel    float64
	Below, Above bool
}

// String prints the knee: "1.9", "< 0.1", "> 3".
func (m Move) String() string {
	k := fmt.Sprintf("%.4g", m.Knee)
	switch {
	case m.Below:
		return "< " + k
	case m.Above:
		return "> " + k
	}
	return k
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
// LoModel and HiModel name the models that gave each end ("nominal" for
// the sweep's own; "" where unknown); String does not print them.
type Range struct {
	Lo, Hi           float64
	LoBelow, HiAbove bool
	LoModel, HiModel string
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
	each := func(rs []sim.ReplicaConfig) []sim.ReplicaConfig {
		out := make([]sim.ReplicaConfig, len(rs))
		for i, r := range rs {
			out[i] = sim.ReplicaConfig{Engine: r.Engine, Model: replace(r.Model), Speculation: drafter(r.Speculation)}
		}
		return out
	}
	if cfg.Fleet.Prefill.On() { // a disaggregated fleet's prefill pool runs the model too
		cfg.Fleet.Prefill.Replicas = each(cfg.Fleet.Prefill.Replicas)
	}
	if cfg.Fleet.Replicas == nil {
		cfg.Model = replace(cfg.Model)
		cfg.Speculation = drafter(cfg.Speculation)
		return cfg
	}
	cfg.Fleet.Replicas = each(cfg.Fleet.Replicas)
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
		if r := s.ModelError.Reps; r > 0 && r < vs.Reps {
			vs.Reps = r
		}
		vc, err := vs.Run()
		if err != nil {
			return fmt.Errorf("sim: model band, %s: %w", v.Name, err)
		}
		v.Curve = vc
		b.Variants = append(b.Variants, v)
	}
	curves := []*Curve{c}
	names := []string{"nominal"}
	for _, v := range b.Variants {
		curves = append(curves, v.Curve)
		names = append(names, v.Name)
	}
	b.Knee = Range{Lo: math.Inf(1), Hi: math.Inf(-1)}
	b.Peak = Range{Lo: math.Inf(1), Hi: math.Inf(-1)}
	nominal, _, _, ok := kneeValue(c.Knee)
	for i, vc := range curves {
		if v, below, above, ok := kneeValue(vc.Knee); ok {
			if v < b.Knee.Lo || (v == b.Knee.Lo && below) {
				b.Knee.Lo, b.Knee.LoBelow, b.Knee.LoModel = v, below, names[i]
			}
			if v > b.Knee.Hi || (v == b.Knee.Hi && above) {
				b.Knee.Hi, b.Knee.HiAbove, b.Knee.HiModel = v, above, names[i]
			}
			// The mover: the farthest from the nominal knee; a knee beyond
			// the loads run is farther than its edge, so it wins a tie.
			rel := (v - nominal) / nominal
			if d, best := math.Abs(rel), math.Abs(b.Mover.Rel); i > 0 && nominal > 0 && (b.Mover.Model == "" || d > best || d == best && (below || above)) {
				b.Mover = Move{Model: names[i], Knee: v, Rel: rel, Below: below, Above: above}
			}
		}
		if g := vc.Peak.Goodput.Center; !math.IsNaN(g) { // a curve that measured nothing has no peak
			lo, hi := b.Peak.Lo, b.Peak.Hi
			b.Peak.Lo, b.Peak.Hi = min(b.Peak.Lo, g), max(b.Peak.Hi, g)
			if b.Peak.Lo != lo {
				b.Peak.LoModel = names[i]
			}
			if b.Peak.Hi != hi {
				b.Peak.HiModel = names[i]
			}
		}
	}
	// A range no curve placed anything in is unknown, not [+Inf, −Inf].
	for _, r := range []*Range{&b.Knee, &b.Peak} {
		if r.Lo > r.Hi {
			*r = Range{Lo: math.NaN(), Hi: math.NaN()}
		}
	}
	c.Band = b
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
	if len(b.Declared.Alternatives)+len(b.Declared.Shapes) > 0 {
		w.Mover = b.Mover // with ±scale alone the range's low end names it already
	}
	slo := s.Config.SLO.WithDefaults()
	worst := s.Config.LargestStep()
	if slo.ITL < sim.Unbounded && float64(worst)*(1+b.Declared.Scale) >= 0.8*float64(slo.ITL) {
		w.LargestStep, w.ITLBound = worst, slo.ITL
	}
	return w
}

// ModelVerdict says in words whether the knee holds under every model of
// the band or rests on the model, naming the variant that moves it most
// and its knee there; "" without a band.
func (c *Curve) ModelVerdict() string {
	b := c.Band
	if b == nil {
		return ""
	}
	unit := c.Axis.Unit()
	if _, _, _, ok := kneeValue(c.Knee); !ok || b.Mover.Model == "" {
		return fmt.Sprintf("no verdict under the model band (%v): no knee to compare", b.Declared)
	}
	if b.Fragile {
		return fmt.Sprintf("rests on the model: under %s the knee is %v %s (%+.0f %%); across the band (%v) it spans %v",
			b.Mover.Model, b.Mover, unit, 100*b.Mover.Rel, b.Declared, b.Knee)
	}
	return fmt.Sprintf("holds under every model of the band (%v): it spans %v %s, moved most by %s, to %v (%+.0f %%)",
		b.Declared, b.Knee, unit, b.Mover.Model, b.Mover, 100*b.Mover.Rel)
}
