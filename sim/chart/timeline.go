package chart

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/servesim/servesim/sim"
)

// Timeline keeps what Occupancy draws of one run: each replica's KV
// blocks (used, cached) and queue lengths (waiting, running) at the start
// of every step where one of them changed. It is a sim.StepObserver: pass
// it to sim.Run, alone or beside other observers (report.Observers).
// Observe does nothing with records. A Timeline is not safe for
// concurrent use; give each run its own.
type Timeline struct {
	reps []timelineReplica
}

// timelineReplica is one replica's samples: parallel slices, one entry
// per change, in time order.
type timelineReplica struct {
	blocks int
	at     []time.Duration
	used   []int32
	cached []int32
	wait   []int32
	run    []int32
}

// Observe does nothing: the chart is drawn from steps.
func (tl *Timeline) Observe(*sim.Record) {}

// ObserveStep keeps the state at the start of each of s's steps where it
// changed.
func (tl *Timeline) ObserveStep(s *sim.Step) {
	for len(tl.reps) <= s.Replica {
		tl.reps = append(tl.reps, timelineReplica{})
	}
	r := &tl.reps[s.Replica]
	r.blocks = s.KVBlocks
	for i := range s.Count {
		used, cached := int32(s.KVUsed[i]), int32(s.KVCached[i])
		if n := len(r.at); n > 0 && r.used[n-1] == used && r.cached[n-1] == cached &&
			r.wait[n-1] == int32(s.Waiting) && r.run[n-1] == int32(s.Running) {
			continue
		}
		r.at = append(r.at, s.Start+time.Duration(i)*s.Duration)
		r.used, r.cached = append(r.used, used), append(r.cached, cached)
		r.wait, r.run = append(r.wait, int32(s.Waiting)), append(r.run, int32(s.Running))
	}
}

// Replicas is the number of replicas the timeline saw a step of.
func (tl *Timeline) Replicas() int { return len(tl.reps) }

// maxColumns bounds the points a series draws: past it, time is cut into
// this many columns and each shows the highest value in it.
const maxColumns = 1500

// Occupancy draws one replica's run over time (s from the start of the
// run), in two panels: its KV occupancy (blocks held by requests, and
// blocks carrying cached content, as fractions of its KV blocks), and its
// queue lengths (waiting and running requests). Each figure holds from
// one step's start to the next change; a long run is drawn in at most
// 1,500 columns of time, each showing the highest value in it, so that no
// peak is lost.
func Occupancy(tl *Timeline, replica int) (Panels, error) {
	if replica < 0 || replica >= len(tl.reps) || len(tl.reps[replica].at) == 0 {
		return nil, fmt.Errorf("chart: the timeline has no step of replica %d", replica)
	}
	r := &tl.reps[replica]
	if r.blocks <= 0 {
		return nil, errors.New("chart: the replica has no KV blocks")
	}
	end := r.at[len(r.at)-1].Seconds()
	kv := newPlot(fmt.Sprintf("Replica %d: KV occupancy (of %d blocks)", replica, r.blocks), "", "fraction of KV blocks")
	frac := func(v []int32) func(int) float64 {
		return func(i int) float64 { return float64(v[i]) / float64(r.blocks) }
	}
	if err := addTimeSeries(kv, r, "held by requests", blue, frac(r.used), nil); err != nil {
		return nil, err
	}
	cachedName := "carrying cached prefix content (held or free)"
	if maxOf(r.cached) == 0 {
		cachedName += ": none in this run"
	}
	if err := addTimeSeries(kv, r, cachedName, green, frac(r.cached), dashed); err != nil {
		return nil, err
	}
	kv.Y.Min, kv.Y.Max = 0, fitTop(math.Max(maxOf(r.used, r.cached)/float64(r.blocks), 0.05))
	q := newPlot(fmt.Sprintf("Replica %d: queue lengths", replica), "time (s from the start of the run)", "requests")
	count := func(v []int32) func(int) float64 { return func(i int) float64 { return float64(v[i]) } }
	if err := addTimeSeries(q, r, "running (scheduled in steps)", purple, count(r.run), nil); err != nil {
		return nil, err
	}
	if err := addTimeSeries(q, r, "waiting", vermilion, count(r.wait), dashed); err != nil {
		return nil, err
	}
	q.Y.Min, q.Y.Max = 0, fitTop(math.Max(maxOf(r.wait, r.run), 1))
	for _, p := range []*plot.Plot{kv, q} {
		p.X.Min, p.X.Max = 0, math.Max(end, 1e-3)
		placeLegend(p)
	}
	return Panels{kv, q}, nil
}

// addTimeSeries draws one figure of the replica as a step line.
func addTimeSeries(p *plot.Plot, r *timelineReplica, name string, col color.RGBA, of func(int) float64, dashes []vg.Length) error {
	xys := stepPoints(r.at, of)
	l, err := line(xys, col, 1.3, dashes)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	l.StepStyle = plotter.PostStep
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// stepPoints are the samples of a figure, at most maxColumns of them: the
// highest value in each column of time past that.
func stepPoints(at []time.Duration, of func(int) float64) plotter.XYs {
	if len(at) <= maxColumns {
		xys := make(plotter.XYs, len(at))
		for i, t := range at {
			xys[i] = plotter.XY{X: t.Seconds(), Y: of(i)}
		}
		return xys
	}
	t0, t1 := at[0], at[len(at)-1]
	width := (t1 - t0) / maxColumns
	xys := make(plotter.XYs, 0, maxColumns+1)
	col := -1
	for i, t := range at {
		c := min(int((t-t0)/max(width, 1)), maxColumns-1)
		if c != col {
			xys = append(xys, plotter.XY{X: (t0 + time.Duration(c)*width).Seconds(), Y: of(i)})
			col = c
			continue
		}
		xys[len(xys)-1].Y = math.Max(xys[len(xys)-1].Y, of(i))
	}
	return xys
}

func maxOf(vs ...[]int32) float64 {
	m := int32(0)
	for _, v := range vs {
		for _, x := range v {
			m = max(m, x)
		}
	}
	return float64(m)
}
