package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// writeSimulation writes the simulated section: what ran, the goodput
// curve with each load's utilisation, its knee, peak, collapse and
// headroom with their seed intervals and model ranges, and the estimate
// held against them.
func writeSimulation(w io.Writer, r costmodel.Replica, e costmodel.Estimate, c *analysis.Curve, o simOptions) {
	p := r.Point
	fmt.Fprintf(w, "\nSimulated goodput curve of the same replica\n\n")
	fmt.Fprintf(w, "workload:  open-loop Poisson, %d-token prompts, %d output tokens (fixed), %d %s per load\n", p.PromptTokens, p.OutputTokens, o.reps, pluralWord(o.reps, "replication"))
	fmt.Fprintf(w, "engine:    %s (chunked prefill, vLLM V1 defaults otherwise), %d KV blocks of %d; step times from %s\n",
		limits(p), engine.DefaultKVBlocks, engine.DefaultBlockSize, modelName(r.Cost))
	if b := c.Band; b != nil {
		fmt.Fprintf(w, "error:     %s declared before the sweep: every load also ran under %s, on the same seeds\n", declared(b.Declared), variantNames(b))
	} else {
		fmt.Fprintf(w, "error:     none declared: the intervals below are seed noise, not the cost model's accuracy\n")
	}
	if o.reps < 2 {
		fmt.Fprintf(w, "window:    warm-up %v, horizon %v; no intervals: one replication gives point estimates only (an interval needs -reps 2 or more)\n", o.warmup, o.horizon)
	} else {
		fmt.Fprintf(w, "window:    warm-up %v, horizon %v; intervals at %.0f %% confidence\n", o.warmup, o.horizon, 100*c.Confidence)
	}
	fmt.Fprintf(w, "util:      offered load / the estimate's serving capacity, %.4g req/s\n\n", e.ServingCapacity.Value)
	flags := writeTable(w, c)
	if flags.hidden {
		fmt.Fprintln(w, "!          TTFT p99 over every offered request is over 1.1 × the p99 over successful ones: failures hide the tail (a request that timed out or was still waiting counts at the instant it ended, a refused one as ∞)")
	}
	if flags.near {
		fmt.Fprintln(w, "ρ ≥ 0.9    at 90 % of the serving capacity or more queues grow as 1/(1−ρ): a stable or backlogged label there rests on how long the window ran")
	}
	fmt.Fprintln(w)
	writeNotes(w, c)
	writeRefused(w, r.Point, c)
	writeFindings(w, e, c, o)
}

// declared says what model error was declared, in words.
func declared(m analysis.ModelError) string {
	shapes := ""
	if n := len(m.Shapes); n > 0 {
		shapes = fmt.Sprintf("%d models of another shape", n)
		if m.Scale == 0 {
			return shapes
		}
		shapes = " and " + shapes
	}
	return fmt.Sprintf("every step time ±%.0f %%", 100*m.Scale) + shapes
}

// variantNames lists the models a band ran beside the nominal one.
func variantNames(b *analysis.Band) string {
	s := ""
	for i, v := range b.Variants {
		if i > 0 {
			s += " and "
		}
		s += v.Name
	}
	return s
}

// tableFlags says which marks the table used, so that their legends are
// printed.
type tableFlags struct {
	hidden bool // a TTFT p99 over every offered request disagrees with the successful-only one
	near   bool // a point not overloaded at 90 % of the serving capacity or more
}

// writeTable writes the curve, a row per load.
func writeTable(w io.Writer, c *analysis.Curve) tableFlags {
	var flags tableFlags
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "load\tutil\tgoodput\t\tattainment\t\tTTFT p50\tTTFT p99\tTTFT p99\tITL p99\tstate\t")
	ci := "95% CI"
	if len(c.Points) > 0 && len(c.Points[0].Runs) < 2 {
		ci = "" // one replication: no interval (the window line says so)
	}
	fmt.Fprintf(tw, "req/s\t%%\treq/s\t%s\t\t%s\tok, ms\tok, ms\tall, ms\tms\t\t\n", ci, ci)
	for i := range c.Points {
		pt := &c.Points[i]
		state := pt.Saturation.String()
		if pt.Utilisation >= 0.9 && pt.Saturation != analysis.Overloaded && pt.Saturation != analysis.Refused {
			state += ", ρ ≥ 0.9"
			flags.near = true
		}
		util := fmt.Sprintf("%.0f", 100*pt.Utilisation)
		if pt.NoMeasured() {
			// No attainment, no latency: nothing to print but the load
			// and what the replica delivered.
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%s\t\t-\t-\t-\t-\t%s\t\n", load(pt.Load), util,
				pt.Goodput.Center, interval(pt.Goodput, "%.2f"), noMeasured, state)
			continue
		}
		all := millis(pt.TTFTOffered.P99.Center)
		if hidesTail(pt) {
			all += " !"
			flags.hidden = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%.3f\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", load(pt.Load), util,
			pt.Goodput.Center, interval(pt.Goodput, "%.2f"), pt.Attainment.Center, interval(pt.Attainment, "%.3f"),
			millis(pt.TTFT.P50.Center), millis(pt.TTFT.P99.Center), all, millis(pt.ITL.P99.Center), state)
	}
	tw.Flush()
	return flags
}

// hidesTail applies analysis.Point's rule for its warning: the TTFT p99 over
// every offered request is over 1.1 × the one over successful requests,
// or only the former exists.
func hidesTail(pt *analysis.Point) bool {
	all, ok := pt.TTFTOffered.P99.Center, pt.TTFT.P99.Center
	return all > 1.1*ok || (math.IsNaN(ok) && !math.IsNaN(all))
}

// writeNotes says, per load, what the table cannot: a load overloaded
// before its window opened, and loads whose replications measured nothing.
func writeNotes(w io.Writer, c *analysis.Curve) {
	for i := range c.Points {
		pt := &c.Points[i]
		switch n := emptyRuns(pt); {
		case overloadedEarly(pt):
			fmt.Fprintf(w, "note       at %s req/s the replica was overloaded before the window opened: attainment 0, past the knee\n",
				load(pt.Load))
		case n > 0 && n < len(pt.Runs):
			fmt.Fprintf(w, "note       at %s req/s, %s in %d of %d replications: attainment from the other %d\n",
				load(pt.Load), noMeasured, n, len(pt.Runs), len(pt.Runs)-n)
		}
	}
}

// noMeasured stands where a load's windows measured no request: it has no
// attainment and no latency, and takes no part in the knee.
const noMeasured = "no measured requests"

// millis prints a latency in whole milliseconds, "∞" beyond every bound,
// "-" when no request completed to give one.
func millis(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case math.IsInf(x, 1):
		return "∞"
	}
	return fmt.Sprintf("%.0f", x)
}

// overloadedEarly reports whether every replication of pt stopped on its
// backlog bound (sim.Summary.Overloaded) before its window opened.
func overloadedEarly(pt *analysis.Point) bool {
	for i := range pt.Runs {
		if s := &pt.Runs[i]; !s.Overloaded || s.Offered > 0 {
			return false
		}
	}
	return true
}

// emptyRuns counts the replications of pt that measured no request.
func emptyRuns(pt *analysis.Point) int {
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

// interval prints an estimate's interval with the given verb: none from
// one replication (the window line says an interval needs two).
func interval(e stats.Interval, verb string) string {
	if math.IsNaN(e.Lo) && e.N == 1 {
		return "(no CI, n=1)"
	}
	if math.IsNaN(e.Lo) {
		return "(n/a)"
	}
	return fmt.Sprintf("["+verb+", "+verb+"]", e.Lo, e.Hi)
}

// neverFits says, when every prompt of the operating point is at or above
// the simulated engine's MaxModelLen, its KV capacity by default, that it
// is and by how much ("" when it is not): the engine refuses such a
// request (engine.ErrPromptTooLong). A longer output is served, cut at
// MaxModelLen.
func neverFits(p costmodel.OperatingPoint) string {
	capacity := engine.DefaultKVBlocks * engine.DefaultBlockSize
	if p.PromptTokens < capacity {
		return ""
	}
	return fmt.Sprintf("every request has a %s-token prompt, at or above the engine's MaxModelLen, its KV capacity of %s tokens (%s blocks of %d): the engine refuses each at arrival, at any load",
		number(float64(p.PromptTokens)), number(float64(capacity)), number(float64(engine.DefaultKVBlocks)), engine.DefaultBlockSize)
}

// writeNeverFits says, before the sweep, that no request of the operating
// point can fit in the simulated engine's KV cache.
func writeNeverFits(w io.Writer, p costmodel.OperatingPoint) {
	if why := neverFits(p); why != "" {
		fmt.Fprintf(w, "\nBefore the sweep: %s. Every load below is refused, not overloaded.\n", why)
	}
}

// writeRefused says which loads refused every request, and why when the
// operating point can never fit.
func writeRefused(w io.Writer, p costmodel.OperatingPoint, c *analysis.Curve) {
	var refused []string
	for i := range c.Points {
		if c.Points[i].Saturation == analysis.Refused {
			refused = append(refused, load(c.Points[i].Load))
		}
	}
	switch {
	case len(refused) == 0:
		return
	case len(refused) == len(c.Points):
		fmt.Fprintf(w, "refused    every request at every load was refused at arrival, none served")
	default:
		fmt.Fprintf(w, "refused    every request at %s req/s was refused at arrival, none served", strings.Join(refused, ", "))
	}
	if why := neverFits(p); why != "" {
		fmt.Fprintf(w, ": %s", why)
	}
	fmt.Fprintln(w)
}
