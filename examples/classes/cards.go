package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
)

// writeCards writes a benchmark card (Markdown and JSON) per capped run
// and per policy into o.out, and lists them on w. Each card's concurrency
// and cache state come from its configuration; a policy's card carries
// the per-class table.
func writeCards(w io.Writer, o options, caps []capRow, cls classStudy) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for i := range caps {
		r := &caps[i]
		name := "cap-none"
		claim := fmt.Sprintf("Uncapped at %g req/s, the Atlas TP4 replica's queue is the server's: TTFT and attainment as the users see them.", o.rate)
		if r.cap > 0 {
			name = fmt.Sprintf("cap-%d", r.cap)
			claim = fmt.Sprintf("Under a client cap of %d at %g req/s, TTFT from the send understates what users wait by the client wait.", r.cap, o.rate)
		}
		c, err := card(o, r.sweep, r.curve, claim)
		if err != nil {
			return err
		}
		c.Title = fmt.Sprintf("Atlas TP4 at %g req/s, %s", o.rate, strings.ReplaceAll(name, "-", " "))
		c.Notes = append(c.Notes, fmt.Sprintf("Goodput counted from the instant each request was due (TTFT from its open-loop arrival, before any client wait): %.2f req/s, beside %.2f req/s from the send; attainment from the due instant %s.",
			r.mean(goodputFromDue), r.point().Goodput.Center, attain(r.mean(attainmentFromDue))))
		if r.cap > 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("By Little's law a cap of %d carries at most %d / S = %s req/s, S = %s s the mean time a request held a slot (send to end) in the window.",
				r.cap, r.cap, dec(r.mean(r.sustainableOf), "%.2f", r.cap), dec(r.mean(slotTime), "%.2f", r.cap)))
		}
		if err := save(w, o.out, name, &c); err != nil {
			return err
		}
	}
	for i, p := range policies {
		c, err := card(o, cls.sweeps[i], cls.curves[i], hypothesis.Claim)
		if err != nil {
			return err
		}
		c.Title = "Atlas TP4, interactive and batch classes, " + p.name
		if i > 0 && cls.verdict != nil {
			v := cls.verdict
			if cls.band != nil {
				v = cls.band.fixed // the verdict with its band at the verdict loads
			}
			c.Verdict = report.CardVerdictOf(v)
		}
		if i > 0 {
			c.Notes = append(c.Notes, classSentences(o, cls)...)
			if b := cls.band; b != nil && b.own != nil {
				c.Notes = append(c.Notes, fmt.Sprintf("Near each model's own knee (each model at the same multiples of FCFS's knee under it as the verdict loads are of FCFS's nominal knee), the verdict %s.",
					b.own.BandVerdict()))
			}
		}
		if err := save(w, o.out, "classes-"+strings.ToLower(p.name), &c); err != nil {
			return err
		}
	}
	return nil
}

// card fills a card for one of the example's sweeps.
func card(o options, sw analysis.Sweep, c *analysis.Curve, claim string) (report.Card, error) {
	card := report.NewCard(sw, c, 0)
	card.Claim = claim
	fp, err := report.CardFingerprint(sw.Workload, analysis.Seed(o.seed, 0), 10_000)
	if err != nil {
		return card, err
	}
	card.Workload.Description = "synthetic, open-loop Poisson arrivals of the chapter's requests"
	if sw.Config.Classes != nil {
		card.Workload.Description = "synthetic, analysis.ClassMix: interactive and batch in equal shares, each its own Poisson process"
	}
	card.Workload.Arrival = "Poisson; common random numbers across loads and configurations"
	card.Workload.Lengths = "fixed: 2000 prompt tokens, 200 output tokens"
	card.Workload.Correlation = "none (fixed lengths)"
	card.Workload.Prefix = "none"
	card.Workload.Loop = "open-loop: requests are due at their Poisson instants whatever the replica does"
	card.Workload.Fingerprint = fp
	card.Command = strings.TrimSpace("go run ./examples/classes " + strings.Join(o.args, " "))
	return card, nil
}

// save writes c as name.md and name.json in dir.
func save(w io.Writer, dir, name string, c *report.Card) error {
	for _, f := range []struct {
		ext   string
		write func(io.Writer) error
	}{{".md", c.WriteMarkdown}, {".json", c.WriteJSON}} {
		path := filepath.Join(dir, name+f.ext)
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		err = f.write(file)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	return nil
}
