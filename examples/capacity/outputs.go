package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of the unit-rate stream the
// card's fingerprint covers: with common random numbers every load's stream
// is this one with its instants divided by the load.
const fingerprintRequests = 10_000

// writeOutputs writes the goodput and latency plots and the benchmark card
// (Markdown and JSON) into dir, and lists them on w.
func writeOutputs(w io.Writer, dir string, r costmodel.Replica, e costmodel.Estimate, s sim.Sweep, c *sim.Curve, o simOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	goodput, err := chart.Goodput(c, o.operating)
	if err != nil {
		return err
	}
	latency, err := chart.Latency(c)
	if err != nil {
		return err
	}
	card, err := capacityCard(r, e, s, c, o)
	if err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(path string) error
	}{
		{"capacity-goodput.png", func(p string) error { return chart.Save(p, goodput) }},
		{"capacity-goodput.svg", func(p string) error { return chart.Save(p, goodput) }},
		{"capacity-latency.png", func(p string) error { return chart.Save(p, latency) }},
		{"capacity-card.md", func(p string) error { return writeFile(p, card.WriteMarkdown) }},
		{"capacity-card.json", func(p string) error { return writeFile(p, card.WriteJSON) }},
	}
	fmt.Fprintln(w)
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if err := f.write(path); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote      %s\n", path)
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

// capacityCard describes the sweep as a benchmark card. The card has no
// fields yet for the model-error declaration, the band, the utilisation or
// the estimate; its notes carry them in words.
func capacityCard(r costmodel.Replica, e costmodel.Estimate, s sim.Sweep, c *sim.Curve, o simOptions) (report.Card, error) {
	p := r.Point
	card := report.NewCard(s, c, o.operating)
	card.Title = "Atlas TP4 goodput curve (simulated)"
	card.Claim = fmt.Sprintf("The Atlas TP4 replica keeps %.0f %% of requests within TTFT <= %v and every ITL <= %v up to the knee reported below.",
		100*c.Target, p.SLO.TTFT, p.SLO.ITL)
	fp, err := report.Fingerprint(s.Workload, sim.Seed(s.BaseSeed, 0), fingerprintRequests)
	if err != nil {
		return card, err
	}
	card.Workload = report.Workload{
		Description: "synthetic, sim.Poisson(workload.Fixed(prompt, output))",
		Arrival:     "Poisson, offered load swept; common random numbers across loads",
		Lengths:     fmt.Sprintf("fixed: %d prompt tokens, %d output tokens", p.PromptTokens, p.OutputTokens),
		Correlation: "none (fixed lengths)",
		Prefix:      "none",
		Loop:        "open-loop: arrivals are external and overload is under test",
		Concurrency: card.Workload.Concurrency, // from the configuration
		CacheState:  card.Workload.CacheState,
		Fingerprint: fp,
	}
	card.Command = strings.TrimSpace("go run ./examples/capacity " + strings.Join(o.args, " "))
	card.Events = report.EventsOf(filepath.Join(o.out, "events")+string(filepath.Separator)+"load=<load>-rep=<r>.jsonl", "jsonl", s.Config)
	if card.Build.Revision == report.Unknown {
		card.Build.Revision, card.Build.Modified = gitRevision()
	}
	card.Notes = cardNotes(e, c, o)
	return card, nil
}

// cardNotes are the capacity report's figures the card has no field for:
// the model error declared before the sweep and the ranges it gave, the
// serving capacity the utilisation is taken against, the TTFT-qualified
// load and the largest steps.
func cardNotes(e costmodel.Estimate, c *sim.Curve, o simOptions) []string {
	var notes []string
	if b := c.Band; b != nil {
		notes = append(notes,
			fmt.Sprintf("Model error declared before the sweep: %s (sim.ModelError{Scale: %g}); every load also ran under %s, on the same seeds.", declared(b.Declared), b.Declared.Scale, variantNames(b)),
			fmt.Sprintf("Model range over the band: knee %s req/s, peak goodput [%.3f, %.3f] req/s%s; fragile: %t.", kneeRange(b), b.Peak.Lo, b.Peak.Hi, headroomNote(c, o.operating), b.Fragile))
	} else {
		notes = append(notes, "Model error: none declared; the intervals are seed noise only.")
	}
	return append(notes,
		fmt.Sprintf("Estimate: serving capacity %.4g req/s = %s; utilisation is the offered load over it.", e.ServingCapacity.Value, e.ServingCapacity.Basis),
		fmt.Sprintf("Estimate: TTFT-qualified load %.4g req/s (%s).", e.TTFTQualified.Value, e.TTFTQualified.Basis),
		fmt.Sprintf("Estimate: largest formable step %.4g ms (%.0f %% of the ITL bound; %s); one-chunk mixed step %.4g ms (%.0f %%).",
			e.LargestStep.Value, e.LargestStepShare.Value, e.LargestStep.Basis, e.MixedStep.Value, e.MixedStepShare.Value))
}

// headroomNote is the headroom's model range, for the card's notes.
func headroomNote(c *sim.Curve, op float64) string {
	if op <= 0 || !c.Knee.Found || math.IsInf(c.Band.Knee.Lo, 0) {
		return ""
	}
	return fmt.Sprintf(", headroom from %.4g req/s %s", op, percentRange(c.Headroom(op).Model))
}

// gitRevision asks git for the checkout's commit when the binary carries no
// VCS stamp (go run with -buildvcs=false); report.Unknown if git cannot
// tell.
func gitRevision() (rev, modified string) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return report.Unknown, report.Unknown
	}
	rev = strings.TrimSpace(string(out)) + " (from git at run time)"
	status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output()
	switch {
	case err != nil:
		return rev, report.Unknown
	case len(status) > 0:
		return rev, "true"
	}
	return rev, "false"
}
