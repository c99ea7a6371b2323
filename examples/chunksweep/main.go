// Command chunksweep turns the prefill dials of the Atlas TP4 replica on
// the Atlas document workload, as the reference chapter's hypothesis chain
// predicts:
//
//	smaller prefill chunks -> shorter mixed engine steps -> lower decode
//	stalls -> better ITL goodput -> possibly lower prefill efficiency and
//	worse TTFT
//
// It runs three dial sweeps (analysis.DialSweep) on the same seeds, each
// against vLLM V1's defaults (token budget 2,048, chunked prefill on, no
// chunk cap): the per-request chunk cap from 128 to 4,096 tokens, the token
// budget from 512 to 8,192 (Sarathi's chunk size), and chunked prefill off
// (whole prompts, with the 8,192-token budget the longest request needs).
// For each value it prints the longest mixed step the engine forms, the
// knee of the goodput curve with its interval, the paired difference of
// the knee to the baseline's with its interval, and at a probe load TTFT
// p99, ITL p99 over every gap, the p99 of each request's worst gap
// (sim.Summary.WorstITL) and the share of requests whose worst gap passes
// the ITL bound (sim.Summary.Causes.ITL: the requests an SLO on every ITL
// fails); then the hypothesis declared before the runs (by
// default: a 1,024-token chunk cap raises the knee by at least 5 %) and its
// verdict, from a analysis.Experiment on the knee (analysis.MetricKnee).
//
// The chunk-cap sweep runs under a model band declared before the runs
// (-model-error, every step time ±10 % by default, and -shapes atlas, the
// three shape alternatives of costmodel.AtlasShapes, each holding Atlas's
// 45 ms at batch 32 / 2,000 context), each model on the first -band-reps
// of the seeds; it prints every chunk cap's knee under each model and
// whether the knee holds under every model of the band or rests on the
// model that moves it most (analysis.Curve.ModelVerdict).
//
// A value is infeasible at any load, and printed so rather than as a knee
// below the lowest load, when its curve's lowest measured load already
// misses the 0.95 attainment target and that load is stable (its backlog
// does not grow: the replica is nearly idle, so a request misses through
// its own service, not through a queue). The line under the table gives
// the share of that load's requests whose first miss (sim.Summary.Misses'
// exclusive attribution: not served, TTFT, ITL, then TPOT or E2E) is the
// dominant cause, and that cause's bound. An ITL miss is a request whose
// worst gap passes the bound, so it can hit a quarter of the requests
// while the ITL p99 over every gap stays under it.
//
// It writes
// the knee-against-dial charts and a benchmark card per dial into -out,
// and with -timeline a Chrome trace, a step log and an occupancy chart of
// one run at the probe load.
//
//	go run ./examples/chunksweep
//	go run ./examples/chunksweep -chunks 256,1024 -budgets '' -reps 3
//	go run ./examples/chunksweep -timeline   # then open out/chunksweep-timeline.trace.json in ui.perfetto.dev
//	go run ./examples/chunksweep -bench chunks.txt && benchstat -col config chunks.txt
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/sim/analysis"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chunksweep:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	chunks    []int
	budgets   []int
	whole     bool    // the row without chunked prefill
	claim     int     // the chunk cap the hypothesis is about
	threshold float64 // relative knee improvement the hypothesis demands
	probe     float64 // load at which the ITL tax and TTFT are read, req/s
	start     float64 // first load of each automatic sweep, req/s
	reps      int
	blocks    int
	horizon   time.Duration
	seed      uint64
	bench     string // file for Go benchmark-format lines; "": none
	out       string // directory for charts, cards and the timeline; "": none
	timeline  bool
	// modelError and shapes are the chunk-cap sweep's model band: every
	// step time ±modelError, and the shape alternatives named by shapes
	// ("atlas": costmodel.AtlasShapes; "": none).
	modelError float64
	shapes     string
	bandReps   int // replications of each model of the band (0: -reps)
	args       []string
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{whole: true, claim: 1024, threshold: 0.05, probe: 0.5, start: 0.1, reps: 4, blocks: 8,
		horizon: 20 * time.Minute, out: "out", modelError: 0.1, shapes: "atlas", bandReps: 2, args: args}
	fs := flag.NewFlagSet("chunksweep", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/chunksweep [flags]\n\n"+
			"The knee of the Atlas TP4 replica against its prefill dials (chunk cap, token budget,\n"+
			"chunked prefill), each value paired with vLLM's defaults on the same seeds, and the\n"+
			"verdict on a declared hypothesis. The defaults run in well under a minute on 2 cores.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	chunks := fs.String("chunks", "128,256,512,1024,2048,4096", "comma-separated per-request prefill chunk caps, tokens (\"\": no chunk-cap sweep)")
	budgets := fs.String("budgets", "512,1024,2048,4096,8192", "comma-separated token budgets, tokens (\"\": no budget sweep)")
	fs.BoolVar(&o.whole, "whole-prompts", o.whole, fmt.Sprintf("also sweep without chunked prefill (whole prompts, budget %d)", wholeBudget))
	fs.IntVar(&o.claim, "claim", o.claim, "the hypothesis, declared before the runs: a chunk cap of this many tokens raises the knee by at least -threshold over vLLM's defaults")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "relative knee improvement the hypothesis demands (0.05 is 5 %)")
	fs.Float64Var(&o.probe, "probe", o.probe, "offered load at which TTFT p99, ITL p99 and each request's worst ITL are read, req/s")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of each automatic sweep, req/s (the grid grows by 1.5 to collapse, then bisects 3 times at the knee)")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load, the same seeds for every value of every dial")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks of the hypothesis test (A and B share each block's seed)")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "measurement window end (simulated time; warm-up is a tenth of it)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed")
	fs.StringVar(&o.bench, "bench", "", "write each value's runs at the probe load in Go benchmark format to this file (compare with benchstat -col config)")
	fs.StringVar(&o.out, "out", o.out, "directory for the knee-against-dial charts (PNG, SVG) and a benchmark card per dial (Markdown, JSON); empty: write none")
	fs.BoolVar(&o.timeline, "timeline", false, "also run the -claim chunk cap once at the probe load (replication 0's seed) and write its Chrome trace, step log and KV/queue chart into -out")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "the chunk-cap sweep's model band, declared before the runs: every step time ± this fraction (0.1 is ±10 %; 0: none)")
	fs.StringVar(&o.shapes, "shapes", o.shapes, "shape alternatives in the chunk-cap sweep's model band: \"atlas\" (atlas-linear, atlas-roofline, atlas-profiled: costmodel.AtlasShapes) or \"\" (none)")
	fs.IntVar(&o.bandReps, "band-reps", o.bandReps, "replications of each model of the band, the first of -reps' seeds (0: -reps); the nominal curve keeps -reps")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.chunks, err = tokenList("-chunks", *chunks); err != nil {
		return o, err
	}
	if o.budgets, err = tokenList("-budgets", *budgets); err != nil {
		return o, err
	}
	return o, checkFlags(o)
}

// tokenList reads a comma-separated list of positive token counts; ""
// is the empty list.
func tokenList(name, s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive token count", name, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkFlags refuses a -horizon that is not positive, and a -probe or
// -start that is not a positive finite rate or whose workload cannot be
// built (said once, naming the flag, rather than once per value and
// replication), a -claim that is no chunk cap, nothing to sweep, a
// -timeline with nowhere to write, and whatever the sweeps and the
// hypothesis test would refuse (replications, blocks, threshold).
func checkFlags(o options) error {
	if o.horizon <= 0 {
		return fmt.Errorf("-horizon must be > 0: sweeps compare fixed windows, got %v", o.horizon)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"-probe", o.probe}, {"-start", o.start}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s: %v is not a positive rate in requests/s", f.name, f.v)
		}
		if _, err := documents(o.horizon).Source(f.v, o.seed); err != nil {
			return fmt.Errorf("%s %g req/s: %w", f.name, f.v, err)
		}
	}
	switch {
	case o.claim <= 0:
		return fmt.Errorf("-claim: %d is not a positive chunk cap in tokens", o.claim)
	case len(o.chunks) == 0 && len(o.budgets) == 0 && !o.whole:
		return errors.New("nothing to sweep: -chunks and -budgets are empty and -whole-prompts is off")
	case o.timeline && o.out == "":
		return errors.New("-timeline writes into -out: give it a directory")
	case o.shapes != "" && o.shapes != "atlas":
		return fmt.Errorf("-shapes: %q is not \"atlas\" or \"\"", o.shapes)
	}
	// Said once here, not once per value of every dial.
	s := analysis.Sweep{Config: baseConfig(o.horizon), Workload: documents(o.horizon), Grid: analysis.Grid{Start: o.start}, Reps: o.reps, BaseSeed: o.seed,
		ModelError: modelBand(o)}
	if err := s.Validate(); err != nil {
		return err
	}
	return claimExperiment(o, []float64{o.start, 2 * o.start}).Validate()
}

// run parses args and writes the report to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return writeReport(w, o)
}
