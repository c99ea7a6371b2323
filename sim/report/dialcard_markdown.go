package report

import (
	"fmt"
	"math"
	"strings"
)

// markdown writes the dial sweep as the card's result: what was turned,
// then one row per value.
func (d *CardDialSweep) markdown(b *strings.Builder) {
	fmt.Fprintf(b, "## Result: dial sweep over %s (%s)\n\n", code(d.Dial), orNotStated(d.Unit))
	values := make([]string, len(d.Values))
	for i, v := range d.Values {
		values[i] = num(v)
	}
	fmt.Fprintf(b, "Values %s; baseline %s. Every value ran on the same seeds (common random numbers). ",
		strings.Join(values, ", "), num(d.Baseline))
	fmt.Fprintf(b, "Knee: the highest offered load whose attainment meets %g; Δ knee: the knee minus the baseline's, "+
		"paired replication by replication, with its %g %% interval.", d.Target, 100*d.Confidence)
	probe := !math.IsNaN(float64(d.Probe))
	if probe {
		fmt.Fprintf(b, " Probe: TTFT p99, ITL p99 and attainment at %s req/s offered.", num(d.Probe))
	}
	b.WriteString("\n\n")
	head := fmt.Sprintf("| %s (%s) | knee (req/s) | Δ knee vs baseline (req/s) | peak goodput (req/s) |", d.Dial, d.Unit)
	sep := "|---:|---|---|---|"
	if probe {
		head += " TTFT p99 (ms) | ITL p99 (ms) | attainment |"
		sep += "---|---|---|"
	}
	spec := probe && d.speculates()
	if spec {
		head += " tokens a step | ITL p99 per token (ms) |"
		sep += "---|---|"
	}
	b.WriteString(head + "\n" + sep + "\n")
	var warn []string
	for i, r := range d.Rows {
		value := num(r.Value)
		if i == d.BaselineIndex {
			value += " (baseline)"
		}
		cells := []string{value, r.kneeCell(), r.diffCell(), est(r.Peak.Goodput)}
		if probe {
			cells = append(cells, r.probeCells()...)
		}
		if spec {
			cells = append(cells, r.specCells()...)
		}
		row(b, cells...)
		for _, w := range r.Warnings {
			warn = append(warn, fmt.Sprintf("%s = %s: %s", d.Dial, num(r.Value), w))
		}
	}
	b.WriteString("\n")
	list(b, warn)
}

func (r *DialRow) kneeCell() string {
	if !r.Knee.Found {
		return "not found: " + orNotStated(r.Knee.Censored)
	}
	return est(r.Knee.Load)
}

func (r *DialRow) diffCell() string {
	if r.KneeDiff.N == 0 || math.IsNaN(float64(r.KneeDiff.Center)) {
		return "— (no replication found both knees)"
	}
	rel := ""
	switch {
	case r.KneeBounds > 0 && r.KneeDiff.Center < 0:
		rel = "≤ "
	case r.KneeBounds > 0 && r.KneeDiff.Center > 0:
		rel = "≥ "
	}
	return rel + signed(r.KneeDiff.Center) + " " + interval(r.KneeDiff)
}

func (r *DialRow) probeCells() []string {
	p := r.Probe
	if p == nil {
		return []string{"—", "—", "—"}
	}
	if p.NoMeasured {
		return []string{"—", "—", noMeasured}
	}
	return []string{est(p.TTFTP99), est(p.ITLP99), est(p.Attainment)}
}

// systemHeading is the heading of a card's system: at the baseline value
// on a dial sweep's card.
func (d *CardDialSweep) systemHeading() string {
	if d == nil {
		return "System"
	}
	return fmt.Sprintf("System at the baseline (%s = %s)", d.Dial, num(d.Baseline))
}
