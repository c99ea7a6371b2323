// Command sizing answers a design reviewer's question: how many Atlas TP4
// replicas does this traffic need, at 95 % SLO attainment with 20 %
// headroom, what does a million output tokens cost on them, and does the
// answer rest on the cost model? It answers it twice: for a diurnal day,
// then for a real trace, the Azure LLM inference trace's conversation
// service.
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
// For a trace the load is the trace's own: its requests over its span
// (vLLM's convention, as workload's TargetRate: N requests at rate λ
// span N/λ). The fleet is sized for the trace replayed as it is, its
// requests' own lengths, bursts and lulls, with the headroom as time
// compression: analysis.TraceWorkload replays it at rate × (1 +
// headroom), every arrival instant divided by 1 + headroom, so 20 %
// headroom means the same requests arriving 20 % faster. The window runs
// from -trace-warmup to the compressed trace's last arrival. A trace is
// one sample (its replay ignores the seed), so behind a router that draws
// nothing (least-loaded, round-robin) it runs once: there is no seed
// range, and no interval. By default the trace is the 2,000-request
// sample examples/tracereplay ships (testdata/azure_conv_sample.csv,
// about 7 minutes; see its NOTICE.md for the attribution), found under
// the module root, so the default works from a clone without the full
// traces and the repository keeps one copy of the data; -trace points at
// another file in Azure's format, e.g. the full hour,
// ../shared/traces/AzureLLMInferenceTrace_conv.csv. -trace "" skips it.
//
// Each answer is printed with its seed range (each replication's own
// answer: their minimum and maximum), the attainment at the count and at
// one replica fewer with 95 % intervals, the counts it ran, and the cost
// per million output tokens at the sizing load for a declared price per
// replica-hour. The default, $10 an hour for a replica of 4
// accelerators, is an assumption for the arithmetic, not a quote: pass
// your own with -price.
//
// Then its model band: the same sizing under each model of
// analysis.AtlasBand(-model-error), every step time ×0.9 and ×1.1 and the
// three shape alternatives calibrated to Atlas's operating point
// (atlas-linear, atlas-roofline, atlas-profiled; -shapes=false drops
// them), each on the first -band-reps of the same seeds. It prints the
// size under each model with its seed range and attainment at n and n −
// 1, the range of sizes and which models give its ends, and whether the
// size holds under every model of the band or rests on the model.
//
//	go run ./examples/sizing
//	go run ./examples/sizing -mean 20 -peak-to-trough 4 -price 12.5
//	go run ./examples/sizing -trace ../shared/traces/AzureLLMInferenceTrace_conv.csv
//
// At its defaults it runs 30 simulations of fleets of up to 8 replicas
// (11 minutes of simulated time each) for the day and 90 more for its
// band, then 24 replays of the trace sample: about 4 s on two cores; it
// prints its wall time on standard error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
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
	modelError         float64 // the band's ±step-time scale
	shapes             bool    // the band includes the Atlas shape alternatives
	bandReps           int     // replications each variant of the band runs (0: -reps)
	trace              string  // the trace to size for; "" skips it
	traceWarmup        time.Duration
}

var routers = map[string]sim.Router{
	"least-loaded": sim.LeastLoaded{},
	"round-robin":  sim.RoundRobin{},
	"power-of-two": sim.PowerOfTwo{},
	"random":       sim.Random{},
}

func parse(w io.Writer, args []string) (options, error) {
	o := options{mean: 10, peakToTrough: 3, headroom: 0.2, target: 0.95, price: 10, input: 2000, output: 200,
		reps: 5, warmup: 60 * time.Second, horizon: 600 * time.Second, seed: 1, router: "least-loaded", max: sim.MaxReplicas,
		modelError: 0.1, shapes: true, bandReps: 3, trace: defaultTrace(), traceWarmup: 30 * time.Second}
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
	fs.Float64Var(&o.modelError, "model-error", o.modelError, "the model band's relative error of every step time, in [0, 1): 0.1 sizes again at ×0.9 and ×1.1")
	fs.BoolVar(&o.shapes, "shapes", o.shapes, "the model band includes the Atlas shape alternatives (atlas-linear, atlas-roofline, atlas-profiled)")
	fs.IntVar(&o.bandReps, "band-reps", o.bandReps, "replications each model of the band runs, the first of -reps's seeds (0: all of them)")
	fs.StringVar(&o.trace, "trace", o.trace, "Azure-format trace (CSV) to size for as replayed, e.g. ../shared/traces/"+azureConv+"; \"\" skips it")
	fs.DurationVar(&o.traceWarmup, "trace-warmup", o.traceWarmup, "the trace replay's warm-up, from its first request")
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
	case !(o.modelError >= 0 && o.modelError < 1):
		return o, fmt.Errorf("-model-error must be in [0, 1) (0.1 is ±10 %%), got %v", o.modelError)
	case o.bandReps < 0:
		return o, fmt.Errorf("-band-reps must be >= 0 (0: all of -reps), got %d", o.bandReps)
	case o.traceWarmup < 0:
		return o, fmt.Errorf("-trace-warmup must be >= 0, got %v", o.traceWarmup)
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

// band is the model band of the flags: none when -model-error is 0 and
// -shapes is off.
func (o options) band() analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	if !o.shapes {
		m.Shapes, m.Calibrated = nil, nil
	}
	m.Reps = o.bandReps
	return m
}

func run(w io.Writer, args []string) error {
	o, err := parse(w, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var tr *traceDay
	if o.trace != "" {
		// The trace is read first, so that a bad -trace fails before the
		// day's sizing runs.
		if tr, err = readTrace(o.trace, o.traceWarmup, o.headroom); err != nil {
			return err
		}
	}
	day := workload.Diurnal(24*time.Hour, 24, o.mean, o.peakToTrough)
	s := analysis.Sizing{
		Config:   sim.Config{Fleet: sim.Fleet{Router: routers[o.router]}, Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon}},
		Workload: analysis.Poisson(workload.Fixed(o.input, o.output)),
		Load:     peak(day), Headroom: o.headroom, Target: o.target, Reps: o.reps, BaseSeed: o.seed,
		MaxReplicas: o.max, Price: o.price, Workers: o.workers, ModelError: o.band(),
	}
	slo := s.Config.SLO.WithDefaults()
	fmt.Fprintf(w, "How many Atlas TP4 replicas (engine defaults, costmodel.Frozen) behind %T?\n", s.Config.Fleet.Router)
	fmt.Fprintf(w, "SLO: TTFT %v, ITL %v; attainment target %.3g; model band: %v\n\n", slo.TTFT, slo.ITL, o.target, s.ModelError)
	fmt.Fprintf(w, "Day: diurnal, 24 hourly steps, mean %.4g req/s, peak-to-trough %.3g: trough %.4g, peak %.4g req/s\n",
		o.mean, o.peakToTrough, day.Steps[0].Rate, s.Load)
	fmt.Fprintf(w, "Sized at the peak × (1 + %.3g headroom) = %.4g req/s, steady Poisson, %d/%d-token requests\n",
		o.headroom, s.Load*(1+o.headroom), o.input, o.output)
	fmt.Fprintf(w, "Mean over %d seeded replications (window %v after %v warm-up)\n\n", o.reps, o.horizon, o.warmup)
	if err := size(w, o, s); err != nil {
		return err
	}
	if tr == nil {
		return nil
	}
	fmt.Fprintln(w)
	s.Workload = analysis.TraceWorkload{Path: o.trace, Config: workload.Azure()}
	s.Load = tr.rate
	s.Config.Window = tr.window
	s.Reps = tr.reps(o)
	fmt.Fprintf(w, "Trace: %s, %d requests over %v: %.4g req/s at its own pace, mean %.0f in / %.0f out tokens\n",
		filepath.Base(o.trace), tr.n, tr.span.Round(time.Millisecond), tr.rate, tr.meanIn, tr.meanOut)
	fmt.Fprintf(w, "Sized for the trace as replayed, arrivals compressed by 1/(1 + %.3g headroom): %.4g req/s over %v\n",
		o.headroom, tr.rate*(1+o.headroom), tr.window.Horizon.Round(time.Millisecond))
	fmt.Fprintf(w, "%s (window to the last arrival after %v warm-up)\n\n", tr.repsWords(o), tr.window.Warmup)
	return size(w, o, s)
}

// size runs the sizing and prints its answer, its cost and its band.
func size(w io.Writer, o options, s analysis.Sizing) error {
	res, err := s.Run()
	var unmet *analysis.SizingUnmetError
	if errors.As(err, &unmet) {
		fmt.Fprintf(w, "Not met: %v\n", unmet)
		return nil
	}
	if err != nil {
		return err
	}
	if len(res.PerSeed) == 1 {
		fmt.Fprintf(w, "Replicas: %d (one replication: no seed range)\n", res.Replicas)
	} else {
		fmt.Fprintf(w, "Replicas: %d (seed range [%d, %d] over %d replications)\n", res.Replicas, res.SeedLo, res.SeedHi, len(res.PerSeed))
	}
	fmt.Fprintf(w, "  attainment at %3d: %s\n", res.Replicas, interval(res.Attainment))
	if res.Replicas > 1 {
		fmt.Fprintf(w, "  attainment at %3d: %s\n", res.Replicas-1, interval(res.Below))
	}
	if o.price > 0 {
		c := res.CostPerMillion
		fmt.Fprintf(w, "Cost: $%s per million output tokens at %.4g req/s (%.4g output tokens/s),\n",
			dollars(c), res.Load, res.OutputThroughput.Center)
		fmt.Fprintf(w, "  assuming $%.4g per replica-hour (an assumption, not a quote): $%.4g an hour for the fleet\n",
			o.price, float64(res.Replicas)*o.price)
	}
	probes := make([]string, len(res.Probes))
	for i, p := range res.Probes {
		probes[i] = fmt.Sprintf("%d (%.3f)", p.Replicas, p.Attainment.Center)
	}
	fmt.Fprintf(w, "Search: %s; %d runs\n", strings.Join(probes, ", "), res.Runs)
	if len(res.Band) == 0 {
		return nil
	}
	runs := 0
	for _, v := range res.Band {
		runs += v.Runs
	}
	on := fmt.Sprintf("the first %d of its %d seeds", res.Band[0].Reps, len(res.PerSeed))
	switch {
	case res.Band[0].Reps == 1 && len(res.PerSeed) == 1:
		on = "the same replay"
	case res.Band[0].Reps == len(res.PerSeed):
		on = fmt.Sprintf("the same %d seeds", len(res.PerSeed))
	}
	fmt.Fprintf(w, "Model band, each variant on %s (%d runs):\n", on, runs)
	fmt.Fprintf(w, "  %-16s %8s %10s  %-26s %s\n", "model", "replicas", "seeds", "attainment at n", "at n − 1")
	fmt.Fprintf(w, "  %-16s %8d %10s  %-26s %s\n", "nominal", res.Replicas, seeds(res.SeedLo, res.SeedHi, o.max),
		interval(res.Attainment), interval(res.Below))
	for _, v := range res.Band {
		n := fmt.Sprint(v.Replicas)
		if v.Unmet {
			n = fmt.Sprintf("> %d", o.max)
		}
		fmt.Fprintf(w, "  %-16s %8s %10s  %-26s %s\n", v.Name, n, seeds(v.SeedLo, v.SeedHi, o.max), interval(v.Attainment), interval(v.Below))
	}
	if res.BandHolds {
		fmt.Fprintf(w, "  sizes across the band: %d under every model\n", res.Replicas)
	} else {
		fmt.Fprintf(w, "  sizes across the band: %v (fewest under %s, most under %s)\n", res.Sizes, res.Sizes.LoModel, res.Sizes.HiModel)
	}
	fmt.Fprintf(w, "The size %s\n", res.BandVerdict())
	return nil
}

// seeds prints a seed range, a count past the bound as "> max".
func seeds(lo, hi, max int) string {
	end := func(n int) string {
		if n > max {
			return fmt.Sprintf(">%d", max)
		}
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("[%s, %s]", end(lo), end(hi))
}

// dollars prints a cost with its interval, or alone when it has none.
func dollars(c stats.Interval) string {
	if math.IsNaN(c.Lo) {
		return fmt.Sprintf("%.3f (no interval)", c.Center)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", c.Center, c.Lo, c.Hi)
}

// interval prints a figure with its interval.
func interval(x stats.Interval) string {
	switch {
	case math.IsNaN(x.Center):
		return "-"
	case math.IsNaN(x.Lo):
		return fmt.Sprintf("%.3f (no interval)", x.Center)
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f]", x.Center, x.Lo, x.Hi)
}
