// Command abtest is a template of a falsifiable benchmark claim, in the
// order the reference chapter asks for one: declare the hypothesis and its
// threshold before any run, fix A, B and the workload, run paired seeded
// blocks at several loads, and let the interval decide — improved, not
// improved, or inconclusive — stating at which loads B wins and where not.
// Windows too short to see a request end give no verdict at all ("no
// measured requests"), and an open window (-horizon 0) is refused. No
// flag stands for a default: -batch 0, -blocks 0 or 1 and a -card that is
// neither *.md nor *.json in an existing directory are refused before any
// run, so the claim printed is the one that ran.
//
//	go run ./examples/abtest
//	go run ./examples/abtest -batch 64 -threshold 0.1 -blocks 20
//
// Copy it, change the four marked places, keep the order.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "abtest:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("abtest", flag.ContinueOnError)
	fs.SetOutput(w)
	batch := fs.Int("batch", 48, fmt.Sprintf("B's batch cap, 1 to %d sequences (A keeps the Atlas %d)", engine.MaxSeqsLimit, engine.DefaultMaxSeqs))
	threshold := fs.Float64("threshold", 0.05, "relative goodput improvement B must show")
	blocks := fs.Int("blocks", 10, "seeded blocks per load (>= 2: a verdict needs an interval)")
	horizon := fs.Duration("horizon", 10*time.Minute, "measurement window end (simulated; warm-up is a tenth)")
	card := fs.String("card", "", "also write the result as a benchmark card to this path (*.md for Markdown, *.json for JSON)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	// Every flag is checked before any run, and none stands for a
	// default: a value that cannot mean anything is refused, naming the
	// flag, so that the claim printed is the one that ran.
	if *batch < 1 || *batch > engine.MaxSeqsLimit {
		return fmt.Errorf("-batch must be a batch cap of 1 to %d sequences, got %d", engine.MaxSeqsLimit, *batch)
	}
	if *blocks < 2 {
		return fmt.Errorf("-blocks must be >= 2: a verdict needs an interval across paired blocks, and one block has none (got %d)", *blocks)
	}
	if *card != "" {
		if !strings.HasSuffix(*card, ".md") && !strings.HasSuffix(*card, ".json") {
			return fmt.Errorf("-card %q: name it *.md (Markdown) or *.json (JSON)", *card)
		}
		if st, err := os.Stat(filepath.Dir(*card)); err != nil || !st.IsDir() {
			return fmt.Errorf("-card %q: its directory %s does not exist", *card, filepath.Dir(*card))
		}
	}
	if *horizon <= 0 {
		return fmt.Errorf("-horizon must be > 0: an experiment compares fixed windows, and an open one on this unbounded workload never ends (got %v)", *horizon)
	}
	if err := (sim.Window{Warmup: *horizon / 10, Horizon: *horizon}).Validate(); err != nil {
		return fmt.Errorf("-horizon %v: %w", *horizon, err)
	}
	if !(*threshold > -1) || math.IsInf(100**threshold, 0) { // printed in %
		return fmt.Errorf("-threshold must be a relative improvement above -1 (-100 %%) and finite in %%, got %v", *threshold)
	}

	// 1. The hypothesis and its threshold, declared before any run.
	h := analysis.Hypothesis{
		Claim:     claim(*batch, *threshold),
		Metric:    analysis.MetricGoodput,
		Threshold: *threshold,
	}
	// 2. A and B differ in the one dial under test.
	window := sim.Window{Warmup: *horizon / 10, Horizon: *horizon}
	a := sim.Config{Window: window}
	b := sim.Config{Window: window, Engine: engine.Config{MaxSeqs: *batch}}
	// 3. The workload: open-loop Poisson, the chapter's 2,000/200 tokens.
	lengths := workload.Fixed(2000, 200)
	// 4. The loads: below, at and past A's knee (about 2 req/s).
	loads := []float64{1, 2, 2.5}

	x := analysis.Experiment{Hypothesis: h, A: a, B: b, Workload: analysis.Poisson(lengths), Loads: loads, Blocks: *blocks}
	res, err := x.Run()
	if err != nil {
		return err
	}
	writeResult(w, h, window, lengths, res)
	if *card == "" {
		return nil
	}
	// 5. The card: the claim, both systems, the seeds and the verdict.
	c := report.NewExperimentCard(x, res)
	c.Title = "A/B: batch cap"
	c.Command = "go run ./examples/abtest " + strings.Join(args, " ")
	fp, err := report.CardFingerprint(x.Workload, analysis.Seed(x.BaseSeed, 0), 10_000)
	if err != nil {
		return err
	}
	c.Workload = report.CardWorkload{Arrival: "Poisson at each load", Lengths: lengths.String(), Correlation: "none (fixed lengths)",
		Prefix: "none", Loop: "open-loop", Concurrency: c.Workload.Concurrency, CacheState: c.Workload.CacheState, Fingerprint: fp}
	return writeCard(*card, &c)
}

// claim is the hypothesis in words, with the values that run: B's batch
// cap against A's, and the threshold.
func claim(batch int, threshold float64) string {
	verb := "raising"
	switch {
	case batch < engine.DefaultMaxSeqs:
		verb = "lowering"
	case batch == engine.DefaultMaxSeqs:
		return fmt.Sprintf("a batch cap of %d, A's own, raises goodput by at least %s %% (B is A: the claim must fail)",
			batch, pct(threshold))
	}
	return fmt.Sprintf("%s the batch cap from %d to %d raises goodput by at least %s %%", verb, engine.DefaultMaxSeqs, batch, pct(threshold))
}

// pct prints a fraction as a percentage with up to four significant
// digits, so that a threshold of 0.025 reads 2.5, not 2.
func pct(x float64) string { return strconv.FormatFloat(100*x, 'g', 4, 64) }

// writeResult prints the claim, the method and the verdict at each load
// and over all of them.
func writeResult(w io.Writer, h analysis.Hypothesis, window sim.Window, lengths workload.Joint, res *analysis.ExperimentResult) {
	fmt.Fprintf(w, "claim:     %s\n", h.Claim)
	fmt.Fprintf(w, "workload:  open-loop Poisson, %v\n", lengths)
	fmt.Fprintf(w, "method:    %d blocks per load, A and B sharing each block's seed; %s per run\n\n", res.Blocks, window.Horizon-window.Warmup)
	for _, l := range res.Loads {
		if l.Verdict == analysis.NoMeasured {
			fmt.Fprintf(w, "%5.2f req/s  %v\n", l.Load, l.Verdict)
			continue
		}
		fmt.Fprintf(w, "%5.2f req/s  A %.3f  B %.3f  %+6.1f %% [%+.1f, %+.1f]  %v%s\n", l.Load, l.A.Center, l.B.Center,
			100*l.Improvement.Center, 100*l.Improvement.Lo, 100*l.Improvement.Hi, l.Verdict, blocksOf(l.Improvement, res.Blocks))
	}
	if res.Verdict == analysis.NoMeasured {
		fmt.Fprintf(w, "\nverdict:   %v: no block measured a request that ended within its window and drain (%v); lengthen -horizon\n",
			res.Verdict, 2*(window.Horizon-window.Warmup))
	} else {
		fmt.Fprintf(w, "\nverdict:   %v: %+.1f %% [%+.1f, %+.1f] against a threshold of %s%s %%, over %s\n", res.Verdict,
			100*res.Improvement.Center, 100*res.Improvement.Lo, 100*res.Improvement.Hi, sign(h.Threshold), pct(h.Threshold), res.Regime)
	}
	if res.PastImprovement.N > 0 {
		fmt.Fprintf(w, "past knee: %v: %+.1f %% [%+.1f, %+.1f] at the loads past the baseline's knee, where A collapses and any gain is large\n", res.PastVerdict,
			100*res.PastImprovement.Center, 100*res.PastImprovement.Lo, 100*res.PastImprovement.Hi)
	}
	fmt.Fprintf(w, "boundary:  %s\n", res.Boundary())
}

// sign is "+" for a threshold of zero or more (pct prints the "-").
func sign(x float64) string {
	if x >= 0 {
		return "+"
	}
	return ""
}

// blocksOf says how many blocks an improvement comes from when some
// measured nothing.
func blocksOf(e stats.Interval, blocks int) string {
	if e.N == blocks {
		return ""
	}
	return fmt.Sprintf(" (%d of %d blocks measured)", e.N, blocks)
}

// writeCard writes c as Markdown or JSON, by the path's extension.
func writeCard(path string, c *report.Card) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	write := c.WriteMarkdown
	if strings.HasSuffix(path, ".json") {
		write = c.WriteJSON
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
