// Command disagg asks whether prefill/decode disaggregation pays for a
// fleet of Atlas TP4 replicas:
//
//	Split or not, and at which P:D ratio, for our model, hardware,
//	request distribution and TTFT/ITL targets?
//
// It declares the hypothesis first (splitting -replicas replicas into a
// prefill pool of P and a decode pool of N − P raises the knee, the
// highest load at which 95 % of requests meet TTFT <= 600 ms and every
// ITL <= 150 ms, by more than -threshold over the same N replicas
// co-located; with N equal on both sides the knee's rise is the rise per
// replica, per GPU), then for each workload — short-prompt chat and long
// documents — sweeps the co-located fleet for its knee, picks the A/B
// loads from it (-operating times it, each model of the band at the
// same multiples of the knee under that model), and tests each split
// against it on paired seeded blocks (analysis.MetricKnee, common random
// numbers): every P:D ratio of -splits with every request prefilled
// remotely (sim.AlwaysRemote) over links of each of -bandwidths GB/s per
// accelerator, and every ratio again behind llm-d's prefix-threshold
// decider (sim.PrefixThreshold, -decider-tokens uncached prompt tokens)
// at the middle bandwidth. Every test reruns under each model of the
// band (analysis.AtlasBand(-model-error)) on its first -band-blocks
// blocks and says whether its verdict holds under every model or rests
// on the model.
//
// Per workload it prints the capacity estimate's disaggregated bounds
// (costmodel.Disaggregated: prefill-pool prompts/s, decode-pool
// requests/s, the link's bound and the balancing P:D ratio), each row's
// knee per replica, its paired Δknee against co-located with its 95 %
// interval, the band's verdict, the decider's share of remote prefills
// and what the split did at the co-located knee's load (pool
// utilisation, link utilisation, the first ITL's p99), then a
// conditional verdict on splitting.
//
//	go run ./examples/disagg
//	go run ./examples/disagg -blocks 12 -horizon 6m
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
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "disagg:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	replicas      int
	splits        []int     // prefill replicas of each split
	bandwidths    []float64 // GB/s per accelerator
	deciderTokens int       // llm-d's NonCachedTokens
	threshold     float64   // relative rise of the knee a split must show
	modelError    float64
	bandBlocks    int
	factors       []float64
	reps          int
	blocks        int
	horizon       time.Duration
	seed          uint64
	workers       int
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{replicas: 4, deciderTokens: 1024, threshold: 0, modelError: 0.1, bandBlocks: 4,
		reps: 3, blocks: 8, horizon: 4 * time.Minute}
	fs := flag.NewFlagSet("disagg", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/disagg [flags]\n\n"+
			"Does splitting a fleet of Atlas TP4 replicas into prefill and decode pools raise its\n"+
			"knee per replica over the same replicas co-located, at which P:D ratio and link\n"+
			"bandwidth, on a chat and a long-document workload, and does the verdict hold under\n"+
			"every model of the band?\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.replicas, "replicas", o.replicas, "Atlas TP4 replicas in each fleet, co-located or split")
	splits := fs.String("splits", "1,2,3", "prefill replicas of each split, comma-separated (each in 1 to -replicas-1)")
	bws := fs.String("bandwidths", "25,50,100", "KV-transfer link bandwidths, GB/s per accelerator, comma-separated")
	fs.IntVar(&o.deciderTokens, "decider-tokens", o.deciderTokens, "llm-d's prefix-threshold decider: a request is prefilled remotely when its prompt's uncached suffix has at least this many tokens")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "relative rise of the knee a split must show over co-located (0: any rise), declared before the runs")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "relative step-time error of the model band (0.1: x0.9 and x1.1), beside the Atlas shape alternatives")
	fs.IntVar(&o.bandBlocks, "band-blocks", o.bandBlocks, "A/B blocks each model of the band reruns (0: every block)")
	factors := fs.String("operating", "0.5,0.7,0.85,1,1.15,1.3", "A/B loads as multiples of the co-located knee, comma-separated (at least 2)")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load of the co-located sweep")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks, each a curve over the A/B loads")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window, simulated time (warm-up: a tenth of it)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of replications and blocks")
	fs.IntVar(&o.workers, "workers", 0, "runs in parallel within each sweep and experiment (0: GOMAXPROCS); results do not depend on it")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	var err error
	if o.splits, err = parseList(*splits, "-splits", func(x float64) bool { return x == math.Trunc(x) && x >= 1 }); err != nil {
		errs = append(errs, err)
	}
	var fs64 []float64
	if fs64, err = parseFloats(*bws, "-bandwidths"); err != nil {
		errs = append(errs, err)
	}
	o.bandwidths = fs64
	if o.factors, err = parseFloats(*factors, "-operating"); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	return o, checkFlags(o)
}

// parseFloats reads a comma-separated list of positive finite numbers.
func parseFloats(s, flag string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: %q is not a positive number", flag, f)
		}
		out = append(out, x)
	}
	return out, nil
}

// parseList reads a comma-separated list of whole numbers ok accepts.
func parseList(s, flag string, ok func(float64) bool) ([]int, error) {
	xs, err := parseFloats(s, flag)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(xs))
	for i, x := range xs {
		if !ok(x) {
			return nil, fmt.Errorf("%s: %v is not a whole number of replicas >= 1", flag, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// checkFlags refuses nonsense by flag name, before anything runs.
func checkFlags(o options) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.replicas < 2 || o.replicas > 64 {
		bad("-replicas must be in 2 to 64: a split needs a replica in each pool, got %d", o.replicas)
	}
	for _, p := range o.splits {
		if p >= o.replicas {
			bad("-splits: %d prefill replicas leave no decode replica of -replicas %d", p, o.replicas)
		}
	}
	if o.deciderTokens < 1 {
		bad("-decider-tokens must be >= 1 (llm-d's 0 disaggregates nothing), got %d", o.deciderTokens)
	}
	if !(o.threshold > -1) || math.IsInf(o.threshold, 0) {
		bad("-threshold must be a relative rise above -1 (-100 %%), got %v", o.threshold)
	}
	if !(o.modelError >= 0 && o.modelError < 1) {
		bad("-model-error must be in [0, 1), got %v", o.modelError)
	}
	if o.bandBlocks < 0 || o.bandBlocks == 1 {
		bad("-band-blocks must be 0 (every block) or >= 2, got %d", o.bandBlocks)
	}
	if len(o.factors) < 2 {
		bad("-operating needs 2 loads or more, got %d", len(o.factors))
	}
	if o.reps < 2 {
		bad("-reps must be >= 2: a knee needs an interval, got %d", o.reps)
	}
	if o.blocks < 2 {
		bad("-blocks must be >= 2: a verdict needs an interval, got %d", o.blocks)
	}
	if o.horizon <= 0 {
		bad("-horizon must be > 0, got %v", o.horizon)
	}
	return errors.Join(errs...)
}

// run parses args and writes the study to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return study(w, o)
}
