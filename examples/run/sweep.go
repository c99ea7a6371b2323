package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// runSweep runs the scenario's sweep and writes its curve, its findings,
// the goodput and latency charts, the card and the events.
func runSweep(w io.Writer, s scenario.Scenario, out *outputs) error {
	sw := *s.Sweep
	if err := out.observe(&sw, ""); err != nil {
		return err
	}
	heading(w, s, "sweep")
	writeSetup(w, sw)
	c, err := sw.Run()
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeCurve(w, c)
	fmt.Fprintln(w)
	writeFindings(w, c, s.Operating)
	name := s.NameOrDefault()
	goodput, err := chart.Goodput(c, s.Operating)
	if err != nil {
		return err
	}
	latency, err := chart.Latency(c)
	if err != nil {
		return err
	}
	// A pasted chart names its study, when the title fits the page.
	if t := fmt.Sprintf("%s, attainment target %g", title(s), c.Target); utf8.RuneCountInString(t) <= 80 {
		goodput.Title.Text = t
	}
	if t := title(s) + ": latency percentiles vs offered load"; utf8.RuneCountInString(t) <= 80 {
		latency.Title.Text = t
	}
	out.chart(name+"-goodput", goodput)
	out.chart(name+"-latency", latency)
	card := report.NewCard(sw, c, s.Operating)
	card.Title, card.Claim = title(s), s.Claim
	if err := describe(&card, sw.Workload, sw.BaseSeed); err != nil {
		return err
	}
	card.Events = report.EventsOf(out.eventsPath(""), "jsonl", sw.Config)
	out.card(name+"-card", card)
	return nil
}

// writeSetup says what runs, before it runs.
func writeSetup(w io.Writer, sw analysis.Sweep) {
	cfg := sw.Config.WithDefaults()
	e := cfg.Engine
	fmt.Fprintf(w, "workload:  %v\n", sw.Workload)
	if n := len(cfg.Fleet.Replicas); n > 0 {
		fmt.Fprintf(w, "system:    a fleet of %d replicas behind %T\n", n, cfg.Fleet.Router)
	} else {
		fmt.Fprintf(w, "engine:    batch cap %d, %d-token budget, chunk cap %d (0: none), %d KV blocks of %d; step times from %T\n",
			e.MaxSeqs, e.MaxBatchedTokens, e.ChunkCap, e.KVBlocks, e.BlockSize, cfg.Model)
	}
	fmt.Fprintf(w, "SLO:       TTFT <= %v, every ITL <= %v\n", cfg.SLO.TTFT, cfg.SLO.ITL)
	if sw.ModelError.Declared() {
		fmt.Fprintf(w, "error:     %v declared before the sweep: every load also runs under each variant, on the same seeds\n", sw.ModelError)
	}
	fmt.Fprintf(w, "window:    warm-up %v, horizon %v; base seed %d\n", sw.Config.Warmup, sw.Config.Horizon, sw.BaseSeed)
}

// writeCurve writes the curve, a row per load.
func writeCurve(w io.Writer, c *analysis.Curve) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "load\tutil\tgoodput\t\tattainment\t\tTTFT p50\tTTFT p99\tITL p99\tstate\t\n")
	fmt.Fprintf(tw, "%s\t%%\t%s\t95%% CI\t\t95%% CI\tms\tms\tms\t\t\n", c.Axis.Unit(), "req/s")
	for i := range c.Points {
		p := &c.Points[i]
		util := "-"
		if p.Utilisation > 0 {
			util = fmt.Sprintf("%.0f", 100*p.Utilisation)
		}
		if p.NoMeasured() {
			fmt.Fprintf(tw, "%.3f\t%s\t%.3f\t%s\tno measured requests\t\t-\t-\t-\t%v\t\n", p.Load, util, p.Goodput.Center, interval(p.Goodput, "%.2f"), p.Saturation)
			continue
		}
		fmt.Fprintf(tw, "%.3f\t%s\t%.3f\t%s\t%.3f\t%s\t%s\t%s\t%s\t%v\t\n", p.Load, util,
			p.Goodput.Center, interval(p.Goodput, "%.2f"), p.Attainment.Center, interval(p.Attainment, "%.3f"),
			millis(p.TTFT.P50.Center), millis(p.TTFT.P99.Center), millis(p.ITL.P99.Center), p.Saturation)
	}
	tw.Flush()
}

// writeFindings writes the knee, the peak, the collapse and the headroom
// at the operating load, with their intervals and model ranges, and the
// curve's warnings.
func writeFindings(w io.Writer, c *analysis.Curve, op float64) {
	unit, k, b := c.Axis.Unit(), c.Knee, c.Band
	if k.Found {
		fmt.Fprintf(w, "knee       %.3f %s %s over seeds: the highest load with attainment >= %.2f\n", k.Load.Center, unit, interval(k.Load, "%.3f"), c.Target)
	} else {
		fmt.Fprintf(w, "knee       not bracketed: %s\n", k.Reason())
	}
	if b != nil {
		fmt.Fprintf(w, "           model range %v %s: the knee under each model of the band, same seeds\n", b.Knee, unit)
	}
	fmt.Fprintf(w, "peak       %.3f req/s of goodput %s at %.3f %s\n", c.Peak.Goodput.Center, interval(c.Peak.Goodput, "%.2f"), c.Peak.Load, unit)
	if b != nil {
		fmt.Fprintf(w, "           model range [%.3f, %.3f] req/s of goodput\n", b.Peak.Lo, b.Peak.Hi)
	}
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse   from %.3f %s (goodput below 90 %% of the peak)\n", c.Collapse.Load, unit)
	}
	if op > 0 && k.Found {
		h := c.Headroom(op)
		fmt.Fprintf(w, "headroom   %.3f %s %s (%+.0f %%) from the operating load %.3f %s to the knee\n",
			h.Abs.Center, unit, interval(h.Abs, "%.3f"), 100*h.Rel.Center, op, unit)
		if b != nil {
			fmt.Fprintf(w, "           model range %s\n", percentRange(h.Model))
		}
	}
	for _, msg := range c.Warnings {
		fmt.Fprintf(w, "warning    %s\n", msg)
	}
}

// percentRange prints a relative range in per cent.
func percentRange(r analysis.Range) string {
	lo, hi := fmt.Sprintf("%+.0f %%", 100*r.Lo), fmt.Sprintf("%+.0f %%", 100*r.Hi)
	if r.LoBelow {
		lo = "< " + lo
	}
	if r.HiAbove {
		hi = "> " + hi
	}
	return "[" + lo + ", " + hi + "]"
}

// interval prints an estimate's interval with the given verb.
func interval(e stats.Interval, verb string) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "(n/a)"
	}
	return fmt.Sprintf("["+verb+", "+verb+"]", e.Lo, e.Hi)
}

// millis prints a latency in whole milliseconds, "∞" beyond every bound,
// "-" without one.
func millis(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "∞"
	}
	return fmt.Sprintf("%.0f", x)
}
