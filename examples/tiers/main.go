// Command tiers asks whether prefix-aware routing still pays once the KV
// blocks a replica's HBM evicts survive below it (issue 39): for a fleet
// of 4 Atlas TP4 replicas, examples/routing's question — does
// PrefixAffinity, SGLang's cache-aware router, raise the knee (the
// highest load at which 95 % of requests meet the TTFT and ITL bounds) by
// at least 5 % over RoundRobin? — asked again with tiers below HBM.
//
// It declares the hypothesis and its threshold first, prints the restore
// bounds of the tiers it declares (costmodel.Tiers: tokens/s each can
// restore against the tokens/s a replica recomputes), then at low and at
// high prefix reuse (workload.FleetLowReuse and FleetHighReuse) runs one
// row per tier setup:
//
//   - no tier;
//   - a host tier on every replica (sim.HostTier, vLLM's CPU offloading),
//     -host-gib as vLLM's --kv-offloading-size declares it (over the
//     replica's 4 ranks), on a PCIe link of -host-bandwidth a direction
//     per accelerator (LinkFIFO, vLLM's one stream a direction);
//   - a shared store (sim.SharedStore, LMCache's remote backend) of each
//     size of -shared, in multiples of the fleet's HBM, on one fleet-wide
//     network link of -shared-bandwidth (LinkFair: concurrent reads share
//     it).
//
// Each row sweeps the goodput curve of every router — RoundRobin,
// LeastLoaded and PrefixAffinity, and in the tier rows PrefixAffinity
// reading the tiers (sim.TieredView) — for its knee, picks the A/B
// loads from RoundRobin's knee (0.8 to 1.2 times it) and tests
// PrefixAffinity (B) against RoundRobin (A) on paired seeded blocks,
// each block's knee read over those loads (analysis.MetricKnee), under
// the model band declared before the runs (analysis.AtlasBand
// (-model-error), rerun on the first -band-blocks blocks, each model at
// the same multiples of RoundRobin's knee under it, as examples/routing
// does). Every row prints each router's knee, the paired Δknee with its
// 95 % interval and whether the verdict holds under every model of the
// band, and, at one load common to every sweep of the level, each
// router's prompt tokens served from HBM, from the host tier and from the
// shared store, with the share of TTFT spent waiting for loads and the
// links' utilisation.
//
// Last it answers in conditional language, per reuse level: with each
// tier, how PrefixAffinity's rise over RoundRobin moves from the row
// without tiers and whether it still pays; and where along the store
// sizes (no store being size 0) its rise falls below the threshold,
// interpolated between the sizes tried.
//
// Every run is measured from -warmup (2 min) to -horizon (4 min): a
// tier starts empty and fills at the blocks its replicas compute, so a
// window opened sooner measures tiers still filling (at 9 req/s of the
// high-reuse traffic RoundRobin's host hits are about 0.06 of the prompt
// tokens in a window from 18 s to 3 min, 0.14 from 3 to 10 min).
//
// At its defaults it takes about a minute on 2 idle cores (53 s, 1.6 min
// of CPU, measured at 6fd9176; warm build); -reps, -blocks,
// -band-blocks, -warmup, -horizon and -shared make it smaller or larger.
//
//	go run ./examples/tiers
//	go run ./examples/tiers -reps 4 -blocks 12 -band-blocks 6 -horizon 6m -shared 0.125,0.25,0.5,1,4
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
		fmt.Fprintln(os.Stderr, "tiers:", err)
		os.Exit(1)
	}
}

// options are the program's flags.
type options struct {
	replicas   int
	input      int     // fresh prompt tokens after the shared prefix
	output     int     // output tokens
	threshold  float64 // relative rise of the knee the hypothesis demands
	modelError float64 // ±step-time error of the model band
	bandBlocks int     // blocks each variant of the band runs (0: all)
	factors    []float64
	start      float64 // first load of each automatic sweep, req/s
	reps       int
	blocks     int
	warmup     time.Duration
	horizon    time.Duration
	seed       uint64
	workers    int

	hostGiB       float64 // host tier per replica, GiB over its ranks (0: no host row)
	hostBandwidth float64 // bytes/s per accelerator
	hostLatency   time.Duration
	shared        []float64 // shared store sizes, multiples of the fleet's HBM
	sharedBW      float64   // bytes/s of the fleet's one link
	sharedLatency time.Duration
	tieredView    bool // also sweep PrefixAffinity reading sim.TieredView in the tier rows
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{replicas: 4, input: 500, output: 200, threshold: 0.05, modelError: 0.1, bandBlocks: 2, start: 2, reps: 3, blocks: 6,
		warmup: 2 * time.Minute, horizon: 4 * time.Minute, hostGiB: 256, hostBandwidth: 50e9, hostLatency: 20 * time.Microsecond,
		sharedBW: 12.5e9, sharedLatency: 200 * time.Microsecond, tieredView: true}
	fs := flag.NewFlagSet("tiers", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/tiers [flags]\n\n"+
			"Does prefix-aware routing (PrefixAffinity) still raise the knee of a fleet of Atlas TP4\n"+
			"replicas by at least -threshold over RoundRobin once evicted KV blocks survive below HBM,\n"+
			"in a host tier per replica or in a shared store, at low and at high prefix reuse? The\n"+
			"defaults run in about a minute on 2 idle cores.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.replicas, "replicas", o.replicas, "Atlas TP4 replicas in the fleet")
	fs.IntVar(&o.input, "input", o.input, "fresh prompt tokens of each request, after its shared prefix (if any)")
	fs.IntVar(&o.output, "output", o.output, "output tokens of each request")
	fs.Float64Var(&o.threshold, "threshold", o.threshold, "relative rise of the knee PrefixAffinity must show over RoundRobin (0.05 is 5 %), declared before the runs")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "relative error of every step time the model band reruns under (0.1: x0.9 and x1.1), beside the Atlas shapes atlas-linear, atlas-roofline and atlas-profiled (0: the shapes only)")
	fs.IntVar(&o.bandBlocks, "band-blocks", o.bandBlocks, "A/B blocks each model of the band reruns, the first of the A/B test's (0: every block)")
	factors := fs.String("operating", "0.8,0.9,1,1.1,1.2", "loads of each A/B test, as comma-separated multiples of RoundRobin's knee in its row: each block's knee is read over them (at least 2)")
	fs.Float64Var(&o.start, "start", o.start, "first offered load of each sweep, req/s (the grid grows by 1.5 to collapse, then bisects 3 times at the knee)")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per load of each sweep")
	fs.IntVar(&o.blocks, "blocks", o.blocks, "seeded A/B blocks of each row, each a curve over the A/B loads (A and B share each block's seed)")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "start of each run's measurement window, simulated time: the caches and tiers fill before it (a host tier fills at the blocks its replica computes a second)")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "end of each run's measurement window, simulated time (measured requests may finish one window later)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of replications and blocks")
	fs.IntVar(&o.workers, "workers", 0, "runs in parallel within each sweep and experiment (0: GOMAXPROCS); results do not depend on it")
	fs.Float64Var(&o.hostGiB, "host-gib", o.hostGiB, "host tier of each replica in GiB, as vLLM's --kv-offloading-size declares it over the replica's 4 ranks (0: no host-tier row)")
	fs.Float64Var(&o.hostBandwidth, "host-bandwidth", o.hostBandwidth, "host-to-device bandwidth of each accelerator, bytes/s (PCIe Gen5 x16: about 50e9 in practice)")
	fs.DurationVar(&o.hostLatency, "host-latency", o.hostLatency, "latency of each host-tier load before its first byte")
	shared := fs.String("shared", "0.25,1", "sizes of the shared store, comma-separated multiples of the fleet's HBM (its replicas' KV pools together), one row each (empty: no shared-store rows)")
	fs.Float64Var(&o.sharedBW, "shared-bandwidth", o.sharedBW, "bandwidth of the shared store's one network link, bytes/s (100 GbE: 12.5e9)")
	fs.DurationVar(&o.sharedLatency, "shared-latency", o.sharedLatency, "latency of each shared-store load before its first byte (a network round trip and the store's lookup)")
	fs.BoolVar(&o.tieredView, "tiered-view", o.tieredView, "also sweep PrefixAffinity reading the tiers (sim.TieredView) in every tier row")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.factors, err = parseList(*factors, "-operating", "a positive multiple of the knee", false); err != nil {
		return o, err
	}
	if o.shared, err = parseList(*shared, "-shared", "a positive multiple of the fleet's HBM", true); err != nil {
		return o, err
	}
	return o, checkFlags(o)
}

// parseList reads a comma-separated list of positive finite numbers
// (none from an empty string when empty is allowed).
func parseList(s, name, what string, empty bool) ([]float64, error) {
	if empty && strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: %q is not %s", name, f, what)
		}
		out = append(out, x)
	}
	return out, nil
}

// checkFlags refuses nonsense by flag name, before anything runs.
func checkFlags(o options) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if o.replicas < 1 {
		bad("-replicas must be >= 1, got %d", o.replicas)
	}
	if o.input < 1 || o.output < 1 {
		bad("-input and -output must be >= 1 token, got %d and %d", o.input, o.output)
	}
	if !(o.threshold > -1) || !finite(o.threshold) {
		bad("-threshold must be a relative improvement above -1 (-100 %%), got %v", o.threshold)
	}
	if !(o.modelError >= 0 && o.modelError < 1) {
		bad("-model-error must be in [0, 1) (0.1 is ±10 %%), got %v", o.modelError)
	}
	if o.bandBlocks < 0 || o.bandBlocks == 1 {
		bad("-band-blocks must be 0 (every block) or >= 2: a verdict needs an interval, got %d", o.bandBlocks)
	}
	if len(o.factors) < 2 {
		bad("-operating needs 2 loads or more: each block's knee is read over them, got %d", len(o.factors))
	}
	if !(o.start > 0) || !finite(o.start) {
		bad("-start: %v is not a positive rate in requests/s", o.start)
	}
	if o.reps < 2 {
		bad("-reps must be >= 2: a knee needs an interval, got %d", o.reps)
	}
	if o.blocks < 2 {
		bad("-blocks must be >= 2: a verdict needs an interval, got %d", o.blocks)
	}
	if o.warmup < 0 || o.horizon <= o.warmup {
		bad("-warmup must be >= 0 and -horizon after it: sweeps and experiments compare fixed windows, got %v and %v", o.warmup, o.horizon)
	}
	if !(o.hostGiB >= 0) || !finite(o.hostGiB) {
		bad("-host-gib must be a size >= 0 GiB (0: no host-tier row), got %v", o.hostGiB)
	} else if o.hostGiB > 0 && hostBlocks(o.hostGiB) < 1 {
		bad("-host-gib %v GiB holds no KV block of %s", o.hostGiB, gib(blockBytes))
	}
	if !(o.hostBandwidth > 0) || !finite(o.hostBandwidth) {
		bad("-host-bandwidth must be a positive rate in bytes/s, got %v", o.hostBandwidth)
	}
	if !(o.sharedBW > 0) || !finite(o.sharedBW) {
		bad("-shared-bandwidth must be a positive rate in bytes/s, got %v", o.sharedBW)
	}
	if o.hostLatency < 0 || o.sharedLatency < 0 {
		bad("-host-latency and -shared-latency must be >= 0, got %v and %v", o.hostLatency, o.sharedLatency)
	}
	for i := 1; i < len(o.shared); i++ {
		if o.shared[i] <= o.shared[i-1] {
			bad("-shared: sizes must rise (the study interpolates along them), got %v after %v", o.shared[i], o.shared[i-1])
		}
	}
	if o.replicas >= 1 && len(o.shared) > 0 && sharedBlocks(o.shared[0], o.replicas) < 1 {
		bad("-shared %v x the fleet's HBM holds no KV block", o.shared[0])
	}
	if o.replicas >= 1 && len(o.shared) > 0 && sharedBlocks(o.shared[len(o.shared)-1], o.replicas) > maxTierBlocks {
		bad("-shared %v x the fleet's HBM is more than the %d blocks a tier may hold", o.shared[len(o.shared)-1], maxTierBlocks)
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
