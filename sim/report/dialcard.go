package report

import (
	"math"

	"github.com/servesim/servesim/scenario"
	"github.com/servesim/servesim/sim/analysis"
)

// CardDialSweep is an analysis.DialSweep as a card carries it, a value rather than
// a closure: the dial's name and unit, the values it took, the baseline
// value the others are compared with and the probe load, then per value
// its knee with its interval and the paired difference of its knee to the
// baseline's with its interval (analysis.DialResult.KneeDiff), its peak, and
// its point at the probe load (TTFT and ITL percentiles, attainment).
type CardDialSweep struct {
	Dial   string    `json:"dial"` // what it sets, e.g. "Engine.ChunkCap"
	Unit   string    `json:"unit"` // of its values, e.g. "tokens"
	Values []float64 `json:"values"`
	// Baseline is the value the others are compared with, at
	// BaselineIndex in Values.
	Baseline      float64 `json:"baseline"`
	BaselineIndex int     `json:"baseline_index"`
	// Probe is the load the probe points were read at, requests/s; null
	// without one.
	Probe      Num       `json:"probe_load"`
	Target     float64   `json:"attainment_target"` // the knees' attainment target
	Confidence float64   `json:"confidence"`        // of every interval
	Rows       []DialRow `json:"rows"`              // one per value, in Values' order
}

// DialRow is one value of a dial sweep.
type DialRow struct {
	Value float64  `json:"value"`
	Knee  CardKnee `json:"knee"`
	// KneeDiff is the knee minus the baseline's, requests/s, paired
	// replication by replication (the same seeds); exactly 0 for the
	// baseline. N counts the replications paired. KneeBounds of them
	// paired through a knee beyond the loads (the bound the loads give
	// it): the difference then understates the true one, never with the
	// wrong sign (analysis.DialResult.KneeBounds).
	KneeDiff   CardInterval `json:"knee_diff"`
	KneeBounds int          `json:"knee_diff_bounds,omitempty"`
	Peak       CardPeak     `json:"peak"`
	// Loads are the offered loads its curve was measured at.
	Loads []float64 `json:"loads"`
	// Probe is its point at the probe load; nil without one.
	Probe    *CardPoint `json:"probe,omitempty"`
	Warnings []string   `json:"warnings,omitempty"` // its curve's
}

// CardDialSweepOf describes a dial sweep and its result.
func CardDialSweepOf(d analysis.DialSweep, r *analysis.DialResult) *CardDialSweep {
	out := &CardDialSweep{Dial: r.Dial.Name, Unit: r.Dial.Unit, Values: r.Values, BaselineIndex: r.Baseline,
		Probe: Num(math.NaN()), Target: math.NaN(), Confidence: math.NaN()}
	if r.Baseline >= 0 && r.Baseline < len(r.Values) {
		out.Baseline = r.Values[r.Baseline]
	}
	if d.Probe > 0 {
		out.Probe = Num(d.Probe)
	}
	for i, c := range r.Curves {
		out.Target, out.Confidence = c.Target, c.Confidence
		row := DialRow{Value: r.Values[i], Knee: CardKnee{Load: estimateOf(c.Knee.Load), Found: c.Knee.Found, Censored: c.Knee.Reason()},
			Peak: CardPeak{Load: c.Peak.Load, Goodput: estimateOf(c.Peak.Goodput)}, Warnings: c.Warnings}
		if i < len(r.KneeDiff) {
			row.KneeDiff = estimateOf(r.KneeDiff[i])
		}
		if i < len(r.KneeBounds) {
			row.KneeBounds = r.KneeBounds[i]
		}
		for _, p := range c.Points {
			row.Loads = append(row.Loads, p.Load)
		}
		if i < len(r.Probe) {
			p := pointOf(&r.Probe[i], c.Confidence)
			row.Probe = &p
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// NewDialCard fills a card from a dial sweep and its result: the system
// at the baseline value (the dial's other values are in the card's dial
// sweep), SLO, window, seeds, build, analysis revision, the dial sweep as
// its result, and the baseline's concurrency and cache state (CardWorkloadOf). The caller states the claim and the workload; an
// experiment's verdict can be added with CardVerdictOf.
func NewDialCard(d analysis.DialSweep, r *analysis.DialResult) Card {
	base := d.Sweep.Config
	if d.Baseline >= 0 && d.Baseline < len(d.Values) {
		base = d.Dial.Set(base, d.Values[d.Baseline])
	}
	reps := 0
	slo := base.SLO.WithDefaults()
	if len(r.Curves) > 0 {
		c := r.Curves[0]
		slo = c.SLO
		if len(c.Points) > 0 {
			reps = len(c.Points[0].Runs)
		}
	}
	seeds := seedsOf(d.Sweep.BaseSeed, reps)
	seeds.Rule = "replication r seeds its workload and its run with sim.Seed(base, r), the same at every load and every value of the dial (common random numbers)"
	card := Card{
		Workload:         CardWorkloadOf(base, d.Sweep.Axis),
		System:           SystemOf(base),
		SLO:              sloOf(slo),
		Window:           windowOf(base.Window),
		Seeds:            seeds,
		Build:            ReadBuild(),
		AnalysisRevision: analysis.AnalysisRevision(),
		Dial:             CardDialSweepOf(d, r),
	}
	card.EmbedScenario(nil, scenario.Scenario{DialSweep: &d})
	return card
}
