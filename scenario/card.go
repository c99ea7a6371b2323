package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/servesim/servesim/sim/analysis"
)

// ErrRevision is wrapped by LoadCard's error for a card analysed under
// another analysis revision than this build's (analysis.AnalysisRevision).
var ErrRevision = errors.New("the card was analysed by other code")

// ErrNotRerunnable is wrapped by LoadCard's error for a card without its
// scenario: one made from a configuration that is not data (a function),
// whose "rerun" says which field.
var ErrNotRerunnable = errors.New("the card cannot be rerun")

// CardOptions are how LoadCard reads a card.
type CardOptions struct {
	// AnyRevision accepts a card written under another analysis revision:
	// its scenario reruns, but under this build's analysis its figures
	// may differ from the card's.
	AnyRevision bool
}

// cardFields are the fields of a benchmark card (sim/report's Card, as
// its WriteJSON writes it) that a rerun needs.
type cardFields struct {
	AnalysisRevision *string         `json:"analysis_revision"`
	Scenario         json.RawMessage `json:"scenario"`
	Rerun            string          `json:"rerun"`
}

// LoadCard reads a benchmark card's JSON (sim/report's Card) and returns
// the scenario it embeds, decoded with the built-in kinds and validated:
// running it again yields the same card, byte for byte, when nothing in
// the simulator changed. A card analysed under another revision than
// this build's is an error wrapping ErrRevision, unless
// opts.AnyRevision; a card that embeds no scenario is an error wrapping
// ErrNotRerunnable that repeats why (its "rerun").
func LoadCard(path string, opts CardOptions) (Scenario, error) { return Default().LoadCard(path, opts) }

// LoadCard is the package's LoadCard with r's kinds.
func (r *Registry) LoadCard(path string, opts CardOptions) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	s, err := r.ParseCard(b, opts)
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseCard is LoadCard of a card's bytes.
func (r *Registry) ParseCard(data []byte, opts CardOptions) (Scenario, error) {
	data = trimBOM(data)
	var c cardFields
	if err := json.Unmarshal(data, &c); err != nil {
		return Scenario{}, fmt.Errorf("scenario: card: %w", syntaxWhere(data, err))
	}
	if c.AnalysisRevision == nil {
		return Scenario{}, errors.New("scenario: card: analysis_revision is missing: not a benchmark card")
	}
	if now := analysis.AnalysisRevision(); *c.AnalysisRevision != now && !opts.AnyRevision {
		return Scenario{}, fmt.Errorf("scenario: card: analysis_revision %q is not this build's %q: %w (accept it with CardOptions.AnyRevision, -any-revision)",
			*c.AnalysisRevision, now, ErrRevision)
	}
	if len(c.Scenario) == 0 || isNull(c.Scenario) {
		why := c.Rerun
		if why == "" {
			why = "it embeds no scenario"
		}
		return Scenario{}, fmt.Errorf("scenario: card: %w: %s", ErrNotRerunnable, why)
	}
	s, err := r.Parse(c.Scenario)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: card: scenario: %w", err)
	}
	return s, nil
}

// IsCard reports whether data looks like a benchmark card (it has an
// analysis revision) rather than a scenario.
func IsCard(data []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(trimBOM(data), &probe) != nil {
		return false
	}
	_, ok := probe["analysis_revision"]
	return ok
}

// CardScenario is what a card embeds of s: its JSON, or why s cannot be
// rerun (a field that is a function, a kind not registered in r, or a
// configuration its Validate refuses).
// Output plumbing that is not configuration (a sweep's Observe) is left
// out. A card's "scenario" and "rerun" come from it.
func (r *Registry) CardScenario(s Scenario) (json.RawMessage, string) {
	s = withoutObservers(s)
	b, err := r.Marshal(s)
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		why := strings.ReplaceAll(err.Error(), "\n", "; ")
		why = strings.NewReplacer("scenario: ", "", "sim: ", "").Replace(why)
		return nil, "cannot be rerun: " + strings.ReplaceAll(why, "scenario.Scenario.", "")
	}
	return json.RawMessage(b), ""
}

// withoutObservers drops the sweeps' Observe functions, which say where
// events go, not what ran.
func withoutObservers(s Scenario) Scenario {
	if s.Sweep != nil {
		sw := *s.Sweep
		sw.Observe = nil
		s.Sweep = &sw
	}
	if s.DialSweep != nil {
		d := *s.DialSweep
		d.Sweep.Observe = nil
		s.DialSweep = &d
	}
	if s.Study != nil {
		st := Study{Groups: make([]Group, len(s.Study.Groups))}
		for i, g := range s.Study.Groups {
			g.Sweeps = append([]NamedSweep(nil), g.Sweeps...)
			for j := range g.Sweeps {
				g.Sweeps[j].Sweep.Observe = nil
			}
			st.Groups[i] = g
		}
		s.Study = &st
	}
	return s
}
