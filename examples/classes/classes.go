package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// The two classes: interactive chat, whose first token is due within
// 600 ms (the chapter's SLO) and which Priority serves first, beside
// batch work that can wait 30 s. Both inherit the 150 ms ITL bound.
var classes = []sim.Class{
	{Name: "interactive", SLO: sim.SLO{TTFT: 600 * time.Millisecond}, Priority: -1},
	{Name: "batch", SLO: sim.SLO{TTFT: 30 * time.Second}},
}

// mix offers the two classes in equal shares, each its own Poisson
// process of the chapter's requests.
var mix = analysis.ClassMix(
	analysis.Part{Class: "interactive", Share: 1, Lengths: lengths},
	analysis.Part{Class: "batch", Share: 1, Lengths: lengths},
)

// confidence is the level of every interval the example prints.
const confidence = 0.95

// policies are the orders compared, the baseline first.
var policies = []struct {
	name   string
	policy engine.Policy
}{{"FCFS", engine.FCFS{}}, {"Priority", engine.Priority{}}}

// classStudy is each policy's sweep of the two classes and the verdict of
// Priority against FCFS on the interactive class.
type classStudy struct {
	sweeps  []analysis.Sweep
	curves  []*analysis.Curve
	verdict *analysis.ExperimentResult // nil with one replication
}

func classConfig(o options, p engine.Policy) sim.Config {
	return sim.Config{Window: o.window(), Classes: classes, Engine: engine.Config{Policy: p}}
}

// hypothesis is declared before any run: near the knee, Priority raises
// the interactive class's attainment by 2 % or more over FCFS.
var hypothesis = analysis.Hypothesis{
	Claim:     "near the knee, serving the interactive class first (Priority) raises its SLO attainment by at least 2 % over FCFS",
	Metric:    analysis.MetricClassAttainment("interactive"),
	Threshold: 0.02,
}

func classStudyOf(o options) (classStudy, error) {
	var s classStudy
	for _, p := range policies {
		sw := analysis.Sweep{Config: classConfig(o, p.policy), Workload: mix, Grid: analysis.Grid{Loads: o.loads},
			Reps: o.reps, BaseSeed: o.seed, Workers: o.workers}
		c, err := sw.Run()
		if err != nil {
			return s, fmt.Errorf("%s: %w", p.name, err)
		}
		s.sweeps, s.curves = append(s.sweeps, sw), append(s.curves, c)
	}
	if o.reps < 2 {
		return s, nil // one replication: no interval, so no verdict
	}
	x := analysis.Experiment{Hypothesis: hypothesis, A: classConfig(o, policies[0].policy), B: classConfig(o, policies[1].policy),
		Workload: mix, Loads: o.near, Blocks: o.reps, BaseSeed: o.seed, Workers: o.workers, AllLoads: true}
	var err error
	s.verdict, err = x.Run()
	return s, err
}

func writeClasses(w io.Writer, o options, s classStudy) {
	fmt.Fprintln(w, "2. Two request classes, offered in equal shares: interactive (TTFT ≤ 600 ms) and batch (TTFT ≤ 30 s), both")
	fmt.Fprintln(w, "   with every ITL ≤ 150 ms. FCFS ignores classes; Priority (vLLM's \"priority\" scheduling policy) admits the")
	fmt.Fprintln(w, "   interactive class first and preempts batch requests first. Each request is judged by its class's SLO.")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-9s %6s  %-12s %8s %8s  %-21s %8s %8s\n", "policy", "load", "class", "offered", "goodput", "attainment", "TTFT", "TTFT")
	fmt.Fprintf(w, "%-9s %6s  %-12s %8s %8s  %-21s %8s %8s\n", "", "req/s", "", "req/s", "req/s", "", "p50 ms", "p99 ms")
	for i, p := range policies {
		for _, pt := range s.curves[i].Points {
			for _, c := range pt.Classes {
				if c.Name == sim.DefaultClass {
					continue // the mix labels every request
				}
				fmt.Fprintf(w, "%-9s %6.2f  %-12s %8.2f %8.2f  %-21s %8s %8s\n", p.name, pt.Load, c.Name, c.Offered.Center,
					c.Goodput.Center, estimate(c.Attainment, "%.3f"), ms(c.TTFT.P50.Center), ms(c.TTFT.P99.Center))
			}
		}
	}
	fmt.Fprintf(w, "\n   knee: the highest load at which the class's own attainment meets %.2f\n", s.curves[0].Target)
	for i, p := range policies {
		c := s.curves[i]
		parts := []string{}
		for _, k := range c.ClassKnees {
			if k.Name != sim.DefaultClass {
				parts = append(parts, k.Name+" "+knee(k.Knee))
			}
		}
		parts = append(parts, "all requests "+knee(c.Knee))
		fmt.Fprintf(w, "   %-9s %s\n", p.name, strings.Join(parts, ", "))
	}
	writeVerdict(w, o, s.verdict)
	fmt.Fprintf(w, "\n   check: per-class offered and good requests add up to the aggregate's in all %d runs: %v\n",
		countRuns(s.curves), classesAddUp(s.curves))
}

// knee prints a knee with its interval, or why it was not found.
func knee(k analysis.Knee) string {
	if !k.Found {
		return "not found (" + k.Reason() + ")"
	}
	return estimate(k.Load, "%.2f") + " req/s"
}

func writeVerdict(w io.Writer, o options, r *analysis.ExperimentResult) {
	fmt.Fprintf(w, "\n   hypothesis (declared before the runs; A: FCFS, B: Priority): %s.\n", hypothesis.Claim)
	if r == nil {
		fmt.Fprintf(w, "   verdict: n/a (one replication): a verdict needs an interval across paired seeds; run -reps 2 or more.\n")
		return
	}
	if r.Verdict == analysis.NoMeasured {
		fmt.Fprintf(w, "   verdict: %s over %s req/s in %d paired seeds: no block measured an interactive request under both policies; lengthen -horizon (%v).\n",
			r.Verdict, loadList(r.Loads), r.Blocks, o.horizon)
	} else {
		fmt.Fprintf(w, "   verdict: %s, %s over %s req/s, %d paired seeds. %s.\n", r.Verdict,
			improvement(r.Improvement), loadList(r.Loads), r.Blocks, sentence(r.Boundary()))
	}
	for _, l := range r.Loads {
		if l.Verdict == analysis.NoMeasured {
			fmt.Fprintf(w, "     %5.2f req/s: %s\n", l.Load, l.Verdict)
			continue
		}
		fmt.Fprintf(w, "     %5.2f req/s: interactive attainment FCFS %.3f, Priority %.3f, %s, %s\n",
			l.Load, l.A.Center, l.B.Center, improvement(l.Improvement), l.Verdict)
	}
}

// improvement prints a relative improvement with its interval, in %.
func improvement(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "n/a"
	case math.IsNaN(e.Lo) || math.IsNaN(e.Hi):
		return fmt.Sprintf("%+.1f %% [n/a]", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// sentence capitalises s's first letter.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func loadList(ls []analysis.LoadResult) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = fmt.Sprintf("%g", l.Load)
	}
	return strings.Join(s, ", ")
}

func countRuns(cs []*analysis.Curve) int {
	n := 0
	for _, c := range cs {
		for _, p := range c.Points {
			n += len(p.Runs)
		}
	}
	return n
}

// classesAddUp reports whether, in every run, the classes' offered and
// good requests sum to the run's own.
func classesAddUp(cs []*analysis.Curve) bool {
	for _, c := range cs {
		for _, p := range c.Points {
			for _, r := range p.Runs {
				offered, good := 0, 0
				for _, cl := range r.Classes {
					offered, good = offered+cl.Offered, good+cl.Good
				}
				if offered != r.Offered || good != r.Good {
					return false
				}
			}
		}
	}
	return true
}
