package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// VerdictLine is a comparison group's answer in one line, as
// examples/routing and examples/run print it:
//
//	verdict <name>: <ComparisonLine against bases[0]>; and <against bases[1]>…; threshold +5 %
//
// results[i] is B against the baseline named bases[i]; a nil result is
// left out, and the threshold is results[0]'s. With no results, or a nil
// first one, it is "verdict <name>: no verdict: <noVerdict>", noVerdict
// saying why there is none.
func VerdictLine(name string, bases []string, results []*analysis.ExperimentResult, noVerdict string) string {
	if len(results) == 0 || results[0] == nil {
		return fmt.Sprintf("verdict %s: no verdict: %s", name, noVerdict)
	}
	var parts []string
	for i, r := range results {
		if r != nil && i < len(bases) {
			parts = append(parts, ComparisonLine(r, bases[i]))
		}
	}
	return fmt.Sprintf("verdict %s: %s; threshold %+.3g %%", name, strings.Join(parts, "; and "), 100*results[0].Hypothesis.Threshold)
}

// ComparisonLine says in words how B fared against the baseline named base:
// the verdict and the interval of the improvement over the loads at or
// below the baseline's knee (the headline; every load when the baseline
// misses the attainment target at all of them), the same past the knee
// when some loads lie there, and the boundary (the verdict at each load):
//
//	improved over RoundRobin at or below its knee (1.5, 2 req/s), +7.2 % [+5.9, +8.4] (boundary: …)
//
// On the knee (analysis.MetricKnee) it is the verdict, the knees and
// their paired difference:
//
//	improved over RoundRobin on the knee, 8.55 -> 9.25 req/s, paired +0.700 [0.400, 1.000] req/s, +8.2 % [+4.7, +11.7] (12 blocks)
func ComparisonLine(r *analysis.ExperimentResult, base string) string {
	if r.Hypothesis.Metric.Name == analysis.MetricKnee.Name {
		return kneeComparison(r, base)
	}
	below, past := regimeLoads(r)
	var b strings.Builder
	if math.IsNaN(r.BaselineKnee) {
		fmt.Fprintf(&b, "%v over %s at %s req/s (where %s misses the attainment target), %s", r.Verdict, base, joinLoads(below), base, improvement(r.Improvement))
	} else {
		fmt.Fprintf(&b, "%v over %s at or below its knee (%s req/s), %s", r.Verdict, base, joinLoads(below), improvement(r.Improvement))
	}
	if len(past) > 0 {
		fmt.Fprintf(&b, ", %v past it (%s req/s), %s", r.PastVerdict, joinLoads(past), improvement(r.PastImprovement))
	}
	fmt.Fprintf(&b, " (boundary: %s)", r.Boundary())
	return b.String()
}

// kneeComparison is ComparisonLine on the knee.
func kneeComparison(r *analysis.ExperimentResult, base string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v over %s on the knee, %.3g -> %.3g req/s, paired %s req/s, %s (%d blocks", r.Verdict, base,
		r.KneeA.Center, r.KneeB.Center, kneeDiff(r.KneeDiff), improvement(r.Improvement), r.KneeDiff.N)
	if r.KneeBounds > 0 {
		fmt.Fprintf(&b, ", %d through a knee beyond the loads", r.KneeBounds)
	}
	if r.KneeUnpaired > 0 {
		fmt.Fprintf(&b, "; %d left out, both knees beyond the same end", r.KneeUnpaired)
	}
	b.WriteString(")")
	return b.String()
}

// kneeDiff prints a paired knee difference, req/s, with its interval.
func kneeDiff(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.3f (no interval)", e.Center)
	}
	return fmt.Sprintf("%+.3f [%.3f, %.3f]", e.Center, e.Lo, e.Hi)
}

// regimeLoads splits a result's loads into those the headline covers (at
// or below the baseline's knee, or all when it has none) and those past
// it.
func regimeLoads(r *analysis.ExperimentResult) (below, past []float64) {
	for _, l := range r.Loads {
		if math.IsNaN(r.BaselineKnee) || l.Load <= r.BaselineKnee {
			below = append(below, l.Load)
		} else {
			past = append(past, l.Load)
		}
	}
	return below, past
}

// improvement prints a relative improvement in per cent with its
// interval.
func improvement(e stats.Interval) string {
	switch {
	case math.IsNaN(e.Center):
		return "none measured"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f %% (no interval)", 100*e.Center)
	}
	return fmt.Sprintf("%+.1f %% [%+.1f, %+.1f]", 100*e.Center, 100*e.Lo, 100*e.Hi)
}

// joinLoads prints loads with three significant digits, comma-separated.
func joinLoads(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.3g", x)
	}
	return strings.Join(s, ", ")
}

// PairedDiff prints a paired difference B−A (ms, say) with one decimal
// and its interval, as examples/routing and examples/specdecode print
// their latency readouts: "+31.7 [+19.4, +44.0]"; without an interval
// the centre alone, and "-" when nothing was measured.
func PairedDiff(e stats.Interval) string {
	switch {
	case e.N == 0 || math.IsNaN(e.Center):
		return "-"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.1f", e.Center)
	}
	return fmt.Sprintf("%+.1f [%+.1f, %+.1f]", e.Center, e.Lo, e.Hi)
}

// BandVerdicts are an experiment's verdicts under each model of its band
// (analysis.ExperimentResult.Band), one line a variant in the band's
// order, as examples/routing and examples/specdecode print them beneath
// the nominal verdict:
//
//	under atlas-linear: improved on the knee, paired +1.016 [0.902, 1.130] req/s, +50.1 % [+46.0, +54.2] (4 blocks)
//	under step times ×1.1: no verdict on the knee: in 4 of 4 blocks A's and B's knees both lie beyond the same end of the A/B loads
//
// The first form reads the variant's verdict and its improvement on the
// hypothesis's metric; the paired knee difference (req/s) is "none" where
// no block compared knees. On another metric than the knee (a class's
// attainment, goodput) it is the verdict and the improvement alone:
//
//	under atlas-linear: inconclusive, +2.3 % [+0.6, +4.1] (6 blocks)
//
// A variant that ran at loads of its own
// (analysis.Experiment.BandLoads) says which, after its name: "under
// atlas-roofline at 6.64-11.4 req/s: …". Nil without a band.
func BandVerdicts(r *analysis.ExperimentResult) []string {
	nominal := make([]float64, len(r.Loads))
	for i, l := range r.Loads {
		nominal[i] = l.Load
	}
	var out []string
	for _, v := range r.Band {
		name := v.Name
		if len(v.Loads) > 0 && !slices.Equal(v.Loads, nominal) {
			name += fmt.Sprintf(" at %.3g-%.3g req/s", slices.Min(v.Loads), slices.Max(v.Loads))
		}
		if v.Loads != nil && len(v.Loads) == 0 {
			out = append(out, fmt.Sprintf("under %s: no verdict: no A/B loads were placed (A's knee under it lies below every load of its sweep)", name))
			continue
		}
		if r.Hypothesis.Metric.Name != analysis.MetricKnee.Name {
			if v.Verdict == analysis.NoMeasured {
				out = append(out, fmt.Sprintf("under %s: no measured requests in %d blocks", name, v.Blocks))
			} else {
				out = append(out, fmt.Sprintf("under %s: %s, %s (%d blocks)", name, v.Verdict, improvement(v.Improvement), v.Blocks))
			}
			continue
		}
		if v.Verdict == analysis.NoMeasured && v.KneeUnpaired > 0 {
			out = append(out, fmt.Sprintf("under %s: no verdict on the knee: in %d of %d blocks A's and B's knees both lie beyond the same end of the A/B loads",
				name, v.KneeUnpaired, v.Blocks))
			continue
		}
		out = append(out, fmt.Sprintf("under %s: %s on the knee, paired %s req/s, %s (%d blocks)",
			name, v.Verdict, bandKneeDiff(v.KneeDiff), improvement(v.Improvement), v.Blocks))
	}
	return out
}

// bandKneeDiff prints a variant's paired knee difference, req/s: "none"
// where no block compared knees, the centre alone without an interval.
func bandKneeDiff(e stats.Interval) string {
	switch {
	case e.N == 0 || math.IsNaN(e.Center):
		return "none"
	case math.IsNaN(e.Lo):
		return fmt.Sprintf("%+.3f", e.Center)
	}
	return fmt.Sprintf("%+.3f [%.3f, %.3f]", e.Center, e.Lo, e.Hi)
}
