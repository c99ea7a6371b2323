// Command run runs a study stored as data — a scenario file (package
// scenario) or a benchmark card that embeds one — and writes what it
// found: the report on standard output, and into the scenario's output
// directory the report again (report.txt), the charts (PNG and SVG), the
// benchmark card (JSON and Markdown) and each sweep run's raw events
// (events/load=<load>-rep=<r>.jsonl). It is servesim for those who do not
// write Go:
//
//	go run ./examples/run -config examples/run/scenarios/atlas-capacity.json
//	go run ./examples/run -config examples/run/scenarios/routing.json
//	go run ./examples/run -config out/atlas-capacity/atlas-capacity-card.json
//
// A scenario holds one of a sweep (the goodput curve, its knee and
// headroom), an A/B experiment (the verdict), a dial sweep (each value's
// knee against the baseline's), a replay of a trace (one run's summary),
// or a study (groups of named sweeps and experiments whose operating
// loads come from a sweep's knee: the routing question). Given a card,
// it reruns the card's scenario: with an unchanged simulator the card it
// writes is the same, byte for byte. A card analysed by other code (its
// analysis revision) is refused unless -any-revision. A rerun of a card
// then holds the card's recorded results (a sweep's curve, knee, peak and
// headroom; an experiment's verdict; a dial sweep's knees) to the
// rerun's, figure by figure as the card's JSON writes them: it prints
// "reproduced" when every figure is the same, and otherwise lists the
// figures that differ (the card's value, the rerun's) and exits with
// status 1, as a failed check does, after writing its files. The
// comparison is not part of report.txt, which stays the report of the
// study itself.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/report"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	config      string
	out         string // overrides the scenario's Output.Dir
	noFiles     bool
	anyRevision bool
	workers     int
}

func parse(w io.Writer, args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/run -config scenario.json [flags]\n\n"+
			"Runs the sweep, experiment, dial sweep, replay or study a scenario file (or a benchmark\n"+
			"card's embedded scenario) holds, and writes the report, charts, card and events.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.config, "config", "", "the scenario file, or a benchmark card (JSON) to rerun")
	fs.StringVar(&o.out, "out", "", "directory for the files, instead of the scenario's Output.Dir (out/<name> by default)")
	fs.BoolVar(&o.noFiles, "no-files", false, "write the report to standard output only, no file")
	fs.BoolVar(&o.anyRevision, "any-revision", false, "rerun a card analysed under another analysis revision (its figures may differ under this build's analysis)")
	fs.IntVar(&o.workers, "workers", 0, "runs in parallel in each sweep and experiment (0: the scenario's, else GOMAXPROCS); results do not depend on it")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.config == "" {
		return o, errors.New("-config: a scenario file (or a card) is needed, e.g. -config examples/run/scenarios/atlas-capacity.json")
	}
	if o.workers < 0 {
		return o, fmt.Errorf("-workers must be >= 0, got %d", o.workers)
	}
	return o, nil
}

// run parses args, loads the scenario and runs it.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	s, command, card, err := load(o)
	if err != nil {
		return err
	}
	orig := s // what the cards embed: the scenario as loaded
	if o.out != "" {
		s.Output.Dir = o.out
	}
	if o.noFiles {
		s.Output.Write = []string{}
	}
	setWorkers(&s, o.workers)
	cards, err := execute(w, s, orig, command)
	if err != nil || card == nil {
		return err
	}
	return writeReproduction(w, o.config, card, cards)
}

// load reads the scenario, or a card's, and the command its card gives:
// the scenario file's, or the card's own when rerunning one, so that a
// rerun writes the same card. Given a card, it also returns the card's
// JSON, whose recorded results the rerun is held to.
func load(o options) (scenario.Scenario, string, []byte, error) {
	b, err := os.ReadFile(o.config)
	if err != nil {
		return scenario.Scenario{}, "", nil, err
	}
	reg := scenario.Default()
	if !scenario.IsCard(b) {
		s, err := reg.Parse(b)
		if err != nil {
			return s, "", nil, fmt.Errorf("%s: %w", o.config, err)
		}
		return s, "go run ./examples/run -config " + o.config, nil, nil
	}
	s, err := reg.ParseCard(b, scenario.CardOptions{AnyRevision: o.anyRevision})
	if err != nil {
		return s, "", nil, fmt.Errorf("%s: %w", o.config, err)
	}
	return s, cardCommand(b), b, nil
}

// setWorkers sets every sweep's and experiment's Workers when the flag
// asks (results do not depend on it).
func setWorkers(s *scenario.Scenario, n int) {
	if n == 0 {
		return
	}
	switch {
	case s.Sweep != nil:
		s.Sweep.Workers = n
	case s.Experiment != nil:
		s.Experiment.Workers = n
	case s.DialSweep != nil:
		s.DialSweep.Sweep.Workers = n
	case s.Study != nil:
		for i := range s.Study.Groups {
			g := &s.Study.Groups[i]
			for j := range g.Sweeps {
				g.Sweeps[j].Sweep.Workers = n
			}
			for j := range g.Experiments {
				g.Experiments[j].Experiment.Workers = n
			}
		}
	}
}

// execute runs whichever the scenario holds, writing the report to w
// (and keeping it for report.txt), and returns the cards it made (written
// or not).
func execute(w io.Writer, s, orig scenario.Scenario, command string) ([]report.Card, error) {
	out := newOutputs(s, orig, command)
	tw := io.MultiWriter(w, &out.text)
	var err error
	switch {
	case s.Sweep != nil:
		err = runSweep(tw, s, out)
	case s.Experiment != nil:
		err = runExperiment(tw, s, out)
	case s.DialSweep != nil:
		err = runDial(tw, s, out)
	case s.Replay != nil:
		err = runReplay(tw, s, out)
	case s.Study != nil:
		err = runStudy(tw, s, out)
	}
	if err != nil {
		return nil, err
	}
	return out.cards, out.finish(w)
}

// title is the scenario's title, or its name.
func title(s scenario.Scenario) string {
	if s.Title != "" {
		return s.Title
	}
	return s.NameOrDefault()
}

// heading writes the report's first lines: the title and the claim.
func heading(w io.Writer, s scenario.Scenario, kind string) {
	fmt.Fprintf(w, "%s (%s, %s)\n", title(s), kind, s.NameOrDefault())
	if s.Claim != "" {
		fmt.Fprintf(w, "claim:     %s\n", strings.TrimSpace(s.Claim))
	}
}
