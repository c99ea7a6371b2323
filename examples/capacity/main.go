// Command capacity prints the capacity estimate of an LLM serving replica,
// the Atlas TP4 replica of the reference chapter by default, bound by bound:
// each figure with its value, unit, the arithmetic behind it and the knob
// that would move it. Flags change the operating point.
//
//	go run ./examples/capacity
//	go run ./examples/capacity -batch 48 -output 400
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
	"github.com/servesim/servesim/sim"
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
	var s sim.Sweep
	if !o.skip {
		if s, err = sweepFor(r, o); err != nil {
			return err
		}
	}
	if err := writeEstimate(w, "Atlas TP4", r); err != nil || o.skip {
		return err
	}
	return simulate(w, r, s, o)
}

// parse reads the flags into the replica's operating point and the
// simulation's options, refusing nonsense values by flag name.
func parse(w io.Writer, args []string) (costmodel.Replica, simOptions, error) {
	r := costmodel.AtlasTP4()
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(w)
	p := &r.Point
	// -chunk, -context and -seq-tokens describe the estimate's operating
	// point only: the simulation derives chunks, contexts and sequence
	// lengths from the engine (vLLM's defaults) and the requests (-prompt,
	// -output), until the estimate and the simulation share one
	// configuration.
	const estimateOnly = " (estimate only: the simulation does not use it yet)"
	fs.IntVar(&p.Batch, "batch", p.Batch, "decoding sequences per step")
	fs.IntVar(&p.Context, "context", p.Context, "context tokens of each decoding sequence"+estimateOnly)
	fs.IntVar(&p.SeqTokens, "seq-tokens", p.SeqTokens, "KV tokens a resident sequence may reach"+estimateOnly)
	fs.IntVar(&p.PromptTokens, "prompt", p.PromptTokens, "prompt tokens of one request")
	fs.IntVar(&p.ChunkCap, "chunk", p.ChunkCap, "prefill chunk cap per request and step, tokens (0: none)"+estimateOnly)
	fs.IntVar(&p.OutputTokens, "output", p.OutputTokens, "output tokens per response")
	fs.DurationVar(&p.SLO.TTFT, "ttft", p.SLO.TTFT, "SLO: time to first token")
	fs.DurationVar(&p.SLO.ITL, "itl", p.SLO.ITL, "SLO: every inter-token latency")
	o := simOptions{start: 0.5, reps: 5, warmup: time.Minute, horizon: 10 * time.Minute, operating: 1.5, args: args}
	fs.BoolVar(&o.skip, "estimate-only", false, "print the estimate without simulating")
	loads := fs.String("loads", "", "comma-separated offered loads in req/s (default: automatic, geometric from -start, then bisection at the knee)")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of the automatic grid, req/s")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "simulated warm-up left out of each run")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window (simulated time)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of the replications")
	fs.Float64Var(&o.operating, "operating", o.operating, "operating load whose headroom to the knee is reported, req/s (0: none)")
	fs.StringVar(&o.out, "out", "out", "directory for the plots, the benchmark card and, in events/, the raw events (earlier runs' load=…-rep=….jsonl files there are removed first); empty: write none")
	if err := fs.Parse(args); err != nil {
		return r, o, err
	}
	if fs.NArg() > 0 {
		return r, o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if !(o.start > 0) || math.IsInf(o.start, 0) {
		return r, o, fmt.Errorf("-start: %v is not a positive rate in requests/s", o.start)
	}
	if !(o.operating >= 0) || math.IsInf(o.operating, 0) {
		return r, o, fmt.Errorf("-operating: %v is not a load in requests/s (a positive rate, or 0 for none)", o.operating)
	}
	if *loads != "" {
		var err error
		if o.loads, err = parseLoads(*loads); err != nil {
			return r, o, err
		}
	}
	return r, o, nil
}

// simulate runs the sweep and writes its section.
func simulate(w io.Writer, r costmodel.Replica, s sim.Sweep, o simOptions) error {
	e, err := r.Estimate()
	if err != nil {
		return err
	}
	var events *eventFiles
	if o.out != "" {
		if events, err = newEventFiles(filepath.Join(o.out, "events")); err != nil {
			return err
		}
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
	return writeOutputs(w, o.out, r, s, c, o)
}
