package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of the unit-rate stream the
// card's fingerprint covers: with common random numbers every load's stream
// is this one with its instants divided by the load.
const fingerprintRequests = 10_000

// writeOutputs writes the goodput and latency plots and the benchmark card
// (Markdown and JSON) into dir, and lists them on w.
func writeOutputs(w io.Writer, dir string, r costmodel.Replica, e costmodel.Estimate, s analysis.Sweep, c *analysis.Curve, o simOptions) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	goodput, err := chart.Goodput(c, o.operating)
	if err != nil {
		return err
	}
	pt := r.Point
	goodput.Title.Text = fmt.Sprintf("Atlas TP4, %d/%d tokens: goodput vs offered load (SLO attainment target %g)", pt.PromptTokens, pt.OutputTokens, c.Target)
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

// scenarioName names the scenario a card embeds: the name of
// examples/run/scenarios/atlas-capacity.json, the same sweep as data.
const scenarioName = "atlas-capacity"

// capacityCard describes the sweep as a benchmark card: the curve with its
// model band, the serving capacity the utilisation is taken against (the
// estimate's, and the card says so), and the estimate itself, figure by
// figure, with what the simulation found against it as notes.
func capacityCard(r costmodel.Replica, e costmodel.Estimate, s analysis.Sweep, c *analysis.Curve, o simOptions) (report.Card, error) {
	p := r.Point
	card := report.NewCard(s, c, o.operating)
	card.Title = "Atlas TP4 goodput curve (simulated)"
	card.Claim = fmt.Sprintf("The Atlas TP4 replica keeps %.0f %% of requests within TTFT <= %v and every ITL <= %v up to the knee reported below.",
		100*c.Target, p.SLO.TTFT, p.SLO.ITL)
	fp, err := report.CardFingerprint(s.Workload, analysis.Seed(s.BaseSeed, 0), fingerprintRequests)
	if err != nil {
		return card, err
	}
	card.Workload = report.CardWorkload{
		Description: "synthetic, analysis.Poisson(workload.Fixed(prompt, output))",
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
	card.Build = card.Build.WithGit()
	if cp := card.Results.Capacity; cp != nil {
		cp.Source = fmt.Sprintf("costmodel's serving capacity, %s, in the estimate below", e.ServingCapacity.Basis)
	}
	card.Estimate = preRun(r, e)
	card.Notes = againstEstimate(e, c)
	// The card embeds everything its rerun needs (go run ./examples/run
	// -config capacity-card.json): the sweep, and the name, title, claim
	// and operating load that examples/run's report and card take from
	// the scenario, as examples/run/scenarios/atlas-capacity.json has them.
	card.EmbedScenario(nil, scenario.Scenario{Name: scenarioName, Title: card.Title, Claim: card.Claim, Operating: o.operating, Sweep: &s})
	return card, nil
}

// preRun is the estimate as the card carries it: every figure the report
// prints, in its sections, and the estimate's warnings.
func preRun(r costmodel.Replica, e costmodel.Estimate) *report.PreRun {
	p := r.Point
	out := &report.PreRun{
		Source: fmt.Sprintf("costmodel.Estimate of the replica the sweep ran (%s; %d-token prompts, %d output tokens; step times from %s), from declared figures before any run",
			limits(p), p.PromptTokens, p.OutputTokens, modelName(r.Cost)),
		Warnings: e.Warnings,
	}
	for _, s := range sections(e) {
		out.Figures = append(out.Figures, report.CardFiguresOf(s.title, s.figures...)...)
	}
	return out
}

// againstEstimate is what the report says of the estimate against the
// simulated curve (the knee against the serving capacity and the
// TTFT-qualified load, the longest simulated gap against the largest
// step), for the card's notes.
func againstEstimate(e costmodel.Estimate, c *analysis.Curve) []string {
	var b strings.Builder
	writeAgainstEstimate(&b, e, c)
	var notes []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(line, "estimate"))
		if line != "" {
			notes = append(notes, "Against the estimate: "+line+".")
		}
	}
	return notes
}
