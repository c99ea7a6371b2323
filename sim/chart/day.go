package chart

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/servesim/servesim/sim"
)

// DayArm is one autoscaled run drawn by Day: a policy, a cold start, a
// static fleet. Scale is the run's Summary.Scale. A fixed fleet has none:
// run it as an autoscaled fleet under a constant sim.Schedule (one step of
// its size, Max its size), which keeps the same bytes and samples it at
// every tick (analysis.Day runs its static arms so). From an
// analysis.DayResult, an arm is DayArm{Name: a.Name, Scale:
// &sim.ScaleSummary{Timeline: a.Timeline}}: Day draws only the timeline.
// The zero value has no Scale, and Validate refuses it.
type DayArm struct {
	Name  string // the legend's label; "" means "arm 1", "arm 2", …
	Scale *sim.ScaleSummary
}

// Validate refuses an arm Day cannot draw: no ScaleSummary, an empty
// Timeline, or a timeline that is not a run's (instants not increasing
// from after 0, negative counts, more good than ended).
func (a DayArm) Validate() error {
	if a.Scale == nil {
		return errors.New("DayArm.Scale is nil: a fixed fleet has no ScaleSummary (run it as a constant sim.Schedule)")
	}
	return checkTimeline(a.Scale.Timeline)
}

// DefaultDayBin is Day's bin when bin is 0.
const DefaultDayBin = 5 * time.Minute

// Day draws autoscaled runs over time (hours from the start of the run),
// from the controller's samples (ScaleSummary.Timeline), in three panels
// that share the time axis:
//
//   - the offered load: the requests that arrived in each bin, per second
//     of the time the bin's samples cover. It is drawn once, from the
//     first arm: arms that share a workload (the same source and seed)
//     see the same arrivals, and the legend says whether every arm's
//     binned arrivals are the first's;
//   - the replicas of each arm at each tick, serving plus warming (the
//     size the controller holds, a thick line in the arm's colour and
//     dashes) and serving alone (a thin, lighter line drawn over it: where
//     the two part, replicas are warming), each held until the next tick
//     (draining replicas, out of routing, are not drawn); a long
//     run is drawn in at most 1,500 columns of time, each showing the
//     highest value in it;
//   - each arm's attainment per bin: Σ Good / Σ Ended over the bin's
//     samples. A bin where no measured request ended has no attainment:
//     it is a gap in the line, never 0 or 1. The samples count every
//     measured request: those that end after the controller's last
//     tick are in the timeline's sample at the run's end, in its bin.
//
// A sample counts in the bin its instant falls in, bins being (k·bin,
// (k+1)·bin] from the start of the run: a sample's counts are of the
// interval that ends at its instant, so with a bin that is a multiple of
// the controller's interval (the default 5 minutes, at 15 s ticks) each
// bin holds exactly the ticks of its own time. A bin shorter than the
// interval holds no sample at times, and is a gap.
//
// bin 0 means DefaultDayBin. Day refuses a negative bin, no arm, and an
// arm that DayArm.Validate refuses.
func Day(title string, bin time.Duration, arms ...DayArm) (Panels, error) {
	if bin < 0 {
		return nil, fmt.Errorf("chart: the day's bin must be >= 0 (0 means %v), got %v", DefaultDayBin, bin)
	}
	if bin == 0 {
		bin = DefaultDayBin
	}
	if len(arms) == 0 {
		return nil, errors.New("chart: no arms to draw the day of")
	}
	names := make([]string, len(arms))
	bins := make([][]dayBin, len(arms))
	end := time.Duration(0)
	for i, a := range arms {
		names[i] = a.Name
		if names[i] == "" {
			names[i] = fmt.Sprintf("arm %d", i+1)
		}
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("chart: arm %q: %w", names[i], err)
		}
		bins[i] = dayBins(a.Scale.Timeline, bin)
		end = max(end, a.Scale.Timeline[len(a.Scale.Timeline)-1].At)
	}
	if title == "" {
		title = "An autoscaled day"
	}
	per := binName(bin)
	load, err := dayLoad(fmt.Sprintf("%s: offered load (arrivals per second, %s bins)", title, per), names, bins)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	reps, err := dayReplicas("Replicas at each tick of the controller", names, arms)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	att, err := dayAttainment(fmt.Sprintf("Attainment per %s bin (Σ good / Σ ended; a gap: nothing ended)", per), names, bins)
	if err != nil {
		return nil, fmt.Errorf("chart: %w", err)
	}
	att.X.Label.Text = "time (hours from the start of the run)"
	ps := Panels{load, reps, att}
	for _, p := range ps {
		p.X.Min, p.X.Max = 0, math.Max(end.Hours(), 1e-6)
		placeLegend(p)
	}
	return ps, nil
}

// dayBin is what the samples of one bin add up to.
type dayBin struct {
	// Start and End are the part of the run the bin draws: (k·bin,
	// (k+1)·bin], cut at the last sample's instant.
	Start, End time.Duration
	// Covered is the time the bin's samples' intervals cover, each from
	// the previous sample's instant (or the start of the run) to its own.
	Covered time.Duration
	// Arrived, Ended and Good are the bin's samples' sums.
	Arrived, Ended, Good int
	// Rate is Arrived per second of Covered; Attainment is Good / Ended,
	// NaN where nothing ended.
	Rate, Attainment float64
}

// dayBins adds up a run's samples (a checkTimeline) into bins of width
// bin (> 0), in time order; bins that hold no sample are left out.
func dayBins(tl []sim.ScaleSample, bin time.Duration) []dayBin {
	last := tl[len(tl)-1].At
	var out []dayBin
	prev := time.Duration(0)
	for _, s := range tl {
		k := (s.At - 1) / bin // (k·bin, (k+1)·bin] holds s.At > 0
		start := k * bin
		if n := len(out); n == 0 || out[n-1].Start != start {
			out = append(out, dayBin{Start: start, End: start + min(bin, last-start)})
		}
		b := &out[len(out)-1]
		b.Covered += s.At - prev
		b.Arrived += s.Arrived
		b.Ended += s.Ended
		b.Good += s.Good
		prev = s.At
	}
	for i := range out {
		b := &out[i]
		b.Rate = float64(b.Arrived) / b.Covered.Seconds()
		b.Attainment = math.NaN()
		if b.Ended > 0 {
			b.Attainment = float64(b.Good) / float64(b.Ended)
		}
	}
	return out
}

// checkTimeline refuses what no run's timeline is: none, instants not
// increasing from after 0, negative counts, more good than ended.
func checkTimeline(tl []sim.ScaleSample) error {
	if len(tl) == 0 {
		return errors.New("DayArm.Scale.Timeline is empty: no tick to draw")
	}
	prev := time.Duration(0)
	for i, s := range tl {
		switch {
		case s.At <= prev:
			return fmt.Errorf("DayArm.Scale.Timeline[%d].At %v is not after the previous sample's instant (or the start of the run) %v", i, s.At, prev)
		case s.Serving < 0 || s.Warming < 0 || s.Draining < 0 || s.Desired < 0:
			return fmt.Errorf("DayArm.Scale.Timeline[%d] has a negative replica count: %+v", i, s)
		case s.Arrived < 0 || s.Ended < 0 || s.Good < 0:
			return fmt.Errorf("DayArm.Scale.Timeline[%d] has a negative request count: %+v", i, s)
		case s.Good > s.Ended:
			return fmt.Errorf("DayArm.Scale.Timeline[%d].Good %d exceeds its Ended %d", i, s.Good, s.Ended)
		}
		prev = s.At
	}
	return nil
}

// binName names a bin's width: "5-min", "1-h", "30-s".
func binName(bin time.Duration) string {
	switch {
	case bin%time.Hour == 0:
		return fmt.Sprintf("%d-h", bin/time.Hour)
	case bin%time.Minute == 0:
		return fmt.Sprintf("%d-min", bin/time.Minute)
	case bin%time.Second == 0:
		return fmt.Sprintf("%d-s", bin/time.Second)
	}
	return bin.String()
}

// binSteps are the bins' figures as step lines in hours, one a run of
// adjacent bins with a figure: a bin without one (NaN), or a bin that
// holds no sample, breaks the line.
func binSteps(bins []dayBin, of func(dayBin) float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	for i, b := range bins {
		v := of(b)
		if !finite(v) || i > 0 && bins[i-1].End != b.Start {
			flush()
		}
		if !finite(v) {
			continue
		}
		cur = append(cur, plotter.XY{X: b.Start.Hours(), Y: v}, plotter.XY{X: b.End.Hours(), Y: v})
	}
	flush()
	return out
}

// addSteps draws segs as lines in one style, named once in the legend.
func addSteps(p *plot.Plot, segs []plotter.XYs, name string, st style, w float64) error {
	for j, xys := range segs {
		l, err := line(xys, st.color, w, st.dashes)
		if err != nil {
			return err
		}
		p.Add(l)
		if j == 0 {
			p.Legend.Add(name, l)
		}
	}
	return nil
}

// dayLoad is the offered-load panel, from the first arm's bins.
func dayLoad(title string, names []string, bins [][]dayBin) (*plot.Plot, error) {
	p := newPlot(title, "", "offered load (req/s)")
	name := "arrivals per second"
	if len(bins) > 1 {
		same := true
		for _, bs := range bins[1:] {
			same = same && sameRates(bins[0], bs)
		}
		if same {
			name += fmt.Sprintf(" (of %s; every arm's are the same)", names[0])
		} else {
			name += fmt.Sprintf(" (of %s; the arms' arrivals differ)", names[0])
		}
	}
	top := 0.0
	for _, b := range bins[0] {
		top = math.Max(top, b.Rate)
	}
	if err := addSteps(p, binSteps(bins[0], func(b dayBin) float64 { return b.Rate }), name, style{color: grey}, 1.6); err != nil {
		return nil, err
	}
	p.Y.Min, p.Y.Max = 0, fitTop(math.Max(top, 0.1))
	return p, nil
}

// sameRates reports whether two arms' bins hold the same arrivals over
// the same times.
func sameRates(a, b []dayBin) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		// The last bin's cover ends at each run's own end (its sample
		// at the run's end), which differs by arm: only its arrivals
		// must match.
		if a[i].Start != b[i].Start || a[i].Arrived != b[i].Arrived || i < len(a)-1 && a[i].Covered != b[i].Covered {
			return false
		}
	}
	return true
}

// dayReplicas is the replicas panel: each arm's serving plus warming
// replicas, and serving alone, at each tick.
func dayReplicas(title string, names []string, arms []DayArm) (*plot.Plot, error) {
	p := newPlot(title, "", "replicas")
	top := 1.0
	var cores []*plotter.Line
	for i, a := range arms {
		tl := a.Scale.Timeline
		for _, s := range tl {
			top = math.Max(top, float64(s.Serving+s.Warming))
		}
		st := seriesStyle(i)
		steps := func(of func(int) float64, col color.Color, w float64) (*plotter.Line, error) {
			// The ticks where the figure changes, and the last.
			var at []time.Duration
			var vs []float64
			for j, s := range tl {
				if v := of(j); j == 0 || j == len(tl)-1 || v != vs[len(vs)-1] {
					at, vs = append(at, s.At), append(vs, v)
				}
			}
			xys := stepPoints(at, func(j int) float64 { return vs[j] })
			for k := range xys {
				xys[k].X /= 3600
			}
			l, err := line(xys, col, w, st.dashes)
			if err != nil {
				return nil, err
			}
			l.StepStyle = plotter.PostStep
			return l, nil
		}
		total, err := steps(func(j int) float64 { return float64(tl[j].Serving + tl[j].Warming) }, st.color, width(i)+1)
		if err != nil {
			return nil, err
		}
		core, err := steps(func(j int) float64 { return float64(tl[j].Serving) }, lighter(st.color), 1)
		if err != nil {
			return nil, err
		}
		p.Add(total)
		cores = append(cores, core)
		p.Legend.Add(names[i]+": serving + warming", total)
		p.Legend.Add(names[i]+": serving (light line; the gap up to the line above: warming)", core)
	}
	for _, c := range cores { // on top of every arm's total
		p.Add(c)
	}
	p.Y.Min, p.Y.Max = 0, fitTop(top)
	return p, nil
}

// lighter is c mixed halfway to white: the serving line drawn inside an
// arm's serving + warming line.
func lighter(c color.RGBA) color.RGBA {
	mix := func(v uint8) uint8 { return uint8((int(v) + 255) / 2) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 255}
}

// dayAttainment is the attainment panel: each arm's per bin, with gaps.
func dayAttainment(title string, names []string, bins [][]dayBin) (*plot.Plot, error) {
	p := newPlot(title, "", "attainment (fraction good)")
	for i, bs := range bins {
		segs := binSteps(bs, func(b dayBin) float64 { return b.Attainment })
		if len(segs) == 0 {
			p.Legend.Add(names[i] + ": no measured request ended")
			continue
		}
		if err := addSteps(p, segs, names[i], seriesStyle(i), width(i)); err != nil {
			return nil, err
		}
	}
	// A fraction's axis spans its bounds.
	p.Y.Min, p.Y.Max = 0, 1
	return p, nil
}
