package chart

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"

	"github.com/servesim/servesim/workload"

	"github.com/servesim/servesim/sim"
)

// Samples add up by the bin their instant falls in, (k·bin, (k+1)·bin]:
// the arrival rate is the bin's arrivals over the time its samples
// cover, the attainment Σ Good / Σ Ended, NaN where nothing ended.
func TestDayBins(t *testing.T) {
	s := func(sec, arrived, ended, good int) sim.ScaleSample {
		return sim.ScaleSample{At: time.Duration(sec) * time.Second, Arrived: arrived, Ended: ended, Good: good}
	}
	tl := []sim.ScaleSample{
		s(15, 3, 2, 2), s(30, 3, 1, 0), s(45, 3, 0, 0), s(60, 3, 1, 1), // bin (0, 60 s]: the tick at 60 s ends it
		s(75, 6, 0, 0), s(90, 0, 0, 0), s(105, 0, 0, 0), s(120, 0, 0, 0), // (60, 120]: nothing ended
		s(135, 3, 2, 1), // (120, 180], cut at the last tick
	}
	bins := dayBins(tl, time.Minute)
	require.Len(t, bins, 3)
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	assert.Equal(t, dayBin{Start: 0, End: sec(60), Covered: sec(60), Arrived: 12, Ended: 4, Good: 3, Rate: 0.2, Attainment: 0.75}, bins[0])
	assert.Equal(t, sec(60), bins[1].Start)
	assert.Equal(t, 6, bins[1].Arrived)
	assert.Equal(t, 0.1, bins[1].Rate, "6 arrivals over 60 s")
	assert.True(t, math.IsNaN(bins[1].Attainment), "no request ended: no attainment, never 0 or 1")
	assert.Equal(t, dayBin{Start: sec(120), End: sec(135), Covered: sec(15), Arrived: 3, Ended: 2, Good: 1, Rate: 0.2, Attainment: 0.5}, bins[2],
		"the last bin: 3 arrivals over the 15 s its one sample covers")

	// Conservation: the bins hold every sample's counts, and cover the run.
	arrived, covered := 0, time.Duration(0)
	for _, b := range bins {
		arrived, covered = arrived+b.Arrived, covered+b.Covered
	}
	assert.Equal(t, 21, arrived)
	assert.Equal(t, tl[len(tl)-1].At, covered)

	// The attainment's line breaks at the bin where nothing ended; the
	// load's runs on, a step a bin.
	att := binSteps(bins, func(b dayBin) float64 { return b.Attainment })
	assert.Equal(t, []plotter.XYs{{{X: 0, Y: 0.75}, {X: 1.0 / 60, Y: 0.75}}, {{X: 2.0 / 60, Y: 0.5}, {X: 135.0 / 3600, Y: 0.5}}}, att)
	load := binSteps(bins, func(b dayBin) float64 { return b.Rate })
	require.Len(t, load, 1)
	assert.Len(t, load[0], 6)

	// A sample after a silence (a bin shorter than the interval, or
	// ticks apart) covers its whole interval, and the bins it skipped are
	// a gap.
	bins = dayBins([]sim.ScaleSample{s(15, 3, 1, 1), s(200, 37, 0, 0)}, time.Minute)
	require.Len(t, bins, 2)
	assert.Equal(t, sec(180), bins[1].Start)
	assert.Equal(t, sec(185), bins[1].Covered)
	assert.Equal(t, 0.2, bins[1].Rate, "37 arrivals over the 185 s since the previous tick")
	assert.Len(t, binSteps(bins, func(b dayBin) float64 { return b.Rate }), 2)

	// One bin of the whole run: every count, over the last instant.
	bins = dayBins(tl, 24*time.Hour)
	require.Len(t, bins, 1)
	assert.InDelta(t, 21.0/135, bins[0].Rate, 1e-15)
	assert.Equal(t, 4.0/6, bins[0].Attainment)
}

// dayTimeline is a hand-made day of 15 s ticks: arrivals that follow
// 2 + 1.5·sin over 24 h, a fleet of ceil(rate/1.5) replicas (plus shift)
// whose joins warm for 20 ticks (5 minutes), and a request of every
// arrival ending, good unless the fleet is warming (then half fail).
func dayTimeline(shift int) []sim.ScaleSample {
	const ticks = 24 * 60 * 4
	var tl []sim.ScaleSample
	serving, warming := 2, 0
	warmLeft := 0
	for i := 1; i <= ticks; i++ {
		at := time.Duration(i) * 15 * time.Second
		rate := 2 + 1.5*math.Sin(2*math.Pi*(at.Hours()-8)/24)
		want := int(math.Ceil(rate/1.5)) + shift
		if want > serving+warming {
			warming, warmLeft = want-serving, 20
		} else if want < serving && warming == 0 {
			serving = want
		}
		if warmLeft > 0 {
			if warmLeft--; warmLeft == 0 {
				serving, warming = serving+warming, 0
			}
		}
		arrived := int(math.Round(rate * 15))
		good := arrived
		if warming > 0 {
			good -= arrived / 2
		}
		tl = append(tl, sim.ScaleSample{At: at, Desired: serving + warming, Serving: serving, Warming: warming, Arrived: arrived, Ended: arrived, Good: good})
	}
	return tl
}

// A day of two arms on one workload renders as SVG and PNG, its three
// panels on a common time axis of 24 hours.
func TestDayRenders(t *testing.T) {
	a, b := dayTimeline(0), dayTimeline(1)
	ps, err := Day("", 0, DayArm{Name: "target", Scale: &sim.ScaleSummary{Timeline: a}}, DayArm{Name: "one spare", Scale: &sim.ScaleSummary{Timeline: b}})
	require.NoError(t, err)
	require.Len(t, ps, 3)
	checkImages(t, "day", ps, 650+2*472)
	top := 0
	for _, tl := range [][]sim.ScaleSample{a, b} {
		for _, s := range tl {
			top = max(top, s.Serving+s.Warming)
		}
	}
	for _, p := range ps {
		assert.Equal(t, 0.0, p.X.Min)
		assert.Equal(t, 24.0, p.X.Max, "the last tick, at 24 h")
	}
	assert.Equal(t, fitTop(float64(top)), ps[1].Y.Max, "the replicas' axis ends just above the largest fleet")
	assert.Equal(t, 1.0, ps[2].Y.Max)
	bins := dayBins(a, DefaultDayBin)
	require.Len(t, bins, 24*12, "5-minute bins over 24 h")
	peak := 0.0
	for _, bn := range bins {
		assert.Equal(t, DefaultDayBin, bn.Covered)
		peak = math.Max(peak, bn.Rate)
	}
	assert.Equal(t, fitTop(peak), ps[0].Y.Max)
	assert.InDelta(t, 3.5, peak, 0.05, "2 + 1.5 at the day's peak (arrivals rounded per tick)")
	svg := svgOf(t, ps[0]) + svgOf(t, ps[1]) + svgOf(t, ps[2])
	for _, want := range []string{
		"An autoscaled day: offered load (arrivals per second, 5-min bins)",
		"arrivals per second (of target; every arm&#39;s are the same)",
		"target: serving + warming", "one spare: serving (light line; the gap up to the line above: warming)",
		"Attainment per 5-min bin", "time (hours from the start of the run)",
	} {
		assert.True(t, strings.Contains(svg, want), want)
	}
}

// An arm whose arrivals are not the first's is said to differ; an arm
// where nothing ended has no attainment line, and says so; an arm without
// a name is named by its place.
func TestDayOfArmsThatDiffer(t *testing.T) {
	quiet := dayTimeline(0)[:240]
	for i := range quiet {
		quiet[i].Ended, quiet[i].Good = 0, 0
	}
	other := dayTimeline(0)[:200]
	other[10].Arrived++
	ps, err := Day("One hour", time.Minute, DayArm{Scale: &sim.ScaleSummary{Timeline: quiet}}, DayArm{Name: "other", Scale: &sim.ScaleSummary{Timeline: other}})
	require.NoError(t, err)
	svg := svgOf(t, ps[0]) + svgOf(t, ps[1]) + svgOf(t, ps[2])
	for _, want := range []string{"arrivals per second (of arm 1; the arms&#39; arrivals differ)", "arm 1: no measured request ended",
		"arm 1: serving + warming", "One hour: offered load (arrivals per second, 1-min bins)"} {
		assert.Contains(t, svg, want)
	}
	assert.Equal(t, 1.0, ps[0].X.Max, "240 ticks of 15 s")
	assert.Equal(t, "90-s", binName(90*time.Second))
	assert.Equal(t, "2-h", binName(2*time.Hour))
	assert.Equal(t, "1.5s", binName(1500*time.Millisecond))
}

func TestDayRefusesWhatItCannotDraw(t *testing.T) {
	ok := DayArm{Name: "ok", Scale: &sim.ScaleSummary{Timeline: dayTimeline(0)[:8]}}
	arm := func(tl ...sim.ScaleSample) DayArm { return DayArm{Name: "bad", Scale: &sim.ScaleSummary{Timeline: tl}} }
	for _, c := range []struct {
		bin  time.Duration
		arms []DayArm
		want string
	}{
		{0, nil, "no arms"},
		{-time.Second, []DayArm{ok}, "bin must be >= 0 (0 means 5m0s), got -1s"},
		{0, []DayArm{ok, {Name: "static"}}, `arm "static": DayArm.Scale is nil: a fixed fleet has no ScaleSummary`},
		{0, []DayArm{ok, arm()}, `arm "bad": DayArm.Scale.Timeline is empty`},
		{0, []DayArm{arm(sim.ScaleSample{At: 0})}, `arm "bad": DayArm.Scale.Timeline[0].At 0s is not after`},
		{0, []DayArm{arm(sim.ScaleSample{At: time.Second}, sim.ScaleSample{At: time.Second})}, `arm "bad": DayArm.Scale.Timeline[1].At 1s is not after`},
		{0, []DayArm{arm(sim.ScaleSample{At: time.Second, Ended: 1, Good: 2})}, `arm "bad": DayArm.Scale.Timeline[0].Good 2 exceeds its Ended 1`},
		{0, []DayArm{arm(sim.ScaleSample{At: time.Second, Arrived: -1})}, `arm "bad": DayArm.Scale.Timeline[0] has a negative request count`},
		{0, []DayArm{arm(sim.ScaleSample{At: time.Second, Warming: -1})}, `arm "bad": DayArm.Scale.Timeline[0] has a negative replica count`},
	} {
		ps, err := Day("", c.bin, c.arms...)
		assert.ErrorContains(t, err, c.want)
		assert.Nil(t, ps)
	}
	assert.ErrorContains(t, DayArm{}.Validate(), "DayArm.Scale is nil")
	assert.NoError(t, ok.Validate())
	// A bin as long as a duration can be: one bin, no overflow.
	ps, err := Day("", time.Duration(math.MaxInt64), ok)
	require.NoError(t, err)
	assert.Len(t, ps, 3)
}

// lateSchedule is sim's ExampleSchedule's late arm: half an hour of
// 1,000-in, 200-out requests at 2, 6, 2 requests/s, ten minutes each, and
// a schedule of one, three, one replicas whose joins warm for 90 s.
func lateSchedule(t *testing.T) sim.Summary {
	t.Helper()
	steps := []sim.ReplicaStep{{Duration: 10 * time.Minute, Replicas: 1}, {Duration: 10 * time.Minute, Replicas: 3}, {Duration: time.Hour, Replicas: 1}}
	cfg := sim.Config{
		Fleet: sim.Fleet{Replicas: sim.Copies(1, sim.ReplicaConfig{}), Autoscale: sim.Autoscale{
			Policy: sim.Schedule{Steps: steps}, Max: 3, ColdStart: sim.ColdStart{Load: 60 * time.Second, Capture: 30 * time.Second}}},
		Window: sim.Window{Horizon: 30 * time.Minute},
	}
	load := workload.Schedule{Steps: []workload.RateStep{{Duration: 10 * time.Minute, Rate: 2}, {Duration: 10 * time.Minute, Rate: 6}, {Duration: 10 * time.Minute, Rate: 2}}}
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 1, Arrival: workload.Arrival{Schedule: load}, Lengths: workload.Fixed(1000, 200)})
	require.NoError(t, err)
	sum, err := sim.Run(cfg, src, nil)
	require.NoError(t, err)
	return sum
}

// On a real run the bins hold every arrival of the run (Σ Arrived =
// Offered: the workload stops at the horizon) at the rates of the
// schedule, within Poisson noise, and the attainment falls in the bin
// where the peak meets one replica: for the first 90 s of it, 6
// requests/s reach a replica that serves about 2 a second, so at least
// (6 − 2.1) × 90 ≈ 350 of that bin's ~1,700 requests queue past the TTFT
// bound, an attainment below 0.8, where the bins before the peak are
// above 0.9.
func TestDayBinsOfARun(t *testing.T) {
	sum := lateSchedule(t)
	tl := sum.Scale.Timeline
	require.Len(t, tl, 121, "a tick every 15 s for 30 minutes, and a sample at the run's end")
	bins := dayBins(tl, DefaultDayBin)
	require.Len(t, bins, 7, "the half-hour's six, and the run's end past it")
	end := bins[6]
	require.Equal(t, 0, end.Arrived, "the workload stops at the horizon")
	require.Equal(t, tl[120].At-30*time.Minute, end.Covered)
	arrived, ended, good := 0, end.Ended, end.Good
	for i, b := range bins[:6] {
		assert.Equal(t, time.Duration(i)*DefaultDayBin, b.Start)
		assert.Equal(t, DefaultDayBin, b.Covered)
		assert.Equal(t, float64(b.Arrived)/300, b.Rate)
		want := 2.0
		if i == 2 || i == 3 {
			want = 6
		}
		// Poisson: the count's sd is √(rate × 300 s), 3 sd.
		assert.InDelta(t, want, b.Rate, 3*math.Sqrt(want*300)/300, "bin %d", i)
		arrived, ended, good = arrived+b.Arrived, ended+b.Ended, good+b.Good
	}
	assert.Equal(t, sum.Offered, arrived)
	assert.Equal(t, sum.Offered, ended, "every measured request ends in a bin")
	assert.Equal(t, sum.Good, good)
	assert.Greater(t, bins[0].Attainment, 0.9)
	assert.Greater(t, bins[1].Attainment, 0.9)
	assert.Less(t, bins[2].Attainment, 0.8, "the peak's first bin, 90 s of it on one replica")
	for i, b := range bins {
		if i != 2 {
			assert.Greater(t, b.Attainment, bins[2].Attainment, "bin %d", i)
		}
	}
	ps, err := Day("", 0, DayArm{Name: "schedule", Scale: sum.Scale})
	require.NoError(t, err)
	assert.Equal(t, tl[120].At.Hours(), ps[0].X.Max, "half an hour, and the run's end")
	assert.Equal(t, fitTop(3), ps[1].Y.Max, "three replicas at the peak")
}
