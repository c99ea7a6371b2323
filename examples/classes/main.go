// Command classes shows the clients a real harness is: first an open-loop
// Poisson load on the Atlas TP4 replica run uncapped and then under a
// client-side concurrency cap, as `vllm bench serve --request-rate R
// --max-concurrency N` runs it (sim.Config.MaxConcurrency): TTFT counted
// from the send, as vLLM counts it, beside the client wait and the first
// token counted from the instant the request was due, and goodput
// counted from that instant (a request is good only if its first token
// came within the TTFT bound of when it was due) beside goodput from the
// send, with what each cap of N can carry by Little's law (N over the
// mean time a request holds a slot); then two request classes with their
// own SLOs, interactive (TTFT ≤ 600 ms) and batch (TTFT ≤ 30 s), under
// FCFS and under Priority with the interactive class first: each class's
// table and knee, an A/B verdict on the interactive class's attainment
// declared before the runs, and each class's attainment under both with
// the change paired on each seed, saying where Priority helps one class
// at the other's expense.
//
//	go run ./examples/classes
//	go run ./examples/classes -rate 2.5 -caps 8,16,32
//	go run ./examples/classes -loads 1.8,2,2.2 -reps 10 -out out
//
// Every figure is a mean over -reps seeded replications (common random
// numbers: every configuration sees the same requests, and replication k
// of FCFS and of Priority is block k of the A/B comparison); intervals
// are 95 %. One replication has no interval: -reps 1 prints point estimates,
// each interval "[n/a]", and takes no verdict. The verdict loads (-near)
// must be loads of the sweep (-loads). Every flag is checked before any
// run, naming it; no value stands for a default. With -out (made before
// the runs), a benchmark card per capped run and per policy (Markdown
// and JSON, with the per-class table) is written there.
//
// # The model band
//
// The verdict is read under a model band declared before the runs
// (-model-error 0.1 and -shapes atlas: analysis.AtlasBand, every step
// time ±10 % and atlas-linear, atlas-roofline and atlas-profiled, each
// holding Frozen's 45 ms decode step at batch 32 / 2,000 context, these
// requests' prompt length, and its prefill line), each model on the
// first -band-reps seeds (0: all of them), FCFS and Priority on the same
// seeds under it. Each model sweeps both policies over -loads, which
// places FCFS's knee under it, and the verdict is read twice: at the
// verdict loads as declared (-near; the experiment rerun under each
// model, as analysis.Experiment.Run with the band declared reruns it),
// and near each model's own knee, at the same multiples of FCFS's knee
// under it as -near are of FCFS's nominal knee (analysis.BandLoads, as
// Experiment.BandLoads would place them): the claim is "near the knee",
// and the band moves the knee. Each reading says whether the verdict
// holds under every model of the band or rests on the model
// (ExperimentResult.BandVerdict), then the verdict under each model; and
// each class's paired change under each model at both, so that a gain
// bought at another class's expense shows under every model.
//
// At the defaults the shapes price a step below batch 32 shorter than
// Frozen's 45 ms, and FCFS holds about 26 requests over the verdict
// loads, so under them (and with steps 10 % faster) FCFS's knee moves
// from 2.11 to 2.36-2.42 req/s, and with steps 10 % slower down to 1.85.
// At the verdict loads as declared the verdict rests on the model: below
// the moved knee FCFS meets the interactive SLO nearly everywhere and
// Priority buys +1.8 to +2.8 %, inconclusive against the 2 % threshold;
// past the knee of the slower model the improvement is +137 % but too
// noisy to call. Near each model's own knee it holds under every model
// of the band (+5.5 % to +30 %, each interval above the threshold). Under
// every model, at both readings, the interactive class gains and the
// batch class loses nothing beyond its interval.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "classes:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	rate    float64       // part 1's offered load, req/s
	caps    []int         // part 1's concurrency caps (uncapped runs too)
	loads   []float64     // part 2's sweep, req/s
	near    []float64     // part 2's verdict loads, req/s
	reps    int           // seeded replications (blocks of the verdict)
	horizon time.Duration // window end; the warm-up is a tenth
	seed    uint64
	workers int
	out     string
	// modelError, shapes and bandReps are the verdict's model band:
	// every step time ±modelError, the shape alternatives shapes names
	// ("atlas": analysis.AtlasBand's; "": none), each model on the first
	// bandReps seeds (0: -reps).
	modelError float64
	shapes     string
	bandReps   int
	args       []string
}

// lengths are the chapter's requests: 2,000 prompt tokens, 200 output
// tokens.
var lengths = workload.Fixed(2000, 200)

func parse(w io.Writer, args []string) (options, error) {
	o := options{args: args}
	fs := flag.NewFlagSet("classes", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Float64Var(&o.rate, "rate", 2.2, "offered load of the capped runs, req/s (vllm bench serve --request-rate; Atlas's knee is about 2)")
	caps := fs.String("caps", "16,32,48", "comma-separated client concurrency caps to run beside the uncapped run (--max-concurrency)")
	loads := fs.String("loads", "1.6,2,2.2,2.4,2.8", "comma-separated offered loads of the two-class sweeps, req/s")
	near := fs.String("near", "2,2.2,2.4", "comma-separated loads near the knee at which the A/B verdict (Priority against FCFS) is taken, req/s")
	fs.IntVar(&o.reps, "reps", 6, fmt.Sprintf("seeded replications per configuration and load, 1 to %d (1: point estimates, no intervals and no verdict)", maxReps))
	fs.DurationVar(&o.horizon, "horizon", 10*time.Minute, "end of the measurement window, simulated (the first tenth is warm-up)")
	fs.Uint64Var(&o.seed, "seed", 1, "base seed of the replications")
	fs.IntVar(&o.workers, "workers", 0, "runs in parallel (0: one per CPU); results are the same for any value")
	fs.StringVar(&o.out, "out", "", "directory for the benchmark cards (Markdown and JSON) of every capped run and of each policy; empty: write none")
	fs.Float64Var(&o.modelError, "model-error", 0.1, "the verdict's model band, declared before the runs: every step time ± this fraction (0.1 is ±10 %; 0: none)")
	fs.StringVar(&o.shapes, "shapes", "atlas", "shape alternatives in the verdict's model band: \"atlas\" (atlas-linear, atlas-roofline, atlas-profiled: analysis.AtlasBand, calibrated to Frozen's defaults) or \"\" (none)")
	fs.IntVar(&o.bandReps, "band-reps", 0, "seeds each model of the band runs, the first of -reps' (0 or more than -reps: all of them; else at least 2); the nominal figures keep -reps")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.caps, err = parseInts("-caps", *caps); err != nil {
		return o, err
	}
	if o.loads, err = parseLoads("-loads", *loads); err != nil {
		return o, err
	}
	if o.near, err = parseLoads("-near", *near); err != nil {
		return o, err
	}
	return o, o.check()
}

// maxReps bounds -reps: every replication's summary (and, for the capped
// runs, every measured request's first-token instant) is kept until the
// report is written, so memory grows with it.
const maxReps = 1000

// check refuses nonsense values, naming the flag. No value stands for a
// default (-workers 0, documented as one per CPU, changes no result).
func (o options) check() error {
	var errs []error
	if !(o.rate > 0) || math.IsInf(o.rate, 0) {
		errs = append(errs, fmt.Errorf("-rate must be a positive finite rate, got %v", o.rate))
	}
	if o.reps < 1 || o.reps > maxReps {
		errs = append(errs, fmt.Errorf("-reps must be 1 to %d replications (1: no intervals and no verdict), got %d", maxReps, o.reps))
	}
	for _, l := range o.near {
		if !slices.Contains(o.loads, l) {
			errs = append(errs, fmt.Errorf("-near: %g req/s is not among -loads (%s): the verdict is taken at loads of the sweep", l, joinLoads(o.loads)))
		}
	}
	if o.horizon <= 0 {
		errs = append(errs, fmt.Errorf("-horizon must be > 0: the runs compare fixed windows, got %v", o.horizon))
	} else if err := o.window().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("-horizon %v: %w", o.horizon, err))
	}
	if o.workers < 0 {
		errs = append(errs, fmt.Errorf("-workers must be >= 0, got %d", o.workers))
	}
	if !(o.modelError >= 0 && o.modelError < 1) {
		errs = append(errs, fmt.Errorf("-model-error must be a fraction in [0, 1) (0.1 is ±10 %%; 0: none), got %v", o.modelError))
	}
	if o.shapes != "" && o.shapes != "atlas" {
		errs = append(errs, fmt.Errorf("-shapes: %q is not \"atlas\" or \"\"", o.shapes))
	}
	if o.bandReps < 0 || o.bandReps == 1 {
		errs = append(errs, fmt.Errorf("-band-reps must be 0 (-reps) or >= 2: a verdict under a model needs an interval, got %d", o.bandReps))
	}
	if len(o.loads) == 0 {
		errs = append(errs, errors.New("-loads must name at least one load"))
	}
	if len(o.near) == 0 {
		errs = append(errs, errors.New("-near must name at least one load"))
	}
	return errors.Join(errs...)
}

func parseInts(name, s string) ([]int, error) {
	var out []int
	for _, f := range fields(s) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%s: %q is not a cap of at least one request", name, f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("%s: %d is given twice", name, v)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseLoads(name, s string) ([]float64, error) {
	var out []float64
	for _, f := range fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %q is not a positive rate", name, f)
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("%s: %g req/s is given twice", name, v)
		}
		out = append(out, v)
	}
	return out, nil
}

// joinLoads lists loads as the flags take them.
func joinLoads(ls []float64) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = strconv.FormatFloat(l, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func fields(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// window measures from a tenth of the horizon to the horizon.
func (o options) window() sim.Window {
	return sim.Window{Warmup: o.horizon / 10, Horizon: o.horizon}
}

// run parses args, runs both parts and writes the report to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.out != "" {
		// Made before the runs, so that a directory that cannot be made
		// fails at once.
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("-out: %w", err)
		}
	}
	caps, err := capStudy(o)
	if err != nil {
		return err
	}
	cls, err := classStudyOf(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Atlas TP4 (engine.Config{} priced by costmodel.Frozen{}), requests of %d prompt and %d output tokens,\n", 2000, 200)
	if o.reps == 1 {
		fmt.Fprintf(w, "measured from %v to %v, 1 seed: one replication, so every interval is n/a (one replication) and no verdict is taken.\n\n", o.window().Warmup, o.horizon)
	} else {
		fmt.Fprintf(w, "measured from %v to %v, %d seeds (common random numbers), 95 %% intervals.\n\n", o.window().Warmup, o.horizon, o.reps)
	}
	writeCaps(w, o, caps)
	fmt.Fprintln(w)
	writeClasses(w, o, cls)
	if o.out == "" {
		return nil
	}
	return writeCards(w, o, caps, cls)
}
