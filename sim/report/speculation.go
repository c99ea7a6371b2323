package report

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// PointSpeculation is speculative decoding at one load of a curve, each
// figure a mean over the replications with its interval: the
// mechanism's evidence (tokens a step, acceptance) beside the user's
// experience (the ITL retokenized per token, beside CardPoint's ITL per
// streamed chunk).
type PointSpeculation struct {
	// MeanAccepted is the mean tokens a step of a full K drafts emitted:
	// its accepted drafts and the token sampled after them
	// (analysis.Point.MeanAccepted; (1 − α^(K+1))/(1 − α) under i.i.d.
	// acceptance α).
	MeanAccepted CardInterval `json:"mean_accepted"`
	// AcceptanceRate is accepted over drafted tokens
	// (analysis.Point.AcceptanceRate), vLLM's draft acceptance rate: under
	// i.i.d. acceptance α it is α(1 − α^K)/(K(1 − α)), below α.
	AcceptanceRate CardInterval `json:"acceptance_rate"`
	// ITLTokenP50 and ITLTokenP99 are the retokenized ITL percentiles, ms
	// (analysis.Point.ITLRetokenized: each chunk's gap over its tokens, once
	// per token, as SGLang's use_retokenized_itl).
	ITLTokenP50 CardInterval `json:"itl_token_p50_ms"`
	ITLTokenP99 CardInterval `json:"itl_token_p99_ms"`
}

// pointSpeculationOf is p's speculation, or nil when no run of p drafted
// a token (no speculative decoding, or nothing measured).
func pointSpeculationOf(p *analysis.Point) *PointSpeculation {
	drafted := false
	for i := range p.Runs {
		drafted = drafted || p.Runs[i].Speculation.Drafted > 0
	}
	if !drafted {
		return nil
	}
	return &PointSpeculation{
		MeanAccepted: estimateOf(p.MeanAccepted), AcceptanceRate: estimateOf(p.AcceptanceRate),
		ITLTokenP50: estimateOf(p.ITLRetokenized.P50), ITLTokenP99: estimateOf(p.ITLRetokenized.P99),
	}
}

// speculates reports whether some point of the curve drafted tokens.
func (r *Results) speculates() bool {
	for _, p := range r.Points {
		if p.Speculation != nil {
			return true
		}
	}
	return false
}

// mdSpeculation writes, for a curve that speculated, each load's mean
// tokens a step, acceptance rate and ITL p99 per chunk and per token.
func (r *Results) mdSpeculation(b *strings.Builder) {
	if !r.speculates() {
		return
	}
	b.WriteString("### Speculative decoding\n\n")
	b.WriteString("Tokens a step: the mean tokens a step of a full K drafts emitted (accepted drafts + the sampled token). " +
		"Acceptance rate: accepted over drafted tokens, as vLLM counts it; under i.i.d. acceptance α it is α(1 − α^K)/(K(1 − α)), below α, " +
		"since a step's first rejection discards the drafts after it. " +
		"ITL per chunk is each streamed chunk's gap, as vLLM's bench serve measures it and a streaming client sees it; " +
		"per token, each chunk's gap over its tokens (SGLang's retokenized ITL).\n\n")
	fmt.Fprintf(b, "| offered (%s) | tokens a step | acceptance rate | ITL p99 per chunk (ms) | ITL p99 per token (ms) |\n", r.unit())
	b.WriteString("|---:|---|---|---|---|\n")
	for _, p := range r.Points {
		s := p.Speculation
		if s == nil {
			row(b, num(p.Load), "—", "—", est(p.ITLP99), "—")
			continue
		}
		row(b, num(p.Load), est(s.MeanAccepted), est(s.AcceptanceRate), est(p.ITLP99), est(s.ITLTokenP99))
	}
	b.WriteString("\n")
}

// speculationText is a replica's speculative decoding for a card
// (sim.Speculation.String), "" without any.
func speculationText(s sim.Speculation) string {
	if !s.On() {
		return ""
	}
	return s.String()
}

// mdSpeculationLine writes a system's speculative decoding under its cost
// model, for the replicas labelled (all of them when ""); nothing
// without any.
func mdSpeculationLine(b *strings.Builder, spec, label string) {
	if spec == "" {
		return
	}
	if label != "" {
		label = ", " + label
	}
	fmt.Fprintf(b, "Speculation (`sim.Speculation`%s): %s.\n\n", label, spec)
}

// speculates reports whether some value's probe point drafted tokens.
func (d *CardDialSweep) speculates() bool {
	for _, r := range d.Rows {
		if r.Probe != nil && r.Probe.Speculation != nil {
			return true
		}
	}
	return false
}

// specCells are a dial row's speculation at the probe load: the mean
// tokens a step and the retokenized ITL p99 ("—" for a value that did not
// speculate).
func (r *DialRow) specCells() []string {
	if r.Probe == nil || r.Probe.Speculation == nil {
		return []string{"—", "—"}
	}
	s := r.Probe.Speculation
	return []string{est(s.MeanAccepted), est(s.ITLTokenP99)}
}
