package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
)

// ClassResult is one request class's share of a curve: its SLO, its
// priority, its knee (the highest load at which its own attainment meets
// the curve's target) and, per load of the curve, its rates, attainment
// and TTFT percentiles, each with its interval.
type ClassResult struct {
	Name     string           `json:"name"`
	SLO      CardSLO          `json:"slo"`      // its own bounds, inherited ones filled in, ms
	Priority int              `json:"priority"` // sim.Class.Priority (0 for the default class)
	Knee     CardKnee         `json:"knee"`
	Points   []CardClassPoint `json:"points"` // in the curve's order
}

// CardClassPoint is a class at one load of the curve: rates in requests/s,
// TTFT percentiles in ms.
type CardClassPoint struct {
	Load       float64      `json:"load"` // the curve's load, in Results.LoadUnit
	Offered    CardInterval `json:"offered"`
	Goodput    CardInterval `json:"goodput"`
	Attainment CardInterval `json:"attainment"` // by the class's own SLO
	TTFTP50    CardInterval `json:"ttft_p50_ms"`
	TTFTP99    CardInterval `json:"ttft_p99_ms"`
}

// classResultsOf is each class of the curve, the default class left out
// when no load offered it a request.
func classResultsOf(c *analysis.Curve) []ClassResult {
	var out []ClassResult
	for j, k := range c.ClassKnees {
		cr := ClassResult{Name: k.Name, SLO: sloOf(k.SLO),
			Knee: CardKnee{Load: estimateOf(k.Knee.Load), Found: k.Knee.Found, Censored: k.Knee.Reason()}}
		offered := false
		for i := range c.Points {
			p := &c.Points[i]
			if j >= len(p.Classes) {
				continue
			}
			cp := p.Classes[j]
			offered = offered || cp.Offered.Center > 0
			cr.Points = append(cr.Points, CardClassPoint{Load: p.Load, Offered: estimateOf(cp.Offered), Goodput: estimateOf(cp.Goodput),
				Attainment: estimateOf(cp.Attainment), TTFTP50: estimateOf(cp.TTFT.P50), TTFTP99: estimateOf(cp.TTFT.P99)})
		}
		if k.Name == sim.DefaultClass && !offered {
			continue
		}
		out = append(out, cr)
	}
	return out
}

// classPriorities fills each class's priority from the configuration.
func (r *Results) classPriorities(cs []sim.Class) {
	for i := range r.Classes {
		for _, c := range cs {
			if c.Name == r.Classes[i].Name {
				r.Classes[i].Priority = c.Priority
			}
		}
	}
}

// mdClasses writes the per-class tables: each class's SLO and knee, then
// each class at each load.
func (r *Results) mdClasses(b *strings.Builder) {
	if len(r.Classes) == 0 {
		return
	}
	unit := r.unit()
	b.WriteString("### Per class\n\nEach request is judged by its class's SLO; a class's knee is the highest load at which its own attainment meets the target.\n\n")
	fmt.Fprintf(b, "| class | SLO | priority | knee (%s) | %g %% interval |\n|---|---|---:|---|---|\n", unit, 100*r.Confidence)
	for _, c := range r.Classes {
		k, kci := "not found in the sweep", "—"
		if c.Knee.Found {
			k, kci = num(c.Knee.Load.Center), interval(c.Knee.Load)
		} else if c.Knee.Censored != "" {
			k = "not found: " + c.Knee.Censored
		}
		row(b, c.Name, sloText(c.SLO), fmt.Sprint(c.Priority), k, kci)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "| load (%s) | class | offered (req/s) | goodput (req/s) | attainment | TTFT p50 (ms) | TTFT p99 (ms) |\n", unit)
	b.WriteString("|---:|---|---|---|---|---|---|\n")
	for i := range r.Points {
		for _, c := range r.Classes {
			if i >= len(c.Points) {
				continue
			}
			p := c.Points[i]
			att := est(p.Attainment)
			if p.Offered.Center == 0 {
				att = "no requests of the class"
			}
			row(b, num(p.Load), c.Name, est(p.Offered), est(p.Goodput), att, est(p.TTFTP50), est(p.TTFTP99))
		}
	}
	b.WriteString("\n")
}

// sloText lists an SLO's bounds ("TTFT ≤ 600 ms, every ITL ≤ 150 ms"),
// leaving out the unbounded ones.
func sloText(s CardSLO) string {
	var out []string
	for _, x := range []struct {
		name string
		v    Num
	}{{"TTFT", s.TTFT}, {"every ITL", s.ITL}, {"TPOT", s.TPOT}, {"E2E", s.E2E}} {
		if !math.IsNaN(float64(x.v)) {
			out = append(out, fmt.Sprintf("%s ≤ %s ms", x.name, num(x.v)))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// unit labels the curve's loads: "req/s" unless the curve is against
// clients.
func (r *Results) unit() string {
	if r.LoadUnit == "" {
		return "req/s"
	}
	return r.LoadUnit
}
