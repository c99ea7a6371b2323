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
	"github.com/servesim/servesim/workload"
)

// writeOutputs writes, per dial, the knee-against-dial chart (PNG and
// SVG) and the benchmark card (Markdown and JSON) into o.out, and lists
// them on w. The chunk-cap card carries the hypothesis and its verdict.
func writeOutputs(w io.Writer, studies []study, res *analysis.ExperimentResult, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	for _, s := range studies {
		labels := make([]string, len(s.result.Values))
		for i, v := range s.result.Values {
			labels[i] = s.label(v)
		}
		ps, err := chart.Dial(s.result, labels)
		if err != nil {
			return err
		}
		ps[0].Title.Text = fmt.Sprintf("Atlas TP4, document workload: knee against %s (%g %% intervals)", s.column, 100*s.result.Curves[0].Confidence)
		if s.short == "prefill" {
			// The dial's own name (Engine.DisableChunkedPrefill, on (1))
			// reads backwards under the values "on" and "off".
			ps[len(ps)-1].X.Label.Text = fmt.Sprintf("chunked prefill (off: whole prompts beside the decodes, token budget %d)", wholeBudget)
		}
		card := dialCard(s, res, o)
		base := filepath.Join(o.out, "chunksweep-"+s.short)
		files := []struct {
			path  string
			write func(path string) error
		}{
			{base + ".png", func(p string) error { return chart.Save(p, ps) }},
			{base + ".svg", func(p string) error { return chart.Save(p, ps) }},
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

// dialCard is one dial's benchmark card; the chunk cap's carries the
// hypothesis and its verdict.
func dialCard(s study, res *analysis.ExperimentResult, o options) report.Card {
	card := report.NewDialCard(s.sweep, s.result)
	card.Title = "Atlas TP4 on the Atlas document workload: the knee against " + s.column
	card.Claim = fmt.Sprintf("Exploratory: how the knee, TTFT p99 and ITL p99 move with %s against vLLM's defaults.", s.dial.dial.Name)
	if s.short == "chunk" && res != nil {
		c := res.Hypothesis.Claim
		card.Claim = strings.ToUpper(c[:1]) + c[1:] + "."
		card.Verdict = report.CardVerdictOf(res)
	}
	card.Workload = report.CardWorkload{
		Description: "synthetic: workload.Synthetic{Lengths: workload.AtlasDocuments()}",
		Arrival:     "Poisson, offered load swept; common random numbers across loads and dial values",
		Lengths:     workload.AtlasDocuments().String(),
		Correlation: "Gaussian copula, Spearman 0.4 between input and output lengths",
		Prefix:      "none",
		Loop:        "open-loop: arrivals are external and overload is under test",
		Concurrency: card.Workload.Concurrency, // from the configuration
		CacheState:  card.Workload.CacheState,
	}
	if fp, err := report.CardFingerprint(s.sweep.Sweep.Workload, analysis.Seed(o.seed, 0), 10_000); err == nil {
		card.Workload.Fingerprint = fp
	}
	card.Command = strings.TrimSpace("go run ./examples/chunksweep " + strings.Join(o.args, " "))
	card.Notes = []string{
		fmt.Sprintf("Each value's curve is an automatic grid from %s req/s (×1.5 to collapse, then 3 bisections at the knee); the loads are in the JSON card.", rate(o.start)),
		"Second day: rerun the command; identical seeds give identical bytes, so any difference is a change in the simulator (see revision).",
	}
	return card
}

// writeBench writes every value's runs at the probe load as Go benchmark
// lines, one configuration each ("default" for vLLM's defaults, once),
// for benchstat -col config.
func writeBench(path string, studies []study) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	wroteDefault := false
	for _, s := range studies {
		r := s.result
		for i, v := range r.Values {
			name := s.short + "=" + s.label(v)
			if i == r.Baseline {
				if wroteDefault {
					continue
				}
				name, wroteDefault = "default", true
			}
			c := &analysis.Curve{Points: []analysis.Point{r.Probe[i]}}
			if err := (report.Bench{Name: "Documents", Config: name}).Write(f, c); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}
