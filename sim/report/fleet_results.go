package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/stats"
)

// FleetPoint is how a fleet shared one offered load's work, from each
// replication's sim.Summary: the fleet's prefix hit rate and load
// imbalance as means over the replications with their intervals, and each
// replica's share as means. A run that measured nothing in a figure (no
// prompt tokens, an empty window) is left out of that figure's mean.
type FleetPoint struct {
	// PrefixHitRate is the fraction of measured requests' prompt tokens
	// served from a prefix cache (Summary.Cached / Summary.InputTokens).
	PrefixHitRate CardInterval `json:"prefix_hit_rate"`
	// ImbalanceRequests and ImbalanceBusy are the largest replica's share
	// over the mean share, of measured requests and of busy time
	// (sim.Imbalance: 1 is even).
	ImbalanceRequests CardInterval   `json:"imbalance_requests"`
	ImbalanceBusy     CardInterval   `json:"imbalance_busy"`
	Replicas          []ReplicaPoint `json:"replicas"`
}

// ReplicaPoint is one replica's share of a load, means over the
// replications (sim.ReplicaSummary).
type ReplicaPoint struct {
	Replica       int `json:"replica"`
	Offered       Num `json:"offered"`         // measured requests routed to it, per run
	Goodput       Num `json:"goodput"`         // its good requests per second of window
	Attainment    Num `json:"attainment"`      // its good / its offered
	PrefixHitRate Num `json:"prefix_hit_rate"` // its prompt tokens served from its cache
	Busy          Num `json:"busy"`            // fraction of the window with a step in flight
	KVOccupancy   Num `json:"kv_occupancy"`    // time-average fraction of its KV blocks held
}

// fleetPointOf describes how the runs' fleet shared the load, or returns
// nil when they drove a single replica.
func fleetPointOf(runs []sim.Summary, conf float64) *FleetPoint {
	n := 0
	for i := range runs {
		n = max(n, len(runs[i].Replicas))
	}
	if n < 2 {
		return nil
	}
	over := func(f func(s *sim.Summary) float64) []float64 {
		var x []float64
		for i := range runs {
			if v := f(&runs[i]); !math.IsNaN(v) {
				x = append(x, v)
			}
		}
		return x
	}
	fp := &FleetPoint{
		PrefixHitRate:     meanOf(over(func(s *sim.Summary) float64 { return ratio(s.Cached, s.InputTokens) }), conf),
		ImbalanceRequests: meanOf(over(func(s *sim.Summary) float64 { return s.Imbalance.Requests }), conf),
		ImbalanceBusy:     meanOf(over(func(s *sim.Summary) float64 { return s.Imbalance.Busy }), conf),
	}
	for k := range n {
		of := func(f func(r *sim.ReplicaSummary) float64) Num {
			return meanOf(over(func(s *sim.Summary) float64 {
				if k >= len(s.Replicas) {
					return math.NaN()
				}
				return f(&s.Replicas[k])
			}), conf).Center
		}
		fp.Replicas = append(fp.Replicas, ReplicaPoint{
			Replica:       k,
			Offered:       of(func(r *sim.ReplicaSummary) float64 { return float64(r.Offered) }),
			Goodput:       of(func(r *sim.ReplicaSummary) float64 { return r.Goodput }),
			Attainment:    of(func(r *sim.ReplicaSummary) float64 { return r.Attainment }),
			PrefixHitRate: of(func(r *sim.ReplicaSummary) float64 { return r.PrefixHitRate() }),
			Busy:          of(func(r *sim.ReplicaSummary) float64 { return r.Busy }),
			KVOccupancy:   of(func(r *sim.ReplicaSummary) float64 { return r.KVOccupancy }),
		})
	}
	return fp
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// meanOf is the mean of x with a Student-t interval at confidence conf
// across replications, as sim's estimates are computed (no interval
// below two values, NaN for none).
func meanOf(x []float64, conf float64) CardInterval {
	return estimateOf(stats.MeanInterval(x, conf))
}

// mdFleet writes how a fleet shared each load, when the curve's runs
// drove one.
func (r *Results) mdFleet(b *strings.Builder) {
	if !r.hasFleet() {
		return
	}
	b.WriteString("### Fleet\n\nHow the replicas shared each load: the fleet's prefix hit rate (prompt tokens of measured requests served from a prefix cache) and imbalance (the largest replica's share over the mean share, 1 is even), each the mean over the replications with its interval; then each replica's prefix hit rate and busy fraction, means in replica order.\n\n")
	fmt.Fprintf(b, "| offered (%s) | prefix hit rate | imbalance: requests | imbalance: busy time | hit rate per replica | busy per replica |\n", r.unit())
	b.WriteString("|---:|---|---|---|---|---|\n")
	for _, p := range r.Points {
		f := p.Fleet
		if f == nil {
			continue
		}
		hits, busy := make([]string, len(f.Replicas)), make([]string, len(f.Replicas))
		for i, rp := range f.Replicas {
			hits[i], busy[i] = fraction(rp.PrefixHitRate), fraction(rp.Busy)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", num(p.Load), est(f.PrefixHitRate), est(f.ImbalanceRequests),
			est(f.ImbalanceBusy), strings.Join(hits, " · "), strings.Join(busy, " · "))
	}
	b.WriteString("\n")
}

func (r *Results) hasFleet() bool {
	for _, p := range r.Points {
		if p.Fleet != nil {
			return true
		}
	}
	return false
}

// fraction prints a fraction with two decimals, or "—" without one.
func fraction(x Num) string {
	if math.IsNaN(float64(x)) {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(x))
}
