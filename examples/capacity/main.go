// Command capacity prints the capacity estimate of an LLM serving replica,
// the Atlas TP4 replica of the reference chapter by default, bound by bound
// (each figure with its value, unit, the arithmetic behind it and the knob
// that would move it), then simulates the same replica's goodput curve
// under a declared model error: the knee with its seed interval and its
// model range, the peak, the headroom, and the estimate held against them.
// Every dial (batch, token budget, chunk cap, lengths, SLO) moves both the
// estimate and the simulation.
//
//	go run ./examples/capacity
//	go run ./examples/capacity -batch 48 -output 400
//	go run ./examples/capacity -chunk 512
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim/analysis"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

// run parses args and writes the report to w. Every argument is checked
// before anything is written: a nonsense flag is refused at once.
func run(w io.Writer, args []string) error {
	r, o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err // before the sweep, which would name its own copy of the field
	}
	e, err := r.Estimate()
	if err != nil {
		return err
	}
	if o.skip {
		writeEstimate(w, "Atlas TP4", r, e)
		return nil
	}
	s, err := sweepFor(r, e, o)
	if err != nil {
		return err
	}
	// The output directory is made, and written to, before the estimate
	// prints: a directory that cannot be written is said at once, not
	// after the sweep.
	var events *eventFiles
	if o.out != "" {
		if err := writable(o.out); err != nil {
			return err
		}
		if events, err = newEventFiles(filepath.Join(o.out, "events")); err != nil {
			return fmt.Errorf("-out %s: %w", o.out, err)
		}
	}
	writeEstimate(w, "Atlas TP4", r, e)
	writeNeverFits(w, r.Point)
	return simulate(w, r, e, s, events, o)
}

// writable makes dir (and its parents) and writes a file in it, removed
// at once: an -out that cannot hold the outputs is refused by name before
// anything runs.
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("-out %s: the output directory cannot be made: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".capacity-probe-*")
	if err != nil {
		return fmt.Errorf("-out %s: the output directory cannot be written: %w", dir, err)
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

// parse reads the flags into the replica's operating point and the
// simulation's options, refusing nonsense values by flag name. Every flag
// of the replica moves the estimate and the simulation alike; what the
// estimate needs beyond them (the decoding context, the sequence length,
// the attainment target, the offered load) is derived from the same
// flags, so that the estimate describes the replica that ran.
func parse(w io.Writer, args []string) (costmodel.Replica, simOptions, error) {
	r := costmodel.AtlasTP4()
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(w)
	p := &r.Point
	fs.IntVar(&p.Batch, "batch", p.Batch, "sequences per step: the engine's sequence cap (max_num_seqs)")
	fs.IntVar(&p.Budget, "budget", p.Budget, "tokens per step: the engine's token budget (max_num_batched_tokens)")
	fs.IntVar(&p.ChunkCap, "chunk", p.ChunkCap, "prefill tokens one request may compute per step (long_prefill_token_threshold); 0: no cap beyond the budget")
	fs.IntVar(&p.PromptTokens, "prompt", p.PromptTokens, "prompt tokens of every request")
	fs.IntVar(&p.OutputTokens, "output", p.OutputTokens, "output tokens of every response")
	fs.DurationVar(&p.SLO.TTFT, "ttft", p.SLO.TTFT, "SLO: time to first token")
	fs.DurationVar(&p.SLO.ITL, "itl", p.SLO.ITL, "SLO: every inter-token latency")
	o := simOptions{start: 0.5, reps: 5, warmup: time.Minute, horizon: 10 * time.Minute, operating: 1.5, modelError: 0.1, args: args}
	fs.BoolVar(&o.skip, "estimate-only", false, "print the estimate without simulating")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "relative error declared on every step time before the sweep: it also runs at ×(1 ± this) on the same seeds (0: none)")
	fs.BoolVar(&o.shapes, "shapes", false, "also run the band under the three shape alternatives of Atlas's step (costmodel.AtlasShapes: atlas-linear, atlas-roofline, atlas-profiled, each holding 45 ms at batch 32 / 2,000 context) and say whether the knee holds under every model or rests on one")
	loads := fs.String("loads", "", "comma-separated offered loads in req/s (default: automatic, geometric from -start, then bisection at the knee)")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of the automatic grid, req/s")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load, 1 to 1000 (1: point estimates, no intervals)")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "simulated warm-up left out of each run")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window (simulated time)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of the replications")
	fs.Float64Var(&o.operating, "operating", o.operating, "operating load whose utilisation and headroom to the knee are reported, req/s (0: none)")
	fs.StringVar(&o.out, "out", "out", "directory for the plots, the benchmark card and, in events/, the raw events (earlier runs' load=…-rep=….jsonl files there are removed first); empty: write none")
	if err := fs.Parse(args); err != nil {
		return r, o, err
	}
	if fs.NArg() > 0 {
		return r, o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := o.check(); err != nil {
		return r, o, err
	}
	if *loads != "" {
		var err error
		if o.loads, err = parseLoads(*loads); err != nil {
			return r, o, err
		}
	}
	derive(p, o)
	return r, o, nil
}

// derive sets the operating point's figures that follow from the flags:
// the simulated sequences reach prompt + output tokens and decode, on
// average, half-way through their answer; the attainment target is the
// sweep's; the offered load is the operating load.
func derive(p *costmodel.OperatingPoint, o simOptions) {
	p.SeqTokens = p.PromptTokens + p.OutputTokens
	p.Context = p.PromptTokens + p.OutputTokens/2
	p.Target = target
	p.Offered = o.operating
}

// maxReps bounds -reps: every replication's summary is kept until the
// curve is computed, so memory grows with it.
const maxReps = 1000

// check refuses nonsense option values by flag name: none is replaced by
// a default behind the user's back (-reps 0 ran analysis.Sweep's default of 5
// and printed 0).
func (o simOptions) check() error {
	if o.reps < 1 || o.reps > maxReps {
		return fmt.Errorf("-reps: %d is not a number of replications per load in [1, %d] (intervals need 2 or more)", o.reps, maxReps)
	}
	if o.warmup < 0 {
		return fmt.Errorf("-warmup: %v is negative (0 measures from the start)", o.warmup)
	}
	if o.horizon <= o.warmup {
		return fmt.Errorf("-horizon: %v must end the window after -warmup (%v): a sweep compares steady windows", o.horizon, o.warmup)
	}
	if !(o.start > 0) || math.IsInf(o.start, 0) {
		return fmt.Errorf("-start: %v is not a positive rate in requests/s", o.start)
	}
	if !(o.operating >= 0) || math.IsInf(o.operating, 0) {
		return fmt.Errorf("-operating: %v is not a load in requests/s (a positive rate, or 0 for none)", o.operating)
	}
	if !(o.modelError >= 0 && o.modelError < 1) {
		return fmt.Errorf("-model-error: %v is not a relative error in [0, 1) (0.1 is ±10 %%)", o.modelError)
	}
	return nil
}

// simulate runs the sweep, writing every run's events into events (nil:
// none), and writes its section.
func simulate(w io.Writer, r costmodel.Replica, e costmodel.Estimate, s analysis.Sweep, events *eventFiles, o simOptions) error {
	if events != nil {
		s.Observe = events.observe
	}
	c, err := s.Run()
	if events != nil {
		err = errors.Join(err, events.close())
	}
	if err != nil {
		return err
	}
	writeSimulation(w, r, e, c, o)
	if o.out == "" {
		return nil
	}
	return writeOutputs(w, o.out, r, e, s, c, o)
}
