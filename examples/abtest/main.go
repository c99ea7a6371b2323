// Command abtest is a template of a falsifiable benchmark claim, in the
// order the reference chapter asks for one: declare the hypothesis and its
// threshold before any run, fix A, B and the workload, run paired seeded
// blocks at several loads, and let the interval decide — improved, not
// improved, or inconclusive — stating at which loads B wins and where not.
// Windows too short to see a request end give no verdict at all ("no
// measured requests"), and an open window (-horizon 0) is refused.
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
	"strings"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/report"
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
	batch := fs.Int("batch", 48, "B's batch cap (A keeps the Atlas 32)")
	threshold := fs.Float64("threshold", 0.05, "relative goodput improvement B must show")
	blocks := fs.Int("blocks", 10, "seeded blocks per load")
	horizon := fs.Duration("horizon", 10*time.Minute, "measurement window end (simulated; warm-up is a tenth)")
	card := fs.String("card", "", "also write the result as a benchmark card to this path (.md for Markdown, .json for JSON)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *horizon <= 0 {
		return fmt.Errorf("-horizon must be > 0: an experiment compares fixed windows, and an open one on this unbounded workload never ends (got %v)", *horizon)
	}
	if !(*threshold > -1) || math.IsInf(*threshold, 0) {
		return fmt.Errorf("-threshold must be a relative improvement above -1 (-100 %%), got %v", *threshold)
	}

	// 1. The hypothesis and its threshold, declared before any run.
	h := sim.Hypothesis{
		Claim:     fmt.Sprintf("raising the batch cap from 32 to %d raises goodput by at least %.0f %%", *batch, 100**threshold),
		Metric:    sim.MetricGoodput,
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

	x := sim.Experiment{Hypothesis: h, A: a, B: b, Workload: sim.Poisson(lengths), Loads: loads, Blocks: *blocks}
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
	fp, err := report.Fingerprint(x.Workload, sim.Seed(x.BaseSeed, 0), 10_000)
	if err != nil {
		return err
	}
	c.Workload = report.Workload{Arrival: "Poisson at each load", Lengths: lengths.String(), Correlation: "none (fixed lengths)",
		Prefix: "none", Loop: "open-loop", Concurrency: c.Workload.Concurrency, CacheState: c.Workload.CacheState, Fingerprint: fp}
	return writeCard(*card, &c)
}

// writeResult prints the claim, the method and the verdict at each load
// and over all of them.
func writeResult(w io.Writer, h sim.Hypothesis, window sim.Window, lengths workload.Joint, res *sim.Result) {
	fmt.Fprintf(w, "claim:     %s\n", h.Claim)
	fmt.Fprintf(w, "workload:  open-loop Poisson, %v\n", lengths)
	fmt.Fprintf(w, "method:    %d blocks per load, A and B sharing each block's seed; %s per run\n\n", res.Blocks, window.Horizon-window.Warmup)
	for _, l := range res.Loads {
		if l.Verdict == sim.NoMeasured {
			fmt.Fprintf(w, "%5.2f req/s  %v\n", l.Load, l.Verdict)
			continue
		}
		fmt.Fprintf(w, "%5.2f req/s  A %.3f  B %.3f  %+6.1f %% [%+.1f, %+.1f]  %v%s\n", l.Load, l.A.Center, l.B.Center,
			100*l.Improvement.Center, 100*l.Improvement.Lo, 100*l.Improvement.Hi, l.Verdict, blocksOf(l.Improvement, res.Blocks))
	}
	if res.Verdict == sim.NoMeasured {
		fmt.Fprintf(w, "\nverdict:   %v: no block measured a request that ended within its window and drain (%v); lengthen -horizon\n",
			res.Verdict, 2*(window.Horizon-window.Warmup))
	} else {
		fmt.Fprintf(w, "\nverdict:   %v: %+.1f %% [%+.1f, %+.1f] against a threshold of %+.0f %%, over %s\n", res.Verdict,
			100*res.Improvement.Center, 100*res.Improvement.Lo, 100*res.Improvement.Hi, 100*h.Threshold, res.Regime)
	}
	if res.PastImprovement.N > 0 {
		fmt.Fprintf(w, "past knee: %v: %+.1f %% [%+.1f, %+.1f] at the loads past the baseline's knee, where A collapses and any gain is large\n", res.PastVerdict,
			100*res.PastImprovement.Center, 100*res.PastImprovement.Lo, 100*res.PastImprovement.Hi)
	}
	fmt.Fprintf(w, "boundary:  %s\n", res.Boundary())
}

// blocksOf says how many blocks an improvement comes from when some
// measured nothing.
func blocksOf(e sim.Estimate, blocks int) string {
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
