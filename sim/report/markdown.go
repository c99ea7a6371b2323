package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/servesim/servesim/sim"
)

// notStated renders an empty field.
const notStated = "*not stated*"

// noMeasured stands where a window measured no request: there is no
// attainment, and no verdict, to print.
const noMeasured = "no measured requests"

// WriteMarkdown writes the card as Markdown that reads well in a pull
// request: the claim and the result first, then what it was measured on
// and how to reproduce it.
func (c *Card) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	title := c.Title
	if title == "" {
		title = "Benchmark card"
	}
	fmt.Fprintf(&b, "# %s\n\n**Claim.** %s\n\n", title, orNotStated(c.Claim))
	// An experiment's card has only its verdict, a dial sweep's its dial.
	curve := len(c.Results.Points) > 0 || (c.Verdict == nil && c.Dial == nil)
	if curve {
		c.mdResult(&b, c.Baseline != nil)
	}
	if c.Dial != nil {
		c.Dial.markdown(&b)
	}
	if c.Verdict != nil {
		c.Verdict.markdown(&b, curve)
	}
	if curve {
		c.Results.mdCurve(&b)
	}
	if c.Estimate != nil {
		c.Estimate.markdown(&b)
	}
	c.mdWorkload(&b)
	c.mdSLO(&b)
	if c.Baseline != nil {
		c.System.markdown(&b, "System B (the candidate)")
		c.Baseline.markdown(&b, "System A (the baseline)")
	} else {
		c.System.markdown(&b, c.Dial.systemHeading())
	}
	c.mdReproduce(&b)
	c.mdEvents(&b)
	if len(c.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		list(&b, c.Notes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdResult writes the curve's figures; on an A/B card (ofB) the curve is
// system B's, and the heading says so.
func (c *Card) mdResult(b *strings.Builder, ofB bool) {
	r := &c.Results
	if ofB {
		b.WriteString("## Result: system B's curve\n\n")
	} else {
		b.WriteString("## Result\n\n")
	}
	// With a model band, a column beside the seed interval gives each
	// figure's range over the declared model error.
	mk, mp, mh := r.modelCells()
	band := r.Band != nil
	head := fmt.Sprintf("| figure | value | %g %% interval |", 100*r.Confidence)
	sep := "|---|---|---|"
	if band {
		head += " model range |"
		sep += "---|"
	}
	b.WriteString(head + "\n" + sep + "\n")
	cells := func(figure, value, ci, model string) {
		if band {
			row(b, figure, value, ci, model)
		} else {
			row(b, figure, value, ci)
		}
	}
	unit := r.unit()
	k, kci := "not found in the sweep (see below)", "—"
	if r.Knee.Found {
		k, kci = fmt.Sprintf("%s %s", num(r.Knee.Load.Center), unit), interval(r.Knee.Load)
	}
	cells(fmt.Sprintf("knee: highest load with attainment ≥ %g", r.Target), k, kci, mk)
	if r.noneMeasured() {
		cells("peak goodput", noMeasured+" at any load", "—", mp)
	} else {
		cells("peak goodput", fmt.Sprintf("%s req/s at %s %s offered", num(r.Peak.Goodput.Center), num(r.Peak.Load), unit), interval(r.Peak.Goodput), mp)
	}
	col := "not reached in the sweep"
	if r.Collapse.Found {
		col = fmt.Sprintf("from %s %s offered", num(r.Collapse.Load), unit)
	}
	cells("collapse: goodput below 90 % of the peak", col, "—", "—")
	switch h := r.Headroom; {
	case h != nil && !r.Knee.Found:
		cells(fmt.Sprintf("headroom at the operating point %s %s", num(h.Operating), unit), "unknown: no knee inside the sweep", "—", mh)
	case h != nil:
		cells(fmt.Sprintf("headroom at the operating point %s %s", num(h.Operating), unit),
			fmt.Sprintf("%s %s (%s)", signed(h.Abs.Center), unit, percent(float64(h.Rel.Center))), interval(h.Abs), mh)
	}
	b.WriteString("\n")
	r.mdBand(b, c.Verdict)
	list(b, r.Warnings) // the knee's censoring is among them
}

func (r *Results) mdCurve(b *strings.Builder) {
	b.WriteString("### Curve\n\nEach cell is the mean over the replications with its interval. " +
		"TTFT p99 over successful requests is vLLM's; over every offered request, a request that timed out or was still in flight counts at the instant it ended, " +
		"one refused or failed before its first token as beyond every bound (∞).")
	util := r.Capacity != nil
	if util {
		fmt.Fprintf(b, " Utilisation is the offered load over a serving capacity of %s req/s, an estimate made before the runs, not a measurement (source: %s).",
			num(r.Capacity.Rate), orNotStated(r.Capacity.Source))
	}
	b.WriteString("\n\n")
	head := fmt.Sprintf("| offered (%s) |", r.unit())
	sep := "|---:|"
	if util {
		head += " utilisation |"
		sep += "---:|"
	}
	b.WriteString(head + " goodput (req/s) | attainment | TTFT p99, successful (ms) | TTFT p99, all offered (ms) | ITL p99 (ms) | saturation |\n")
	b.WriteString(sep + "---|---|---|---|---|---|\n")
	var warn []string
	for _, p := range r.Points {
		att := est(p.Attainment)
		if p.NoMeasured {
			att = noMeasured
		}
		cells := []string{num(p.Load)}
		if util {
			cells = append(cells, fmt.Sprintf("%.0f %%", 100*p.Utilisation))
		}
		cells = append(cells, est(p.Goodput), att, est(p.TTFTP99), est(p.TTFTOfferedP99), est(p.ITLP99), p.Saturation)
		row(b, cells...)
		for _, w := range p.Warnings {
			warn = append(warn, fmt.Sprintf("load %s: %s", num(p.Load), w))
		}
	}
	b.WriteString("\n")
	list(b, warn)
	r.mdSpeculation(b)
	r.mdFleet(b)
	r.mdClasses(b)
}

// markdown writes the verdict: a section of its own on an experiment's
// card, a subsection of the result on a card with a curve.
func (v *CardVerdict) markdown(b *strings.Builder, sub bool) {
	level := "##"
	if sub {
		level = "###"
	}
	fmt.Fprintf(b, "%s A/B verdict: %s\n\n", level, v.Verdict)
	fmt.Fprintf(b, "Hypothesis, declared before the runs: %s.\n\n", orNotStated(v.Claim))
	fmt.Fprintf(b, "Metric %s; B must improve on A by more than %s; %d seeded blocks shared by A and B.\n",
		v.Metric, percent(v.Threshold), v.Blocks)
	if v.Improvement.N == 0 || math.IsNaN(float64(v.Improvement.Center)) {
		b.WriteString("No improvement of B over A was measured: no block measured a request under both A and B.\n\n")
	} else {
		over := "the loads"
		if v.Regime != "" {
			over = v.Regime
		}
		fmt.Fprintf(b, "Improvement of B over A, averaged over %s: %s %s. %s.\n",
			over, percent(float64(v.Improvement.Center)), percentInterval(v.Improvement), v.Boundary)
		if p := v.Past; p != nil {
			fmt.Fprintf(b, "Past the baseline's knee, where A collapses and any relative gain is large: %s, %s %s.\n",
				p.Verdict, percent(float64(p.Improvement.Center)), percentInterval(p.Improvement))
		}
		b.WriteString("\n")
	}
	ab := "| A | B |"
	if v.Knee != nil { // the per-load comparison of a knee hypothesis is on attainment
		ab = "| attainment A | attainment B |"
	}
	b.WriteString("| load (req/s) " + ab + " improvement | verdict |\n|---:|---|---|---|---|\n")
	for _, l := range v.Loads {
		imp := "—"
		if !math.IsNaN(float64(l.Improvement.Center)) {
			imp = percent(float64(l.Improvement.Center)) + " " + percentInterval(l.Improvement)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", num(l.Load), est(l.A), est(l.B), imp, l.Verdict)
	}
	b.WriteString("\n")
	sl := subheading(sub)
	v.mdKnee(b, sl)
	v.mdLatency(b, sl)
	v.mdBand(b, sl)
	v.mdWarnings(b, sl)
}

func (c *Card) mdWorkload(b *strings.Builder) {
	w := &c.Workload
	b.WriteString("## Workload\n\n| | |\n|---|---|\n")
	rows := [][2]string{{"description", w.Description}, {"arrival process", w.Arrival}}
	if w.Replay != "" { // a trace's: a synthetic workload has no replay
		rows = append(rows, [2]string{"trace replay", w.Replay})
	}
	rows = append(rows, [][2]string{{"lengths", w.Lengths},
		{"length correlation", w.Correlation}, {"prefix reuse", w.Prefix}, {"loop", w.Loop},
		{"concurrency", w.Concurrency}, {"cache state", w.CacheState}, {"fingerprint", code(w.Fingerprint)},
	}...)
	for _, f := range rows {
		row(b, f[0], orNotStated(f[1]))
	}
	b.WriteString("\n")
}

func (c *Card) mdSLO(b *strings.Builder) {
	s, w := &c.SLO, &c.Window
	var bounded, unbounded []string
	for _, x := range []struct {
		name string
		v    Num
	}{{"TTFT", s.TTFT}, {"every ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}} {
		if math.IsNaN(float64(x.v)) {
			unbounded = append(unbounded, x.name)
		} else {
			bounded = append(bounded, fmt.Sprintf("%s ≤ %s ms", x.name, num(x.v)))
		}
	}
	b.WriteString("## SLO and window\n\n")
	fmt.Fprintf(b, "- A request is good iff it completed ok and %s", strings.Join(bounded, ", "))
	if len(unbounded) > 0 {
		fmt.Fprintf(b, " (%s unbounded)", strings.Join(unbounded, ", "))
	}
	b.WriteString(". Failed, rejected, timed-out and unfinished requests stay in the denominator.\n")
	if !math.IsNaN(float64(s.ITL)) {
		fmt.Fprintf(b, "- The ITL bound gates %s.\n", itlSeriesText(s.ITLSeries))
	}
	fmt.Fprintf(b, "- Measured: requests arriving from %g s", w.Warmup)
	if w.WarmupRequests > 0 {
		fmt.Fprintf(b, ", after the first %d requests,", w.WarmupRequests)
	}
	switch {
	case w.Horizon > 0 && w.Drain > 0:
		fmt.Fprintf(b, " to %g s; they may finish up to %g s after it.\n\n", w.Horizon, w.Drain)
	case w.Horizon > 0:
		fmt.Fprintf(b, " to %g s; they may finish up to one window length after it.\n\n", w.Horizon)
	default:
		b.WriteString(" on, in an open window that ends when the source and the replica are empty.\n\n")
	}
}

// markdown writes the system under its heading ("System", or which of an
// A/B pair it is).
func (s *System) markdown(b *strings.Builder, heading string) {
	fmt.Fprintf(b, "## %s\n\nAs it ran, with every documented default filled in.\n\n", heading)
	if s.Fleet != nil {
		s.Fleet.markdown(b)
	}
	if s.Fleet == nil || len(s.Fleet.Groups) == 0 {
		b.WriteString("| engine (`engine.Config`) | value |\n|---|---|\n")
		settingRows(b, s.Engine)
		fmt.Fprintf(b, "\n| cost model (%s) | value |\n|---|---|\n", code(s.Model))
		settingRows(b, s.ModelSetup)
		b.WriteString("\n")
		mdSpeculationLine(b, s.Speculation, "")
	}
	if s.Fleet != nil {
		for i := range s.Fleet.Groups {
			s.Fleet.Groups[i].markdown(b)
		}
	}
	b.WriteString("| run (`sim.Config`) | value |\n|---|---|\n")
	settingRows(b, s.Run)
	b.WriteString("\n")
}

func (c *Card) mdReproduce(b *strings.Builder) {
	bi, s := &c.Build, &c.Seeds
	b.WriteString("## Reproduce\n\n| | |\n|---|---|\n")
	row(b, "simulator", code(bi.Module+"@"+bi.Version))
	rev := fmt.Sprintf("%s (modified: %s, time: %s)", code(bi.Revision), bi.Modified, bi.Time)
	if bi.Revision == Unknown {
		rev = "unknown: the binary records none (built with -buildvcs=false, or a test binary); set Build.Revision"
	}
	row(b, "revision", rev)
	row(b, "command", orNotStated(code(c.Command)))
	row(b, "Go", bi.GoVersion+" "+bi.Platform)
	row(b, "analysis revision", code(c.AnalysisRevision))
	row(b, "rerun", orNotStated(c.Rerun))
	seeds := make([]string, len(s.Derived))
	for i, d := range s.Derived {
		seeds[i] = fmt.Sprint(d)
	}
	row(b, "seeds", fmt.Sprintf("base %d, %d replications: %s", s.Base, s.Replications, s.Rule))
	row(b, "derived seeds", strings.Join(seeds, ", "))
	b.WriteString("\n")
}

func (c *Card) mdEvents(b *strings.Builder) {
	b.WriteString("## Raw events\n\n")
	if c.Events.Path == "" {
		b.WriteString("Not recorded: the figures above cannot be re-analysed without rerunning.\n\n")
		return
	}
	cols := "not stated"
	if len(c.Events.Columns) > 0 {
		cols = code(strings.Join(c.Events.Columns, ", "))
	}
	if len(c.Events.Partial) > 0 {
		cols += fmt.Sprintf(", and on the lines of requests whose token instants were kept, %s", code(strings.Join(c.Events.Partial, ", ")))
	}
	fmt.Fprintf(b, "%s (%s), one record per request in the order requests ended; columns: %s.\n\n",
		code(c.Events.Path), orNotStated(c.Events.Format), cols)
}

func row(b *strings.Builder, cells ...string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
	}
	fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
}

func settingRows(b *strings.Builder, s []Setting) {
	for _, x := range s {
		row(b, x.Name, code(x.Value))
	}
}

func list(b *strings.Builder, items []string) {
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", it)
	}
	if len(items) > 0 {
		b.WriteString("\n")
	}
}

func orNotStated(s string) string {
	if s == "" {
		return notStated
	}
	return s
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}

// itlSeriesText says in words which series of gaps an ITL bound gates
// (CardSLO.ITLSeries).
func itlSeriesText(series string) string {
	switch series {
	case sim.PerChunk.String():
		return "every streamed chunk's gap (per chunk, as vLLM's bench serve measures it and a streaming client sees it; without speculative decoding a chunk is one token)"
	case sim.PerToken.String():
		return "every token's gap, each chunk's gap divided by its tokens (per token, retokenized, as SGLang's use_retokenized_itl)"
	case "":
		return "a series of gaps " + notStated
	}
	return "the series " + series
}

// num prints a figure with four significant digits, or as a whole number
// from 1,000 on (no exponents in a table); ∞ beyond every bound.
func num[T ~float64](x T) string {
	switch f := float64(x); {
	case math.IsInf(f, 1):
		return "∞"
	case math.IsInf(f, -1):
		return "−∞"
	}
	if f := float64(x); math.Abs(f) >= 1000 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.4g", float64(x))
}

func signed(x Num) string { return fmt.Sprintf("%+.3g", float64(x)) }

func percent(x float64) string { return fmt.Sprintf("%+.1f %%", 100*x) }

// est prints a centre with its interval.
func est(e CardInterval) string {
	if math.IsNaN(float64(e.Center)) {
		return "—"
	}
	return num(e.Center) + " " + interval(e)
}

func interval(e CardInterval) string {
	if math.IsNaN(float64(e.Lo)) || math.IsNaN(float64(e.Hi)) {
		return fmt.Sprintf("(no interval, n=%d)", e.N)
	}
	return fmt.Sprintf("[%s, %s]", num(e.Lo), num(e.Hi))
}

func percentInterval(e CardInterval) string {
	if math.IsNaN(float64(e.Lo)) {
		return "(no interval)"
	}
	return fmt.Sprintf("[%s, %s]", percent(float64(e.Lo)), percent(float64(e.Hi)))
}
