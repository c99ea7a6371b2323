package analysis

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
	"github.com/servesim/servesim/workload"
)

// Day asks what a day of traffic costs at the SLO under each of several
// fleets: static fleets and autoscaled ones (sim.Autoscale), every arm on
// the same seeded days (common random days: day d runs Seed(BaseSeed, d)
// under every arm, so the arms see the same requests and their per-day
// differences are paired). For each arm it reports attainment over the
// day, replica-hours (cold starts and drains included), the cost per
// million output tokens and per million good ones at a declared Price
// per replica-hour, and attainment per Bin of the day; for each arm
// after the first, the paired per-day differences from the first, with
// intervals. A declared ModelError runs every arm again under each model
// of the band, on the first ModelError.Reps days, and the result says
// whether each comparison holds under every model of the band.
//
// The window is Config.Window: its Horizon is the day's length, and only
// requests arriving inside it are measured; replica-hours are clipped to
// it. A static arm (no Autoscale policy) runs as an autoscaled fleet on a
// one-step sim.Schedule of its size, the fixed fleet byte for byte
// (sim's TestStaticScheduleIsTheFixedFleet), so that every arm has a
// timeline.
//
// The zero value is not runnable: set Config (with Window.Horizon),
// Workload, Load and Arms. The other fields default: Days 3, Confidence
// 0.95, Bin one hour, Workers GOMAXPROCS, Price 0 (no cost: NaN).
type Day struct {
	// Config is every run's configuration but its fleet: the replica is
	// Config.Fleet.Replicas[0] when the fleet lists one, or the replica
	// Config.Engine and Config.Model configure (nil). Seed is set per
	// day; the fleet's Autoscale is each arm's.
	Config sim.Config
	// Workload makes each day's requests at Load (for ShapedWorkload,
	// the day's mean rate; for a TraceWorkload, its target rate).
	Workload Workload
	Load     float64
	// Arms are the fleets compared; the first is the baseline the others
	// are paired against. At least one; names must differ.
	Arms []DayArm
	// Days is the number of seeded days each arm runs; default 3 (an
	// interval needs two).
	Days     int
	BaseSeed uint64
	// Price is the declared price of one replica for an hour, in any
	// currency (>= 0); 0 means no price, and every cost is NaN.
	Price float64
	// Bin is the length of the stretches the day's attainment is
	// reported over (DayArmResult.Binned); 0 means an hour.
	Bin        time.Duration
	Confidence float64
	Workers    int
	// ModelError, when declared, runs every arm under each variant of the
	// band on the first ModelError.Reps days (all Days when 0).
	ModelError ModelError
}

// DayArm is one fleet of a Day: Replicas serving from the start, and an
// Autoscale that moves it (the zero value: a static fleet of Replicas).
// An autoscaled arm's Min and Max must bound Replicas.
type DayArm struct {
	Name      string
	Replicas  int
	Autoscale sim.Autoscale
}

// DayResult is the answer of a Day.
type DayResult struct {
	// Arms are the arms' results, in Day.Arms's order.
	Arms []DayArmResult
	Days int
	// Runs is the number of simulation runs the answer took, the band's
	// included.
	Runs int
	// Band, when a ModelError is declared, is every arm's result under
	// each variant of the band, in the band's order; BandHolds says
	// whether every arm's comparison with the baseline reads the same
	// (DayArmResult.Reading) under every variant as under the nominal
	// model on the same days (false without a band).
	Band      []DayVariant
	BandHolds bool
}

// DayVariant is a Day's arms under one model of the band, on the first
// Days days, and the nominal model's on the same days (Nominal), whose
// readings the variant's are compared with.
type DayVariant struct {
	Name          string
	Days          int
	Arms, Nominal []DayArmResult
}

// DayArmResult is one arm's day.
type DayArmResult struct {
	Name string
	// Attainment is the mean over days of the day's attainment (good /
	// offered, measured requests); ReplicaHours the mean replica-hours
	// paid in the window (sim.ScaleSummary.ReplicaHours).
	Attainment, ReplicaHours stats.Interval
	// CostPerMillion is Price × ReplicaHours / output tokens × 10⁶, and
	// GoodCostPerMillion the same over good requests' output tokens
	// (sim.Summary.GoodTokens): the SLO-qualified cost. Means over days;
	// NaN without a Price.
	CostPerMillion, GoodCostPerMillion stats.Interval
	// Joins is the mean number of replicas the arm's controller asked
	// for in a day.
	Joins float64
	// Binned is the attainment of each Bin of the day, pooled over the
	// days (Σ good / Σ ended of the timeline samples whose tick falls in
	// it; the last bin takes the measured requests that end after the
	// horizon); NaN where nothing ended.
	Binned []float64
	// Timeline is the first day's (sim.ScaleSummary.Timeline): for a
	// chart of the day.
	Timeline []sim.ScaleSample
	// AttainmentDiff, ReplicaHoursDiff and GoodCostDiff are the paired
	// per-day differences, this arm − the baseline (zero-width for the
	// baseline itself); Reading says in words which way each goes.
	AttainmentDiff, ReplicaHoursDiff, GoodCostDiff stats.Interval
	Reading                                        string
}

// ShapedWorkload is a day of open-loop arrivals whose rate follows Shape
// (workload.Diurnal, or any piecewise-constant rates), scaled so that its
// mean is the offered load: Spec's arrival process, lengths and prefixes
// with its Seed and Arrival.Schedule set per run (Rate unused), lasting
// Shape's span unless Spec.Duration says otherwise (a Shape that repeats,
// as workload.Diurnal's does, lasts a year: the run stops at its
// window's end).
type ShapedWorkload struct {
	Shape workload.Schedule
	Spec  workload.Synthetic
}

// Source is the day at mean rate load from seed.
func (s ShapedWorkload) Source(load float64, seed uint64) (workload.Source, error) {
	mean := s.Shape.MeanRate()
	if !(mean > 0) {
		return nil, errors.New("sim: ShapedWorkload.Shape has no arrivals (mean rate 0)")
	}
	shape := workload.Schedule{Steps: make([]workload.RateStep, len(s.Shape.Steps)), Repeat: s.Shape.Repeat}
	for i, st := range s.Shape.Steps {
		shape.Steps[i] = workload.RateStep{Duration: st.Duration, Rate: st.Rate * load / mean}
	}
	spec := s.Spec
	spec.Seed, spec.Arrival.Rate, spec.Arrival.Schedule = seed, 0, shape
	if shape.Repeat && spec.Duration == 0 && spec.Count == 0 {
		spec.Duration = year // the run stops at its window's end
	}
	return workload.NewSynthetic(spec)
}

func (s ShapedWorkload) String() string {
	return fmt.Sprintf("open-loop arrivals shaped by %v, scaled to the offered mean rate; lengths %v, prefixes: %v", s.Shape, s.Spec.Lengths, s.Spec.Prefix)
}

func (d Day) withDefaults() Day {
	if d.Days == 0 {
		d.Days = 3
	}
	if d.Confidence == 0 {
		d.Confidence = 0.95
	}
	if d.Bin == 0 {
		d.Bin = time.Hour
	}
	if d.Workers <= 0 {
		d.Workers = runtime.GOMAXPROCS(0)
	}
	return d
}

// Validate joins every problem of the day, naming each field.
func (d Day) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: Day."+format, a...)) }
	if len(d.Config.Fleet.Replicas) > 1 {
		bad("Config.Fleet.Replicas lists %d replicas: a day's arms copy one replica (list one, or none to use Config.Engine and Config.Model)", len(d.Config.Fleet.Replicas))
	}
	if d.Config.Fleet.Autoscale.On() {
		bad("Config.Fleet.Autoscale is set: each arm's Autoscale says how its fleet moves")
	}
	if d.Config.Horizon <= 0 {
		bad("Config.Window.Horizon must be set: it is the day's length")
	}
	if d.Workload == nil {
		bad("Workload is nil")
	}
	if !(d.Load > 0) || math.IsInf(d.Load, 0) {
		bad("Load must be a positive rate, got %v", d.Load)
	}
	if len(d.Arms) == 0 {
		bad("Arms is empty: a day compares at least one fleet")
	}
	names := map[string]bool{}
	for i, a := range d.Arms {
		if a.Name == "" || names[a.Name] {
			bad("Arms[%d].Name must be set and differ from the others', got %q", i, a.Name)
		}
		names[a.Name] = true
		if a.Replicas < 1 || a.Replicas > sim.MaxReplicas {
			bad("Arms[%d].Replicas must be in [1, %d], got %d", i, sim.MaxReplicas, a.Replicas)
			continue
		}
		if err := d.armConfig(a, 0).Validate(); err != nil {
			bad("Arms[%d] (%s): %w", i, a.Name, err)
		}
	}
	if d.Days < 0 || d.Days > 10_000 {
		bad("Days must be in [0, 10000] (0 means 3), got %d", d.Days)
	}
	if !(d.Price >= 0) || math.IsInf(d.Price, 0) {
		bad("Price must be >= 0 (0 means no price), got %v", d.Price)
	}
	if d.Bin < 0 {
		bad("Bin must be >= 0 (0 means an hour), got %v", d.Bin)
	}
	if !(d.Confidence == 0 || d.Confidence > 0 && d.Confidence < 1) {
		bad("Confidence must be in (0, 1) (0 means 0.95), got %v", d.Confidence)
	}
	if err := d.ModelError.Validate(); err != nil {
		errs = append(errs, err)
	} else if d.ModelError.Declared() {
		if err := d.ModelError.checkCalibrated(d.Config); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// armConfig is the configuration arm a runs on day seed.
func (d Day) armConfig(a DayArm, seed uint64) sim.Config {
	cfg := d.Config
	cfg.Seed = seed
	rep := sim.ReplicaConfig{Engine: cfg.Engine, Model: cfg.Model, Speculation: cfg.Speculation}
	if len(cfg.Fleet.Replicas) == 1 {
		rep = cfg.Fleet.Replicas[0]
	}
	cfg.Engine, cfg.Model, cfg.Speculation = engine.Config{}, nil, sim.Speculation{}
	cfg.Fleet.Replicas = sim.Copies(a.Replicas, rep)
	cfg.Fleet.Autoscale = a.Autoscale
	if !a.Autoscale.On() { // static: a one-step schedule, the fixed fleet byte for byte, with a timeline
		cfg.Fleet.Autoscale = sim.Autoscale{Policy: sim.Schedule{Steps: []sim.ReplicaStep{{Duration: cfg.Horizon, Replicas: a.Replicas}}},
			Min: a.Replicas, Max: a.Replicas}
	}
	return cfg
}

// dayRun is what one arm's day keeps of its run.
type dayRun struct {
	attainment, replicaHours float64
	tokens, goodTokens       int
	joins                    int
	ended, good              []int // by bin
	timeline                 []sim.ScaleSample
}

// Run runs every arm on every day (and under every variant of a declared
// band), Workers at a time.
func (d Day) Run() (*DayResult, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	d = d.withDefaults()
	res := &DayResult{Days: d.Days}
	runs, err := d.runModel(nil, 0, d.Days)
	if err != nil {
		return nil, err
	}
	res.Arms, res.Runs = d.summariseAll(runs, d.Days), len(d.Arms)*d.Days
	if d.ModelError.Declared() {
		reps := d.Days
		if r := d.ModelError.Reps; r > 0 {
			reps = min(r, d.Days)
		}
		// The nominal model on the band's days, whose readings the
		// variants' are held to: the same days, the same evidence.
		nominal := d.summariseAll(runs, reps)
		res.BandHolds = true
		for _, v := range d.ModelError.variants() {
			vr, err := d.runModel(v.replace, v.scale, reps)
			if err != nil {
				return nil, fmt.Errorf("sim: Day under %s: %w", v.Name, err)
			}
			arms := d.summariseAll(vr, reps)
			res.Runs += len(d.Arms) * reps
			res.Band = append(res.Band, DayVariant{Name: v.Name, Days: reps, Arms: arms, Nominal: nominal})
			for i := range arms {
				if arms[i].Reading != nominal[i].Reading {
					res.BandHolds = false
				}
			}
		}
	}
	return res, nil
}

// summariseAll is every arm's result over the first days days of runs.
func (d Day) summariseAll(runs [][]dayRun, days int) []DayArmResult {
	out := make([]DayArmResult, len(d.Arms))
	for a := range d.Arms {
		out[a] = d.summarise(d.Arms[a].Name, runs[a][:days], runs[0][:days])
	}
	return out
}

// runModel runs every arm for days days under the model replace makes of
// each replica's (nil: the nominal model): runs[arm][day].
func (d Day) runModel(replace func(costmodel.Model) costmodel.Model, scale float64, days int) ([][]dayRun, error) {
	runs := make([][]dayRun, len(d.Arms))
	for i := range runs {
		runs[i] = make([]dayRun, days)
	}
	type job struct{ arm, day int }
	jobs := make(chan job)
	errs := make([]error, len(d.Arms)*days)
	var wg sync.WaitGroup
	for range min(d.Workers, len(errs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				cfg := d.armConfig(d.Arms[j.arm], Seed(d.BaseSeed, j.day))
				if replace != nil {
					cfg = withModel(cfg, replace, scale)
				}
				runs[j.arm][j.day], errs[j.arm*days+j.day] = d.runDay(cfg, j.day)
			}
		}()
	}
	for a := range d.Arms {
		for k := range days {
			jobs <- job{a, k}
		}
	}
	close(jobs)
	wg.Wait()
	for i, err := range errs { // the first, not one per run: they often share a cause
		if err != nil {
			return nil, fmt.Errorf("arm %s, day %d: %w", d.Arms[i/days].Name, i%days, err)
		}
	}
	return runs, nil
}

// runDay runs one arm's day and keeps what the result needs.
func (d Day) runDay(cfg sim.Config, day int) (dayRun, error) {
	src, err := d.Workload.Source(d.Load, cfg.Seed)
	if err != nil {
		return dayRun{}, err
	}
	sum, err := sim.Run(cfg, src, nil)
	if err != nil {
		return dayRun{}, err
	}
	sc := sum.Scale
	bins := int((cfg.Horizon + d.Bin - 1) / d.Bin)
	r := dayRun{attainment: sum.Attainment, replicaHours: sc.ReplicaHours, tokens: sum.Tokens, goodTokens: sum.GoodTokens,
		joins: sc.Joins, ended: make([]int, bins), good: make([]int, bins)}
	for _, s := range sc.Timeline {
		// The interval ending at At lies in the bin of At−; the ends
		// after the day's last bin (measured requests finishing after
		// the horizon) count in it.
		b := min(int((max(s.At, 1)-1)/d.Bin), bins-1)
		r.ended[b] += s.Ended
		r.good[b] += s.Good
	}
	if day == 0 {
		r.timeline = sc.Timeline
	}
	return r, nil
}

// summarise is one arm's result over its days, paired with the
// baseline's.
func (d Day) summarise(name string, runs, base []dayRun) DayArmResult {
	n := len(runs)
	att, rh, cost, good := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	dAtt, dRH, dGood := make([]float64, n), make([]float64, n), make([]float64, n)
	perM := func(rh float64, tokens int) float64 {
		if d.Price == 0 || tokens == 0 {
			return math.NaN()
		}
		return d.Price * rh / float64(tokens) * 1e6
	}
	out := DayArmResult{Name: name, Timeline: runs[0].timeline}
	ended, goodEnds := make([]int, len(runs[0].ended)), make([]int, len(runs[0].ended))
	for k, r := range runs {
		att[k], rh[k], cost[k], good[k] = r.attainment, r.replicaHours, perM(r.replicaHours, r.tokens), perM(r.replicaHours, r.goodTokens)
		b := base[k]
		dAtt[k], dRH[k], dGood[k] = r.attainment-b.attainment, r.replicaHours-b.replicaHours, good[k]-perM(b.replicaHours, b.goodTokens)
		out.Joins += float64(r.joins) / float64(n)
		for i := range ended {
			ended[i] += r.ended[i]
			goodEnds[i] += r.good[i]
		}
	}
	c := d.Confidence
	out.Attainment = stats.Clamp(stats.MeanInterval(att, c), 0, 1)
	out.ReplicaHours = stats.Clamp(stats.MeanInterval(rh, c), 0, math.Inf(1))
	out.CostPerMillion, out.GoodCostPerMillion = stats.MeanInterval(cost, c), stats.MeanInterval(good, c)
	out.AttainmentDiff, out.ReplicaHoursDiff, out.GoodCostDiff = stats.MeanInterval(dAtt, c), stats.MeanInterval(dRH, c), stats.MeanInterval(dGood, c)
	out.Binned = make([]float64, len(ended))
	for i := range ended {
		out.Binned[i] = math.NaN()
		if ended[i] > 0 {
			out.Binned[i] = float64(goodEnds[i]) / float64(ended[i])
		}
	}
	out.Reading = fmt.Sprintf("attainment %s, replica-hours %s", direction(out.AttainmentDiff), direction(out.ReplicaHoursDiff))
	return out
}

// direction says which way a paired difference goes: "higher" or
// "lower" when its interval excludes 0, "the same" when every day's
// difference is 0, "indistinguishable" otherwise. With one day there is
// no interval: the day's own sign, marked "(one day)", a point estimate
// and not evidence.
func direction(e stats.Interval) string {
	switch {
	case e.Center == 0 && (e.Lo == 0 && e.Hi == 0 || math.IsNaN(e.Lo)):
		return "the same"
	case math.IsNaN(e.Lo) && e.Center > 0:
		return "higher (one day)"
	case math.IsNaN(e.Lo):
		return "lower (one day)"
	case e.Lo > 0:
		return "higher"
	case e.Hi < 0:
		return "lower"
	}
	return "indistinguishable"
}

// Verdict says in words how each arm compares with the baseline, and
// whether that holds under every model of the band.
func (r DayResult) Verdict() string {
	var b strings.Builder
	for _, a := range r.Arms[1:] {
		fmt.Fprintf(&b, "%s vs %s: %s", a.Name, r.Arms[0].Name, a.Reading)
		if len(r.Band) > 0 {
			var moved []string
			var on string
			for _, v := range r.Band {
				for j, va := range v.Arms {
					if va.Name != a.Name {
						continue
					}
					if nom := v.Nominal[j].Reading; va.Reading != nom {
						moved = append(moved, fmt.Sprintf("under %s: %s, where the nominal model reads %s", v.Name, va.Reading, nom))
					}
				}
				if v.Days < r.Days {
					on = fmt.Sprintf(" (on the first %d of the %d days)", v.Days, r.Days)
				}
			}
			if len(moved) == 0 {
				b.WriteString("; holds under every model of the band" + on)
			} else {
				b.WriteString("; rests on the model" + on + " (" + strings.Join(moved, "; ") + ")")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
