package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// documents is the Atlas document workload at rate req/s, enough requests
// to cover the window and its drain.
func documents(horizon time.Duration) sim.Workload {
	return func(rate float64, seed uint64) (workload.Source, error) {
		n := math.Trunc(rate*2*horizon.Seconds()) + 1
		if !(n < math.MaxInt64) {
			return nil, fmt.Errorf("%.3g requests in %v of arrivals (twice the horizon): more than a run can count", n, 2*horizon)
		}
		return workload.NewSynthetic(workload.Synthetic{
			Seed: seed, Count: int(n),
			Arrival: workload.Arrival{Rate: rate}, Lengths: workload.AtlasDocuments(),
		})
	}
}

// config is the Atlas replica with prefill chunks capped at chunk tokens
// (0: vLLM V1's default, no cap); the budget grows to hold a chunk larger
// than the default 2,048 tokens.
func config(chunk int, horizon time.Duration) sim.Config {
	e := engine.Config{ChunkCap: chunk}
	if chunk > engine.DefaultMaxBatchedTokens {
		e.MaxBatchedTokens = chunk
	}
	return sim.Config{Engine: e, Window: sim.Window{Warmup: horizon / 10, Horizon: horizon}}
}

// row is one chunk cap's results.
type row struct {
	chunk  int
	probe  sim.Point
	probes *sim.Curve // the one-load sweep at the probe load
	curve  *sim.Curve
}

func sweepChunk(chunk int, o options) (row, error) {
	s := sim.Sweep{Config: config(chunk, o.horizon), Workload: documents(o.horizon), Grid: sim.Grid{Start: o.start}, Reps: o.reps, BaseSeed: o.seed}
	c, err := s.Run()
	if err != nil {
		return row{}, fmt.Errorf("chunk %d: %w", chunk, err)
	}
	s.Grid = sim.Grid{Loads: []float64{o.probe}}
	p, err := s.Run()
	if err != nil {
		return row{}, fmt.Errorf("chunk %d: %w", chunk, err)
	}
	return row{chunk: chunk, probe: p.Points[0], probes: p, curve: c}, nil
}

// mixedStep is the longest step the engine forms with one prefill chunk
// beside its decodes under a chunk cap (engine.LargestStep with one
// prefilling request): the ITL tax the chapter walks at the engine level,
// 73.96 ms for 256 tokens beside 31 decodes.
func mixedStep(chunk int) time.Duration {
	d, _ := engine.LargestStep(config(chunk, 0).Engine, nil, 0, 1)
	return d
}

func writeRows(w io.Writer, rows []row, o options) {
	fmt.Fprintf(w, "Atlas TP4 on the Atlas document workload (%s)\n", workload.AtlasDocuments())
	fmt.Fprintf(w, "ITL tax and TTFT at %s req/s; knee where attainment falls below 0.95; %d replications, window %v\n\n", rate(o.probe), o.reps, o.horizon)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "chunk cap\tmixed step\tITL p99\tTTFT p50\tTTFT p99\tattainment\tprobe\tknee\tknee 95% CI\tpeak goodput\t")
	fmt.Fprintln(tw, "tokens\tms\tms\tms\tms\t\tstate\treq/s\treq/s\treq/s\t")
	for _, r := range rows {
		name := fmt.Sprint(r.chunk)
		if r.chunk == 0 {
			name = "none"
		}
		k := r.curve.Knee
		kci := "-"
		if k.Found {
			kci = ci(k.Load)
		}
		step := float64(mixedStep(r.chunk)) / 1e6
		if r.probe.NoMeasured() {
			// No request measured at the probe load: no latency, no
			// attainment.
			fmt.Fprintf(tw, "%s\t%.2f\t-\t-\t-\t%s\t%v\t%s\t%s\t%.3f\t\n", name, step, noMeasured,
				r.probe.Saturation, knee(r.curve), kci, r.curve.Peak.Goodput.Center)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\t%.3f\t%v\t%s\t%s\t%.3f\t\n", name,
			step, millis(r.probe.ITL.P99.Center, "%.1f"), millis(r.probe.TTFT.P50.Center, "%.0f"), millis(r.probe.TTFT.P99.Center, "%.0f"),
			r.probe.Attainment.Center, r.probe.Saturation, knee(r.curve), kci, r.curve.Peak.Goodput.Center)
	}
	tw.Flush()
}

// millis prints a latency, or "-" where no request completed to give one
// (an overloaded probe load).
func millis(x float64, format string) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf(format, x)
}

// noMeasured stands where the windows measured no request.
const noMeasured = "no measured requests"

// knee prints the knee, or the side of the measured loads it lies beyond:
// below the first that missed the target, above the last that met it;
// "none" when no load measured a request.
func knee(c *sim.Curve) string {
	switch k := c.Knee; {
	case k.Found:
		return fmt.Sprintf("%.3f", k.Load.Center)
	case k.FirstMiss > 0:
		return fmt.Sprintf("< %.3g", k.FirstMiss)
	case k.LastMet > 0:
		return fmt.Sprintf("> %.3g", k.LastMet)
	}
	return "none"
}

// rate prints a load in req/s: two decimals, or three significant digits
// below 0.01 (which "%.2f" would print as 0.00).
func rate(x float64) string {
	if x < 0.01 {
		return fmt.Sprintf("%.3g", x)
	}
	return fmt.Sprintf("%.2f", x)
}

func ci(e sim.Estimate) string {
	if math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", e.Lo, e.Hi)
}
