package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// The control plane as it is (issue 37): PrefixAffinity's paired Δknee
// over LeastLoaded when the router does not read every replica's true,
// current state. Each variant is an A/B test at the level's A/B loads,
// nominal model only, on -cp-blocks blocks: A is LeastLoaded and B
// PrefixAffinity, both behind the variant's control plane (its load
// signals' staleness and router instances; B's cache view).

// variant is one control plane of the study.
type variant struct {
	name string
	axes []string      // the staleness axes it lies on (none for the approximate view)
	lag  time.Duration // its staleness on that axis
	// fleet sets the variant's control plane on a fleet of either router.
	fleet func(f *sim.Fleet)
}

// variants are the study's control planes: the exact view with fresh
// signals (the ideal), SGLang's approximate tree at its defaults, the
// cache as of its KV events after a lag (llm-d's precise scorer), then
// stale load signals seen by several router instances, the view exact so
// that only the load signals are stale.
func variants() []variant {
	exact := variant{name: "exact view, fresh signals", axes: []string{eventAxis, signalAxis}, fleet: func(*sim.Fleet) {}}
	vs := []variant{exact, {name: "approximate view (SGLang's tree)", fleet: view(sim.ApproxView{})}}
	for _, d := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second} {
		vs = append(vs, variant{name: fmt.Sprintf("events view, %v lag", d), axes: []string{eventAxis}, lag: d, fleet: view(sim.EventsView{Lag: d})})
	}
	for _, d := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 5 * time.Second} {
		vs = append(vs, variant{name: fmt.Sprintf("load signals %v stale, %d routers", d, staleFrontends), axes: []string{signalAxis}, lag: d,
			fleet: func(f *sim.Fleet) { f.SignalDelay, f.Frontends = d, staleFrontends }})
	}
	return vs
}

// view sets PrefixAffinity's cache view (a LeastLoaded fleet reads no
// cache and is left as it is).
func view(v sim.CacheView) func(f *sim.Fleet) {
	return func(f *sim.Fleet) {
		if pa, ok := f.Router.(sim.PrefixAffinity); ok {
			pa.View = v
			f.Router = pa
		}
	}
}

// The staleness axes: the lag of the KV events the cache view reads
// (EventsView.Lag), and the staleness of the load signals
// (Fleet.SignalDelay) with staleFrontends router instances.
const (
	eventAxis      = "cache-event lag"
	signalAxis     = "load-signal staleness"
	staleFrontends = 4
)

// cpResult is one variant's A/B test at one level.
type cpResult struct {
	variant
	result *analysis.ExperimentResult
}

// controlPlane runs every variant's A/B test at the level's A/B loads
// (none without them), side by side.
func controlPlane(out *outcome, o options) ([]cpResult, error) {
	if out.loads == nil || o.cpBlocks == 0 {
		return nil, nil
	}
	vs := variants()
	res := make([]cpResult, len(vs))
	errs := make([]error, len(vs))
	var wg sync.WaitGroup
	for i, v := range vs {
		a, b := config(leastLoaded.router, o), config(prefixAffinity.router, o)
		v.fleet(&a.Fleet)
		v.fleet(&b.Fleet)
		x := analysis.Experiment{Hypothesis: hypothesis(leastLoaded, o), A: a, B: b,
			Workload: requests(out.level, o), Loads: out.loads, Blocks: o.cpBlocks, BaseSeed: o.seed, Workers: o.workers}
		wg.Go(func() {
			r, err := x.Run()
			res[i], errs[i] = cpResult{v, r}, err
			if err != nil {
				errs[i] = fmt.Errorf("%s, control plane %q: %w", out.name, v.name, err)
			}
		})
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// writeControlPlane writes each variant's paired Δknee and verdict, and
// where on each staleness axis PrefixAffinity stops paying.
func writeControlPlane(w io.Writer, out *outcome, o options) {
	if len(out.cp) == 0 {
		return
	}
	fmt.Fprintf(w, "  control plane: PrefixAffinity (B) against LeastLoaded (A), both behind it, at the A/B loads, nominal model, %d blocks:\n", o.cpBlocks)
	for _, c := range out.cp {
		r := c.result
		fmt.Fprintf(w, "    %-40s %v, %s, paired %+.3g req/s\n", c.name+":", r.Verdict, percent(r.Improvement), r.KneeDiff.Center)
	}
	for _, axis := range []string{eventAxis, signalAxis} {
		fmt.Fprintf(w, "    %s\n", stopsPaying(out.cp, axis, o.threshold))
	}
	fmt.Fprintf(w, "    %s\n", herding(out.cp))
}

// herding says how each router's own knee moves as its load signals go
// stale with several router instances: instances that read the same
// stale loads send their arrivals to the same replica, which the knee
// shows as a fall (herding), or not. A is LeastLoaded, B PrefixAffinity.
func herding(cp []cpResult) string {
	var lags []string
	var knees [2][]float64 // LeastLoaded's and PrefixAffinity's, freshest first
	for _, c := range cp {
		if slices.Contains(c.axes, signalAxis) {
			lags = append(lags, c.lag.String())
			knees[0] = append(knees[0], c.result.KneeA.Center)
			knees[1] = append(knees[1], c.result.KneeB.Center)
		}
	}
	if len(lags) == 0 {
		return ""
	}
	parts := make([]string, 2)
	for i, name := range []string{leastLoaded.name, prefixAffinity.name} {
		k := knees[i]
		shows := "does not show"
		if k[len(k)-1] < k[0]*(1-herdingFall) {
			shows = "shows"
		}
		parts[i] = fmt.Sprintf("%s %s req/s, %s", name, joinFloats(k, ", "), shows)
	}
	return fmt.Sprintf("herding (a router's knee falling more than %.0f %% as its load signals go %s stale, %d routers): %s",
		100*herdingFall, strings.Join(lags, ", "), staleFrontends, strings.Join(parts, "; "))
}

// herdingFall is the fall of LeastLoaded's knee, fresh to stalest, that
// the study calls herding: more than the few percent its blocks' noise
// moves a knee.
const herdingFall = 0.05

// percent is a relative improvement's centre and interval in percent.
func percent(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none measured"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// stopsPaying says where, along one staleness axis, PrefixAffinity's
// relative rise of the knee over LeastLoaded (the interval's centre)
// falls below the declared threshold: between the last variant at or
// above it and the first below it, by linear interpolation of the rise
// in the staleness; or that it pays (or does not) at every staleness
// tried.
func stopsPaying(cp []cpResult, axis string, threshold float64) string {
	var lags []time.Duration
	var rise []float64
	for _, c := range cp {
		if slices.Contains(c.axes, axis) {
			lags, rise = append(lags, c.lag), append(rise, c.result.Improvement.Center)
		}
	}
	if len(rise) == 0 {
		return ""
	}
	pct := 100 * threshold
	if rise[0] < threshold || math.IsNaN(rise[0]) {
		return fmt.Sprintf("%s: PrefixAffinity's rise over LeastLoaded is below %.3g %% already at %v", axis, pct, lags[0])
	}
	for i := 1; i < len(rise); i++ {
		if rise[i] < threshold || math.IsNaN(rise[i]) {
			at := lags[i]
			if !math.IsNaN(rise[i]) {
				f := (rise[i-1] - threshold) / (rise[i-1] - rise[i])
				at = lags[i-1] + time.Duration(f*float64(lags[i]-lags[i-1]))
			}
			return fmt.Sprintf("%s: PrefixAffinity stops paying (its rise falls below %.3g %%) between %v and %v, at about %v interpolated",
				axis, pct, lags[i-1], lags[i], at.Round(10*time.Millisecond))
		}
	}
	return fmt.Sprintf("%s: PrefixAffinity's rise stays at or above %.3g %% up to %v, the stalest tried", axis, pct, lags[len(lags)-1])
}

// joinNames lists the variants' names.
func joinNames(vs []variant) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	return strings.Join(names, "; ")
}

// shedDepth is the gateway's saturation threshold: a request is shed
// while every replica has more than shedDepth requests waiting, as
// llm-d's saturation detector reads queue depth (sim.Saturation).
const shedDepth = 1

// gatewaySweep is PrefixAffinity's sweep behind a gateway that sheds by
// queue depth, with the loads past its knee.
func gatewaySweep(l level, o options) analysis.Sweep {
	cfg := config(prefixAffinity.router, o)
	cfg.Gateway = sim.Gateway{Shed: sim.Saturation{QueueDepth: shedDepth}}
	return analysis.Sweep{Config: cfg, Workload: requests(l, o), Grid: analysis.Grid{Start: o.start, PastKnee: true},
		Reps: o.reps, BaseSeed: o.seed, Workers: o.workers}
}

// writeRetained writes the goodput PrefixAffinity keeps past its knee,
// without and with the gateway.
func writeRetained(w io.Writer, out *outcome) {
	pa := out.curves[len(routers)-1]
	fmt.Fprintf(w, "  past the knee, PrefixAffinity without a gateway (knee %s): %s\n", knee(pa), retainedLine(pa))
	if out.gateway != nil {
		fmt.Fprintf(w, "  behind a gateway shedding while every replica has more than %d waiting (llm-d's saturation detector; knee %s): %s\n",
			shedDepth, knee(out.gateway), retainedLine(out.gateway))
	}
}

// retainedLine is a curve's goodput retained past its knee.
func retainedLine(c *analysis.Curve) string {
	parts := make([]string, len(c.Retained))
	for i, r := range c.Retained {
		parts[i] = r.String()
	}
	return strings.Join(parts, "; ")
}
