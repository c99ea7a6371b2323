package main

import (
	"fmt"
	"io"
	"math"
	"slices"
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

// classStudy is each policy's sweep of the two classes, the verdict of
// Priority against FCFS on the interactive class, and each class's gain
// or loss. Both sweeps run every load on the same seeds (Seed(seed, k)
// for replication k), so replication k of FCFS and of Priority is block k
// of the A/B comparison: common random numbers, paired differences.
type classStudy struct {
	sweeps  []analysis.Sweep
	curves  []*analysis.Curve
	verdict *analysis.ExperimentResult // nil with one replication
	// loads is, at each load of the sweep in the curves' order, each
	// class's attainment under FCFS (A) and Priority (B) and B−A paired
	// on each seed; near is the same over the verdict loads, each seed's
	// figures averaged over them.
	loads []loadPairs
	near  []classPair
	// band is the verdict under each model of the band declared before
	// the runs (-model-error, -shapes); nil without a verdict or a band.
	band *bandStudy
}

// loadPairs is every class's comparison at one load.
type loadPairs struct {
	load    float64
	classes []classPair
}

// classPair is one class's attainment under A and under B across the
// seeds, and the paired change B−A: per seed, across the seeds where both
// measured one of its requests (diff.N of them).
type classPair struct {
	name       string
	a, b, diff stats.Interval
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

// experiment is the A/B comparison the verdict is taken on.
func experiment(o options) analysis.Experiment {
	return analysis.Experiment{Hypothesis: hypothesis, A: classConfig(o, policies[0].policy), B: classConfig(o, policies[1].policy),
		Workload: mix, Loads: o.near, Blocks: o.reps, BaseSeed: o.seed, Workers: o.workers, Confidence: confidence, AllLoads: true}
}

func classStudyOf(o options) (classStudy, error) {
	return classStudyUnder(o, modelBand(o))
}

// classStudyUnder is the study with the verdict read under band too
// (none when it declares nothing).
func classStudyUnder(o options, band analysis.ModelError) (classStudy, error) {
	var s classStudy
	for _, p := range policies {
		// The band's runs of each model over the loads (its first
		// -band-reps seeds) leave the nominal curve as it was.
		sw := analysis.Sweep{Config: classConfig(o, p.policy), Workload: mix, Grid: analysis.Grid{Loads: o.loads},
			Reps: o.reps, BaseSeed: o.seed, Workers: o.workers, ModelError: band}
		c, err := sw.Run()
		if err != nil {
			return s, fmt.Errorf("%s: %w", p.name, err)
		}
		s.sweeps, s.curves = append(s.sweeps, sw), append(s.curves, c)
	}
	a, b := s.curves[0].Points, s.curves[1].Points
	if len(a) != len(b) {
		return s, fmt.Errorf("the sweeps ran %d and %d loads", len(a), len(b))
	}
	for i := range a {
		if a[i].Load != b[i].Load || len(a[i].Runs) != len(b[i].Runs) {
			return s, fmt.Errorf("the sweeps' point %d differs: %g req/s, %d runs and %g req/s, %d runs", i, a[i].Load, len(a[i].Runs), b[i].Load, len(b[i].Runs))
		}
		s.loads = append(s.loads, loadPairs{load: a[i].Load, classes: pairClasses([]*analysis.Point{&a[i]}, []*analysis.Point{&b[i]})})
	}
	na, err := pointsAt(a, o.near)
	if err != nil {
		return s, err
	}
	nb, err := pointsAt(b, o.near)
	if err != nil {
		return s, err
	}
	s.near = pairClasses(na, nb)
	if o.reps < 2 {
		return s, nil // one replication: no interval, so no verdict
	}
	// The verdict's blocks are the sweeps' runs at the verdict loads:
	// Experiment.Run would run the very same (configuration, workload,
	// seed) again.
	if s.verdict, err = experiment(o).ResultOf(blocksOf(na, nb)); err != nil {
		return s, err
	}
	if band.Declared() {
		s.band, err = runBand(o, &s, band)
	}
	return s, err
}

// pointsAt are the points of pts at loads, in loads' order.
func pointsAt(pts []analysis.Point, loads []float64) ([]*analysis.Point, error) {
	out := make([]*analysis.Point, len(loads))
	for j, l := range loads {
		i := slices.IndexFunc(pts, func(p analysis.Point) bool { return p.Load == l })
		if i < 0 {
			return nil, fmt.Errorf("-near: %g req/s is not a point of the sweep", l)
		}
		out[j] = &pts[i]
	}
	return out, nil
}

// blocksOf are an experiment's blocks, indexed [load][block], from A's
// and B's points at its loads: block k is replication k, the same seed
// under both.
func blocksOf(as, bs []*analysis.Point) [][]analysis.Block {
	blocks := make([][]analysis.Block, len(as))
	for i := range as {
		blocks[i] = make([]analysis.Block, len(as[i].Runs))
		for k := range as[i].Runs {
			bl := &blocks[i][k]
			bl.A, bl.AttainA = blockFigures(&as[i].Runs[k])
			bl.B, bl.AttainB = blockFigures(&bs[i].Runs[k])
		}
	}
	return blocks
}

// blockFigures are a run's hypothesis metric and attainment as an
// experiment's block holds them: NaN when no measured request reached an
// outcome (no evidence).
func blockFigures(s *sim.Summary) (metric, attainment float64) {
	if s.NoMeasured() {
		return math.NaN(), math.NaN()
	}
	return hypothesis.Metric.Of(s), s.Attainment
}

// pairClasses compares each class under A (the points as) and B (bs):
// per seed k, its attainment averaged over the points where it measured
// one of the class's requests, under A, under B, and their difference
// B−A averaged over the points where both did. One point gives the
// comparison at its load.
func pairClasses(as, bs []*analysis.Point) []classPair {
	var out []classPair
	for j, c := range as[0].Runs[0].Classes {
		if c.Name == sim.DefaultClass {
			continue // the mix labels every request
		}
		var a, b, d []float64
		for k := range as[0].Runs {
			var sa, sb, sd mean
			for i := range as {
				va, vb := as[i].Runs[k].Classes[j].Attainment, bs[i].Runs[k].Classes[j].Attainment
				sa.add(va)
				sb.add(vb)
				sd.add(vb - va) // NaN unless both measured
			}
			a, b, d = sa.appendTo(a), sb.appendTo(b), sd.appendTo(d)
		}
		out = append(out, classPair{name: c.Name,
			a:    stats.Clamp(stats.MeanInterval(a, confidence), 0, 1),
			b:    stats.Clamp(stats.MeanInterval(b, confidence), 0, 1),
			diff: stats.MeanInterval(d, confidence)})
	}
	return out
}

// mean averages the values that are not NaN.
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(x float64) {
	if !math.IsNaN(x) {
		m.sum, m.n = m.sum+x, m.n+1
	}
}

// appendTo appends the mean to xs, nothing when no value was added.
func (m *mean) appendTo(xs []float64) []float64 {
	if m.n == 0 {
		return xs
	}
	return append(xs, m.sum/float64(m.n))
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
	writeClassChanges(w, o, s)
	writeBand(w, o, s)
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

// writeClassChanges prints each class's attainment under FCFS and under
// Priority at every load of the sweep and over the verdict loads, with
// the paired change, and says in words which class gains and which loses.
func writeClassChanges(w io.Writer, o options, s classStudy) {
	a, b := policies[0].name, policies[1].name
	fmt.Fprintf(w, "\n   each class, %s → %s on the same seeds: attainment under each and the change B−A paired on each seed\n", a, b)
	fmt.Fprintf(w, "   %-11s", "load req/s")
	for i, c := range s.near {
		if i < len(s.near)-1 {
			fmt.Fprintf(w, "  %-37s", c.name)
		} else {
			fmt.Fprintf(w, "  %s", c.name)
		}
	}
	fmt.Fprintln(w)
	row := func(label string, cs []classPair) {
		fmt.Fprintf(w, "   %-11s", label)
		for i, c := range cs {
			cell := "no measured requests"
			if !math.IsNaN(c.a.Center) || !math.IsNaN(c.b.Center) {
				cell = fmt.Sprintf("%s → %s  %s", attainOrDash(c.a.Center), attainOrDash(c.b.Center), change(c.diff))
			}
			if i < len(cs)-1 {
				cell = fmt.Sprintf("%-37s", cell)
			}
			fmt.Fprintf(w, "  %s", cell)
		}
		fmt.Fprintln(w)
	}
	for _, l := range s.loads {
		row(fmt.Sprintf("%.2f", l.load), l.classes)
	}
	row("verdict", s.near)
	fmt.Fprintf(w, "   (verdict: each seed's figures averaged over the verdict loads %s req/s)\n", strings.ReplaceAll(joinLoads(o.near), ",", ", "))
	for _, line := range classSentences(o, s) {
		fmt.Fprintln(w, "   "+line)
	}
}

// classSentences say what Priority does to each class: at the verdict
// loads, and at every load of the sweep where it lowers a class's
// attainment beyond its interval.
func classSentences(o options, s classStudy) []string {
	b := policies[1].name
	if o.reps < 2 {
		return []string{"No verdict on the classes' changes: one replication has no interval; run -reps 2 or more."}
	}
	if !slices.ContainsFunc(s.near, func(c classPair) bool { return c.diff.N > 0 }) {
		return []string{fmt.Sprintf("No change to read: no seed measured a request of any class under both policies; lengthen -horizon (%v).", o.horizon)}
	}
	lines := []string{fmt.Sprintf("At the verdict loads, %s.", trade(b, s.near))}
	traded := false
	for _, l := range s.loads {
		if _, losses, _ := sortChanges(l.classes); len(losses) > 0 {
			lines = append(lines, fmt.Sprintf("At %g req/s, %s.", l.load, trade(b, l.classes)))
			traded = true
		}
	}
	if !traded {
		lines = append(lines, fmt.Sprintf("At no load of the sweep does %s lower a class's attainment beyond its interval.", b))
	}
	return lines
}

// attainOrDash prints an attainment, "—" for NaN (no measured request).
func attainOrDash(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.3f", x)
}

// change prints a paired change of attainment with its interval: its
// sign is the change's ("+0.459", "-0.502"); "[n/a]" without an interval,
// "no measured requests" without a seed that measured the class under
// both.
func change(e stats.Interval) string {
	switch {
	case e.N == 0 || math.IsNaN(e.Center):
		return "no measured requests"
	case math.IsNaN(e.Lo) || math.IsNaN(e.Hi):
		return fmt.Sprintf("%+.3f [n/a]", e.Center)
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f]", e.Center, e.Lo, e.Hi)
}

// sortChanges splits the classes by their paired change: gains (the
// interval above 0), losses (below 0) and the rest (0 inside it, or no
// interval).
func sortChanges(cs []classPair) (gains, losses, rest []classPair) {
	for _, c := range cs {
		switch {
		case c.diff.Lo > 0:
			gains = append(gains, c)
		case c.diff.Hi < 0:
			losses = append(losses, c)
		default:
			rest = append(rest, c)
		}
	}
	return gains, losses, rest
}

// trade says what policy does to each class's attainment: which it
// raises and which it lowers (the interval of the paired change clear of
// 0), and those it leaves within their interval; "helps X at Y's
// expense" when it does both.
func trade(policy string, cs []classPair) string {
	gains, losses, rest := sortChanges(cs)
	list := func(cs []classPair, by string) string {
		parts := make([]string, len(cs))
		for i, c := range cs {
			parts[i] = c.name + " " + by + change(c.diff)
			if i == 0 && by != "" {
				parts[i] = c.name + " attainment " + by + change(c.diff)
			}
		}
		return strings.Join(parts, ", ")
	}
	var out string
	switch {
	case len(gains) > 0 && len(losses) > 0:
		out = fmt.Sprintf("%s raises %s but lowers %s: it helps %s at %s's expense", policy,
			list(gains, "by "), list(losses, "by "), names(gains), names(losses))
	case len(gains) > 0:
		out = fmt.Sprintf("%s raises %s and lowers no class's", policy, list(gains, "by "))
	case len(losses) > 0:
		out = fmt.Sprintf("%s lowers %s and raises no class's", policy, list(losses, "by "))
	default:
		return fmt.Sprintf("%s changes no class's attainment beyond its interval (%s)", policy, list(rest, ""))
	}
	if len(rest) > 0 {
		out += fmt.Sprintf("; %s: no change beyond the interval", list(rest, ""))
	}
	return out
}

// names lists the classes' names.
func names(cs []classPair) string {
	n := make([]string, len(cs))
	for i, c := range cs {
		n[i] = c.name
	}
	return strings.Join(n, " and ")
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
