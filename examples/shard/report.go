package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of the unit-rate stream the
// card's workload fingerprint covers.
const fingerprintRequests = 10_000

// writeReport writes the curve, its knee, peak, collapse, model band and
// warnings, and the benchmark card into dir when one is given. merge and
// all write the same bytes for the same study.
func writeReport(w io.Writer, s study, st *studyOptions, c *sim.Curve, dir string) error {
	fmt.Fprintf(w, "study:     %s\n", s.what)
	fmt.Fprintf(w, "grid:      %d loads × %d replications, intervals at %.0f %% confidence\n\n", len(c.Points), len(c.Points[0].Runs), 100*c.Confidence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tgoodput\tattainment\tTTFT p99\tITL p99\tstate\t")
	fmt.Fprintln(tw, "req/s\treq/s\t\tms\tms\t\t")
	for _, p := range c.Points {
		fmt.Fprintf(tw, "%.4g\t%v\t%v\t%.0f\t%.0f\t%v\t\n", p.Load, p.Goodput, p.Attainment, p.TTFT.P99.Center, p.ITL.P99.Center, p.Saturation)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if c.Knee.Found {
		fmt.Fprintf(w, "knee:      %v req/s at %.2f attainment\n", c.Knee.Load, c.Knee.Target)
	} else {
		fmt.Fprintf(w, "knee:      %s\n", c.Knee.Reason())
	}
	if b := c.Band; b != nil {
		fmt.Fprintf(w, "model:     knee %v req/s over %v (fragile: %t)\n", b.Knee, b.Declared, b.Fragile)
	}
	fmt.Fprintf(w, "peak:      %v req/s of goodput at %.4g req/s\n", c.Peak.Goodput, c.Peak.Load)
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse:  from %.4g req/s\n", c.Collapse.Load)
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "warning:   %s\n", warn)
	}
	if dir == "" {
		return nil
	}
	return writeCard(w, s, st, c, dir)
}

// writeCard writes the benchmark card as Markdown and JSON into dir.
func writeCard(w io.Writer, s study, st *studyOptions, c *sim.Curve, dir string) error {
	card := report.NewCard(s.sweep, c, 0)
	card.Title = "Goodput curve of a sharded sweep (simulated)"
	card.Claim = fmt.Sprintf("The knee, where mean attainment falls below %.2f, lies in the interval reported below.", c.Target)
	fp, err := report.Fingerprint(s.sweep.Workload, sim.Seed(s.sweep.BaseSeed, 0), fingerprintRequests)
	if err != nil {
		return err
	}
	card.Workload.Description = s.what
	if str, ok := s.sweep.Workload.(fmt.Stringer); ok {
		card.Workload.Arrival = str.String()
	}
	card.Workload.Fingerprint = fp
	card.Command = strings.TrimSpace("go run ./examples/shard all " + strings.Join(st.args, " "))
	card.Notes = []string{"Run as shards (go run ./examples/shard run -shard i -shards n -out dir, then merge -in dir) or in one process (all): the same results, byte for byte."}
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
