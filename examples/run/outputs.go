package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of a workload's unit-rate
// stream a card's fingerprint covers.
const fingerprintRequests = 10_000

// outputs collects what a scenario writes: the report's text, then at
// the end the charts and cards, into the output directory; the event
// files are written as the runs go.
type outputs struct {
	embed   scenario.Scenario // the scenario as loaded: what the cards embed
	command string
	dir     string
	writes  func(string) bool
	text    bytes.Buffer
	files   []file
	events  []*report.EventDir
	cards   []report.Card // every card made, written or not (-no-files)
}

// file is one file to write, by its name in the directory.
type file struct {
	name  string
	write func(path string) error
}

func newOutputs(s, embed scenario.Scenario, command string) *outputs {
	return &outputs{embed: embed, command: command, dir: s.Dir(), writes: s.Output.Writes}
}

// observe gives the sweep's runs event files, in events/ (or under it in
// sub, for one sweep of several), when the scenario writes events.
func (o *outputs) observe(sw *analysis.Sweep, sub string) error {
	if !o.writes(scenario.WriteEvents) {
		return nil
	}
	ev, err := report.NewEventDir(filepath.Join(o.dir, "events", sub))
	if err != nil {
		return err
	}
	o.events = append(o.events, ev)
	sw.Observe = ev.Observe
	return nil
}

// eventsPath is where a sweep's events are, relative to the card.
func (o *outputs) eventsPath(sub string) string {
	if !o.writes(scenario.WriteEvents) {
		return ""
	}
	return filepath.ToSlash(filepath.Join("events", sub, "load=<load>-rep=<r>.jsonl"))
}

// chart adds a chart, as PNG and SVG.
func (o *outputs) chart(name string, d chart.Drawing) {
	if !o.writes(scenario.WriteCharts) {
		return
	}
	for _, ext := range []string{".png", ".svg"} {
		o.files = append(o.files, file{name + ext, func(p string) error { return chart.Save(p, d) }})
	}
}

// card completes a card with what every card of the program carries
// (the command, the scenario it embeds, the checkout's revision when the
// binary has none) and adds it, as JSON and Markdown.
func (o *outputs) card(name string, c report.Card) {
	o.cards = append(o.cards, c)
	if !o.writes(scenario.WriteCard) {
		return
	}
	c.Command = o.command
	c.EmbedScenario(nil, o.embed)
	c.Build = c.Build.WithGit()
	o.files = append(o.files,
		file{name + ".md", func(p string) error { return writeFile(p, c.WriteMarkdown) }},
		file{name + ".json", func(p string) error { return writeFile(p, c.WriteJSON) }})
}

// finish closes the event files, writes the report and the files, and
// lists them on w.
func (o *outputs) finish(w io.Writer) error {
	var err error
	for _, ev := range o.events {
		err = errors.Join(err, ev.Close())
	}
	if err != nil {
		return err
	}
	if o.writes(scenario.WriteReport) {
		text := o.text.Bytes()
		o.files = append([]file{{"report.txt", func(p string) error { return os.WriteFile(p, text, 0o644) }}}, o.files...)
	}
	if len(o.files) == 0 && len(o.events) == 0 {
		return nil
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, f := range o.files {
		path := filepath.Join(o.dir, f.name)
		if err := f.write(path); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	if len(o.events) > 0 {
		fmt.Fprintf(w, "wrote %s\n", filepath.Join(o.dir, "events", "…"))
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

// describe fills a card's workload lines from the workload as data: its
// description (its String) and the fingerprint of its unit-rate stream.
func describe(c *report.Card, wl analysis.Workload, base uint64) error {
	c.Workload.Description = fmt.Sprint(wl)
	fp, err := report.CardFingerprint(wl, analysis.Seed(base, 0), fingerprintRequests)
	if err != nil {
		return err
	}
	c.Workload.Fingerprint = fp
	c.Workload.Arrival = "as the description says, at each offered load; common random numbers across loads"
	return nil
}

// cardCommand is the command a card says reproduces it.
func cardCommand(card []byte) string {
	var c struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(card, &c)
	return c.Command
}
