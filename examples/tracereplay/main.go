// Command tracereplay replays a real request trace, the Azure LLM inference
// trace 2023 (conversation service) by default, through the Atlas TP4
// replica: first at the trace's own pace, then time-scaled to a list of
// offered loads, printing metrics and goodput for each and the load where
// attainment falls below its target.
//
//	go run ./examples/tracereplay
//	go run ./examples/tracereplay -window 10m -rates 1,2,3
//	go run ./examples/tracereplay -trace ../shared/traces/mooncake_synthetic_trace.jsonl -format mooncake
//	go run ./examples/tracereplay -trace examples/tracereplay/testdata/conversations.csv -format generic -keep-conversations -min-think 2s
//
// By default every row is sent at its recorded (time-scaled) instant:
// timestamp replay. With -keep-conversations, a trace whose rows carry a
// conversation (the generic form's conversation column, BurstGPT's Session
// ID) is replayed keeping them: turn k+1 is sent at the later of its
// recorded instant and turn k's end plus -min-think, so a turn never
// overtakes the answer it follows (workload.ConversationReplay). The
// report names the replay it ran. Neither public trace in ../shared/traces
// has a conversation column (Azure's has none; Mooncake's keeps the turn
// order but not which rows form a conversation), so
// testdata/conversations.csv, a synthetic multi-turn trace in the generic
// form (see its NOTICE.md), shows the difference.
//
// By default the trace is read from ../shared/traces beside the repository
// root; where that is missing, from the 2,000-request sample shipped in
// examples/tracereplay/testdata (see its NOTICE.md). The Azure trace is
// by Patel et al., "Splitwise: Efficient generative LLM inference using
// phase splitting", ISCA 2024, released by Microsoft Azure under
// CC-BY-4.0; the program prints the attribution of the trace it read with
// its results (for an Azure file, the release its first timestamp dates
// and the service its name gives: see source.go).
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

	"github.com/servesim/servesim/workload"
)

const azureConv = "AzureLLMInferenceTrace_conv.csv"

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tracereplay:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	trace, format string
	window        time.Duration
	rates         []float64
	target        float64
	conversations workload.ConversationReplay
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{format: "azure", target: 0.95}
	fs := flag.NewFlagSet("tracereplay", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.StringVar(&o.trace, "trace", defaultTrace(), "trace file")
	fs.StringVar(&o.format, "format", o.format, "trace format: azure, mooncake, burstgpt or generic (CSV)")
	fs.DurationVar(&o.window, "window", 0, "replay only the trace's first span of this length (0: all)")
	rates := fs.String("rates", "1,1.5,1.75,2,2.5,3", "offered loads to time-scale the trace to, requests/s")
	fs.Float64Var(&o.target, "target", o.target, "attainment target")
	fs.BoolVar(&o.conversations.Keep, "keep-conversations", false, "keep conversations: a turn waits for the answer to the previous turn (needs a conversation column)")
	fs.DurationVar(&o.conversations.MinThink, "min-think", 0, "with -keep-conversations, the least time between an answer and the next turn")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.rates, err = parseRates(*rates); err != nil {
		return o, err
	}
	if o.window < 0 || !(o.target > 0 && o.target <= 1) {
		return o, fmt.Errorf("-window must be >= 0 and -target in (0, 1], got %v and %v", o.window, o.target)
	}
	if c := o.conversations; c.MinThink < 0 || c.MinThink > 0 && !c.Keep {
		return o, fmt.Errorf("-min-think must be >= 0 and applies only with -keep-conversations, got %v (keep: %t)", c.MinThink, c.Keep)
	}
	return o, nil
}

func parseRates(s string) ([]float64, error) {
	var rates []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-rates: %q is not a positive rate", f)
		}
		rates = append(rates, v)
	}
	return rates, nil
}

// sample is the shipped excerpt of the Azure conversation trace, relative
// to the module root.
const sample = "examples/tracereplay/testdata/azure_conv_sample.csv"

// defaultTrace is ../shared/traces/<Azure conversation> beside the root of
// the module containing the working directory, or the shipped sample when
// that is missing.
func defaultTrace() string {
	dir, err := os.Getwd()
	for err == nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			full := filepath.Join(dir, "..", "shared", "traces", azureConv)
			if _, err := os.Stat(full); err != nil {
				return filepath.Join(dir, sample)
			}
			return full
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return filepath.Join("..", "shared", "traces", azureConv)
}

func traceConfig(format string) (workload.TraceConfig, error) {
	switch format {
	case "azure":
		return workload.Azure(), nil
	case "mooncake":
		return workload.Mooncake(0), nil
	case "burstgpt":
		return workload.BurstGPT(nil, nil), nil
	case "generic":
		return workload.Generic(workload.CSV), nil
	}
	return workload.TraceConfig{}, fmt.Errorf("-format: unknown format %q", format)
}

// run parses args, replays the trace and writes the report to w.
func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg, err := traceConfig(o.format)
	if err != nil {
		return err
	}
	cfg.Transform.WindowEnd = o.window
	cfg.Conversations = o.conversations
	if err := cfg.Validate(); err != nil {
		return err
	}
	s, err := measure(o.trace, cfg)
	if err != nil {
		return err
	}
	if err := describe(w, o, cfg, s); err != nil {
		return err
	}
	return replay(w, o, cfg, s)
}
