package report

import (
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/stats"
)

// CardInterval is a stats.Interval that JSON can carry: Lo and Hi are NaN (null)
// without an interval.
type CardInterval struct {
	Center     Num     `json:"center"`
	Lo         Num     `json:"lo"`
	Hi         Num     `json:"hi"`
	Confidence float64 `json:"confidence"`
	N          int     `json:"n"`
}

func estimateOf(e stats.Interval) CardInterval {
	return CardInterval{Center: Num(e.Center), Lo: Num(e.Lo), Hi: Num(e.Hi), Confidence: e.Confidence, N: e.N}
}

// Results are a curve's figures with their intervals.
type Results struct {
	// Axis is what the loads measure: "rate" (requests/s) or
	// "concurrency" (closed-loop clients); LoadUnit labels them, "req/s"
	// or "clients" (analysis.Axis). "" reads as the rate.
	Axis       string        `json:"axis"`
	LoadUnit   string        `json:"load_unit"`
	Target     float64       `json:"attainment_target"` // the knee's attainment target
	Confidence float64       `json:"confidence"`        // of every interval
	Points     []CardPoint   `json:"points"`            // in increasing offered load
	Knee       CardKnee      `json:"knee"`
	Peak       CardPeak      `json:"peak"`
	Collapse   CardCollapse  `json:"collapse"`
	Headroom   *CardHeadroom `json:"headroom,omitempty"` // nil without an operating point
	// Band is the curve's model range when the sweep declared its cost
	// model's uncertainty (analysis.Sweep.ModelError, analysis.Curve.Band); nil
	// when none was declared, and the intervals are then seed noise only.
	Band *CardBand `json:"model_band,omitempty"`
	// Capacity is the serving capacity each point's utilisation is taken
	// against (analysis.Sweep.Capacity); nil when the sweep was given none.
	Capacity *Capacity `json:"capacity,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	// Classes are the curve per request class (analysis.Curve.ClassKnees and
	// analysis.Point.Classes), in sim.Config.Classes' order; nil without
	// classes. The default class is left out when it received no request.
	Classes []ClassResult `json:"classes,omitempty"`
}

// CardPoint is one offered load of the curve: rates in requests/s, latency
// percentiles in ms.
type CardPoint struct {
	Load       float64      `json:"load"` // nominal offered load, in Results.LoadUnit
	Offered    CardInterval `json:"offered"`
	Throughput CardInterval `json:"throughput"`
	Goodput    CardInterval `json:"goodput"`
	Attainment CardInterval `json:"attainment"`
	TTFTP50    CardInterval `json:"ttft_p50_ms"`
	TTFTP99    CardInterval `json:"ttft_p99_ms"`
	ITLP50     CardInterval `json:"itl_p50_ms"`
	ITLP99     CardInterval `json:"itl_p99_ms"`
	// TTFTOfferedP50 and TTFTOfferedP99 are TTFT over every measured
	// request (analysis.Point.TTFTOffered), beside TTFTP50 and TTFTP99 over the
	// successful ones as vLLM reports them: a request that timed out or
	// was still in flight counts at the instant it ended, one that never
	// got a token otherwise (refused, failed) as beyond every bound (+Inf,
	// null in JSON like every number that is not finite).
	TTFTOfferedP50 CardInterval `json:"ttft_offered_p50_ms"`
	TTFTOfferedP99 CardInterval `json:"ttft_offered_p99_ms"`
	// WorstITLP99 is the p99 of each request's worst inter-token gap
	// (analysis.Point.WorstITL), beside ITLP99 over every gap: an SLO on
	// every ITL fails a request whose worst gap passes its bound.
	WorstITLP99 CardInterval `json:"worst_itl_p99_ms"`
	// Utilisation is the load over Results.Capacity (analysis.Point.Utilisation);
	// absent (0) without a capacity.
	Utilisation float64 `json:"utilisation,omitempty"`
	// Speculation is the speculative decoding's figures at this load; nil
	// when no run of the point drafted a token.
	Speculation *PointSpeculation `json:"speculation,omitempty"`
	// Misses are the exclusive miss rates, requests/s.
	MissNotOK CardInterval `json:"miss_not_ok"`
	MissTTFT  CardInterval `json:"miss_ttft"`
	MissITL   CardInterval `json:"miss_itl"`
	MissOther CardInterval `json:"miss_other"`
	// MissGateway is the rate the gateway ended requests (sim.Gateway);
	// nil, and not written, when no run of the point had a gateway end
	// one.
	MissGateway *CardInterval `json:"miss_gateway,omitempty"`
	Saturation  string        `json:"saturation"` // stable, backlogged, overloaded or refused
	// NoMeasured is true when no replication measured a request
	// (analysis.Point.NoMeasured): attainment and latencies are then null, and
	// the point takes no part in the knee.
	NoMeasured bool     `json:"no_measured,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	// Fleet is how the replicas of a fleet shared the load; nil for a
	// single replica.
	Fleet *FleetPoint `json:"fleet,omitempty"`
}

// CardKnee is the highest offered load meeting the attainment target, with
// its interval; Censored says why it was not found inside the sweep.
type CardKnee struct {
	Load     CardInterval `json:"load"`
	Found    bool         `json:"found"`
	Censored string       `json:"censored,omitempty"`
}

// CardPeak is the highest mean goodput and the load where it occurs.
type CardPeak struct {
	Load    float64      `json:"load"`
	Goodput CardInterval `json:"goodput"`
}

// CardCollapse is the first load past the peak whose goodput fell below 90 %
// of the peak; Found is false when the sweep did not reach it.
type CardCollapse struct {
	Load  float64 `json:"load"`
	Found bool    `json:"found"`
}

// CardHeadroom is the distance from the operating load to the knee.
type CardHeadroom struct {
	Operating float64      `json:"operating"` // in Results.LoadUnit
	Abs       CardInterval `json:"abs"`       // knee − operating, in Results.LoadUnit
	Rel       CardInterval `json:"rel"`       // knee / operating − 1
	// Model is Rel over the model band (analysis.Headroom.Model): the
	// headroom if the cost model is off by as much as was declared; nil
	// without a band.
	Model *CardRange `json:"model_range,omitempty"`
}

// ResultsOf converts a curve, with the headroom at the operating load op
// (requests/s; 0 for none).
func ResultsOf(c *analysis.Curve, op float64) Results {
	r := Results{
		Axis: c.Axis.String(), LoadUnit: c.Axis.Unit(),
		Target: c.Target, Confidence: c.Confidence,
		Knee:     CardKnee{Load: estimateOf(c.Knee.Load), Found: c.Knee.Found, Censored: c.Knee.Reason()},
		Peak:     CardPeak{Load: c.Peak.Load, Goodput: estimateOf(c.Peak.Goodput)},
		Collapse: CardCollapse{Load: c.Collapse.Load, Found: c.Collapse.Found},
		Band:     bandOf(c.Band),
		Warnings: c.Warnings,
	}
	for i := range c.Points {
		r.Points = append(r.Points, pointOf(&c.Points[i], c.Confidence))
	}
	if r.Band != nil {
		r.Band.Verdict = c.ModelVerdict()
	}
	r.Classes = classResultsOf(c)
	if op > 0 {
		h := c.Headroom(op)
		r.Headroom = &CardHeadroom{Operating: op, Abs: estimateOf(h.Abs), Rel: estimateOf(h.Rel)}
		if c.Band != nil {
			m := rangeOf(h.Model)
			r.Headroom.Model = &m
		}
	}
	return r
}

func pointOf(p *analysis.Point, conf float64) CardPoint {
	return CardPoint{
		Load: p.Load, Offered: estimateOf(p.Offered), Throughput: estimateOf(p.Throughput),
		Goodput: estimateOf(p.Goodput), Attainment: estimateOf(p.Attainment),
		TTFTP50: estimateOf(p.TTFT.P50), TTFTP99: estimateOf(p.TTFT.P99),
		ITLP50: estimateOf(p.ITL.P50), ITLP99: estimateOf(p.ITL.P99),
		TTFTOfferedP50: estimateOf(p.TTFTOffered.P50), TTFTOfferedP99: estimateOf(p.TTFTOffered.P99),
		WorstITLP99: estimateOf(p.WorstITL.P99),
		Utilisation: p.Utilisation, Speculation: pointSpeculationOf(p),
		MissNotOK: estimateOf(p.MissNotOK), MissTTFT: estimateOf(p.MissTTFT),
		MissITL: estimateOf(p.MissITL), MissOther: estimateOf(p.MissOther), MissGateway: gatewayMisses(p),
		Saturation: p.Saturation.String(), NoMeasured: p.NoMeasured(), Warnings: p.Warnings,
		Fleet: fleetPointOf(p.Runs, conf),
	}
}

// noneMeasured reports whether the curve has points and none of them
// measured a request: it has no peak, knee or attainment to report.
func (r *Results) noneMeasured() bool {
	for _, p := range r.Points {
		if !p.NoMeasured {
			return false
		}
	}
	return len(r.Points) > 0
}

// CardVerdict is an A/B experiment's answer as a card carries it: the
// hypothesis declared before the runs, the improvement of B over A with
// its interval, and the verdict at each load (the result's boundary).
type CardVerdict struct {
	Claim     string  `json:"claim"`
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"` // relative improvement B must show, 0.05 is 5 %
	Blocks    int     `json:"blocks"`
	// Regime says which loads Improvement and Verdict cover
	// (analysis.ExperimentResult.Regime: by default those at or below the baseline's
	// knee); "" where the card does not say.
	Regime      string        `json:"regime,omitempty"`
	Improvement CardInterval  `json:"improvement"`
	Verdict     string        `json:"verdict"` // improved, not improved, inconclusive or no measured requests
	Past        *PastVerdict  `json:"past_knee,omitempty"`
	Boundary    string        `json:"boundary"`
	Loads       []LoadVerdict `json:"loads"`
	// Warnings are the result's caveats (analysis.ExperimentResult.Warnings);
	// WarningKinds name each one's kind, in the same order
	// (analysis.WarningKind.String of ExperimentResult.TypedWarnings).
	Warnings     []string `json:"warnings,omitempty"`
	WarningKinds []string `json:"warning_kinds,omitempty"`
	// Knee is, for a hypothesis on the knee (analysis.MetricKnee), A's
	// and B's knees and their paired difference; nil for another metric.
	Knee *CardKneeDiff `json:"knee,omitempty"`
	// Band is the verdict under each model of the band declared before
	// the runs (analysis.Experiment.ModelError); nil when none was.
	Band *CardVerdictBand `json:"model_band,omitempty"`
}

// PastVerdict is the comparison over the loads past the baseline's knee,
// where A collapses and any relative gain is large (analysis.ExperimentResult's
// PastImprovement and PastVerdict).
type PastVerdict struct {
	Improvement CardInterval `json:"improvement"`
	Verdict     string       `json:"verdict"`
}

// LoadVerdict is the comparison at one offered load.
type LoadVerdict struct {
	Load        float64      `json:"load"`
	A           CardInterval `json:"a"`
	B           CardInterval `json:"b"`
	Improvement CardInterval `json:"improvement"`
	Verdict     string       `json:"verdict"` // as CardVerdict.Verdict, at this load
	// Latency is the latency readout of a knee experiment at this load
	// (analysis.LoadResult.Latency); none for the other metrics.
	Latency []LatencyDiff `json:"latency,omitempty"`
}

// LatencyDiff is one latency metric under A and B at one load, ms, and
// the paired difference B−A (analysis.MetricDiff).
type LatencyDiff struct {
	Metric string       `json:"metric"`
	A      CardInterval `json:"a"`
	B      CardInterval `json:"b"`
	Diff   CardInterval `json:"diff"`
}

// CardVerdictOf converts an experiment's result: its verdicts, the
// latency readout at each load, its warnings, and for a hypothesis on
// the knee the knees; with a model band declared, the verdict under each
// model of the band.
func CardVerdictOf(r *analysis.ExperimentResult) *CardVerdict {
	v := &CardVerdict{
		Claim: r.Hypothesis.Claim, Metric: r.Hypothesis.Metric.Name, Threshold: r.Hypothesis.Threshold,
		Blocks: r.Blocks, Regime: r.Regime, Improvement: estimateOf(r.Improvement), Verdict: r.Verdict.String(), Boundary: r.Boundary(),
	}
	if r.PastImprovement.N > 0 {
		v.Past = &PastVerdict{Improvement: estimateOf(r.PastImprovement), Verdict: r.PastVerdict.String()}
	}
	for _, l := range r.Loads {
		lv := LoadVerdict{Load: l.Load, A: estimateOf(l.A), B: estimateOf(l.B),
			Improvement: estimateOf(l.Improvement), Verdict: l.Verdict.String()}
		for _, d := range l.Latency {
			lv.Latency = append(lv.Latency, LatencyDiff{Metric: d.Metric, A: estimateOf(d.A), B: estimateOf(d.B), Diff: estimateOf(d.Diff)})
		}
		v.Loads = append(v.Loads, lv)
	}
	v.Warnings = r.Warnings
	for _, w := range r.TypedWarnings {
		v.WarningKinds = append(v.WarningKinds, w.Kind.String())
	}
	v.Knee = verdictKneeOf(r)
	v.Band = verdictBandOf(r)
	return v
}

// gatewayMisses is the point's gateway miss rate, nil when no run had a
// gateway end a request.
func gatewayMisses(p *analysis.Point) *CardInterval {
	for i := range p.Runs {
		if p.Runs[i].Misses.Gateway > 0 {
			m := estimateOf(p.MissGateway)
			return &m
		}
	}
	return nil
}
