package main

import (
	"fmt"
	"io"
	"math"
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
	loads     string // comma-separated offered loads; empty: automatic grid
	start     float64
	reps      int
	warmup    time.Duration
	horizon   time.Duration
	seed      uint64
	operating float64 // the load to measure headroom from, req/s; 0: none
	out       string  // directory for plots and the card; "": none
}

// sweepFor builds the sweep of the replica r at its operating point:
// Poisson arrivals of fixed prompt and output lengths, the engine at vLLM's
// V1 defaults with r's batch as its sequence cap, priced by r's cost model.
func sweepFor(r costmodel.Replica, o simOptions) (sim.Sweep, error) {
	p := r.Point
	grid := sim.Grid{Start: o.start}
	if o.loads != "" {
		loads, err := parseLoads(o.loads)
		if err != nil {
			return sim.Sweep{}, err
		}
		grid = sim.Grid{Loads: loads}
	}
	span := (o.horizon + o.horizon - o.warmup).Seconds() // window plus drain
	return sim.Sweep{
		Config: sim.Config{
			Engine: engine.Config{MaxSeqs: p.Batch},
			Model:  r.Cost,
			SLO:    sim.SLO{TTFT: p.SLO.TTFT, ITL: p.SLO.ITL},
			Window: sim.Window{Warmup: o.warmup, Horizon: o.horizon},
		},
		Workload: func(rate float64, seed uint64) (workload.Source, error) {
			return workload.NewPoisson(seed, rate, int(rate*span)+1, workload.Fixed(p.PromptTokens, p.OutputTokens))
		},
		Grid:     grid,
		Reps:     o.reps,
		BaseSeed: o.seed,
	}, nil
}

func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err != nil || !(v > 0) || math.IsInf(v, 0) {
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
	for _, pt := range c.Points {
		fmt.Fprintf(tw, "%.3f\t%.3f\t%s\t%.3f\t%s\t%.0f\t%.0f\t%.0f\t%v\t\n", pt.Load,
			pt.Goodput.Center, interval(pt.Goodput, "%.2f"), pt.Attainment.Center, interval(pt.Attainment, "%.3f"),
			pt.TTFT.P50.Center, pt.TTFT.P99.Center, pt.ITL.P99.Center, pt.Saturation)
	}
	tw.Flush()
	k := c.Knee
	fmt.Fprintln(w)
	if k.Found {
		fmt.Fprintf(w, "knee       %.3f req/s %s: the highest load with attainment >= %.2f\n", k.Load.Center, interval(k.Load, "%.3f"), c.Target)
	} else {
		fmt.Fprintf(w, "knee       not bracketed: %s\n", k.Censored)
	}
	fmt.Fprintf(w, "peak       %.3f req/s of goodput %s at %.3f req/s offered\n", c.Peak.Goodput.Center, interval(c.Peak.Goodput, "%.2f"), c.Peak.Load)
	if c.Collapse.Found {
		fmt.Fprintf(w, "collapse   from %.3f req/s offered (goodput below 90 %% of the peak)\n", c.Collapse.Load)
	}
	if o.operating > 0 && k.Found {
		h := c.Headroom(o.operating)
		fmt.Fprintf(w, "headroom   %.3f req/s %s (%+.0f %%) from the operating load %.3f req/s to the knee\n",
			h.Abs.Center, interval(h.Abs, "%.3f"), 100*h.Rel.Center, o.operating)
	}
	fmt.Fprintf(w, "estimate   decode alone sustains %.3g req/s; the knee is %.0f %% of it (prefill and queueing take the rest)\n",
		e.DecodeRequests.Value, 100*k.Load.Center/e.DecodeRequests.Value)
	for _, msg := range c.Warnings {
		fmt.Fprintf(w, "warning    %s\n", msg)
	}
}

// interval prints an estimate's interval with the given verb.
func interval(e sim.Estimate, verb string) string {
	if math.IsNaN(e.Lo) {
		return "(n/a)"
	}
	return fmt.Sprintf("["+verb+", "+verb+"]", e.Lo, e.Hi)
}
