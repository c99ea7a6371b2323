// Command routing answers the question the reference chapter opens with:
//
//	For our model, hardware, request distribution, and TTFT/ITL targets,
//	does prefix-aware routing increase goodput enough to justify its
//	control-plane complexity?
//
// for a fleet of 4 Atlas TP4 replicas. It declares the hypothesis and its
// threshold first (PrefixAffinity, SGLang's cache-aware router, raises the
// knee, the capacity at which 95 % of requests meet the TTFT and ITL
// bounds, by at least 5 %), then at low and at high prefix reuse
// (workload.FleetLowReuse and FleetHighReuse) sweeps the goodput curve of
// each router — RoundRobin, LeastLoaded and PrefixAffinity — for its
// knee, picks the A/B test's loads from RoundRobin's knee (0.7 to 1.2
// times it), and tests PrefixAffinity (B) against RoundRobin and against
// LeastLoaded (A) on paired seeded blocks: each block's knee over those
// loads, A's and B's on the block's seed (analysis.MetricKnee). It prints
// a verdict line per reuse level with the paired difference of the knees
// and its interval, the paired latency (TTFT p50 and p99, ITL p99) at the
// loads the baseline serves, the knee and prefix hit rate of every
// router, and writes the goodput curves, the prefix hit rates and a
// benchmark card per reuse level into -out. Each A/B test declares a
// model band before the runs (analysis.AtlasBand(-model-error): step
// times ±10 % and the batch- and context-dependent Atlas shapes), reruns
// under each model on the first -band-blocks blocks, each model at the
// same multiples of RoundRobin's knee under that model (RoundRobin's
// sweep runs the band on its first 2 seeds; a model under which that
// knee lies below the sweep's lowest load gets no loads and no verdict),
// and a line per reuse level says whether its verdict holds under every
// model of the band or rests on the model, naming the model under which
// it flips. Last, it asks the question in replicas: for -size-load req/s
// of each level's traffic, the fewest Atlas TP4 replicas behind each
// router whose mean attainment over -size-reps seeds meets 95 %
// (analysis.Sizing, every router on the same seeds), with the seed range,
// the attainment there and one replica fewer, under the nominal model.
//
// Then the control plane as it is (issue 37): PrefixAffinity against
// LeastLoaded again, at the same loads on -cp-blocks blocks under the
// nominal model, both behind each control plane in turn — the exact view
// with fresh signals (the ideal: with -cp-blocks equal to -blocks it is
// the test above, to the bit), SGLang's approximate tree
// (sim.ApproxView at its defaults), the cache as of its KV events 0.1,
// 1 and 5 s late (sim.EventsView, llm-d's precise scorer), and load
// signals 0.5, 2 and 5 s stale read by 4 router instances
// (Fleet.SignalDelay, Frontends; the view exact, so that only the load
// signals lag) — and says, on each staleness axis, where PrefixAffinity's
// rise falls below the threshold (interpolated between the lags tried)
// or that it does not. Last, PrefixAffinity's goodput retained past its
// knee (at 1.5 and 2 times it, as a share of its peak;
// analysis.Grid.PastKnee), alone and behind a gateway that sheds while
// every replica has more than one request waiting (sim.Saturation,
// llm-d's saturation detector).
//
// A goodput hypothesis at loads below the baseline's knee, as this
// program declared before, cannot come out improved: goodput there is
// the offered load under every router.
//
//	go run ./examples/routing
//	go run ./examples/routing -reps 5 -blocks 10 -horizon 10m
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
		fmt.Fprintln(os.Stderr, "routing:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	replicas   int
	input      int     // fresh prompt tokens after the shared prefix
	output     int     // output tokens
	threshold  float64 // relative improvement the hypothesis demands
	modelError float64 // ±step-time error of the model band
	bandBlocks int     // blocks each variant of the band runs (0: all)
	factors    []float64
	sizeLoad   float64 // traffic each router's fleet is sized for, req/s
	sizeReps   int     // seeded replications per fleet size
	start      float64 // first load of each automatic sweep, req/s
	reps       int
	blocks     int
	cpBlocks   int // blocks of each control plane's A/B test (0: none)
	horizon    time.Duration
	seed       uint64
	workers    int
	out        string
	args       []string
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{replicas: 4, input: 500, output: 200, threshold: 0.05, modelError: 0.1, bandBlocks: 6, start: 2, reps: 4, blocks: 12, cpBlocks: 6, sizeLoad: 40, sizeReps: 6,
		horizon: 5 * time.Minute, out: "out/routing", args: args}
	fs := flag.NewFlagSet("routing", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/routing [flags]\n\n"+
			"Does prefix-aware routing (PrefixAffinity) raise the knee of a fleet of Atlas TP4\n"+
			"replicas by at least -threshold over RoundRobin and LeastLoaded, at low and at high\n"+
			"prefix reuse, and does the verdict hold under every model of the band? The defaults\n"+
			"run in about two and a quarter minutes on 2 cores.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.replicas, "replicas", o.replicas, "Atlas TP4 replicas in the fleet")
	fs.IntVar(&o.input, "input", o.input, "fresh prompt tokens of each request, after its shared prefix (if any)")
	fs.IntVar(&o.output, "output", o.output, "output tokens of each request")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "relative rise of the knee PrefixAffinity must show over each baseline (0.05 is 5 %), declared before the runs")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "relative error of every step time the A/B test's model band reruns under (0.1: x0.9 and x1.1), beside the Atlas shape alternatives atlas-linear, atlas-roofline and atlas-profiled (0: the shapes only)")
	fs.IntVar(&o.bandBlocks, "band-blocks", o.bandBlocks, "A/B blocks each model of the band reruns, the first of the A/B test's (0: every block; the default keeps the study near two minutes on 2 cores)")
	factors := fs.String("operating", "0.7,0.8,0.9,1,1.1,1.2", "loads of the A/B test, as comma-separated multiples of RoundRobin's knee at each reuse level: each block's knee is read over them (at least 2), the latency at those the baseline serves")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of each router's automatic sweep, req/s (the grid grows by 1.5 to collapse, then bisects 3 times at the knee)")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load of each sweep")
	fs.Float64Var(&o.sizeLoad, "size-load", o.sizeLoad, "traffic, req/s, each router's fleet is sized for at each reuse level: the fewest Atlas TP4 replicas whose mean attainment meets 95 % (0: size none)")
	fs.IntVar(&o.sizeReps, "size-reps", o.sizeReps, "seeded replications per fleet size of the sizing (every router runs the same seeds)")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks, each a curve over the A/B test's loads (A and B share each block's seed)")
	fs.IntVar(&o.cpBlocks, "cp-blocks", o.cpBlocks, "seeded A/B blocks of each control plane's test (PrefixAffinity against LeastLoaded behind stale signals and each cache view; 0: run none)")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window, simulated time (warm-up: a tenth of it; measured requests may finish one window later)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of replications and blocks")
	fs.IntVar(&o.workers, "workers", 0, "runs in parallel within each sweep and experiment (0: GOMAXPROCS; the routers' sweeps and both reuse levels also run side by side); results do not depend on it")
	fs.StringVar(&o.out, "out", o.out, "directory for the goodput and prefix-hit-rate charts (PNG, SVG) and the benchmark cards (Markdown, JSON); empty: write none")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.factors, err = parseFactors(*factors); err != nil {
		return o, err
	}
	return o, checkFlags(o)
}

// parseFactors reads -operating: positive finite multiples, at least one.
func parseFactors(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("-operating: %q is not a positive multiple of the knee", f)
		}
		out = append(out, x)
	}
	return out, nil
}

// checkFlags refuses nonsense by flag name, before anything runs.
func checkFlags(o options) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.replicas < 1 {
		bad("-replicas must be >= 1, got %d", o.replicas)
	}
	if o.input < 1 || o.output < 1 {
		bad("-input and -output must be >= 1 token, got %d and %d", o.input, o.output)
	}
	if !(o.threshold > -1) || math.IsInf(o.threshold, 0) {
		bad("-threshold must be a relative improvement above -1 (-100 %%), got %v", o.threshold)
	}
	if !(o.start > 0) || math.IsInf(o.start, 0) {
		bad("-start: %v is not a positive rate in requests/s", o.start)
	}
	if o.reps < 2 {
		bad("-reps must be >= 2: a knee needs an interval, got %d", o.reps)
	}
	if !(o.modelError >= 0 && o.modelError < 1) {
		bad("-model-error must be in [0, 1) (0.1 is ±10 %%), got %v", o.modelError)
	}
	if o.bandBlocks < 0 || o.bandBlocks == 1 {
		bad("-band-blocks must be 0 (every block) or >= 2: a verdict needs an interval, got %d", o.bandBlocks)
	}
	if !(o.sizeLoad >= 0) || math.IsInf(o.sizeLoad, 0) {
		bad("-size-load must be a rate >= 0 req/s (0: size none), got %v", o.sizeLoad)
	} else if o.output >= 1 && o.sizeLoad > maxSizeLoad(o) {
		bad("-size-load %v req/s is more than any fleet of %d Atlas TP4 replicas could carry (at most %.4g req/s: each replica decodes at most 32 requests a 45 ms step, and a request needs %d steps for its output)",
			o.sizeLoad, maxSizing, maxSizeLoad(o), o.output)
	}
	if o.sizeReps < 2 {
		bad("-size-reps must be >= 2: a size needs a seed range, got %d", o.sizeReps)
	}
	if o.blocks < 2 {
		bad("-blocks must be >= 2: a verdict needs an interval, got %d", o.blocks)
	}
	if o.cpBlocks < 0 || o.cpBlocks == 1 {
		bad("-cp-blocks must be 0 (none) or >= 2: a verdict needs an interval, got %d", o.cpBlocks)
	}
	if len(o.factors) < 2 {
		bad("-operating needs 2 loads or more: each block's knee is read over them, got %d", len(o.factors))
	}
	if o.horizon <= 0 {
		bad("-horizon must be > 0: sweeps and experiments compare fixed windows, got %v", o.horizon)
	}
	return errors.Join(errs...)
}

// maxSizeLoad bounds -size-load: maxSizing replicas, each decoding at
// most a batch of 32 requests a 45 ms step (Frozen's decode step, the
// least a step costs), each request needing o.output steps.
func maxSizeLoad(o options) float64 {
	return maxSizing * 32 / (float64(o.output) * 0.045)
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
