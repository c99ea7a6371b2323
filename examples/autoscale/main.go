// Command autoscale answers a design reviewer's question about a day of
// traffic: what does the day cost at the SLO on Atlas TP4 replicas, and
// how much attainment does an autoscaler give up against a static fleet
// for what it saves?
//
// Two days, each 24 hourly steps of open-loop arrivals (-hours shortens
// them, in proportion):
//   - "diurnal": the chapter's requests (-input/-output, 2,000 and 200
//     tokens) on workload.Diurnal of mean -mean req/s and a
//     peak-to-trough ratio of 10, the swing the published hourly analysis
//     of Azure's 2024 LLM week finds for its code service on weekdays
//     (8.6 to 11.3);
//   - "azure-conversation": the lengths of the Azure LLM inference
//     trace's conversation service (resampled from -trace: by default the
//     sample examples/tracereplay ships; see its NOTICE.md for the
//     attribution) on a diurnal shape of peak-to-trough 2, the
//     conversation service's weekday swing (1.8 to 2.2). No day of that
//     trace is in the repository (the local trace is one hour), so the
//     day's shape is the published one, not a replay.
//
// Every fleet is Atlas replicas (engine defaults, costmodel.Frozen)
// behind LeastLoaded, judged by the default SLO (TTFT 600 ms, every ITL
// 150 ms). The arms:
//   - static@peak and static@mean: fixed fleets sized by analysis.Sizing
//     for the busiest hour's rate and for the day's mean rate (target
//     attainment -target, steady Poisson, -sizing-window windows);
//   - time-of-day: a sim.Schedule of each hour's own size (the same
//     sizing of that hour's rate), asking for each hour's replicas one
//     cold start ahead: the perfect foresight a schedule that knows the
//     day has;
//   - each autoscaling policy (sim.Autoscaler) on a 15 s controller, at
//     each cold start of -cold (90 s: a node with the weights cached;
//     300 s: a fresh node, BLIS's 240 s ± 30 s and inside llm-d's 2 to 7
//     minutes): hpa-held, Kubernetes' HPA on the requests each replica
//     holds (vllm:num_requests_running + waiting), its target what each
//     replica of the peak-sized fleet holds at the peak (Little's L / n,
//     from a run), as an operator calibrates from a load test;
//     keda-queue, KEDA's Prometheus trigger on vllm:num_requests_waiting,
//     5 a replica (the queue llm-d's saturation detector calls
//     saturated); wva-saturation, llm-d's workload variant autoscaler's
//     V1 saturation rule with its defaults; slo-headroom, servesim's own
//     rule on the last minute's TTFT p99 against the SLO's 600 ms. Each
//     is behind HPA's autoscaling/v2 default behaviour (sim.HPABehavior),
//     WVA's behind the behaviour its Helm chart sets.
//
// The arms run the same -days seeded days (common random days: paired
// differences), through analysis.Day. For each it prints attainment over
// the day, its worst hour, replica-hours, and the cost per million good
// output tokens at a declared -price per replica-hour (12 by default: an
// assumption for the arithmetic, not a quote), each with a 95 % interval
// over the days; then each arm against static@peak (paired differences
// and which way they go) and whether that reading holds under every model
// of the band analysis.AtlasBand(-model-error) (step times ×0.9 and ×1.1;
// -shapes adds the three shape alternatives), each on the first
// -band-reps days. It draws each day's first seeded day (offered load,
// replicas and attainment per 5 minutes; the static fleets and the arms
// of the first cold start) as day-<name>.png in -out (out/autoscale).
//
//	go run ./examples/autoscale
//	go run ./examples/autoscale -hours 6 -days 2 -cold 90s
//
// It prints its wall time on standard error.
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
)

func main() {
	start := time.Now()
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "autoscale:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "autoscale: %.1f s\n", time.Since(start).Seconds())
}

// options are the program's flags.
type options struct {
	mean          float64 // the day's mean rate, req/s
	hours         float64 // the day's length in hours (24 steps of hours/24)
	days          int     // seeded days per arm
	price         float64 // per replica-hour, declared
	target        float64 // the sizing's attainment target
	input, output int     // the diurnal day's request
	cold          []time.Duration
	sizingWindow  time.Duration // each sizing run's window
	sizingReps    int
	modelError    float64
	shapes        bool
	bandReps      int
	trace         string // the Azure-format trace whose lengths the second day resamples; "" skips that day
	chart         string // directory for the charts (-out); "" draws none
	seed          uint64
	workers       int
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{mean: 4, hours: 24, days: 3, price: 12, target: 0.95, input: 2000, output: 200,
		cold: []time.Duration{90 * time.Second, 300 * time.Second}, sizingWindow: 10 * time.Minute, sizingReps: 2,
		modelError: 0.1, trace: defaultTrace(), seed: 1}
	fs := flag.NewFlagSet("autoscale", flag.ContinueOnError)
	fs.SetOutput(w)
	cold := "90s,300s"
	fs.Float64Var(&o.mean, "mean", o.mean, "each day's mean arrival rate, req/s")
	fs.Float64Var(&o.hours, "hours", o.hours, "each day's length in hours: its 24 steps last hours/24 each")
	fs.IntVar(&o.days, "days", o.days, "seeded days each arm runs (common random days)")
	fs.Float64Var(&o.price, "price", o.price, "declared price of one replica for an hour (an assumption, not a quote)")
	fs.Float64Var(&o.target, "target", o.target, "attainment the sizing of the static fleets and hours meets")
	fs.IntVar(&o.input, "input", o.input, "the diurnal day's prompt tokens per request")
	fs.IntVar(&o.output, "output", o.output, "the diurnal day's output tokens per request")
	fs.StringVar(&cold, "cold", cold, "comma-separated cold starts the autoscaled arms run at")
	fs.DurationVar(&o.sizingWindow, "sizing-window", o.sizingWindow, "each sizing run's window (after a minute of warm-up)")
	fs.IntVar(&o.sizingReps, "sizing-reps", o.sizingReps, "seeded replications per count of each sizing")
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "the model band's relative error of every step time, in [0, 1); 0 and -shapes=false: no band")
	fs.BoolVar(&o.shapes, "shapes", o.shapes, "the model band includes the Atlas shape alternatives")
	fs.IntVar(&o.bandReps, "band-reps", o.bandReps, "days each model of the band runs, the first of -days (0: all of them)")
	fs.StringVar(&o.trace, "trace", o.trace, "Azure-format trace whose lengths the azure-conversation day resamples; \"\" skips that day")
	fs.StringVar(&o.chart, "out", "out/autoscale", "directory to write each day's chart to (day-<name>.png); \"\" draws none")
	fs.Uint64Var(&o.seed, "seed", o.seed, "base seed of the days")
	fs.IntVar(&o.workers, "workers", 0, "parallel runs (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.cold = nil
	for _, f := range strings.Split(cold, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 || d > time.Hour {
			return o, fmt.Errorf("-cold %q: want durations in [0, 1h] separated by commas", cold)
		}
		o.cold = append(o.cold, d)
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case !(o.mean > 0) || math.IsInf(o.mean, 0):
		return o, fmt.Errorf("-mean must be a positive rate, got %v", o.mean)
	case !(o.hours >= 0.1 && o.hours <= 24*7):
		return o, fmt.Errorf("-hours must be in [0.1, 168], got %v", o.hours)
	case o.days < 1 || o.days > 100:
		return o, fmt.Errorf("-days must be in [1, 100], got %d", o.days)
	case !(o.price >= 0) || math.IsInf(o.price, 0):
		return o, fmt.Errorf("-price must be >= 0, got %v", o.price)
	case !(o.target > 0 && o.target < 1):
		return o, fmt.Errorf("-target must be in (0, 1), got %v", o.target)
	case o.input < 1 || o.output < 1:
		return o, fmt.Errorf("-input and -output must be >= 1, got %d and %d", o.input, o.output)
	case o.sizingWindow < time.Minute || o.sizingReps < 1:
		return o, fmt.Errorf("-sizing-window must be >= 1m and -sizing-reps >= 1, got %v and %d", o.sizingWindow, o.sizingReps)
	case !(o.modelError >= 0 && o.modelError < 1):
		return o, fmt.Errorf("-model-error must be in [0, 1), got %v", o.modelError)
	case o.bandReps < 0:
		return o, fmt.Errorf("-band-reps must be >= 0 (0: all of -days), got %d", o.bandReps)
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
	days, err := o.dayList()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "What does a day cost at the SLO on Atlas TP4 replicas (engine defaults, costmodel.Frozen) behind LeastLoaded?\n")
	fmt.Fprintf(w, "SLO: TTFT 600ms, ITL 150ms; %d seeded days an arm; declared price %.4g a replica-hour; model band: %v\n",
		o.days, o.price, o.band())
	for _, d := range days {
		fmt.Fprintln(w)
		if err := o.study(w, d); err != nil {
			return fmt.Errorf("day %s: %w", d.name, err)
		}
	}
	return nil
}
