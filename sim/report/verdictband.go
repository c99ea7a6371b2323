package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// CardKneeDiff is a hypothesis on the knee as a card carries it
// (analysis.MetricKnee): A's and B's knees, req/s, and their paired
// difference B−A across the blocks compared (analysis.ExperimentResult's
// KneeA, KneeB and KneeDiff).
type CardKneeDiff struct {
	A    CardInterval `json:"a"`
	B    CardInterval `json:"b"`
	Diff CardInterval `json:"diff"`
	// Bounds are the blocks compared through a knee beyond the loads (its
	// bound, which understates the difference without changing its
	// sign); Unpaired those left out, both knees beyond the same end of
	// the loads (analysis.ExperimentResult.KneeBounds, KneeUnpaired).
	Bounds   int `json:"bounds,omitempty"`
	Unpaired int `json:"unpaired,omitempty"`
}

// CardVerdictBand is an experiment's verdict under each model of the band
// declared before the runs (analysis.Experiment.ModelError,
// analysis.ExperimentResult.Band): the declaration, each variant's
// outcome, whether the verdict holds under every model and, when it does
// not, the first variant under which it flips.
type CardVerdictBand struct {
	// Declared is the model error declared; its Fragile threshold is a
	// curve's and reads the default here.
	Declared CardModelError       `json:"declared"`
	Variants []CardVariantVerdict `json:"variants"`
	// Holds: every variant's verdict is the nominal one
	// (analysis.ExperimentResult.BandHolds).
	Holds bool `json:"holds"`
	// Flip names the first variant whose verdict differs
	// (analysis.ExperimentResult.BandFlip); "" when it holds.
	Flip string `json:"flip,omitempty"`
	// Text says it in words (analysis.ExperimentResult.BandVerdict).
	Text string `json:"text"`
}

// CardVariantVerdict is the experiment under one variant of its band
// (analysis.VariantVerdict): the blocks it ran, the headline improvement
// and verdict, and for a hypothesis on the knee the paired knee
// difference B−A, req/s, and the blocks left out.
type CardVariantVerdict struct {
	Name        string       `json:"name"`
	Blocks      int          `json:"blocks"`
	Improvement CardInterval `json:"improvement"`
	Verdict     string       `json:"verdict"`
	// KneeDiff is null (its centre NaN, N 0) for another metric.
	KneeDiff     CardInterval `json:"knee_diff"`
	KneeUnpaired int          `json:"knee_unpaired,omitempty"`
}

// modelErrorOf is a declaration as a card carries it, the fragile
// threshold's default filled in.
func modelErrorOf(d analysis.ModelError) CardModelError {
	out := CardModelError{Scale: d.Scale, Fragile: d.Fragile, Text: d.String()}
	if out.Fragile == 0 {
		out.Fragile = analysis.DefaultFragile
	}
	for _, a := range d.Alternatives {
		out.Alternatives = append(out.Alternatives, modelName(a))
	}
	for _, a := range d.Shapes {
		out.Shapes = append(out.Shapes, a.Name)
	}
	return out
}

// verdictKneeOf is a knee hypothesis's knees; nil for another metric.
func verdictKneeOf(r *analysis.ExperimentResult) *CardKneeDiff {
	if r.Hypothesis.Metric.Name != analysis.MetricKnee.Name {
		return nil
	}
	return &CardKneeDiff{A: estimateOf(r.KneeA), B: estimateOf(r.KneeB), Diff: estimateOf(r.KneeDiff),
		Bounds: r.KneeBounds, Unpaired: r.KneeUnpaired}
}

// verdictBandOf is the result's band; nil when none was declared.
func verdictBandOf(r *analysis.ExperimentResult) *CardVerdictBand {
	if len(r.Band) == 0 && !r.ModelError.Declared() {
		return nil
	}
	out := &CardVerdictBand{Declared: modelErrorOf(r.ModelError), Holds: r.BandHolds, Text: r.BandVerdict()}
	if r.BandFlip != nil {
		out.Flip = r.BandFlip.Name
	}
	for _, v := range r.Band {
		out.Variants = append(out.Variants, CardVariantVerdict{Name: v.Name, Blocks: v.Blocks,
			Improvement: estimateOf(v.Improvement), Verdict: v.Verdict.String(),
			KneeDiff: estimateOf(v.KneeDiff), KneeUnpaired: v.KneeUnpaired})
	}
	return out
}

// subheading is the level of a verdict's subsections: one below its own.
func subheading(sub bool) string {
	if sub {
		return "####"
	}
	return "###"
}

// mdKnee writes the knees of a hypothesis on the knee; nothing for
// another metric.
func (v *CardVerdict) mdKnee(b *strings.Builder, level string) {
	k := v.Knee
	if k == nil {
		return
	}
	fmt.Fprintf(b, "%s Knee\n\n", level)
	b.WriteString("Each block's knee is where its attainment over the loads crosses the target, A's and B's on the block's seed; B−A is paired per block.\n\n")
	b.WriteString("| | knee (req/s) |\n|---|---|\n")
	row(b, "A (the baseline)", est(k.A))
	row(b, "B (the candidate)", est(k.B))
	row(b, "B − A, paired", kneeDiffText(k.Diff))
	b.WriteString("\n")
	var caveats []string
	if k.Bounds > 0 {
		caveats = append(caveats, fmt.Sprintf("%d of the blocks compared through a knee beyond the loads (its bound, which understates the difference without changing its sign)", k.Bounds))
	}
	if k.Unpaired > 0 {
		caveats = append(caveats, fmt.Sprintf("%d blocks left out: both knees lie beyond the same end of the loads", k.Unpaired))
	}
	if len(caveats) > 0 {
		fmt.Fprintf(b, "%s.\n\n", strings.Join(caveats, "; "))
	}
}

// kneeDiffText is a paired knee difference in req/s, as ComparisonLine
// prints it.
func kneeDiffText(e CardInterval) string {
	return kneeDiff(stats.Interval{Center: float64(e.Center), Lo: float64(e.Lo), Hi: float64(e.Hi), Confidence: e.Confidence, N: e.N})
}

// mdLatency writes the latency readout at the loads, A and B and the
// paired B−A; nothing when no load has one.
func (v *CardVerdict) mdLatency(b *strings.Builder, level string) {
	var any bool
	for _, l := range v.Loads {
		any = any || len(l.Latency) > 0
	}
	if !any {
		return
	}
	fmt.Fprintf(b, "%s Latency at the loads\n\n", level)
	b.WriteString("Below the knee goodput is bounded by the offered load; latency is not. Each cell is the mean over the blocks with its interval; B − A is paired on each block's seed.\n\n")
	b.WriteString("| load (req/s) | metric | A (ms) | B (ms) | B − A, paired (ms) |\n|---:|---|---|---|---|\n")
	for _, l := range v.Loads {
		for _, d := range l.Latency {
			row(b, num(l.Load), d.Metric, est(d.A), est(d.B), PairedDiff(d.Diff.interval()))
		}
	}
	b.WriteString("\n")
}

// interval is the card's interval back as a stats.Interval.
func (e CardInterval) interval() stats.Interval {
	return stats.Interval{Center: float64(e.Center), Lo: float64(e.Lo), Hi: float64(e.Hi), Confidence: e.Confidence, N: e.N}
}

// mdBand writes the verdict under each model of the band; nothing when
// none was declared.
func (v *CardVerdict) mdBand(b *strings.Builder, level string) {
	band := v.Band
	if band == nil {
		return
	}
	fmt.Fprintf(b, "%s Model band\n\n", level)
	fmt.Fprintf(b, "Model error declared before the runs: %s. The experiment reran under each variant, replacing the cost model of every replica of A and B, on the same loads and seeds.\n\n",
		orNotStated(band.Declared.Text))
	knee := v.Knee != nil
	head, sep := "| model | blocks | improvement |", "|---|---:|---|"
	if knee {
		head += " B − A knee, paired (req/s) |"
		sep += "---|"
	}
	b.WriteString(head + " verdict |\n" + sep + "---|\n")
	cells := func(name string, blocks int, imp CardInterval, diff CardInterval, verdict string) {
		c := []string{name, fmt.Sprint(blocks), improvementText(imp)}
		if knee {
			c = append(c, kneeDiffText(diff))
		}
		row(b, append(c, verdict)...)
	}
	var nominal CardInterval
	if knee {
		nominal = v.Knee.Diff
	}
	cells("nominal", v.Blocks, v.Improvement, nominal, v.Verdict)
	for _, x := range band.Variants {
		cells(x.Name, x.Blocks, x.Improvement, x.KneeDiff, x.Verdict)
	}
	b.WriteString("\n")
	if band.Text != "" {
		fmt.Fprintf(b, "The verdict %s.\n\n", band.Text)
	}
}

// improvementText is a relative improvement with its interval, "—" when
// none was measured.
func improvementText(e CardInterval) string {
	if e.N == 0 || math.IsNaN(float64(e.Center)) {
		return "—"
	}
	return percent(float64(e.Center)) + " " + percentInterval(e)
}

// mdWarnings writes the verdict's caveats; nothing without any.
func (v *CardVerdict) mdWarnings(b *strings.Builder, level string) {
	if len(v.Warnings) == 0 {
		return
	}
	fmt.Fprintf(b, "%s Warnings\n\n", level)
	list(b, v.Warnings)
}
