// Command scale runs the Atlas TP4 default through sim.Run at the scale of a
// month of traffic, to measure what the simulator costs: simulated requests
// per CPU-second and the Go heap it needed, with every request's latencies
// summarised (exactly up to sim.Config.ExactSamples, then by a sketch).
//
//	go run ./examples/scale -requests 10000000                 # Poisson 2,000/200 at 2.4 req/s
//	go run ./examples/scale -requests 10000000 -write-trace t.csv  # the same arrivals as a trace
//	go run ./examples/scale -trace t.csv                       # and replayed from it
//	go run ./examples/scale -cpuprofile cpu.pprof              # where the time goes (go tool pprof)
//
// Peak resident memory is the operating system's to measure: run the built
// binary under /usr/bin/time -v (its "Maximum resident set size"). A replay
// of a trace written here gives the same summary, to the byte, as the run
// that generated it: the generic form stores nanosecond arrivals.
//
// The workload is the Atlas capacity question's: 2,000-token prompts and
// 200-token answers, Poisson at 2.4 req/s (below the 2.69 req/s the replica
// can serve, near its knee), no warm-up, an open window.
//
// # Profile-guided optimization
//
// atlas.pgo, beside this file, is this program's own CPU profile (five
// million requests, built without a profile), for Go's profile-guided
// optimization: a build given it inlines the simulator's hot calls (the
// step end's accounting, the arrival's intake, the engine's cohort and
// block pool) and calls the generator and the Atlas cost model directly,
// and runs about 6 % fewer instructions a request than a build without it
// (docs/scale.md). It is not named default.pgo, so no build applies it
// unasked (that would rebuild the standard library and every dependency
// with it, about a minute on two cores); ask for it:
//
//	go build -pgo=examples/scale/atlas.pgo -o /tmp/scale ./examples/scale
//	go test -pgo=examples/scale/atlas.pgo ./sim -run '^$' -bench RunAtlas
//
// A program of your own that simulates can use it as its default.pgo (or,
// better, its own profile). Refresh it after a change to the hot path:
//
//	go run -pgo=off ./examples/scale -requests 5000000 -cpuprofile examples/scale/atlas.pgo
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/servesim/servesim/internal/cputime"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

type options struct {
	requests int
	rate     float64
	seed     uint64
	trace    string // replay this generic CSV trace instead
	write    string // write the workload as a generic CSV trace and stop
	exact    int    // sim.Config.ExactSamples
	profile  string // write a CPU profile of sim.Run here
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{requests: 1_000_000, rate: 2.4, seed: 1}
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.IntVar(&o.requests, "requests", o.requests, "requests to simulate (or to write with -write-trace)")
	fs.Float64Var(&o.rate, "rate", o.rate, "Poisson arrival rate, req/s")
	fs.Uint64Var(&o.seed, "seed", o.seed, "seed of the arrivals and of the run")
	fs.StringVar(&o.trace, "trace", "", "replay this trace (the generic CSV form -write-trace writes) instead of generating")
	fs.StringVar(&o.write, "write-trace", "", "write the generated workload to this file as a generic CSV trace, and stop")
	fs.IntVar(&o.exact, "exact-samples", 0, "sim.Config.ExactSamples (0: sim.DefaultExactSamples)")
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of sim.Run to this file (for go tool pprof, or as default.pgo)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.requests < 1:
		return o, fmt.Errorf("-requests must be at least 1, got %d", o.requests)
	case !(o.rate > 0):
		return o, fmt.Errorf("-rate must be positive, got %v", o.rate)
	case o.trace != "" && o.write != "":
		return o, errors.New("-trace and -write-trace are exclusive")
	}
	return o, nil
}

func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.write != "" {
		return writeTrace(w, o)
	}
	src, closeSrc, what, err := source(o)
	if err != nil {
		return err
	}
	defer closeSrc()
	cfg := sim.Config{Seed: o.seed, ExactSamples: o.exact}
	stop, err := startProfile(o.profile)
	if err != nil {
		return err
	}
	start, cpu0 := time.Now(), cputime.Used()
	sum, err := sim.Run(cfg, src, nil)
	if err := errors.Join(err, stop()); err != nil {
		return err
	}
	wall, cpu := time.Since(start), cputime.Used()-cpu0
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(w, "%s through sim.Run on the Atlas TP4 default\n", what)
	fmt.Fprintf(w, "  measured %d requests over %.0f simulated s: %d ok, goodput %.3f req/s, attainment %.4f\n",
		sum.Offered, sum.Window.Seconds(), sum.Count(sim.StatusOK), sum.Goodput, sum.Attainment)
	fmt.Fprintf(w, "  TTFT p50 %.1f p99 %.1f ms, ITL p99 %.2f ms, E2E p99 %.0f ms (%s)\n",
		sum.TTFT.Median, sum.TTFT.P99, sum.ITL.P99, sum.E2E.P99, exactness(sum.TTFT))
	fmt.Fprintf(w, "  cost: %.1f s wall, %.1f CPU-s: %.0f simulated requests per CPU-second\n",
		wall.Seconds(), cpu.Seconds(), float64(sum.Offered)/cpu.Seconds())
	fmt.Fprintf(w, "  Go heap: %.1f MB in use at the end, %.1f MB obtained from the OS (peak RSS: run under /usr/bin/time -v)\n",
		float64(ms.HeapAlloc)/1e6, float64(ms.Sys)/1e6)
	return nil
}

// startProfile starts a CPU profile written to path, if one is asked, and
// returns the function that stops it and closes the file.
func startProfile(path string) (func() error, error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func exactness(d stats.Dist) string {
	if d.RelErr > 0 {
		return fmt.Sprintf("percentiles from a sketch, within %g %% of exact", 100*d.RelErr)
	}
	return "percentiles exact"
}

// generator is the Atlas question's workload.
func generator(o options) (*workload.Generator, error) {
	return workload.NewPoisson(o.seed, o.rate, o.requests, workload.Fixed(2000, 200))
}

func source(o options) (workload.Source, func(), string, error) {
	if o.trace == "" {
		g, err := generator(o)
		return g, func() {}, fmt.Sprintf("%d Poisson requests (2,000/200 tokens at %g req/s)", o.requests, o.rate), err
	}
	t, err := workload.OpenTrace(o.trace, workload.Generic(workload.CSV))
	if err != nil {
		return nil, nil, "", err
	}
	return t, func() { _ = t.Close() }, fmt.Sprintf("the trace %s", o.trace), nil
}

func writeTrace(w io.Writer, o options) error {
	g, err := generator(o)
	if err != nil {
		return err
	}
	f, err := os.Create(o.write)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := workload.NewTraceWriter(bw, workload.CSV)
	n := 0
	for {
		r, err := g.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return err
		}
		if err := tw.Write(r); err != nil {
			f.Close()
			return err
		}
		n++
	}
	if err := tw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %d requests to %s\n", n, o.write)
	return nil
}
