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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return writeEstimate(w, "Atlas TP4", r)
}
