package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Behavior is Kubernetes autoscaling/v2's HorizontalPodAutoscalerBehavior:
// what an autoscaler does with each raw recommendation (the replica count
// a policy asks for) before it sets the count, as the HPA controller does
// it (pkg/controller/podautoscaler/horizontal.go,
// normalizeDesiredReplicasWithBehaviors). Two steps, then the bounds:
//
//  1. Stabilisation. Every raw recommendation is kept with its instant.
//     The count may rise no higher than the lowest recommendation of the
//     last ScaleUp.Window, and fall no lower than the highest one of the
//     last ScaleDown.Window: the current count clamped into [that lowest,
//     that highest]. A recommendation exactly Window old no longer counts.
//     So with a 300 s down window a drop follows the highest
//     recommendation of the last 300 s.
//  2. Rate limits. For each policy of the direction, the count at the
//     start of its Period (the current count less what was added in the
//     Period, plus what was removed) gives a limit: a Pods policy moves
//     it by Value replicas, a Percent policy by Value % (rounded up when
//     rising, truncated when falling, in float64 as HPA does, so 100
//     replicas at 10 % may rise to ceil(110.00000000000001) = 111). Select
//     picks the policy allowing the largest change (SelectMax), the
//     smallest (SelectMin) or none (SelectDisabled); a limit that would
//     move the count the other way holds it instead. A change exactly
//     Period ago no longer counts against it.
//  3. The result is kept within the autoscaler's [min, max]. A current
//     count already outside is set to the nearer bound at once, without a
//     recommendation or limit; a current count of 0 under a min above 0
//     stays 0 (HPA's "scaling is disabled since the replica count of the
//     target is zero"; KEDA's activation does 0 to 1 in front of it).
//
// The zero Behavior takes every recommendation as it is: no window, no
// rate limit, only the [min, max] bounds. That is not HPA's default,
// which HPABehavior gives; an identity check (an autoscaler with the zero
// Behavior sets exactly what its policy asks) needs the zero value to be
// the identity. Nil Policies mean no rate limit in that direction, where
// HPA's API would refuse an empty list (and its defaulting fills one in).
//
// Beyond HPA's own API limits (a window of at most 3600 s, periods of 1 to
// 1800 whole seconds), Window and Period may be any duration up to 24 h.
// An HPA without a behavior field runs an older path instead (a 300 s
// down window and at most max(2·current, 4) replicas a sync): HPABehavior
// is the autoscaling/v2 defaults for an HPA that sets behavior, which is
// what this models.
type Behavior struct {
	// ScaleUp governs rises; its zero value does not hold them back.
	ScaleUp Rules
	// ScaleDown governs falls; its zero value does not hold them back.
	ScaleDown Rules
}

// Rules is autoscaling/v2's HPAScalingRules, one direction of a Behavior.
type Rules struct {
	// Window is stabilizationWindowSeconds: how far back the
	// recommendations that hold a change in this direction reach. 0 means
	// none: the newest recommendation alone.
	Window time.Duration
	// Policies limit the rate of change in this direction; nil means no
	// limit.
	Policies []RatePolicy
	// Select picks among Policies; its zero value is SelectMax, HPA's
	// default. SelectDisabled forbids any change in this direction.
	Select SelectPolicy
}

// RatePolicy is autoscaling/v2's HPAScalingPolicy: at most Value replicas
// (PodsRate) or Value percent of the count at the start of the Period
// (PercentRate) may be added, or removed, within any Period.
type RatePolicy struct {
	// Kind is PodsRate (the zero value) or PercentRate.
	Kind RateKind
	// Value is the replicas, or percent, allowed per Period; it must be
	// positive.
	Value int
	// Period is HPA's periodSeconds; it must be positive.
	Period time.Duration
}

// RateKind is the unit of a RatePolicy's Value.
type RateKind int

const (
	// PodsRate counts replicas: HPA's Pods policy.
	PodsRate RateKind = iota
	// PercentRate counts percent of the count at the start of the
	// period: HPA's Percent policy.
	PercentRate
)

// String returns HPA's name of the kind.
func (k RateKind) String() string {
	switch k {
	case PodsRate:
		return "Pods"
	case PercentRate:
		return "Percent"
	}
	return fmt.Sprintf("RateKind(%d)", int(k))
}

// SelectPolicy is autoscaling/v2's selectPolicy: which of a direction's
// policies applies.
type SelectPolicy int

const (
	// SelectMax applies the policy that allows the largest change (HPA's
	// Max, its default).
	SelectMax SelectPolicy = iota
	// SelectMin applies the policy that allows the smallest change.
	SelectMin
	// SelectDisabled allows no change in the direction.
	SelectDisabled
)

// String returns HPA's name of the policy.
func (s SelectPolicy) String() string {
	switch s {
	case SelectMax:
		return "Max"
	case SelectMin:
		return "Min"
	case SelectDisabled:
		return "Disabled"
	}
	return fmt.Sprintf("SelectPolicy(%d)", int(s))
}

const (
	// maxBehaviorDuration bounds Window and Period: a day of history is
	// more than any autoscaler keeps (HPA's API allows 1 h and 30 min).
	maxBehaviorDuration = 24 * time.Hour
	// maxRateValue bounds RatePolicy.Value, so that a limit on any count
	// HPA can hold (an int32) stays far within int and within float64's
	// integers.
	maxRateValue = 1_000_000
)

// HPABehavior returns the autoscaling/v2 defaults as the code sets them
// (pkg/apis/autoscaling/v2/defaults.go): scale up with no window, by the
// larger of 4 replicas and 100 % per 15 s; scale down after a 300 s window
// (the controller's --horizontal-pod-autoscaler-downscale-stabilization,
// which a nil stabilizationWindowSeconds takes), by up to 100 % per 15 s.
// (The API's doc text says 4 pods per 60 s; the code says 15 s.)
func HPABehavior() Behavior {
	return Behavior{
		ScaleUp: Rules{
			Policies: []RatePolicy{
				{Kind: PodsRate, Value: 4, Period: 15 * time.Second},
				{Kind: PercentRate, Value: 100, Period: 15 * time.Second},
			},
			Select: SelectMax,
		},
		ScaleDown: Rules{
			Window:   300 * time.Second,
			Policies: []RatePolicy{{Kind: PercentRate, Value: 100, Period: 15 * time.Second}},
			Select:   SelectMax,
		},
	}
}

// Validate refuses a negative or over-long window, an unknown Select or
// Kind, and a Value or Period that is not positive or too large, naming
// the field.
func (b Behavior) Validate() error { return b.validate("Behavior") }

func (b Behavior) validate(field string) error {
	return errors.Join(b.ScaleUp.validate(field+".ScaleUp"), b.ScaleDown.validate(field+".ScaleDown"))
}

func (r Rules) validate(field string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("sim: "+field+"."+format, a...)) }
	if r.Window < 0 || r.Window > maxBehaviorDuration {
		bad("Window must be in [0, %v] (0 means no stabilisation), got %v", maxBehaviorDuration, r.Window)
	}
	if r.Select < SelectMax || r.Select > SelectDisabled {
		bad("Select must be SelectMax, SelectMin or SelectDisabled, got %v", r.Select)
	}
	for i, p := range r.Policies {
		if p.Kind != PodsRate && p.Kind != PercentRate {
			bad("Policies[%d].Kind must be PodsRate or PercentRate, got %v", i, p.Kind)
		}
		if p.Value <= 0 || p.Value > maxRateValue {
			bad("Policies[%d].Value must be in [1, %d], got %d", i, maxRateValue, p.Value)
		}
		if p.Period <= 0 || p.Period > maxBehaviorDuration {
			bad("Policies[%d].Period must be in (0, %v], got %v", i, maxBehaviorDuration, p.Period)
		}
	}
	return errors.Join(errs...)
}

// longestPeriod is HPA's getLongestPolicyPeriod: how long a scale event in
// this direction is kept before its slot may be reused.
func (r Rules) longestPeriod() time.Duration {
	var longest time.Duration
	for _, p := range r.Policies {
		longest = max(longest, p.Period)
	}
	return longest
}

// recommendation is HPA's timestampedRecommendation: a raw count and when
// it was asked for.
type recommendation struct {
	at       time.Duration
	replicas int
}

// scaleEvent is HPA's timestampedScaleEvent: a change of the count, in
// replicas (never negative; its direction is the slice that holds it).
type scaleEvent struct {
	at       time.Duration
	change   int
	outdated bool
}

// scaler applies a Behavior to the raw recommendations of one autoscaler,
// in simulated time: it is the HPA controller's state for one HPA (its
// recommendations, scaleUpEvents and scaleDownEvents) with its
// normalisation. Build it with newScaler, from a validated Behavior.
//
// Memory stays bounded as in HPA, which never shrinks these slices but
// reuses their stale slots: a new recommendation overwrites the last one
// older than both windows (stabilizeRecommendationWithBehaviors) and is
// appended only when none is; a new scale event overwrites the last one
// of its direction older than that direction's longest policy period
// (storeScaleEvent, markScaleEventsOutdated). So each slice holds at most
// the calls of one longest window (or period) plus two, and once that
// many are held, normalize allocates nothing. The slots are reused, not
// dropped, because a stale scale-down event still counts against a longer
// scale-up period (and the other way) until its slot is reused, as in HPA.
type scaler struct {
	b Behavior
	// upPeriod and downPeriod are the longest policy periods of each
	// direction.
	upPeriod, downPeriod time.Duration
	// started is set by the first call, which records the current count
	// as a recommendation (HPA's recordInitialRecommendation): a fresh
	// autoscaler does not scale down before the down window has passed.
	started bool
	recs    []recommendation
	// up and down are the scale events of each direction.
	up, down []scaleEvent
}

func newScaler(b Behavior) *scaler {
	return &scaler{b: b, upPeriod: b.ScaleUp.longestPeriod(), downPeriod: b.ScaleDown.longestPeriod()}
}

// normalize returns the count to set at now, given the current count and
// the raw desired count, clamped to [minReplicas, maxReplicas] as HPA does
// (reconcileAutoscaler's bounds, then normalizeDesiredReplicasWithBehaviors),
// and records what HPA records: the first current count, the raw
// recommendation, and the scale event when the count changes. Successive
// calls must not go back in time; 0 <= minReplicas <= maxReplicas.
func (s *scaler) normalize(now time.Duration, current, desired, minReplicas, maxReplicas int) int {
	if !s.started {
		s.started = true
		s.recs = append(s.recs, recommendation{at: now, replicas: current})
	}
	var next int
	switch {
	case current == 0 && minReplicas != 0:
		return 0
	case current > maxReplicas:
		next = maxReplicas
	case current < minReplicas:
		next = minReplicas
	default:
		next = s.limit(now, current, s.stabilize(now, current, desired), minReplicas, maxReplicas)
	}
	if next != current {
		s.store(now, current, next)
	}
	return next
}

// stabilize is HPA's stabilizeRecommendationWithBehaviors: current clamped
// into [the lowest recommendation of the up window, the highest of the
// down window], both counting desired; then desired is recorded.
func (s *scaler) stabilize(now time.Duration, current, desired int) int {
	upCut, downCut := now-s.b.ScaleUp.Window, now-s.b.ScaleDown.Window
	lo, hi := desired, desired
	stale := -1
	for i, r := range s.recs {
		if r.at > upCut {
			lo = min(lo, r.replicas)
		}
		if r.at > downCut {
			hi = max(hi, r.replicas)
		}
		if r.at < upCut && r.at < downCut {
			stale = i
		}
	}
	stable := min(max(current, lo), hi)
	if stale >= 0 {
		s.recs[stale] = recommendation{at: now, replicas: desired}
	} else {
		s.recs = append(s.recs, recommendation{at: now, replicas: desired})
	}
	return stable
}

// limit is HPA's convertDesiredReplicasWithBehaviorRate: desired, held
// back by the direction's rate limit and kept within [minReplicas,
// maxReplicas].
func (s *scaler) limit(now time.Duration, current, desired, minReplicas, maxReplicas int) int {
	switch {
	case desired > current:
		ceiling := min(maxReplicas, max(s.upLimit(now, current), current))
		return min(desired, ceiling)
	case desired < current:
		floor := max(minReplicas, min(s.downLimit(now, current), current))
		return max(desired, floor)
	}
	return desired
}

// upLimit is HPA's calculateScaleUpLimitWithScalingRules, with nil
// Policies meaning no limit.
func (s *scaler) upLimit(now time.Duration, current int) int {
	r := s.b.ScaleUp
	if r.Select == SelectDisabled {
		return current
	}
	if len(r.Policies) == 0 {
		return math.MaxInt
	}
	limit := math.MinInt
	if r.Select == SelectMin {
		limit = math.MaxInt
	}
	for _, p := range r.Policies {
		start := s.periodStart(now, current, p.Period)
		var proposed int
		if p.Kind == PodsRate {
			proposed = start + p.Value
		} else {
			// Rounded up, or a small count could never grow.
			proposed = int(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		if r.Select == SelectMin {
			limit = min(limit, proposed)
		} else {
			limit = max(limit, proposed)
		}
	}
	return limit
}

// downLimit is HPA's calculateScaleDownLimitWithBehaviors, with nil
// Policies meaning no limit.
func (s *scaler) downLimit(now time.Duration, current int) int {
	r := s.b.ScaleDown
	if r.Select == SelectDisabled {
		return current
	}
	if len(r.Policies) == 0 {
		return math.MinInt
	}
	limit := math.MaxInt
	if r.Select == SelectMin {
		limit = math.MinInt
	}
	for _, p := range r.Policies {
		start := s.periodStart(now, current, p.Period)
		var proposed int
		if p.Kind == PodsRate {
			proposed = start - p.Value
		} else {
			// Truncated toward zero, as HPA's int32 conversion.
			proposed = int(float64(start) * (1 - float64(p.Value)/100))
		}
		if r.Select == SelectMin {
			limit = max(limit, proposed)
		} else {
			limit = min(limit, proposed)
		}
	}
	return limit
}

// periodStart is HPA's periodStartReplicas: the count a period ago, from
// the scale events of both directions within it.
func (s *scaler) periodStart(now time.Duration, current int, period time.Duration) int {
	return current - changeIn(s.up, now-period) + changeIn(s.down, now-period)
}

// changeIn is HPA's getReplicasChangePerPeriod: the replicas changed by
// events after cut (outdated or not).
func changeIn(events []scaleEvent, cut time.Duration) int {
	var n int
	for _, e := range events {
		if e.at > cut {
			n += e.change
		}
	}
	return n
}

// store is HPA's storeScaleEvent: it marks the events of the direction
// older than its longest policy period outdated and overwrites the last
// outdated one, or appends.
func (s *scaler) store(now time.Duration, from, to int) {
	if to > from {
		s.up = storeEvent(s.up, now, to-from, s.upPeriod)
	} else {
		s.down = storeEvent(s.down, now, from-to, s.downPeriod)
	}
}

func storeEvent(events []scaleEvent, now time.Duration, change int, longest time.Duration) []scaleEvent {
	cut := now - longest
	stale := -1
	for i := range events {
		if events[i].at < cut {
			events[i].outdated = true
		}
		if events[i].outdated {
			stale = i
		}
	}
	e := scaleEvent{at: now, change: change}
	if stale >= 0 {
		events[stale] = e
		return events
	}
	return append(events, e)
}
