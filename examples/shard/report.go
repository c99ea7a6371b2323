package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
)

// writeReport writes what the study found, and its benchmark card into
// dir when one is given. merge and all write the same bytes for the same
// study.
func writeReport(w io.Writer, s scenario.Scenario, st *studyOptions, out outcome, dir string) error {
	title := s.Title
	if title == "" {
		title = s.NameOrDefault()
	}
	fmt.Fprintf(w, "%s\n\n", title)
	var card report.Card
	switch {
	case out.dial != nil:
		writeDial(w, out.dial)
		card = report.NewDialCard(*s.DialSweep, out.dial)
	case out.result != nil:
		writeVerdict(w, out.result)
		card = report.NewExperimentCard(*s.Experiment, out.result)
	default:
		writeCurve(w, out.curve)
		card = report.NewCard(*s.Sweep, out.curve, s.Operating)
	}
	if dir == "" {
		return nil
	}
	card.Title = title
	if s.Claim != "" {
		card.Claim = s.Claim
	}
	card.EmbedScenario(nil, s)
	describeWorkload(&card, s)
	if c := card.Results.Capacity; c != nil && c.Source == "" {
		c.Source = "sim.Sweep.Capacity as the study declares it (the built-in study's: costmodel's serving capacity of Atlas TP4 at its prompt and output lengths)"
	}
	card.Command = strings.TrimSpace("go run ./examples/shard all " + strings.Join(st.args, " "))
	card.Notes = append(card.Notes, "Run as shards (go run ./examples/shard run -shard i -shards n -out dir, then merge -in dir with the same study flags) or in one process (all): the same results, byte for byte.")
	return writeCard(w, &card, dir)
}

// fingerprintRequests is how many requests of the unit-rate stream the
// card's workload fingerprint covers.
const fingerprintRequests = 10_000

// describeWorkload fills what the card does not know of the workload: its
// description, as it prints itself, and its fingerprint.
func describeWorkload(card *report.Card, s scenario.Scenario) {
	var wl analysis.Workload
	var seed uint64
	switch {
	case s.DialSweep != nil:
		wl, seed = s.DialSweep.Sweep.Workload, s.DialSweep.Sweep.BaseSeed
	case s.Experiment != nil:
		wl, seed = s.Experiment.Workload, s.Experiment.BaseSeed
	default:
		wl, seed = s.Sweep.Workload, s.Sweep.BaseSeed
	}
	if str, ok := wl.(fmt.Stringer); ok && card.Workload.Description == "" {
		card.Workload.Description = str.String()
	}
	if fp, err := report.CardFingerprint(wl, analysis.Seed(seed, 0), fingerprintRequests); err == nil {
		card.Workload.Fingerprint = fp
	}
}

// writeCurve writes a sweep's curve, knee, model band, peak, collapse and
// warnings.
func writeCurve(w io.Writer, c *analysis.Curve) {
	fmt.Fprintf(w, "grid:      %d loads × %d replications, intervals at %.0f %% confidence\n\n", len(c.Points), len(c.Points[0].Runs), 100*c.Confidence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "load\tgoodput\tattainment\tTTFT p99\tITL p99\tstate\t\n%s\t%s\t\tms\tms\t\t\n", c.Axis.Unit(), c.Axis.Unit())
	for _, p := range c.Points {
		fmt.Fprintf(tw, "%.4g\t%v\t%v\t%.0f\t%.0f\t%v\t\n", p.Load, p.Goodput, p.Attainment, p.TTFT.P99.Center, p.ITL.P99.Center, p.Saturation)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if c.Knee.Found {
		fmt.Fprintf(w, "knee:      %v %s at %.2f attainment\n", c.Knee.Load, c.Axis.Unit(), c.Knee.Target)
	} else {
		fmt.Fprintf(w, "knee:      %s\n", c.Knee.Reason())
	}
	if b := c.Band; b != nil {
		fmt.Fprintf(w, "model:     knee %v %s over %v (fragile: %t)\n", b.Knee, c.Axis.Unit(), b.Declared, b.Fragile)
	}
	fmt.Fprintf(w, "peak:      %v req/s of goodput at %.4g %s\n", c.Peak.Goodput, c.Peak.Load, c.Axis.Unit())
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse:  from %.4g %s\n", c.Collapse.Load, c.Axis.Unit())
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "warning:   %s\n", warn)
	}
}

// writeDial writes each dial value's knee and its paired difference to
// the baseline's.
func writeDial(w io.Writer, r *analysis.DialResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tknee\tΔ knee vs baseline\tpaired through a bound\tunpaired\t\n", r.Dial.Name)
	for i, v := range r.Values {
		knee := r.Curves[i].Knee.Reason()
		if r.Curves[i].Knee.Found {
			knee = r.Curves[i].Knee.Load.String()
		}
		fmt.Fprintf(tw, "%g %s\t%s\t%v\t%d\t%d\t\n", v, r.Dial.Unit, knee, r.KneeDiff[i], r.KneeBounds[i], r.KneeUnpaired[i])
	}
	tw.Flush()
}

// writeVerdict writes an experiment's comparison at each load and its
// verdicts.
func writeVerdict(w io.Writer, r *analysis.ExperimentResult) {
	fmt.Fprintf(w, "claim:     %s\n\n", r.Hypothesis.Claim)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "load\tA\tB\timprovement\tverdict\t\n")
	for _, l := range r.Loads {
		fmt.Fprintf(tw, "%.4g\t%v\t%v\t%v\t%v\t\n", l.Load, l.A, l.B, l.Improvement, l.Verdict)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nverdict:   %v: %s improves by %v over %s\n", r.Verdict, r.Hypothesis.Metric.Name, r.Improvement, r.Regime)
	fmt.Fprintf(w, "past it:   %v (%v)\n", r.PastVerdict, r.PastImprovement)
	fmt.Fprintf(w, "boundary:  %s\n", r.Boundary())
}

// writeCard writes the card as Markdown and JSON into dir.
func writeCard(w io.Writer, card *report.Card, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"card.md", card.WriteMarkdown}, {"card.json", card.WriteJSON}} {
		path := filepath.Join(dir, f.name)
		if err := writeFile(path, f.write); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote:     %s\n", path)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
