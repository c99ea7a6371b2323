package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
)

// groupRun is what one group of a study found.
type groupRun struct {
	g       scenario.Group
	sweeps  []analysis.Sweep
	curves  []*analysis.Curve
	tests   []analysis.Experiment        // the experiments with their loads
	results []*analysis.ExperimentResult // nil where an experiment had no loads
}

// runStudy runs every group side by side (within a group, its sweeps side
// by side, then its experiments, whose loads may come from a sweep's
// knee) and writes each group's findings, then a verdict line per group.
func runStudy(w io.Writer, s scenario.Scenario, out *outputs) error {
	heading(w, s, "study")
	groups := s.Study.Groups
	runs := make([]*groupRun, len(groups))
	for i, g := range groups {
		runs[i] = &groupRun{g: g}
		for _, ns := range g.Sweeps {
			sw := ns.Sweep
			if len(groups) > 1 || len(g.Sweeps) > 1 {
				if err := out.observe(&sw, g.Name+"/"+ns.Name); err != nil {
					return err
				}
			} else if err := out.observe(&sw, ""); err != nil {
				return err
			}
			runs[i].sweeps = append(runs[i].sweeps, sw)
		}
	}
	if err := each(len(runs), func(i int) error { return runs[i].run() }); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		r.write(w)
	}
	for _, r := range runs {
		if len(r.g.Experiments) > 0 {
			fmt.Fprintln(w, r.verdictLine())
		}
	}
	for _, r := range runs {
		if l := r.bandLine(); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	for _, r := range runs {
		if err := r.outputs(s, out); err != nil {
			return err
		}
	}
	return nil
}

// run sweeps the group, picks the experiments' loads and runs them.
func (r *groupRun) run() error {
	r.curves = make([]*analysis.Curve, len(r.sweeps))
	if err := each(len(r.sweeps), func(i int) (err error) {
		if r.curves[i], err = r.sweeps[i].Run(); err != nil {
			err = fmt.Errorf("%s, %s sweep: %w", r.g.Name, r.g.Sweeps[i].Name, err)
		}
		return err
	}); err != nil {
		return err
	}
	for _, c := range r.g.Experiments {
		x := c.Experiment
		if o := c.Operating; o != nil {
			if k := r.curve(o.Sweep).Knee; k.Found {
				for _, f := range o.Factors {
					x.Loads = append(x.Loads, f*k.Load.Center)
				}
			}
			if x.ModelError.Declared() {
				x.BandLoads = analysis.BandLoads(r.curve(o.Sweep), o.Factors)
			}
		}
		r.tests = append(r.tests, x)
	}
	r.results = make([]*analysis.ExperimentResult, len(r.tests))
	return each(len(r.tests), func(i int) (err error) {
		if len(r.tests[i].Loads) == 0 {
			return nil
		}
		c := r.g.Experiments[i]
		if r.results[i], err = r.tests[i].Run(); err != nil {
			err = fmt.Errorf("%s, %s against %s: %w", r.g.Name, c.B, c.A, err)
		}
		return err
	})
}

// curve is the curve of the group's sweep named name.
func (r *groupRun) curve(name string) *analysis.Curve {
	for i, s := range r.g.Sweeps {
		if s.Name == name {
			return r.curves[i]
		}
	}
	return nil
}

// write writes the group's knees, its experiments' loads and their
// per-load comparisons.
func (r *groupRun) write(w io.Writer) {
	fmt.Fprintf(w, "== %s ==\n", r.g.Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  sweep\tknee (req/s) [95%% CI]\tpeak goodput (req/s)\n")
	for i, s := range r.g.Sweeps {
		c := r.curves[i]
		fmt.Fprintf(tw, "  %s\t%s\t%s at %s\n", s.Name, knee(c), num(c.Peak.Goodput.Center), num(c.Peak.Load))
	}
	tw.Flush()
	for i, s := range r.g.Sweeps {
		for _, warn := range r.curves[i].Warnings {
			fmt.Fprintf(w, "  note: %s: %s\n", s.Name, warn)
		}
	}
	for i, c := range r.g.Experiments {
		x := r.tests[i]
		if o := c.Operating; o != nil {
			if len(x.Loads) == 0 {
				fmt.Fprintf(w, "  %s against %s: no operating loads: %s's knee was not found (%s)\n", c.B, c.A, o.Sweep, r.curve(o.Sweep).Knee.Reason())
				continue
			}
			fmt.Fprintf(w, "  operating loads: %s req/s = %s x %s's knee %s req/s\n",
				joinFloats(x.Loads, ", "), joinFloats(o.Factors, ", "), o.Sweep, num(r.curve(o.Sweep).Knee.Load.Center))
		}
		metric := x.Hypothesis.Metric.Name
		if metric == analysis.MetricKnee.Name { // each block's knee is read from its attainment at these loads
			metric = fmt.Sprintf("attainment (the knee's: %s)", report.ComparisonLine(r.results[i], c.A))
		}
		fmt.Fprintf(w, "  %s (B) against %s (A), %s:\n", c.B, c.A, metric)
		for _, l := range r.results[i].Loads {
			fmt.Fprintf(w, "    at %s: A %s, B %s, improvement %s -> %v\n", num(l.Load), l.A, l.B, improvement(l.Improvement), l.Verdict)
		}
	}
	fmt.Fprintln(w)
}

// verdictLine is a group's answer (report.VerdictLine, as
// examples/routing writes it): against each A, the verdict and the
// interval of the improvement at the loads at or below A's knee, the same
// past it, and the boundary.
func (r *groupRun) verdictLine() string {
	reason := "no loads"
	if o := r.g.Experiments[0].Operating; o != nil && r.results[0] == nil {
		reason = fmt.Sprintf("%s's knee was not found in its sweep, so there are no operating loads (%s)", o.Sweep, r.curve(o.Sweep).Knee.Reason())
	}
	bases := make([]string, len(r.g.Experiments))
	for i, c := range r.g.Experiments {
		bases[i] = c.A
	}
	return report.VerdictLine(r.g.Name, bases, r.results, reason)
}

// bandLine says, against each A whose experiment declared a model band,
// whether the verdict holds under every model of the band or rests on the
// model (as examples/routing writes it); "" when none ran a band.
func (r *groupRun) bandLine() string {
	var parts []string
	for i, c := range r.g.Experiments {
		if i < len(r.results) && r.results[i] != nil && len(r.results[i].Band) > 0 {
			parts = append(parts, fmt.Sprintf("against %s, %s", c.A, r.results[i].BandVerdict()))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("model band %s: %s", r.g.Name, strings.Join(parts, "; "))
}

// outputs adds the group's charts (every sweep's goodput curve and
// prefix hit rate) and its card: the first comparison's B sweep (or the
// group's last sweep) with A's system as the baseline and the verdict.
func (r *groupRun) outputs(s scenario.Scenario, out *outputs) error {
	base := s.NameOrDefault() + "-" + r.g.Name
	if len(r.curves) > 0 {
		series := make([]chart.Series, len(r.curves))
		for i, c := range r.curves {
			series[i] = chart.Series{Name: r.g.Sweeps[i].Name, Curve: c}
		}
		goodput, err := chart.Goodputs("Goodput: "+title(s)+", "+r.g.Name, series...)
		if err != nil {
			return err
		}
		hits, err := chart.PrefixHitRate("Prefix hit rate: "+title(s)+", "+r.g.Name, series...)
		if err != nil {
			return err
		}
		out.chart(base+"-goodput", goodput)
		out.chart(base+"-hitrate", hits)
	}
	card, err := r.card(s, out)
	if err != nil {
		return err
	}
	out.card(base+"-card", card)
	return nil
}

// card is the group's benchmark card.
func (r *groupRun) card(s scenario.Scenario, out *outputs) (report.Card, error) {
	var card report.Card
	main := len(r.sweeps) - 1
	if len(r.g.Experiments) > 0 {
		if i := slices.IndexFunc(r.g.Sweeps, func(n scenario.NamedSweep) bool { return n.Name == r.g.Experiments[0].B }); i >= 0 {
			main = i
		}
	}
	switch {
	case main >= 0:
		card = report.NewCard(r.sweeps[main], r.curves[main], 0)
		if err := describe(&card, r.sweeps[main].Workload, r.sweeps[main].BaseSeed); err != nil {
			return card, err
		}
		card.Events = report.EventsOf(out.eventsPath(r.g.Name+"/"+r.g.Sweeps[main].Name), "jsonl", r.sweeps[main].Config)
	case r.results[0] != nil:
		card = report.NewExperimentCard(r.tests[0], r.results[0])
	default:
		card = report.NewExperimentCard(r.tests[0], &analysis.ExperimentResult{})
	}
	card.Title = title(s) + ", " + r.g.Name
	if len(r.g.Experiments) > 0 {
		x := r.tests[0]
		card.Claim = x.Hypothesis.Claim
		a := report.SystemOf(x.A)
		card.Baseline = &a
		if r.results[0] != nil {
			card.Verdict = report.CardVerdictOf(r.results[0])
		}
	}
	card.Notes = r.notes()
	return card, nil
}

// notes are what the card's single curve and verdict leave out.
func (r *groupRun) notes() []string {
	var notes []string
	for i, s := range r.g.Sweeps {
		notes = append(notes, fmt.Sprintf("%s's knee: %s req/s.", s.Name, knee(r.curves[i])))
	}
	for i, c := range r.g.Experiments {
		if i > 0 && r.results[i] != nil {
			notes = append(notes, fmt.Sprintf("%s against %s: %s.", c.B, c.A, report.ComparisonLine(r.results[i], c.A)))
		}
	}
	return notes
}

// each calls f(0), …, f(n-1) side by side and joins their errors.
func each(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// knee prints a curve's knee with its interval, or why it has none.
func knee(c *analysis.Curve) string {
	k := c.Knee
	switch {
	case !k.Found:
		return "not found: " + k.Reason()
	case math.IsNaN(k.Load.Lo) || math.IsNaN(k.Load.Hi):
		return num(k.Load.Center) + " [no interval]"
	}
	return fmt.Sprintf("%s [%s, %s]", num(k.Load.Center), num(k.Load.Lo), num(k.Load.Hi))
}

// improvement prints a relative improvement in per cent with its
// interval.
func improvement(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none measured"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// num prints a figure with three significant digits.
func num(x float64) string { return fmt.Sprintf("%.3g", x) }

func joinFloats(xs []float64, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = num(x)
	}
	return strings.Join(s, sep)
}
