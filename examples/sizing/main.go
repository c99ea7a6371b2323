// Command sizing answers a design reviewer's question: how many Atlas TP4
// replicas does this day of traffic need, at 95 % SLO attainment with
// 20 % headroom, and what does a million output tokens cost on them?
//
// The day is workload.Diurnal: 24 hourly steps whose rate follows a
// sinusoid of the given mean and peak-to-trough ratio. The fleet must
// hold its busiest hour, so the sizing load is the peak step's rate
// times (1 + headroom), offered as steady Poisson arrivals (a fleet that
// holds the peak hour in steady state holds the day; the hours around
// it need fewer replicas, which this program does not size). Requests
// are the chapter's 2,000-token prompts and 200-token answers under the
// default SLO (TTFT 600 ms, ITL 150 ms), the replicas Atlas TP4 (engine
// defaults, costmodel.Frozen) behind a LeastLoaded router.
// analysis.Sizing finds the smallest replica count whose mean
// attainment over seeded replications meets the target, by doubling and
// bisection on common random numbers.
//
// It prints the count with its seed range (each replication's own
// answer: their minimum and maximum), the attainment at the count and at
// one replica fewer with 95 % intervals, the counts it ran, and the cost
// per million output tokens at the sizing load for a declared price per
// replica-hour. The default, $10 an hour for a replica of 4
// accelerators, is an assumption for the arithmetic, not a quote: pass
// your own with -price.
//
//	go run ./examples/sizing
//	go run ./examples/sizing -mean 20 -peak-to-trough 4 -price 12.5
//
// At its defaults it runs 30 simulations of fleets of up to 8 replicas
// (11 minutes of simulated time each), under a second on two cores; it
// prints its wall time on standard error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

func main() {
	start := time.Now()
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sizing:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "sizing: %.1f s\n", time.Since(start).Seconds())
}

// options are the program's flags.
type options struct {
	mean, peakToTrough float64 // the day: mean rate (req/s) and peak-to-trough ratio
	headroom, target   float64
	price              float64 // per replica-hour
	input, output      int
	reps               int
	warmup, horizon    time.Duration
	seed               uint64
	router             string
	max                int
	workers            int
}

var routers = map[string]sim.Router{
	"least-loaded": sim.LeastLoaded{},
	"round-robin":  sim.RoundRobin{},
	"power-of-two": sim.PowerOfTwo{},
	"random":       sim.Random{},
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{mean: 10, peakToTrough: 3, headroom: 0.2, target: 0.95, price: 10, input: 2000, output: 200,
		reps: 5, warmup: 60 * time.Second, horizon: 600 * time.Second, seed: 1, router: "least-loaded", max: sim.MaxReplicas}
	fs := flag.NewFlagSet("sizing", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Float64Var(&o.mean, "mean", o.mean, "the day's mean arrival rate, req/s")
	fs.Float64Var(&o.peakToTrough, "peak-to-trough", o.peakToTrough, "the day's peak-to-trough rate ratio (>= 1)")
	fs.Float64Var(&o.headroom, "headroom", o.headroom, "spare capacity: size for the peak rate × (1 + headroom)")
	fs.Float64Var(&o.target, "target", o.target, "SLO attainment to meet")
	fs.Float64Var(&o.price, "price", o.price, "price of one replica for an hour (an assumption: $10 for 4 accelerators by default); 0 prints no cost")
	fs.IntVar(&o.input, "input", o.input, "prompt tokens per request")
	fs.IntVar(&o.output, "output", o.output, "output tokens per request")
	fs.IntVar(&o.reps, "reps", o.reps, "seeded replications per replica count")
	fs.DurationVar(&o.warmup, "warmup", o.warmup, "each run's warm-up")
	fs.DurationVar(&o.horizon, "horizon", o.horizon, "each run's measurement window")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of the replications")
	fs.StringVar(&o.router, "router", o.router, "router: least-loaded, round-robin, power-of-two or random")
	fs.IntVar(&o.max, "max", o.max, "largest fleet to try")
	fs.IntVar(&o.workers, "workers", 0, "parallel runs (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !(o.mean > 0) || math.IsInf(o.mean, 0):
		return o, fmt.Errorf("-mean must be a positive rate, got %v", o.mean)
	case !(o.peakToTrough >= 1) || math.IsInf(o.peakToTrough, 0):
		return o, fmt.Errorf("-peak-to-trough must be >= 1, got %v", o.peakToTrough)
	case routers[o.router] == nil:
		return o, fmt.Errorf("-router %q: want least-loaded, round-robin, power-of-two or random", o.router)
	case o.input < 1 || o.output < 1:
		return o, fmt.Errorf("-input and -output must be >= 1, got %d and %d", o.input, o.output)
	}
	return o, nil
}

// peak is the busiest step of the day's schedule.
func peak(s workload.Schedule) float64 {
	p := 0.0
	for _, st := range s.Steps {
		p = max(p, st.Rate)
	}
	return p
}

func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	day := workload.Diurnal(24*time.Hour, 24, o.mean, o.peakToTrough)
	s := analysis.Sizing{
		Config:   sim.Config{Fleet: sim.Fleet{Router: routers[o.router]}, Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon}},
		Workload: analysis.Poisson(workload.Fixed(o.input, o.output)),
		Load:     peak(day), Headroom: o.headroom, Target: o.target, Reps: o.reps, BaseSeed: o.seed,
		MaxReplicas: o.max, Price: o.price, Workers: o.workers,
	}
	slo := s.Config.SLO.WithDefaults()
	fmt.Fprintf(w, "How many Atlas TP4 replicas (engine defaults, costmodel.Frozen) behind %T?\n", s.Config.Fleet.Router)
	fmt.Fprintf(w, "Day: diurnal, 24 hourly steps, mean %.4g req/s, peak-to-trough %.3g: trough %.4g, peak %.4g req/s\n",
		o.mean, o.peakToTrough, day.Steps[0].Rate, s.Load)
	fmt.Fprintf(w, "Sized at the peak × (1 + %.3g headroom) = %.4g req/s, steady Poisson, %d/%d-token requests\n",
		o.headroom, s.Load*(1+o.headroom), o.input, o.output)
	fmt.Fprintf(w, "SLO: TTFT %v, ITL %v; attainment target %.3g, mean over %d seeded replications (window %v after %v warm-up)\n\n",
		slo.TTFT, slo.ITL, o.target, o.reps, o.horizon, o.warmup)
	res, err := s.Run()
	var unmet *analysis.SizingUnmetError
	if errors.As(err, &unmet) {
		fmt.Fprintf(w, "Not met: %v\n", unmet)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Replicas: %d (seed range [%d, %d] over %d replications)\n", res.Replicas, res.SeedLo, res.SeedHi, len(res.PerSeed))
	fmt.Fprintf(w, "  attainment at %3d: %s\n", res.Replicas, interval(res.Attainment))
	if res.Replicas > 1 {
		fmt.Fprintf(w, "  attainment at %3d: %s\n", res.Replicas-1, interval(res.Below))
	}
	if o.price > 0 {
		c := res.CostPerMillion
		fmt.Fprintf(w, "Cost: $%.3f [%.3f, %.3f] per million output tokens at %.4g req/s (%.4g output tokens/s),\n",
			c.Center, c.Lo, c.Hi, res.Load, res.OutputThroughput.Center)
		fmt.Fprintf(w, "  assuming $%.4g per replica-hour (an assumption, not a quote): $%.4g an hour for the fleet\n",
			o.price, float64(res.Replicas)*o.price)
	}
	probes := make([]string, len(res.Probes))
	for i, p := range res.Probes {
		probes[i] = fmt.Sprintf("%d (%.3f)", p.Replicas, p.Attainment.Center)
	}
	fmt.Fprintf(w, "Search: %s; %d runs\n", strings.Join(probes, ", "), res.Runs)
	return nil
}

// interval prints a figure with its interval.
func interval(x stats.Interval) string {
	if math.IsNaN(x.Lo) {
		return fmt.Sprintf("%.3f (no interval)", x.Center)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", x.Center, x.Lo, x.Hi)
}
