package report

import (
	"fmt"
	"strings"

	"github.com/servesim/servesim/costmodel"
)

// Capacity is the serving capacity a sweep was given (analysis.Sweep.Capacity):
// an estimate made before the runs, not a measurement. Each point's
// utilisation is its load over it.
type Capacity struct {
	Rate float64 `json:"req_per_s"`
	// Source says where the estimate came from, e.g. "costmodel: 1 /
	// (200 × 45 ms / 32 + 90 ms prefill)"; NewCard cannot know it, and ""
	// renders as "not stated".
	Source string `json:"source"`
}

// PreRun is an estimate made before the runs, from declared figures (the
// chapter's arithmetic, costmodel.Estimate): each figure with its value,
// unit, arithmetic and the knob that moves it, so that a reader can hold
// the simulated results against it. Card.Estimate carries one.
type PreRun struct {
	// Source says what computed it and from what, e.g. "costmodel.Estimate
	// of the replica the sweep ran".
	Source   string       `json:"source"`
	Figures  []CardFigure `json:"figures"`
	Warnings []string     `json:"warnings,omitempty"`
}

// CardFigure is one bound of a pre-run estimate (costmodel.Figure), with the
// group it belongs to ("Concurrency (bounded by KV bytes)", say; "" for
// none).
type CardFigure struct {
	Group string `json:"group,omitempty"`
	Name  string `json:"name"`
	Value Num    `json:"value"` // in Unit; null if not finite
	Unit  string `json:"unit"`
	Basis string `json:"basis"` // the arithmetic, with its inputs
	Knob  string `json:"knob"`  // what moves the bound
}

// CardFiguresOf converts costmodel figures, each in group; a figure without a
// name (an optional figure left zero) is left out.
func CardFiguresOf(group string, fs ...costmodel.Figure) []CardFigure {
	var out []CardFigure
	for _, f := range fs {
		if f.Name == "" {
			continue
		}
		out = append(out, CardFigure{Group: group, Name: f.Name, Value: Num(f.Value), Unit: f.Unit, Basis: f.Basis, Knob: f.Knob})
	}
	return out
}

// markdown writes the estimate as a table, a bold row heading each group.
func (p *PreRun) markdown(b *strings.Builder) {
	b.WriteString("## Estimate before the runs\n\n")
	fmt.Fprintf(b, "%s. Each figure names the knob that moves it; the simulated results above are held against it.\n\n", orNotStated(p.Source))
	b.WriteString("| figure | value | arithmetic | knob |\n|---|---|---|---|\n")
	group := ""
	for _, f := range p.Figures {
		if f.Group != group && f.Group != "" {
			row(b, "**"+f.Group+"**", "", "", "")
		}
		group = f.Group
		row(b, f.Name, strings.TrimSpace(num(f.Value)+" "+f.Unit), f.Basis, f.Knob)
	}
	b.WriteString("\n")
	list(b, p.Warnings)
}
