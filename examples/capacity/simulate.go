package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// simOptions are the flags of the simulated section.
type simOptions struct {
	skip      bool
	loads     []float64 // offered loads, req/s; nil: automatic grid
	start     float64
	reps      int
	warmup    time.Duration
	horizon   time.Duration
	seed      uint64
	operating float64  // the load to measure headroom from, req/s; 0: none
	out       string   // directory for plots and the card; "": none
	args      []string // the command line, for the card's Command
}

// sweepFor builds the sweep of the replica r at its operating point:
// Poisson arrivals of fixed prompt and output lengths, the engine at vLLM's
// V1 defaults with r's batch as its sequence cap, priced by r's cost model.
// It refuses a sweep that cannot run, before any run: an invalid
// configuration, or a load whose workload cannot be built (said once, not
// once per replication).
func sweepFor(r costmodel.Replica, o simOptions) (sim.Sweep, error) {
	p := r.Point
	grid := sim.Grid{Start: o.start}
	if o.loads != nil {
		grid = sim.Grid{Loads: o.loads}
	}
	span := o.horizon + o.horizon - o.warmup // window plus drain
	s := sim.Sweep{
		Config: sim.Config{
			Engine: engine.Config{MaxSeqs: p.Batch},
			Model:  r.Cost,
			SLO:    sim.SLO{TTFT: p.SLO.TTFT, ITL: p.SLO.ITL},
			Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon},
		},
		Workload: func(rate float64, seed uint64) (workload.Source, error) {
			n, err := requestsIn(rate, span)
			if err != nil {
				return nil, err
			}
			return workload.NewPoisson(seed, rate, n, workload.Fixed(p.PromptTokens, p.OutputTokens))
		},
		Grid:     grid,
		Reps:     o.reps,
		BaseSeed: o.seed,
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	flag, loads := "-loads", o.loads
	if loads == nil {
		flag, loads = "-start", []float64{o.start}
	}
	for _, load := range loads {
		if _, err := s.Workload(load, sim.Seed(o.seed, 0)); err != nil {
			return s, fmt.Errorf("%s %g req/s: %w", flag, load, err)
		}
	}
	return s, nil
}

// requestsIn is how many requests a run at rate req/s draws: enough to
// cover its window and drain (span), and one more.
func requestsIn(rate float64, span time.Duration) (int, error) {
	n := math.Trunc(rate*span.Seconds()) + 1
	if !(n < math.MaxInt64) {
		return 0, fmt.Errorf("%.3g requests in %v (to the horizon and its drain): more than a run can count", n, span)
	}
	return int(n), nil
}

// parseLoads reads -loads: positive finite rates in requests/s.
func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("-loads: %q is not a positive rate in requests/s", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// writeSimulation writes the simulated goodput curve, its knee, peak and
// collapse, and the headroom at the operating load, next to the estimate.
func writeSimulation(w io.Writer, r costmodel.Replica, e costmodel.Estimate, c *sim.Curve, o simOptions) {
	p := r.Point
	fmt.Fprintf(w, "\nSimulated goodput curve of the same replica\n\n")
	fmt.Fprintf(w, "workload:  open-loop Poisson, %d-token prompts, %d output tokens (fixed), %d replications per load\n", p.PromptTokens, p.OutputTokens, o.reps)
	fmt.Fprintf(w, "engine:    vLLM V1 defaults (chunked prefill, %d-token budget, no chunk cap), batch cap %d, %d KV blocks of %d\n",
		engine.DefaultMaxBatchedTokens, p.Batch, engine.DefaultKVBlocks, engine.DefaultBlockSize)
	fmt.Fprintf(w, "window:    warm-up %v, horizon %v; intervals at %.0f %% confidence\n\n", o.warmup, o.horizon, 100*c.Confidence)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tgoodput\t\tattainment\t\tTTFT p50\tTTFT p99\tITL p99\tstate\t")
	fmt.Fprintln(tw, "req/s\treq/s\t95% CI\t\t95% CI\tms\tms\tms\t\t")
	measured := 0
	for _, pt := range c.Points {
		if pt.NoMeasured() {
			// No attainment, no latency: nothing to print but the load
			// and what the replica delivered.
			fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t\t-\t-\t-\t%v\t\n", load(pt.Load),
				pt.Goodput.Center, interval(pt.Goodput, "%.2f"), noMeasured, pt.Saturation)
			continue
		}
		measured++
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%.3f\t%s\t%s\t%s\t%s\t%v\t\n", load(pt.Load),
			pt.Goodput.Center, interval(pt.Goodput, "%.2f"), pt.Attainment.Center, interval(pt.Attainment, "%.3f"),
			millis(pt.TTFT.P50.Center), millis(pt.TTFT.P99.Center), millis(pt.ITL.P99.Center), pt.Saturation)
	}
	tw.Flush()
	k := c.Knee
	fmt.Fprintln(w)
	for _, pt := range c.Points {
		switch n := emptyRuns(&pt); {
		case overloadedEarly(&pt):
			fmt.Fprintf(w, "note       at %s req/s the replica was overloaded before the window opened: attainment 0, past the knee\n",
				load(pt.Load))
		case n > 0 && n < len(pt.Runs):
			fmt.Fprintf(w, "note       at %s req/s, %s in %d of %d replications: attainment from the other %d\n",
				load(pt.Load), noMeasured, n, len(pt.Runs), len(pt.Runs)-n)
		}
	}
	if k.Found {
		fmt.Fprintf(w, "knee       %.3f req/s %s: the highest load with attainment >= %.2f\n", k.Load.Center, interval(k.Load, "%.3f"), c.Target)
	} else {
		fmt.Fprintf(w, "knee       not bracketed: %s\n", k.Reason())
	}
	if measured == 0 {
		fmt.Fprintf(w, "peak       none: %s at any load\n", noMeasured)
	} else {
		fmt.Fprintf(w, "peak       %.3f req/s of goodput %s at %s req/s offered\n", c.Peak.Goodput.Center, interval(c.Peak.Goodput, "%.2f"), load(c.Peak.Load))
	}
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse   from %s req/s offered (goodput below 90 %% of the peak)\n", load(c.Collapse.Load))
	}
	switch {
	case o.operating > 0 && k.Found:
		h := c.Headroom(o.operating)
		fmt.Fprintf(w, "headroom   %.3f req/s %s (%+.0f %%) from the operating load %.3f req/s to the knee\n",
			h.Abs.Center, interval(h.Abs, "%.3f"), 100*h.Rel.Center, o.operating)
	case o.operating > 0:
		fmt.Fprintf(w, "headroom   unknown from the operating load %.3f req/s: no knee inside the sweep\n", o.operating)
	}
	if k.Found {
		fmt.Fprintf(w, "estimate   decode alone sustains %.3g req/s; the knee is %.0f %% of it (prefill and queueing take the rest)\n",
			e.DecodeRequests.Value, 100*k.Load.Center/e.DecodeRequests.Value)
	} else {
		fmt.Fprintf(w, "estimate   decode alone sustains %.3g req/s; without a knee there is nothing to compare it with\n", e.DecodeRequests.Value)
	}
	for _, msg := range c.Warnings {
		fmt.Fprintf(w, "warning    %s\n", msg)
	}
}

// noMeasured stands where a load's windows measured no request: it has no
// attainment and no latency, and takes no part in the knee.
const noMeasured = "no measured requests"

// millis prints a latency in whole milliseconds, "-" when no request
// completed to give one.
func millis(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.0f", x)
}

// overloadedEarly reports whether every replication of pt stopped on its
// backlog bound (sim.Summary.Overloaded) before its window opened.
func overloadedEarly(pt *sim.Point) bool {
	for i := range pt.Runs {
		if s := &pt.Runs[i]; !s.Overloaded || s.Offered > 0 {
			return false
		}
	}
	return true
}

// emptyRuns counts the replications of pt that measured no request.
func emptyRuns(pt *sim.Point) int {
	n := 0
	for i := range pt.Runs {
		if pt.Runs[i].NoMeasured() {
			n++
		}
	}
	return n
}

// load prints an offered load: three decimals, or three significant
// digits below 0.001 req/s (which "%.3f" would print as 0.000).
func load(x float64) string {
	if x < 0.001 {
		return fmt.Sprintf("%.3g", x)
	}
	return fmt.Sprintf("%.3f", x)
}

// interval prints an estimate's interval with the given verb.
func interval(e sim.Estimate, verb string) string {
	if math.IsNaN(e.Lo) {
		return "(n/a)"
	}
	return fmt.Sprintf("["+verb+", "+verb+"]", e.Lo, e.Hi)
}
