// Command chunksweep sweeps the prefill chunk cap of the Atlas TP4 replica
// on the Atlas document workload, as the reference chapter's hypothesis
// chain predicts:
//
//	smaller prefill chunks -> shorter mixed engine steps -> lower decode
//	stalls -> better ITL goodput -> possibly lower prefill efficiency and
//	worse TTFT
//
// For each chunk cap it prints the ITL tax (p99 ITL and the longest mixed
// step) and TTFT at a fixed load, and the knee of the goodput curve; then it
// runs a declared A/B experiment: does the best chunk cap raise goodput by
// at least 5 % over the default (vLLM V1: no cap, 2,048-token budget)?
//
//	go run ./examples/chunksweep
//	go run ./examples/chunksweep -chunks 256,1024 -reps 3
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
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chunksweep:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	chunks  []int
	probe   float64 // load at which the ITL tax and TTFT are read, req/s
	start   float64 // first load of each automatic sweep, req/s
	reps    int
	blocks  int
	horizon time.Duration
	seed    uint64
	bench   string // file for Go benchmark-format lines; "": none
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{probe: 0.5, start: 0.1, reps: 4, blocks: 8, horizon: 20 * time.Minute}
	fs := flag.NewFlagSet("chunksweep", flag.ContinueOnError)
	fs.SetOutput(w)
	chunks := fs.String("chunks", "128,256,512,1024,2048,4096", "comma-separated prefill chunk caps, tokens")
	fs.Float64Var(&o.probe, "probe", o.probe, "offered load at which the ITL tax and TTFT are read, req/s")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of each automatic sweep, req/s")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks per load")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "measurement window end (simulated time; warm-up is a tenth of it)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed")
	fs.StringVar(&o.bench, "bench", "", "write each chunk cap's runs at the probe load in Go benchmark format to this file (compare with benchstat -col config)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, f := range strings.Split(*chunks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-chunks: %q is not a positive token count", f)
		}
		o.chunks = append(o.chunks, n)
	}
	return o, checkFlags(o)
}

// checkFlags refuses a -horizon that is not positive, and a -probe or
// -start that is not a positive finite rate or whose workload cannot be
// built (said once, naming the flag, rather than once per chunk cap and
// replication).
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
		if _, err := documents(o.horizon)(f.v, o.seed); err != nil {
			return fmt.Errorf("%s %g req/s: %w", f.name, f.v, err)
		}
	}
	return nil
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
