package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
)

// CardBand is a curve's model range as a card carries it (analysis.Band): the
// model error declared before the sweep, the range of the knee and of
// the peak goodput over the nominal model and every variant (all run on
// the same seeds), whether the knee moved by more than the declared
// fragile fraction, and each variant's name and knee.
type CardBand struct {
	Declared CardModelError `json:"declared"`
	// Knee is the range of the knee's centre, in Results.LoadUnit: its
	// bounds are null when no curve of the band placed a knee (not even
	// beyond its loads).
	Knee CardRange `json:"knee"`
	// Peak is the range of the peak goodput, requests/s.
	Peak CardRange `json:"peak_goodput"`
	// Fragile: the knee moved across the band by more than
	// Declared.Fragile of the nominal knee; the curve's warnings say why
	// and name the knob.
	Fragile  bool          `json:"fragile"`
	Variants []CardVariant `json:"variants"`
	// Verdict says in words whether the knee holds under every model of
	// the band or rests on the model, naming the model that moves it
	// most (analysis.Curve.ModelVerdict).
	Verdict string `json:"verdict,omitempty"`
}

// CardModelError is an analysis.ModelError as a card carries it: the models are
// named, not stored.
type CardModelError struct {
	// Scale is the relative error declared on every step time: 0.1 ran
	// the model at ×0.9 and ×1.1 (0: none).
	Scale float64 `json:"scale"`
	// Alternatives name the other models of the replica that ran (their
	// String, else their Go type).
	Alternatives []string `json:"alternatives,omitempty"`
	// Shapes name the alternatives of another shape that ran, as
	// declared (analysis.ModelError.Shapes: "atlas-linear", ...).
	Shapes []string `json:"shapes,omitempty"`
	// Fragile is the fraction of the nominal knee the knee may move
	// across the band before the result is called fragile, its default
	// filled in (analysis.DefaultFragile).
	Fragile float64 `json:"fragile_threshold"`
	// Text is the declaration in words (analysis.ModelError.String).
	Text string `json:"text"`
}

// CardVariant is one model of the band beside the nominal one: its name
// (analysis.Variant.Name: "step times ×1.1", or the alternative model's) and
// the knee and peak of the curve it gave.
type CardVariant struct {
	Name string   `json:"name"`
	Knee CardKnee `json:"knee"`
	Peak CardPeak `json:"peak"`
}

// CardRange is the span of a figure across a band (analysis.Range). LoBelow says
// the lowest comes from a curve whose knee lies below the loads it ran,
// so the true low end is lower still; HiAbove, from one whose knee lies
// above them. A bound that is not finite is null in JSON.
type CardRange struct {
	Lo      Num  `json:"lo"`
	Hi      Num  `json:"hi"`
	LoBelow bool `json:"lo_below,omitempty"`
	HiAbove bool `json:"hi_above,omitempty"`
}

func rangeOf(r analysis.Range) CardRange {
	return CardRange{Lo: Num(r.Lo), Hi: Num(r.Hi), LoBelow: r.LoBelow, HiAbove: r.HiAbove}
}

// bandOf converts a curve's band; nil without one.
func bandOf(b *analysis.Band) *CardBand {
	if b == nil {
		return nil
	}
	out := &CardBand{
		Declared: modelErrorOf(b.Declared),
		Knee:     rangeOf(b.Knee), Peak: rangeOf(b.Peak), Fragile: b.Fragile,
	}
	for _, v := range b.Variants {
		vr := CardVariant{Name: v.Name}
		if c := v.Curve; c != nil {
			vr.Knee = kneeOf(c.Knee)
			vr.Peak = CardPeak{Load: c.Peak.Load, Goodput: estimateOf(c.Peak.Goodput)}
		}
		out.Variants = append(out.Variants, vr)
	}
	return out
}

func kneeOf(k analysis.Knee) CardKnee {
	return CardKnee{Load: estimateOf(k.Load), Found: k.Found, Censored: k.Reason()}
}

// modelName names a cost model as sim's band does: its String, else its
// Go type.
func modelName(m any) string {
	if s, ok := m.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", m)
}

// known reports whether the range has finite bounds: some curve of the
// band placed its knee.
func (r CardRange) known() bool {
	return !math.IsNaN(float64(r.Lo)) && !math.IsInf(float64(r.Lo), 0) &&
		!math.IsNaN(float64(r.Hi)) && !math.IsInf(float64(r.Hi), 0)
}

// text prints the range with each bound formatted by f: "[< 0.5, 2.231]";
// "" when its bounds are not known.
func (r CardRange) text(f func(float64) string) string {
	if !r.known() {
		return ""
	}
	lo, hi := f(float64(r.Lo)), f(float64(r.Hi))
	if r.LoBelow {
		lo = "< " + lo
	}
	if r.HiAbove {
		hi = "> " + hi
	}
	return "[" + lo + ", " + hi + "]"
}

// mdBand says, under the result table, what the model range rests on:
// the declaration and each variant's knee; or, when the curve ran under
// the nominal model only but the card's experiment (v, nil for none)
// declared a band, that band; or that none was declared.
func (r *Results) mdBand(b *strings.Builder, v *CardVerdict) {
	band := r.Band
	if band == nil && v != nil && v.Band != nil {
		fmt.Fprintf(b, "Model error declared before the experiment: %s. This curve ran under the nominal model only, so its intervals are seed noise; the A/B verdict below says whether it holds under every model of the band.\n\n",
			orNotStated(v.Band.Declared.Text))
		return
	}
	if band == nil {
		b.WriteString("Model error: none declared. The intervals are seed noise only, not the cost model's accuracy.\n\n")
		return
	}
	d := band.Declared
	fmt.Fprintf(b, "Model error declared before the sweep: %s (fragile if the knee moves by more than %s of its nominal value across the band). ",
		orNotStated(d.Text), fmt.Sprintf("%.0f %%", 100*d.Fragile))
	parts := make([]string, len(band.Variants))
	for i, v := range band.Variants {
		parts[i] = fmt.Sprintf("%s (knee %s)", v.Name, r.kneeText(v.Knee))
	}
	fmt.Fprintf(b, "Every load also ran, on the same seeds, under %s.", strings.Join(parts, "; "))
	if band.Verdict != "" {
		fmt.Fprintf(b, " The knee %s.", band.Verdict)
	}
	if band.Fragile {
		b.WriteString(" **Fragile:** the knee rests on the cost model's accuracy (see the warning below).")
	}
	b.WriteString("\n\n")
}

// kneeText is a knee in words: its centre with its interval, or where it
// lies when it was not found.
func (r *Results) kneeText(k CardKnee) string {
	if k.Found {
		return fmt.Sprintf("%s %s %s", num(k.Load.Center), r.unit(), interval(k.Load))
	}
	return "not found: " + orNotStated(k.Censored)
}

// modelCells are the result table's model-range cells for the knee, the
// peak and the headroom ("" without a band: the column is left out).
func (r *Results) modelCells() (knee, peak, headroom string) {
	band := r.Band
	if band == nil {
		return "", "", ""
	}
	f := func(x float64) string { return num(x) }
	knee, peak, headroom = "unknown: no model of the band placed a knee", "—", "—"
	if t := band.Knee.text(f); t != "" {
		knee = t + " " + r.unit()
	}
	if t := band.Peak.text(f); t != "" {
		peak = t + " req/s"
	}
	if h := r.Headroom; h != nil && h.Model != nil {
		if t := h.Model.text(percent); t != "" {
			headroom = t + " of the operating load"
		}
	}
	return knee, peak, headroom
}
