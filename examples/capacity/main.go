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
	"os"
	"path/filepath"
	"time"

	"github.com/servesim/servesim/costmodel"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

// run parses args and writes the report to w.
func run(w io.Writer, args []string) error {
	r := costmodel.AtlasTP4()
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(w)
	p := &r.Point
	fs.IntVar(&p.Batch, "batch", p.Batch, "decoding sequences per step")
	fs.IntVar(&p.Context, "context", p.Context, "context tokens of each decoding sequence")
	fs.IntVar(&p.SeqTokens, "seq-tokens", p.SeqTokens, "KV tokens a resident sequence may reach")
	fs.IntVar(&p.PromptTokens, "prompt", p.PromptTokens, "prompt tokens of one request")
	fs.IntVar(&p.ChunkTokens, "chunk", p.ChunkTokens, "prefill chunk mixed into a decode step, tokens")
	fs.IntVar(&p.OutputTokens, "output", p.OutputTokens, "output tokens per response")
	fs.DurationVar(&p.SLO.TTFT, "ttft", p.SLO.TTFT, "SLO: time to first token")
	fs.DurationVar(&p.SLO.ITL, "itl", p.SLO.ITL, "SLO: every inter-token latency")
	o := simOptions{start: 0.5, reps: 5, warmup: time.Minute, horizon: 10 * time.Minute, operating: 1.5}
	fs.BoolVar(&o.skip, "estimate-only", false, "print the estimate without simulating")
	fs.StringVar(&o.loads, "loads", "", "comma-separated offered loads in req/s (default: automatic, geometric from -start, then bisection at the knee)")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of the automatic grid, req/s")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "simulated warm-up left out of each run")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window (simulated time)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of the replications")
	fs.Float64Var(&o.operating, "operating", o.operating, "operating load whose headroom to the knee is reported, req/s (0: none)")
	fs.StringVar(&o.out, "out", "out", "directory for the plots and the benchmark card (empty: write none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := writeEstimate(w, "Atlas TP4", r); err != nil || o.skip {
		return err
	}
	return simulate(w, r, o)
}

// simulate runs the sweep and writes its section.
func simulate(w io.Writer, r costmodel.Replica, o simOptions) error {
	e, err := r.Estimate()
	if err != nil {
		return err
	}
	s, err := sweepFor(r, o)
	if err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	var events *eventFiles
	if o.out != "" {
		events = &eventFiles{dir: filepath.Join(o.out, "events")}
		if err := os.MkdirAll(events.dir, 0o755); err != nil {
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
