package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// sizing asks how many Atlas TP4 replicas r needs to carry the level's
// traffic at o.sizeLoad req/s: the smallest fleet behind r whose mean
// attainment over o.sizeReps seeded replications meets the knee's 95 %
// (analysis.Sizing). Every router runs the same seeds, so the sizes
// compare on common random numbers.
// The search starts at the guess the router's own sweep gives (the
// traffic over its knee per replica), which changes the fleets it runs,
// not its answer.
func sizing(l level, r router, c *analysis.Curve, o options) analysis.Sizing {
	cfg := config(r.router, o)
	cfg.Fleet.Replicas = sim.Copies(1, sim.ReplicaConfig{})
	from := 0
	if c.Knee.Found && c.Knee.Load.Center > 0 {
		from = min(maxSizing, int(math.Ceil(o.sizeLoad*float64(o.replicas)/c.Knee.Load.Center)))
	}
	return analysis.Sizing{Config: cfg, Workload: requests(l, o), Load: o.sizeLoad, Reps: o.sizeReps,
		BaseSeed: o.seed, Workers: o.workers, MaxReplicas: maxSizing, From: from}
}

// maxSizing bounds the search: a traffic that needs more replicas is
// reported as unmet.
const maxSizing = 256

// sizeLevel sizes the fleet behind every router at one reuse level (none
// with -size-load 0). A router that no fleet of maxSizing replicas
// carries the traffic with is recorded as unmet, not an error.
func sizeLevel(out *outcome, o options) error {
	out.sizes = make([]*analysis.SizingResult, len(routers))
	out.unmet = make([]*analysis.SizingUnmetError, len(routers))
	if o.sizeLoad == 0 {
		return nil
	}
	return each(len(routers), func(i int) (err error) {
		out.sizes[i], err = sizing(out.level, routers[i], out.curves[i], o).Run()
		if errors.As(err, &out.unmet[i]) {
			return nil
		}
		if err != nil {
			err = fmt.Errorf("%s, %s sizing: %w", out.name, routers[i].name, err)
		}
		return err
	})
}

// writeSizes writes each router's fleet for the level's traffic: its
// replicas with the seed range, the attainment there and one replica
// fewer, and the counts the search ran.
func writeSizes(w io.Writer, out *outcome, o options) {
	if o.sizeLoad == 0 {
		return
	}
	fmt.Fprintf(w, "  replicas to carry %s req/s of this traffic at 95 %% attainment (%d seeds each, the same for every router):\n", num(o.sizeLoad), o.sizeReps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  router\treplicas [seed range]\tattainment there\tone fewer\tfleets run\n")
	for i, r := range routers {
		if u := out.unmet[i]; u != nil {
			fmt.Fprintf(tw, "  %s\tmore than %d\t%s at %d\t-\t-\n", r.name, u.MaxReplicas, fixed(u.Attainment.Center), u.MaxReplicas)
			continue
		}
		s := out.sizes[i]
		counts := make([]string, len(s.Probes))
		for k, p := range s.Probes {
			counts[k] = fmt.Sprint(p.Replicas)
		}
		fmt.Fprintf(tw, "  %s\t%d [%d, %d]\t%s\t%s\t%s\n", r.name, s.Replicas, s.SeedLo, s.SeedHi,
			interval(s.Attainment), interval(s.Below), strings.Join(counts, ", "))
	}
	tw.Flush()
}

// sizeLine is a reuse level's answer in replicas: each router's fleet
// for the same traffic ("" without sizing).
func sizeLine(out *outcome, o options) string {
	if o.sizeLoad == 0 {
		return ""
	}
	parts := make([]string, len(routers))
	for i, r := range routers {
		if u := out.unmet[i]; u != nil {
			parts[i] = fmt.Sprintf("%s more than %d", r.name, u.MaxReplicas)
			continue
		}
		s := out.sizes[i]
		parts[i] = fmt.Sprintf("%s %d [%d, %d]", r.name, s.Replicas, s.SeedLo, s.SeedHi)
	}
	return fmt.Sprintf("replicas %s: for %s req/s at 95 %% attainment, %s (seed ranges in brackets; nominal model)", out.name, num(o.sizeLoad), strings.Join(parts, ", "))
}

// interval prints a fraction with its interval, "-" when absent.
func interval(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "-"
	case math.IsNaN(e.Lo):
		return fixed(e.Center)
	}
	return fmt.Sprintf("%s [%s, %s]", fixed(e.Center), fixed(e.Lo), fixed(e.Hi))
}
