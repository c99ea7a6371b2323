package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/servesim/servesim/internal/moduleroot"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/chart"
	"github.com/servesim/servesim/workload"
)

// sample is the Azure sample examples/tracereplay ships, relative to the
// module root (one copy of the data and its attribution, its NOTICE.md).
const sample = "examples/tracereplay/testdata/azure_conv_sample.csv"

// defaultTrace is the sample under the root of the module containing the
// working directory, so the default works from any directory of a clone.
func defaultTrace() string { return moduleroot.Path(sample) }

// day is one day of the study: its shape (rates by hour, mean -mean) and
// its requests' lengths.
type day struct {
	name, about string
	shape       workload.Schedule
	lengths     workload.Joint
}

// dayList is the study's days: the diurnal day, and the Azure
// conversation day unless -trace is "".
func (o options) dayList() ([]day, error) {
	step := time.Duration(o.hours * float64(time.Hour) / 24)
	out := []day{{name: "diurnal", shape: workload.Diurnal(24*step, 24, o.mean, 10), lengths: workload.Fixed(o.input, o.output),
		about: fmt.Sprintf("%d/%d-token requests, peak-to-trough 10 (Azure's code service on weekdays)", o.input, o.output)}}
	if o.trace == "" {
		return out, nil
	}
	tr, err := workload.OpenTrace(o.trace, workload.Azure())
	if err != nil {
		return nil, fmt.Errorf("-trace: %w", err)
	}
	defer tr.Close()
	pairs, err := workload.ResampleFrom(tr, 0)
	if err != nil {
		return nil, fmt.Errorf("-trace: %w", err)
	}
	if err := pairs.Validate(); err != nil {
		return nil, fmt.Errorf("-trace %s: %w", o.trace, err)
	}
	out = append(out, day{name: "azure-conversation", shape: workload.Diurnal(24*step, 24, o.mean, 2), lengths: pairs,
		about: fmt.Sprintf("lengths resampled from %d requests of %s, peak-to-trough 2 (Azure's conversation service on weekdays)",
			len(pairs.Pairs), filepath.Base(o.trace))})
	return out, nil
}

// band is the model band of the flags.
func (o options) band() analysis.ModelError {
	m := analysis.AtlasBand(o.modelError)
	if !o.shapes {
		m.Shapes, m.Calibrated = nil, nil
	}
	m.Reps = o.bandReps
	return m
}

// config is every run's configuration but its fleet's size and motion.
func config(horizon time.Duration) sim.Config {
	return sim.Config{Fleet: sim.Fleet{Router: sim.LeastLoaded{}}, Window: sim.Window{Horizon: horizon}}
}

// sizer sizes a fleet for a steady rate, once per rate.
type sizer struct {
	o       options
	lengths workload.Joint
	done    map[float64]int
	runs    int
}

func (s *sizer) size(rate float64) (int, error) {
	if n, ok := s.done[rate]; ok {
		return n, nil
	}
	cfg := config(s.o.sizingWindow)
	cfg.Warmup = time.Minute
	cfg.Horizon = time.Minute + s.o.sizingWindow
	res, err := analysis.Sizing{Config: cfg, Workload: analysis.Poisson(s.lengths), Load: rate, Target: s.o.target,
		Reps: s.o.sizingReps, BaseSeed: s.o.seed, Workers: s.o.workers, MaxReplicas: 1000}.Run()
	if err != nil {
		return 0, err
	}
	s.done[rate] = res.Replicas
	s.runs += res.Runs
	return res.Replicas, nil
}

// outcome is one day's study: the sizes, and every arm's day.
type outcome struct {
	step         time.Duration // a step of the day ("hour")
	peakN, meanN int
	sizes        []int // each step's own size
	held         float64
	res          *analysis.DayResult
}

// study sizes the static fleets and the hours, runs every arm through the
// day and prints the answer, and its chart into -out.
func (o options) study(w io.Writer, d day) error {
	fmt.Fprintf(w, "Day %s: %d steps of %v, mean %.4g req/s, trough %.4g, peak %.4g; %s\n", d.name, len(d.shape.Steps), d.shape.Steps[0].Duration,
		d.shape.MeanRate(), slices.MinFunc(d.shape.Steps, byRate).Rate, slices.MaxFunc(d.shape.Steps, byRate).Rate, d.about)
	out, err := o.measure(w, d)
	if err != nil {
		return err
	}
	report(w, out.res)
	if o.chart == "" {
		return nil
	}
	var drawn []chart.DayArm // the static fleets and the first cold start's arms: more would hide each other
	for i, a := range out.res.Arms {
		if i < 2 || i < 2+len(policies) {
			drawn = append(drawn, chart.DayArm{Name: a.Name, Scale: &sim.ScaleSummary{Timeline: a.Timeline}})
		}
	}
	ps, err := chart.Day(fmt.Sprintf("Day %s: the first seeded day", d.name), 0, drawn...)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.chart, 0o755); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	path := filepath.Join(o.chart, "day-"+d.name+".png")
	if err := chart.Save(path, ps); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	fmt.Fprintf(w, "Chart: %s\n", path)
	return nil
}

// policy is one autoscaled arm of each cold start: its name, and its
// autoscaler and behaviour from the day's sizes.
type policy struct {
	name string
	make func(o outcome, hourly []sim.ReplicaStep, cold time.Duration) (sim.Autoscaler, sim.Behavior)
}

// policies are the autoscaled arms, in the order they print.
var policies = []policy{
	{"time-of-day", func(_ outcome, hourly []sim.ReplicaStep, cold time.Duration) (sim.Autoscaler, sim.Behavior) {
		return sim.Schedule{Steps: hourly, Lead: cold}, sim.Behavior{}
	}},
	{"hpa-held", func(o outcome, _ []sim.ReplicaStep, _ time.Duration) (sim.Autoscaler, sim.Behavior) {
		return sim.TargetUtilisation{Metric: sim.MetricHeld, Target: o.held}, sim.HPABehavior()
	}},
	{"keda-queue", func(outcome, []sim.ReplicaStep, time.Duration) (sim.Autoscaler, sim.Behavior) {
		return sim.QueueDepth{Target: queueTarget}, sim.HPABehavior()
	}},
	{"wva-saturation", func(outcome, []sim.ReplicaStep, time.Duration) (sim.Autoscaler, sim.Behavior) {
		return sim.KVSaturation{}, wvaBehavior()
	}},
	{"slo-headroom", func(outcome, []sim.ReplicaStep, time.Duration) (sim.Autoscaler, sim.Behavior) {
		return sim.SLOHeadroom{}, sim.HPABehavior()
	}},
}

// measure sizes the day and runs its arms.
func (o options) measure(w io.Writer, d day) (outcome, error) {
	out := outcome{step: d.shape.Steps[0].Duration}
	sz := &sizer{o: o, lengths: d.lengths, done: map[float64]int{}}
	peak := slices.MaxFunc(d.shape.Steps, byRate).Rate
	var err error
	if out.peakN, err = sz.size(peak); err != nil {
		return out, err
	}
	if out.meanN, err = sz.size(d.shape.MeanRate()); err != nil {
		return out, err
	}
	hourly := make([]sim.ReplicaStep, len(d.shape.Steps))
	out.sizes = make([]int, len(d.shape.Steps))
	for h, st := range d.shape.Steps {
		n, err := sz.size(st.Rate)
		if err != nil {
			return out, err
		}
		hourly[h], out.sizes[h] = sim.ReplicaStep{Duration: out.step, Replicas: n}, n
	}
	fmt.Fprintf(w, "Sized for attainment %.3g at steady Poisson (analysis.Sizing, %d runs): peak %d replicas, mean %d, by hour %v\n",
		o.target, sz.runs, out.peakN, out.meanN, out.sizes)
	if out.held, err = o.heldAtPeak(d, peak, out.peakN); err != nil {
		return out, err
	}
	fmt.Fprintf(w, "Policies: HPA on requests held per replica, target %.3g (what each of the %d holds at the peak: Little's L / n);"+
		" KEDA on requests waiting, target %d a replica; llm-d's WVA saturation (V1 defaults); servesim's SLO headroom (TTFT p99 over the last minute against 600 ms); each behind HPA's behaviour\n",
		out.held, out.peakN, queueTarget)
	arms := []analysis.DayArm{{Name: "static@peak", Replicas: out.peakN}, {Name: "static@mean", Replicas: out.meanN}}
	for _, c := range o.cold {
		for _, p := range policies {
			a, b := p.make(out, hourly, c)
			arms = append(arms, analysis.DayArm{Name: p.name + " " + coldName(c), Replicas: out.sizes[0],
				Autoscale: sim.Autoscale{Policy: a, Min: 1, Max: 2 * out.peakN, ColdStart: sim.ColdStart{Load: c}, Behavior: b}})
		}
	}
	out.res, err = analysis.Day{Config: config(24 * out.step), Workload: analysis.ShapedWorkload{Shape: d.shape, Spec: workload.Synthetic{Lengths: d.lengths}},
		Load: d.shape.MeanRate(), Arms: arms, Days: o.days, BaseSeed: o.seed, Price: o.price, Bin: out.step, Workers: o.workers,
		ModelError: o.band()}.Run()
	return out, err
}

func byRate(a, b workload.RateStep) int {
	switch {
	case a.Rate < b.Rate:
		return -1
	case a.Rate > b.Rate:
		return 1
	}
	return 0
}

// coldName is a cold start in words: "(cold 90s)".
func coldName(c time.Duration) string { return fmt.Sprintf("(cold %v)", c) }

// report prints each arm and its comparison with the baseline.
func report(w io.Writer, res *analysis.DayResult) {
	fmt.Fprintf(w, "%-28s %-26s %-9s %-24s %-22s\n", "arm", "attainment", "worst bin", "replica-hours", "cost / M good tokens")
	for _, a := range res.Arms {
		fmt.Fprintf(w, "%-28s %-26s %-9s %-24s %-22s\n", a.Name, a.Attainment, worst(a.Binned), a.ReplicaHours, a.GoodCostPerMillion)
	}
	fmt.Fprintf(w, "Attainment by step of the day, the days pooled (- where nothing ended):\n")
	for _, a := range res.Arms {
		fmt.Fprintf(w, "  %-28s", a.Name)
		for _, x := range a.Binned {
			if math.IsNaN(x) {
				fmt.Fprintf(w, "    -")
			} else {
				fmt.Fprintf(w, " %4.2f", x)
			}
		}
		fmt.Fprintln(w)
	}
	base := res.Arms[0]
	fmt.Fprintf(w, "Against %s, paired by day (arm − %s):\n", base.Name, base.Name)
	for _, a := range res.Arms[1:] {
		fmt.Fprintf(w, "  %-30s attainment %s, replica-hours %s, cost / M good tokens %s: %s\n", a.Name, a.AttainmentDiff, a.ReplicaHoursDiff, a.GoodCostDiff, a.Reading)
	}
	if len(res.Band) > 0 {
		fmt.Fprintf(w, "Model band (%d runs in all):\n%s", res.Runs, res.Verdict())
	}
}

// worst is the lowest attainment of the day's bins, "-" if none ended.
func worst(binned []float64) string {
	m := math.Inf(1)
	for _, a := range binned {
		if !math.IsNaN(a) {
			m = min(m, a)
		}
	}
	if math.IsInf(m, 1) {
		return "-"
	}
	return fmt.Sprintf("%.3f", m)
}

// queueTarget is the KEDA arm's target of waiting requests a replica: the
// queue at which llm-d's saturation detector calls a replica saturated
// (5), a declared choice.
const queueTarget = 5

// wvaBehavior is the HPA behaviour llm-d's variant autoscaler's Helm chart
// puts in front of it (docs/integrations/hpa-integration.md): a 240 s
// window and 10 pods per 150 s, each way.
func wvaBehavior() sim.Behavior {
	r := sim.Rules{Window: 240 * time.Second, Policies: []sim.RatePolicy{{Kind: sim.PodsRate, Value: 10, Period: 150 * time.Second}}}
	return sim.Behavior{ScaleUp: r, ScaleDown: r}
}

// heldAtPeak is the HPA arm's target: the requests each of n replicas
// holds on average, serving the peak rate as steady Poisson (Little's L
// over n, Summary.MeanInSystem / n), on the sizing's window: the
// utilisation the sizing found meets the target, as an operator would
// calibrate an HPA from a load test.
func (o options) heldAtPeak(d day, rate float64, n int) (float64, error) {
	cfg := config(time.Minute + o.sizingWindow)
	cfg.Warmup = time.Minute
	cfg.Fleet.Replicas = sim.Copies(n, sim.ReplicaConfig{})
	cfg.Seed = o.seed
	src, err := analysis.Poisson(d.lengths).Source(rate, o.seed)
	if err != nil {
		return 0, err
	}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		return 0, err
	}
	return sum.MeanInSystem / float64(n), nil
}
