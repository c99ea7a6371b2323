package analysis

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// A compressed day of four 10-minute "hours" on Atlas TP4 replicas,
// 1,000 tokens in and 200 out.
var (
	dayRates  = []float64{2, 6, 4, 1}
	dayStep   = 10 * time.Minute
	dayLength = time.Duration(len(dayRates)) * dayStep
)

func dayShape() workload.Schedule {
	s := workload.Schedule{}
	for _, r := range dayRates {
		s.Steps = append(s.Steps, workload.RateStep{Duration: dayStep, Rate: r})
	}
	return s
}

func dayWorkload() ShapedWorkload {
	return ShapedWorkload{Shape: dayShape(), Spec: workload.Synthetic{Lengths: workload.Fixed(1000, 200)}}
}

// The identity: with no cold start, a schedule that knows the
// load (each hour's size from a Sizing of that hour's rate alone) pays
// for exactly Σ n_h hours serving, and for more only while a leaving
// replica drains; every hour meets the target the sizing met, give or
// take the queue an hour inherits from the last. A static fleet sized
// for the peak pays max n_h for every hour.
func TestDayForesightCostsTheHourlySizes(t *testing.T) {
	hourly := make([]int, len(dayRates))
	for h, rate := range dayRates {
		res, err := Sizing{Config: sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: dayStep}}, Workload: Poisson(workload.Fixed(1000, 200)),
			Load: rate, Reps: 2, Target: 0.95}.Run()
		require.NoError(t, err)
		hourly[h] = res.Replicas
	}
	t.Logf("hourly sizes %v", hourly)
	steps := make([]sim.ReplicaStep, len(hourly))
	peak, sum := 0, 0
	for h, n := range hourly {
		steps[h] = sim.ReplicaStep{Duration: dayStep, Replicas: n}
		peak, sum = max(peak, n), sum+n
	}
	d := Day{Config: sim.Config{Window: sim.Window{Horizon: dayLength}}, Workload: dayWorkload(), Load: dayShape().MeanRate(), Days: 2, Price: 12,
		Arms: []DayArm{
			{Name: "static@peak", Replicas: peak},
			{Name: "foresight", Replicas: hourly[0], Autoscale: sim.Autoscale{Policy: sim.Schedule{Steps: steps}, Max: peak, Drain: sim.Drain{Timeout: time.Minute}}},
		}}
	res, err := d.Run()
	require.NoError(t, err)
	static, fore := res.Arms[0], res.Arms[1]
	hours := dayStep.Hours()
	require.InDelta(t, float64(peak)*dayLength.Hours(), static.ReplicaHours.Center, 1e-9, "the peak fleet all day")
	require.GreaterOrEqual(t, fore.ReplicaHours.Lo, float64(sum)*hours-1e-9, "Σ n_h hours at least")
	leaves := 0
	for h := 1; h < len(hourly); h++ {
		leaves += max(0, hourly[h-1]-hourly[h])
	}
	require.LessOrEqual(t, fore.ReplicaHours.Hi, float64(sum)*hours+float64(leaves)*time.Minute.Hours()+1e-9, "and no more than the drains, each under its minute")
	require.Len(t, fore.Binned, 1, "one bin: the day is shorter than an hour")
	require.InDelta(t, 0, static.AttainmentDiff.Center, 0, "the baseline against itself")
	require.Equal(t, "attainment the same, replica-hours the same", static.Reading)
	require.Less(t, fore.ReplicaHoursDiff.Hi, 0.0, "the schedule pays less than the peak fleet")
	require.GreaterOrEqual(t, fore.Attainment.Center, 0.9, "each hour sized for 0.95 on its own")
	require.Equal(t, 2*2, res.Runs)
	// Per hour, with 10-minute bins.
	d.Bin = dayStep
	res, err = d.Run()
	require.NoError(t, err)
	for h, a := range res.Arms[1].Binned {
		require.GreaterOrEqual(t, a, 0.85, "hour %d (%d replicas at %g req/s)", h, hourly[h], dayRates[h])
	}
	require.Less(t, res.Arms[1].GoodCostPerMillion.Center, res.Arms[0].GoodCostPerMillion.Center)
}

// Arms on common random days: the same arm twice differs by exactly 0 on
// every day; a model band that cannot move that keeps the reading.
func TestDayPairsArmsOnCommonDays(t *testing.T) {
	arm := DayArm{Name: "a", Replicas: 3}
	twin := DayArm{Name: "b", Replicas: 3}
	d := Day{Config: sim.Config{Window: sim.Window{Horizon: 20 * time.Minute}}, Workload: dayWorkload(), Load: 3, Days: 2,
		Arms: []DayArm{arm, twin}, ModelError: ModelError{Scale: 0.1}}
	res, err := d.Run()
	require.NoError(t, err)
	b := res.Arms[1]
	require.Equal(t, res.Arms[0].Attainment, b.Attainment)
	require.Zero(t, b.AttainmentDiff.Center)
	require.Zero(t, b.ReplicaHoursDiff.Hi)
	require.True(t, math.IsNaN(b.GoodCostPerMillion.Center), "no price, no cost")
	require.Equal(t, "attainment the same, replica-hours the same", b.Reading)
	require.True(t, res.BandHolds)
	require.Len(t, res.Band, 2)
	require.Equal(t, 2*2+2*2*2, res.Runs)
	require.Contains(t, res.Verdict(), "b vs a: attainment the same, replica-hours the same; holds under every model of the band")
}

func TestDayValidate(t *testing.T) {
	ok := Day{Config: sim.Config{Window: sim.Window{Horizon: time.Hour}}, Workload: dayWorkload(), Load: 3, Arms: []DayArm{{Name: "a", Replicas: 2}}}
	require.NoError(t, ok.Validate())
	for _, c := range []struct {
		name string
		mod  func(*Day)
		want string
	}{
		{"horizon", func(d *Day) { d.Config.Horizon = 0 }, "Day.Config.Window.Horizon"},
		{"arms", func(d *Day) { d.Arms = nil }, "Day.Arms is empty"},
		{"names", func(d *Day) { d.Arms = append(d.Arms, DayArm{Name: "a", Replicas: 1}) }, "Day.Arms[1].Name"},
		{"replicas", func(d *Day) { d.Arms[0].Replicas = 0 }, "Day.Arms[0].Replicas"},
		{"bounds", func(d *Day) {
			d.Arms[0].Autoscale = sim.Autoscale{Policy: sim.Schedule{Steps: []sim.ReplicaStep{{Duration: time.Hour, Replicas: 1}}}, Max: 1}
		}, "Fleet.Autoscale.Min and Max must bound"},
		{"load", func(d *Day) { d.Load = math.NaN() }, "Day.Load"},
		{"price", func(d *Day) { d.Price = -1 }, "Day.Price"},
		{"fleet", func(d *Day) { d.Config.Fleet.Replicas = sim.Copies(2, sim.ReplicaConfig{}) }, "Day.Config.Fleet.Replicas"},
	} {
		d := ok
		d.Arms = append([]DayArm(nil), ok.Arms...)
		c.mod(&d)
		require.ErrorContains(t, d.Validate(), c.want, c.name)
	}
}

// The first check: at a constant rate, a feedback policy settles
// at the size analysis.Sizing finds for that rate (within one replica)
// and stays there. HPA on requests held, its target calibrated as an
// operator would from a load test (what each replica of the sized fleet
// holds: Little's L / n), and behind HPA's default behaviour, settles
// from one replica; the second half of the day has no join and no
// leave. At 2.5, 5 and 9 req/s (sized 2, 3, 4) it settles one above the
// sizing (3, 4, 5): the target is the mean a replica holds at n, the
// load fluctuates above it about half the time, HPA rounds the ratio
// up, and its 300 s down window keeps the highest recommendation, so
// n + 1 is where it stops.
func TestDayConstantRateSettles(t *testing.T) {
	for _, rate := range []float64{2.5, 5, 9} {
		settles(t, rate)
	}
}

func settles(t *testing.T, rate float64) {
	lengths := workload.Fixed(1000, 200)
	size, err := Sizing{Config: sim.Config{Window: sim.Window{Warmup: time.Minute, Horizon: 11 * time.Minute}}, Workload: Poisson(lengths),
		Load: rate, Reps: 2, Target: 0.95}.Run()
	require.NoError(t, err)
	n := size.Replicas
	// The calibration run: n replicas at the rate.
	src, err := Poisson(lengths).Source(rate, 99)
	require.NoError(t, err)
	cal, err := sim.Run(sim.Config{Fleet: sim.Fleet{Replicas: sim.Copies(n, sim.ReplicaConfig{})}, Window: sim.Window{Warmup: time.Minute, Horizon: 11 * time.Minute}}, src, nil)
	require.NoError(t, err)
	held := cal.MeanInSystem / float64(n)
	flat := ShapedWorkload{Shape: workload.Schedule{Steps: []workload.RateStep{{Duration: time.Hour, Rate: rate}}}, Spec: workload.Synthetic{Lengths: lengths}}
	res, err := Day{Config: sim.Config{Window: sim.Window{Horizon: time.Hour}}, Workload: flat, Load: rate, Days: 2,
		Arms: []DayArm{{Name: "hpa-held", Replicas: 1, Autoscale: sim.Autoscale{Policy: sim.TargetUtilisation{Metric: sim.MetricHeld, Target: held},
			Max: 4 * n, ColdStart: sim.ColdStart{Load: time.Minute}, Behavior: sim.HPABehavior()}}}}.Run()
	require.NoError(t, err)
	tl := res.Arms[0].Timeline
	half := tl[len(tl)/2].Desired
	for _, s := range tl[len(tl)/2:] {
		if s.At > time.Hour {
			break
		}
		require.Equal(t, half, s.Desired, "%g req/s: no join or leave in the second half (at %v)", rate, s.At)
	}
	t.Logf("%g req/s: Sizing %d replicas, each holding %.3g requests; HPA settles at %d, attainment %v", rate, n, held, half, res.Arms[0].Attainment)
	require.InDelta(t, n, half, 1, "%g req/s: settled within one replica of the sizing's %d", rate, n)
	require.GreaterOrEqual(t, res.Arms[0].Attainment.Center, 0.9)
}
