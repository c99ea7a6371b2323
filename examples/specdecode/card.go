package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/sim/report"
)

// fingerprintRequests is how many requests of the unit-rate stream the
// card's fingerprint covers (common random numbers: every load's stream
// is this one with its instants divided by the load).
const fingerprintRequests = 10_000

// writeCard writes the hypothesis's benchmark card, Markdown and JSON,
// into o.out and lists the files on w. The card's system is B, the
// claim's K and α with the declared drafter (its speculation on the
// card), A without speculation is its baseline; its result is B's
// goodput curve (with tokens a step, acceptance and ITL per chunk and
// per token at every load), the knee against K at the claim's α when the
// grid swept it, and the verdict with its regime and boundary.
func writeCard(w io.Writer, studies []study, x analysis.Experiment, res *analysis.ExperimentResult, o options) error {
	card, err := specCard(studies, x, res, o)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"specdecode-card.md", card.WriteMarkdown}, {"specdecode-card.json", card.WriteJSON}} {
		path := filepath.Join(o.out, f.name)
		if err := writeFile(path, f.write); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
	}
	return nil
}

// specCard fills the card: B's curve from the grid when it swept the
// claim's K at its α (else B's sweep runs once more), the dial sweep over
// K at that α, and the experiment's verdict.
func specCard(studies []study, x analysis.Experiment, res *analysis.ExperimentResult, o options) (report.Card, error) {
	sw := sweepAt(o, o.claimK, o.claimAlpha, o.drafter)
	curve, dial := claimCurve(studies, o)
	if curve == nil {
		var err error
		if curve, err = sw.Run(); err != nil {
			return report.Card{}, fmt.Errorf("the claim's sweep: %w", err)
		}
	}
	card := report.NewCard(sw, curve, 0)
	a := report.SystemOf(x.A)
	card.Baseline = &a
	card.Verdict = report.CardVerdictOf(res)
	if dial != nil {
		card.Dial = report.CardDialSweepOf(dial.sweep, dial.result)
	}
	card.Title = fmt.Sprintf("Speculative decoding on Atlas TP4: K = %d at α = %g, %s", o.claimK, o.claimAlpha, o.drafter.short())
	card.Claim = x.Hypothesis.Claim
	fp, err := report.CardFingerprint(sw.Workload, analysis.Seed(o.seed, 0), fingerprintRequests)
	if err != nil {
		return card, err
	}
	card.Workload = report.CardWorkload{
		Description: fmt.Sprintf("synthetic, analysis.Poisson(%v)", lengths),
		Arrival:     "Poisson, offered load swept; common random numbers across loads and configurations",
		Lengths:     "fixed: 2000 prompt tokens, 200 output tokens",
		Correlation: "none (fixed lengths)",
		Prefix:      "none",
		Loop:        "open-loop: arrivals are external",
		Concurrency: card.Workload.Concurrency, // from the configuration
		CacheState:  card.Workload.CacheState,
		Fingerprint: fp,
	}
	card.Command = strings.TrimSpace("go run ./examples/specdecode " + strings.Join(o.args, " "))
	card.Notes = []string{
		fmt.Sprintf("The drafter was declared before the runs: %s; verification is priced by costmodel.Frozen (Frozen.VerifyPerToken).", o.drafter),
		"Tokens a step is the mean over steps that drafted a full K; the theory under i.i.d. acceptance is (1 − α^(K+1))/(1 − α) (Leviathan et al., ICML 2023).",
	}
	return card, nil
}

// dialOf is the dial sweep of one α: what ran and what it gave.
type dialOf struct {
	sweep  analysis.DialSweep
	result *analysis.DialResult
}

// claimCurve is B's curve from the grid, and the dial sweep over K at the
// claim's α it came from; nil, nil when the grid did not sweep them.
func claimCurve(studies []study, o options) (*analysis.Curve, *dialOf) {
	for _, s := range studies {
		if s.alpha != o.claimAlpha {
			continue
		}
		d := &dialOf{sweep: dialSweep(o, s.alpha), result: s.result}
		if i := slices.Index(s.result.Values, float64(o.claimK)); i >= 0 {
			return s.result.Curves[i], d
		}
		return nil, d
	}
	return nil, nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
