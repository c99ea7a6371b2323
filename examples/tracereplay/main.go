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
// Without -format, the format is the one whose columns the trace's header
// (its first line) holds, else azure; a header error names the -format
// the header fits. The line where attainment falls reads every replay, the
// own pace included, in increasing offered load. A trace whose rows share
// one instant has no pace to scale: it is replayed once, and no scaled
// replay runs.
//
// By default every row is sent at its recorded (time-scaled) instant:
// timestamp replay. With -keep-conversations, a trace whose rows carry a
// conversation (the generic form's conversation column, BurstGPT's Session
// ID) is replayed keeping them (a format without that column, or a file
// where it is absent or empty, is refused): turn k+1 is sent at the later of its
// recorded instant and turn k's end plus -min-think, so a turn never
// overtakes the answer it follows (workload.ConversationReplay), and a
// turn that resends the previous turn's prompt and answer carries the
// answer's prefix ids, so it finds the answer in the prefix cache, as on
// vLLM (-answers -1 keeps the trace's ids over prompts only; the report
// says how many turns resent). The report names the replay it ran. Neither public trace in ../shared/traces
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
	"bufio"
	"encoding/csv"
	"encoding/json"
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
	formatSet     bool   // -format was given; without it the format is read from the trace's header
	detected      string // the format read from the header, "" when none matched
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
	fs.StringVar(&o.format, "format", o.format, "trace format: azure, mooncake, burstgpt or generic (CSV or JSONL); without it, the format whose columns the trace's header (first line) holds, else azure")
	fs.DurationVar(&o.window, "window", 0, "replay only the trace's first span of this length (0: all)")
	rates := fs.String("rates", "1,1.5,1.75,2,2.5,3", "offered loads to time-scale the trace to, requests/s")
	fs.Float64Var(&o.target, "target", o.target, "attainment target")
	fs.BoolVar(&o.conversations.Keep, "keep-conversations", false, "keep conversations: a turn waits for the answer to the previous turn (needs a conversation column)")
	fs.DurationVar(&o.conversations.MinThink, "min-think", 0, "with -keep-conversations, the least time between an answer and the next turn")
	fs.IntVar(&o.conversations.Answers, "answers", 0, "with -keep-conversations, how many conversations' last answers to give ids a next turn resends (0: 65,536; < 0: none, every turn keeps the trace's ids over its prompt)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { o.formatSet = o.formatSet || f.Name == "format" })
	var err error
	if o.rates, err = parseRates(*rates); err != nil {
		return o, err
	}
	if o.window < 0 {
		return o, fmt.Errorf("-window must be >= 0 (0: the whole trace), got %v", o.window)
	}
	if !(o.target > 0 && o.target <= 1) {
		return o, fmt.Errorf("-target must be an attainment in (0, 1], got %v", o.target)
	}
	if c := o.conversations; c.MinThink < 0 || c.MinThink > 0 && !c.Keep {
		return o, fmt.Errorf("-min-think must be >= 0 and applies only with -keep-conversations, got %v (keep: %t)", c.MinThink, c.Keep)
	}
	if c := o.conversations; c.Answers != 0 && !c.Keep {
		return o, fmt.Errorf("-answers applies only with -keep-conversations, got %d", c.Answers)
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

// traceConfig is the reader of a format; the generic form is read as JSONL
// when its header said so (jsonl), as CSV otherwise.
func traceConfig(format string, jsonl bool) (workload.TraceConfig, error) {
	switch format {
	case "azure":
		return workload.Azure(), nil
	case "mooncake":
		return workload.Mooncake(0), nil
	case "burstgpt":
		return workload.BurstGPT(nil, nil), nil
	case "generic":
		if jsonl {
			return workload.Generic(workload.JSONL), nil
		}
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
	if _, err := traceConfig(o.format, false); err != nil {
		return err // an unknown -format, before the file is read
	}
	var jsonl bool
	o.detected, jsonl = sniff(o.trace)
	if !o.formatSet && o.detected != "" {
		o.format = o.detected
	}
	cfg, err := traceConfig(o.format, jsonl)
	if err != nil {
		return err
	}
	if o.conversations.Keep && cfg.Columns.Conversation == "" {
		return fmt.Errorf("-keep-conversations: -format %s has no conversation column, so there are no conversations to keep (the generic form's conversation column and BurstGPT's Session ID are)", o.format)
	}
	cfg.Transform.WindowEnd = o.window
	cfg.Conversations = o.conversations
	if err := cfg.Validate(); err != nil {
		return err
	}
	s, err := measure(o.trace, cfg)
	if err != nil {
		return o.hint(err)
	}
	if o.conversations.Keep && s.conversations == 0 {
		return fmt.Errorf("-keep-conversations: %s has no conversation column (%q), or it is empty on every row: there are no conversations to keep", o.trace, cfg.Columns.Conversation)
	}
	if err := describe(w, o, cfg, s); err != nil {
		return err
	}
	return replay(w, o, cfg, s)
}

// sniff reads the trace's first line and names the format whose arrival,
// input and output columns it holds ("" when none does, or the file cannot
// be read: the reader then says why), and whether it is JSON Lines.
func sniff(path string) (format string, jsonl bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if bom, err := br.Peek(3); err == nil && string(bom) == "\ufeff" {
		br.Discard(3)
	}
	line, err := br.ReadString('\n')
	if err != nil && line == "" {
		return "", false
	}
	names := map[string]bool{}
	if line = strings.TrimSpace(line); strings.HasPrefix(line, "{") {
		jsonl = true
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &obj) != nil {
			return "", true
		}
		for k := range obj {
			names[k] = true
		}
	} else {
		header, err := csv.NewReader(strings.NewReader(line)).Read()
		if err != nil {
			return "", false
		}
		for _, h := range header {
			names[strings.TrimSpace(h)] = true
		}
	}
	for _, name := range formats {
		cfg, _ := traceConfig(name, jsonl)
		if (cfg.Format == workload.JSONL) != jsonl {
			continue
		}
		if c := cfg.Columns; names[c.Arrival] && names[c.Input] && names[c.Output] {
			return name, jsonl
		}
	}
	return "", jsonl
}

// formats are the -format values, in the order sniff tries them.
var formats = []string{"azure", "mooncake", "burstgpt", "generic"}

// hint adds to a header error which -format the header matches, or which
// formats there are.
func (o options) hint(err error) error {
	var pe *workload.ParseError
	if !errors.As(err, &pe) || pe.Line != 1 {
		return err
	}
	if o.detected != "" && o.detected != o.format {
		return fmt.Errorf("%w (the header is that of -format %s: try -format %s)", err, o.detected, o.detected)
	}
	return fmt.Errorf("%w (-format %s; the formats are %s)", err, o.format, strings.Join(formats, ", "))
}
