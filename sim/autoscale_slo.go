package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// SLOHeadroom scales on the SLO itself, measured over the requests that
// ended in the last Lookback (ScaleView.Recent), against its bound: the
// TTFT p99 against a TTFT bound, or the attainment against a target.
// llm-d's variant autoscaler (WVA) aims at SLOs too, but not this way:
// its SLO path is a model-based optimiser (a queueing model of each
// variant, ITL = α + β·batch, TTFT and ITL targets per service class, the
// cheapest allocation that meets them), not feedback on measured
// attainment. SLOHeadroom is servesim's own feedback rule aiming where WVA
// aims; its up step is proportional, as AIBrix's KPA and APA are
// (ceil(current × observed/target)), and capped at ×2 a tick, AIBrix's
// default maximum scale-up rate.
//
// At each tick, with s the serving replicas and n the fleet's size
// (serving plus warming), from what ended in the lookback:
//   - Nothing ended: n, the count as it is (no signal, no move).
//   - The bound is broken: up, to ceil(s × ratio), at most 2s, and never
//     below n (replicas already warming count towards it). For BoundTTFT
//     ratio is TTFTp99/TTFT, when the p99 exceeds TTFT. For
//     BoundAttainment it is the miss rate over the miss rate the target
//     allows, (1 − attainment)/(1 − Attainment), when the attainment is
//     below Attainment (an Attainment of 1 allows none: any miss doubles
//     s).
//   - The headroom holds over the whole lookback: down by one, n − 1,
//     when the TTFT p99 is below Down × TTFT and the attainment is at
//     least Attainment (both, for either Bound), the serving replicas
//     have not changed for a whole Lookback (ScaleView.Changed; the run's
//     start counts as a change), so that the ends read are the fleet's
//     own, and no replica is warming (a join under way is not undone).
//     So it leaves at most one replica a Lookback.
//   - Otherwise n.
//
// It reacts only to misses already made, and late: a request counts when
// it ends, its TTFT included (about 200 decode steps after its first
// token for a 200-token answer), so a rise in load shows once the
// requests it slowed have finished, and the replicas it asks for serve a
// cold start later. The lookback still holds the misses of before a join
// when the new replicas serve, and the queue built meanwhile still ends
// late, so it may ask for more than the load needs (ExampleSLOHeadroom:
// 8 replicas for a load 3 serve). Its headroom is on TTFT, which stays
// low until the load nears a fleet's knee and then climbs steeply, so
// a fleet with headroom may leave a replica it needs, and take it back
// after the misses. A lookback in which no request had a first token
// (all rejected or timed out) holds the count under BoundTTFT, which
// reads TTFTs; BoundAttainment counts those as misses.
//
// The zero value holds the run's SLO TTFT (Config.SLO.TTFT, 600 ms by
// default) on the p99 of the last 60 s, with an attainment target of
// 0.99 and a headroom of 0.7.
type SLOHeadroom struct {
	// Bound is the signal that scales up: BoundTTFT (the zero value) or
	// BoundAttainment.
	Bound SLOBound
	// TTFT is the TTFT bound: the p99 the policy holds under with
	// BoundTTFT, and, with either Bound, the bound whose Down fraction
	// the p99 must stay below to scale down. 0 means the run's SLO TTFT
	// (ScaleView.SLO).
	TTFT time.Duration
	// Attainment is the attainment target, in (0, 1]: what the policy
	// holds with BoundAttainment, and, with either Bound, what the
	// attainment must reach to scale down. 0 means 0.99.
	Attainment float64
	// Lookback is how far back the policy reads the ends; 0 means 60 s.
	// The runner keeps that long of them (History).
	Lookback time.Duration
	// Down is the headroom to scale down: the p99 must be below Down ×
	// TTFT, in (0, 1). 0 means 0.7.
	Down float64
}

// SLOBound is the signal SLOHeadroom holds against its bound.
type SLOBound int

const (
	// BoundTTFT holds the TTFT p99 under SLOHeadroom.TTFT.
	BoundTTFT SLOBound = iota
	// BoundAttainment holds the attainment at or above
	// SLOHeadroom.Attainment.
	BoundAttainment
)

// String returns the bound's name.
func (b SLOBound) String() string {
	switch b {
	case BoundTTFT:
		return "TTFT p99"
	case BoundAttainment:
		return "attainment"
	}
	return fmt.Sprintf("SLOBound(%d)", int(b))
}

// SLOHeadroom's zero fields.
const (
	DefaultSLOLookback   = 60 * time.Second
	DefaultSLOAttainment = 0.99
	DefaultSLODown       = 0.7
)

// Validate checks each field's range, naming it.
func (p SLOHeadroom) Validate() error {
	var errs []error
	if p.Bound != BoundTTFT && p.Bound != BoundAttainment {
		errs = append(errs, fmt.Errorf("SLOHeadroom.Bound must be BoundTTFT or BoundAttainment, got %v", p.Bound))
	}
	if p.TTFT < 0 || p.TTFT > 24*time.Hour {
		errs = append(errs, fmt.Errorf("SLOHeadroom.TTFT must be in [0, 24h] (0 means the run's SLO TTFT), got %v", p.TTFT))
	}
	if !(p.Attainment >= 0 && p.Attainment <= 1) {
		errs = append(errs, fmt.Errorf("SLOHeadroom.Attainment must be in [0, 1] (0 means %v), got %v", DefaultSLOAttainment, p.Attainment))
	}
	if p.Lookback < 0 || p.Lookback > MaxHistory {
		errs = append(errs, fmt.Errorf("SLOHeadroom.Lookback must be in [0, MaxHistory (%v)] (0 means %v), got %v", MaxHistory, DefaultSLOLookback, p.Lookback))
	}
	if !(p.Down >= 0 && p.Down < 1) {
		errs = append(errs, fmt.Errorf("SLOHeadroom.Down must be in [0, 1) (0 means %v), got %v", DefaultSLODown, p.Down))
	}
	return errors.Join(errs...)
}

// History is how far back the policy reads: Lookback.
func (p SLOHeadroom) History() time.Duration {
	if p.Lookback == 0 {
		return DefaultSLOLookback
	}
	return p.Lookback
}

// Desired applies the rule of SLOHeadroom's doc to the lookback's ends.
func (p SLOHeadroom) Desired(v *ScaleView) int {
	s, n := v.Serving(), v.Serving()+v.Warming()
	lookback := p.History()
	rec := v.Recent(lookback)
	if rec.Ended == 0 {
		return n
	}
	bound := p.TTFT
	if bound == 0 {
		bound = v.SLO().TTFT
	}
	target := p.Attainment
	if target == 0 {
		target = DefaultSLOAttainment
	}
	down := p.Down
	if down == 0 {
		down = DefaultSLODown
	}
	switch {
	case p.Bound == BoundTTFT && rec.FirstTokens > 0 && rec.TTFTp99 > bound:
		up := 2 * s
		if rec.TTFTp99 < 2*bound { // ceil(s × p99/bound), exactly
			up = int((time.Duration(s)*rec.TTFTp99 + bound - 1) / bound)
		}
		return max(n, up)
	case p.Bound == BoundAttainment && rec.Attainment < target:
		up := 2 * s
		if target < 1 {
			// ceil(s × miss rate / allowed miss rate), to within 1e-9:
			// float64's 1 − 0.99 is 0.010000000000000009, which alone
			// must not add a replica.
			missed := float64(rec.Ended-rec.Good) / float64(rec.Ended)
			if x := float64(s) * missed / (1 - target); x < float64(up) {
				up = int(math.Ceil(x - 1e-9))
			}
		}
		return max(n, up)
	}
	if rec.TTFTp99 < time.Duration(math.Round(down*float64(bound))) && rec.Attainment >= target && v.Now()-v.Changed() >= lookback && v.Warming() == 0 {
		return n - 1
	}
	return n
}
