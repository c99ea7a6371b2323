package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of the unit-rate stream a
// card's fingerprint covers: with common random numbers every load's
// stream is this one with its instants divided by the load.
const fingerprintRequests = 10_000

// writeOutputs writes, per reuse level, the routers' goodput curves and
// prefix hit rates (PNG and SVG) and the benchmark card (Markdown and
// JSON) into o.out, and lists them on w.
func writeOutputs(w io.Writer, outs []*outcome, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, out := range outs {
		series := make([]chart.Series, len(routers))
		for i, r := range routers {
			series[i] = chart.Series{Name: r.name, Curve: out.curves[i]}
		}
		title := fmt.Sprintf("Fleet of %d Atlas TP4, %s (%s)", o.replicas, out.name, out.preset)
		goodput, err := chart.Goodputs("Goodput: "+title, series...)
		if err != nil {
			return err
		}
		hits, err := chart.PrefixHitRate("Prefix hit rate: "+title, series...)
		if err != nil {
			return err
		}
		card, err := levelCard(out, o)
		if err != nil {
			return err
		}
		base := filepath.Join(o.out, "routing-"+out.name)
		files := []struct {
			path  string
			write func(path string) error
		}{
			{base + "-goodput.png", func(p string) error { return chart.Save(p, goodput) }},
			{base + "-goodput.svg", func(p string) error { return chart.Save(p, goodput) }},
			{base + "-hitrate.png", func(p string) error { return chart.Save(p, hits) }},
			{base + "-hitrate.svg", func(p string) error { return chart.Save(p, hits) }},
			{base + "-card.md", func(p string) error { return writeFile(p, card.WriteMarkdown) }},
			{base + "-card.json", func(p string) error { return writeFile(p, card.WriteJSON) }},
		}
		for _, f := range files {
			if err := f.write(f.path); err != nil {
				return fmt.Errorf("writing %s: %w", f.path, err)
			}
			fmt.Fprintf(w, "wrote %s\n", f.path)
		}
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

// levelCard is a reuse level's benchmark card: PrefixAffinity's curve and
// system (B), RoundRobin's system as the baseline (A) and the verdict
// against it; the verdict against LeastLoaded and every router's knee are
// in the notes.
func levelCard(out *outcome, o options) (report.Card, error) {
	pa := len(routers) - 1
	card := report.NewCard(out.sweeps[pa], out.curves[pa], 0)
	card.Title = fmt.Sprintf("Prefix-aware routing on a fleet of %d Atlas TP4 replicas, %s", o.replicas, out.name)
	card.Claim = out.tests[0].Hypothesis.Claim + fmt.Sprintf(" (%s; each block's knee over %s x RoundRobin's knee)", out.name, joinFloats(o.factors, ", "))
	a := report.SystemOf(out.tests[0].A)
	card.Baseline = &a
	if out.result[0] != nil {
		card.Verdict = report.CardVerdictOf(out.result[0])
	}
	fp, err := report.CardFingerprint(out.sweeps[pa].Workload, analysis.Seed(o.seed, 0), fingerprintRequests)
	if err != nil {
		return card, err
	}
	card.Workload = report.CardWorkload{
		Description: fmt.Sprintf("synthetic: workload.Synthetic{Lengths: workload.Fixed(%d, %d), Prefix: %s}", o.input, o.output, out.preset),
		Arrival:     "Poisson, offered load swept; common random numbers across loads, routers and A/B arms",
		Lengths:     fmt.Sprintf("fixed: %d fresh prompt tokens after the shared prefix, %d output tokens", o.input, o.output),
		Correlation: "none (fixed lengths)",
		Prefix:      fmt.Sprintf("%s: %v", out.preset, out.prefix),
		Loop:        "open-loop: arrivals are external and overload is under test",
		Concurrency: card.Workload.Concurrency, // from the configuration
		CacheState:  card.Workload.CacheState,
		Fingerprint: fp,
	}
	card.Command = strings.TrimSpace("go run ./examples/routing " + strings.Join(o.args, " "))
	card.Notes = levelNotes(out, o)
	card.Build = card.Build.WithGit()
	return card, nil
}

// levelNotes are what the card's single curve and verdict leave out.
func levelNotes(out *outcome, o options) []string {
	var notes []string
	for i, r := range routers {
		notes = append(notes, fmt.Sprintf("%s's knee: %s req/s (sweep of %d replications per load from %s req/s).", r.name, knee(out.curves[i]), o.reps, num(o.start)))
	}
	if out.loads != nil {
		notes = append(notes, fmt.Sprintf("A/B loads %s req/s: %s x RoundRobin's knee, read from its sweep before the A/B runs; each block's knee is read over them.", joinFloats(out.loads, ", "), joinFloats(o.factors, ", ")))
		notes = append(notes, fmt.Sprintf("Against LeastLoaded (same hypothesis, loads and blocks): %s.", report.ComparisonLine(out.result[1], leastLoaded.name)))
	}
	notes = append(notes,
		fmt.Sprintf("A/B blocks: block b seeds the workload and both arms with sim.Seed(%d, b), b < %d; the sweeps' replication r uses sim.Seed(%d, r).", o.seed, o.blocks, o.seed),
		"Raw per-request events are not kept by this program (some 10⁶ requests per run of it); an analysis.Sweep's Observe field with report.NewEventJSONL keeps them.",
		"Second day: rerun the command; identical seeds give identical bytes, so any difference is a change in the simulator (see revision).")
	return notes
}
