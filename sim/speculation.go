package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/internal/accept"
)

// Speculation configures speculative decoding on a replica: every decode
// step verifies up to Tokens draft tokens per sequence, and emits the
// drafts accepted plus the token sampled after them as one streamed chunk.
// The zero value is no speculation.
type Speculation struct {
	// Tokens is K, the draft tokens per decode step (vLLM's
	// num_speculative_tokens); 0 turns speculation off.
	Tokens int
	// Acceptance is α: each draft is accepted with probability α, the
	// first rejection ending the step's run (the i.i.d. model of Leviathan
	// et al., ICML 2023), so a step of K drafts emits (1 − α^(K+1))/(1 − α)
	// tokens on average. Used when AcceptedLengths is nil.
	Acceptance float64
	// AcceptedLengths, when set, is an empirical distribution of the
	// drafts accepted in a step of K drafts: the weights of 0, 1, …, K
	// accepted (K + 1 entries, >= 0, normalised). A step that drafts fewer
	// than K (near a request's end) keeps at most what it drafted.
	AcceptedLengths []float64
	// ClassAcceptance sets α for requests of a class (Config.Classes
	// names them); the others use Acceptance.
	ClassAcceptance map[string]float64
	// DraftStep and DraftOverhead price the drafter (costmodel.Drafting):
	// a draft model's step per draft position, or drafting heads (EAGLE,
	// MTP) as a fraction of the step; both zero is n-gram drafting, free.
	DraftStep     time.Duration
	DraftOverhead float64
}

// On reports whether the replica speculates.
func (s Speculation) On() bool { return s.Tokens > 0 }

func (s Speculation) validate(field string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+field+"."+format, a...)) }
	if s.Tokens < 0 {
		bad("Tokens must be >= 0 (0 means no speculation), got %d", s.Tokens)
	}
	if !(s.Acceptance >= 0 && s.Acceptance <= 1) {
		bad("Acceptance must be in [0, 1], got %v", s.Acceptance)
	}
	for name, a := range s.ClassAcceptance {
		if !(a >= 0 && a <= 1) {
			bad("ClassAcceptance[%q] must be in [0, 1], got %v", name, a)
		}
	}
	if s.AcceptedLengths != nil {
		sum := 0.0
		for i, w := range s.AcceptedLengths {
			if !(w >= 0) || math.IsInf(w, 0) {
				bad("AcceptedLengths[%d] must be a finite weight >= 0, got %v", i, w)
			}
			sum += w
		}
		if len(s.AcceptedLengths) != s.Tokens+1 {
			bad("AcceptedLengths has %d weights, want Tokens + 1 = %d (0 to %d accepted)", len(s.AcceptedLengths), s.Tokens+1, s.Tokens)
		} else if !(sum > 0) {
			bad("AcceptedLengths has no positive weight")
		}
		if s.ClassAcceptance != nil {
			bad("ClassAcceptance applies to Acceptance, not to AcceptedLengths")
		}
	}
	if !s.On() && (s.Acceptance != 0 || s.AcceptedLengths != nil || s.ClassAcceptance != nil || s.DraftStep != 0 || s.DraftOverhead != 0) {
		bad("Tokens is 0: set it to speculate, or leave the rest zero")
	}
	errs = append(errs, costmodel.Drafting{DraftStep: s.DraftStep, Overhead: s.DraftOverhead}.Validate())
	return errors.Join(errs...)
}

// String describes the speculation for a card.
func (s Speculation) String() string {
	if !s.On() {
		return "no speculative decoding"
	}
	acc := fmt.Sprintf("i.i.d. acceptance α = %g", s.Acceptance)
	if s.AcceptedLengths != nil {
		acc = fmt.Sprintf("accepted lengths drawn from %v", s.AcceptedLengths)
	}
	if len(s.ClassAcceptance) > 0 {
		acc += fmt.Sprintf(" (per class: %v)", s.ClassAcceptance)
	}
	drafter := "n-gram drafting (free)"
	switch {
	case s.DraftStep > 0 && s.DraftOverhead > 0:
		drafter = fmt.Sprintf("a draft model (%v per draft) and drafting heads (%g of the step)", s.DraftStep, s.DraftOverhead)
	case s.DraftStep > 0:
		drafter = fmt.Sprintf("a draft model (%v per draft)", s.DraftStep)
	case s.DraftOverhead > 0:
		drafter = fmt.Sprintf("drafting heads (%g of the step)", s.DraftOverhead)
	}
	return fmt.Sprintf("speculative decoding, K = %d drafts a step, %s, %s", s.Tokens, acc, drafter)
}

// acceptor draws a replica's acceptance for the engine: each request from
// its own stream (replicas.accs), seeded by the run's seed and the
// request's ID, so that a request's draws do not depend on what else ran
// (the same under any policy, router or fast path: common random
// numbers). The engine's Acceptor is the i.i.d. form of one α
// (accept.IID), of α by class (iidAcceptor) or the accepted lengths'
// (lengthAcceptor). Each draws one uniform a step.
type acceptor struct {
	r     *runner
	k     int           // K, the drafts of a full step
	below []uint64      // by class index (the default class last), K entries each: accept.Thresholds of its α
	start []*[256]uint8 // by class index: accept.Starts of its thresholds
	cum   []float64     // cumulative AcceptedLengths, normalised; nil for i.i.d.
}

// newAcceptor is the engine's Acceptor for speculation s: Accept of one
// form or the other, each a function of its own (the i.i.d. one, alone,
// needs no stack frame: 41,366 then 40,862 instructions a request in
// BenchmarkRegime/Speculation; with one α, reading no class, 40,628).
// The engine calls accept.IID's without an interface call.
func newAcceptor(r *runner, s Speculation) engine.Acceptor {
	k := s.Tokens
	if s.AcceptedLengths == nil && len(s.ClassAcceptance) == 0 {
		iid := accept.NewIID(&r.accs, s.Acceptance, k)
		if r.cfg.Stepwise { // the twin: the engine calls it through the interface
			return struct{ engine.Acceptor }{iid}
		}
		return iid
	}
	a := &acceptor{r: r, k: k}
	if s.AcceptedLengths == nil {
		for _, c := range r.classes.list {
			alpha := s.Acceptance
			if v, ok := s.ClassAcceptance[c.name]; ok {
				alpha = v
			}
			below := accept.Thresholds(alpha, k)
			a.below = append(a.below, below...)
			a.start = append(a.start, accept.Starts(below))
		}
		return (*iidAcceptor)(a)
	}
	sum := 0.0
	for _, w := range s.AcceptedLengths {
		sum += w
	}
	acc := 0.0
	for _, w := range s.AcceptedLengths {
		acc += w / sum
		a.cum = append(a.cum, acc)
	}
	return (*lengthAcceptor)(a)
}

// iidAcceptor draws a step's accepted drafts with its request's class's α.
type iidAcceptor acceptor

// Accept draws how many of drafted tokens the step accepted: each
// accepted with probability α, up to the first rejection
// (accept.Accepted).
func (a *iidAcceptor) Accept(ref int32, drafted int) int {
	c := a.r.slots[ref].class
	return accept.Accepted(a.r.accs[ref].Uint64()>>11, a.below[c*a.k:][:a.k], a.start[c], drafted)
}

// seedAcc seeds request ref's acceptance stream with its ID, growing the
// streams to it (as the slots grow: no allocation once they stop).
func (r *runner) seedAcc(ref int32, id uint64) {
	for int(ref) >= len(r.accs) {
		r.accs = append(r.accs, accept.PCG{})
	}
	r.accs[ref].Seed(r.accSeed, id)
}

// lengthAcceptor draws a step's accepted drafts from AcceptedLengths.
type lengthAcceptor acceptor

// Accept draws how many of drafted tokens the step accepted.
func (a *lengthAcceptor) Accept(ref int32, drafted int) int {
	u := uniform(&a.r.accs[ref])
	for j, c := range a.cum {
		if u < c {
			return min(j, drafted)
		}
	}
	return min(len(a.cum)-1, drafted)
}

// uniform draws from [0, 1) with 53 bits.
func uniform(p *accept.PCG) float64 { return float64(p.Uint64()>>11) / (1 << 53) }

// specStats accumulates the speculation of measured requests: the steps
// that drafted, the drafts, those accepted, and over the steps that
// drafted a replica's full K the tokens each emitted.
type specStats struct {
	steps, drafted, accepted int
	full                     int // steps of a full K drafts
	// Σ tokens emitted by them, Σ tokens², integers (summary converts
	// them: a float64 sum of these integers was exact, and cost a
	// conversion a step).
	fullTokens, fullSq int
}

func (s *specStats) add(drafted, accepted, k int) {
	s.count(drafted, accepted)
	if drafted == k {
		s.addFull(1+accepted, 1)
	}
}

// count counts a step that drafted, full or not.
func (s *specStats) count(drafted, accepted int) {
	s.steps++
	s.drafted += drafted
	s.accepted += accepted
}

// addFull counts n full steps that emitted t tokens each.
func (s *specStats) addFull(t, n int) {
	s.full += n
	s.fullTokens += t * n
	s.fullSq += t * t * n
}

// SpecSummary is a run's speculative decoding, over its measured requests:
// the mechanism's evidence, apart from the output the user sees.
type SpecSummary struct {
	// Steps are the decode steps that verified drafts; Drafted the draft
	// tokens they verified; Accepted those accepted (the rest rejected).
	Steps, Drafted, Accepted int
	// AcceptanceRate is Accepted / Drafted (NaN without drafts).
	AcceptanceRate float64
	// MeanAccepted is the mean tokens a step of a full K drafts emitted
	// (its accepted drafts and the sampled token), over FullSteps such
	// steps, with its standard error: (1 − α^(K+1)) / (1 − α) under
	// i.i.d. acceptance. Steps near a request's end draft fewer and are
	// left out. NaN without any.
	MeanAccepted, MeanAcceptedSE float64
	FullSteps                    int
}

func (s *specStats) summary() SpecSummary {
	out := SpecSummary{Steps: s.steps, Drafted: s.drafted, Accepted: s.accepted,
		AcceptanceRate: math.NaN(), MeanAccepted: math.NaN(), MeanAcceptedSE: math.NaN(), FullSteps: s.full}
	if s.drafted > 0 {
		out.AcceptanceRate = float64(s.accepted) / float64(s.drafted)
	}
	if n := float64(s.full); n > 0 {
		out.MeanAccepted = float64(s.fullTokens) / n
		if n > 1 {
			v := (float64(s.fullSq) - n*out.MeanAccepted*out.MeanAccepted) / (n - 1)
			out.MeanAcceptedSE = math.Sqrt(max(v, 0) / n)
		}
	}
	return out
}
