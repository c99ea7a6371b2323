package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tables below replay Kubernetes' own tests of the HPA controller's
// behaviour (pkg/controller/podautoscaler/horizontal_test.go, kubernetes/
// kubernetes@003e86297d18), their time.Now()-relative timestamps turned
// into durations before k8sNow.
var k8sNow = 2 * time.Hour

// k8sRules is horizontal_test.go's generateScalingRules(pods, podsPeriod,
// percent, percentPeriod, stabilizationWindow): Select Max, a Pods policy
// if pods is set, then a Percent policy if percent is; periods and window
// in seconds.
func k8sRules(pods, podsPeriod, percent, percentPeriod, window int) *Rules {
	r := Rules{Window: time.Duration(window) * time.Second, Select: SelectMax}
	if pods != 0 {
		r.Policies = append(r.Policies, RatePolicy{Kind: PodsRate, Value: pods, Period: time.Duration(podsPeriod) * time.Second})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, RatePolicy{Kind: PercentRate, Value: percent, Period: time.Duration(percentPeriod) * time.Second})
	}
	return &r
}

// k8sBehavior is what the tests' GenerateHPAScaleUpRules and
// GenerateHPAScaleDownRules make of their rules: HPA's defaults where a
// direction has none.
func k8sBehavior(up, down *Rules) Behavior {
	b := HPABehavior()
	if up != nil {
		b.ScaleUp = *up
	}
	if down != nil {
		b.ScaleDown = *down
	}
	return b
}

// k8sEvents is horizontal_test.go's generateEventsUniformDistribution: the
// changes spread over the last period seconds, each in the middle of its
// segment (whole seconds, as its time.Duration conversion truncates).
func k8sEvents(changes []int, period int) []scaleEvent {
	events := make([]scaleEvent, len(changes))
	segment := float64(period) / float64(len(changes))
	for i, c := range changes {
		ago := time.Duration(float64(period)-segment*float64(i+1)+segment/2) * time.Second
		events[i] = scaleEvent{at: k8sNow - ago, change: c}
	}
	return events
}

// TestScalingWithRules in horizontal_test.go: the rate limits and bounds
// (convertDesiredReplicasWithBehaviorRate) with stored scale events.
func TestBehaviorK8sScalingWithRules(t *testing.T) {
	for _, c := range []struct {
		name                     string
		upEvents, downEvents     []scaleEvent
		minReplicas, maxReplicas int
		up, down                 *Rules
		current, desired, want   int
	}{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, minReplicas: 3, maxReplicas: 8, want: 7},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, minReplicas: 2, maxReplicas: 8, want: 2},
		{name: "prenormalized desired replicas within range when minReplicas is 0", current: 1, desired: 0, minReplicas: 0, maxReplicas: 10, want: 0},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, minReplicas: 1, maxReplicas: 10, want: 10},
		{name: "desired replica count is more than the maximum replica count", current: 100, desired: 1000, minReplicas: 100, maxReplicas: 150, want: 150},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", current: 3, desired: 1000, minReplicas: 1, maxReplicas: 2000,
			up: k8sRules(0, 0, 1, 60, 0), want: 4},
		// Kubernetes skips this case (testThis: true); its numbers hold
		// all the same: 1000 - 20.
		{name: "scaleDownLimit is the limit because scaleDownLimit > minReplicas with user defined policies", current: 1000, desired: 3, minReplicas: 3, maxReplicas: 2000,
			down: k8sRules(20, 60, 0, 0, 0), want: 980},
		{name: "scaleUp with default behavior", minReplicas: 1, maxReplicas: 1000, current: 10, desired: 50, want: 20},
		{name: "scaleUp with pods policy larger than percent policy", minReplicas: 1, maxReplicas: 1000, up: k8sRules(100, 60, 100, 60, 0), current: 10, desired: 500, want: 110},
		{name: "scaleUp with percent policy larger than pods policy", minReplicas: 1, maxReplicas: 1000, up: k8sRules(2, 60, 100, 60, 0), current: 10, desired: 500, want: 20},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", minReplicas: 1, maxReplicas: 1000, up: k8sRules(100, 60, 0, 0, 0), current: 10, desired: 50, want: 50},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy", minReplicas: 1, maxReplicas: 1000, up: k8sRules(10000, 60, 0, 0, 0), current: 10, desired: 50, want: 50},
		{name: "scaleUp with pod policy limitation", minReplicas: 1, maxReplicas: 1000, up: k8sRules(30, 60, 0, 0, 0), current: 10, desired: 50, want: 40},
		{name: "scaleUp with percent policy limitation", minReplicas: 1, maxReplicas: 1000, up: k8sRules(0, 0, 200, 60, 0), current: 10, desired: 50, want: 30},
		{name: "scaleDown with percent policy larger than pod policy", minReplicas: 1, maxReplicas: 1000, down: k8sRules(20, 60, 1, 60, 300), current: 100, desired: 2, want: 80},
		{name: "scaleDown with pod policy larger than percent policy", minReplicas: 1, maxReplicas: 1000, down: k8sRules(2, 60, 1, 60, 300), current: 100, desired: 2, want: 98},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy", minReplicas: 1, maxReplicas: 1000, down: k8sRules(100, 60, 0, 0, 300), current: 10, desired: 0, want: 1},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", minReplicas: 1, maxReplicas: 1000, down: k8sRules(100, 60, 0, 0, 300), current: 10, desired: 0, want: 1},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", minReplicas: 5, maxReplicas: 1000, down: k8sRules(0, 0, 100, 60, 300), current: 10, desired: 2, want: 5},
		{name: "scaleDown with pod policy limitation", minReplicas: 1, maxReplicas: 1000, down: k8sRules(5, 60, 0, 0, 300), current: 10, desired: 2, want: 5},
		{name: "scaleDown with percent policy limitation", minReplicas: 1, maxReplicas: 1000, down: k8sRules(0, 0, 50, 60, 300), current: 10, desired: 5, want: 5},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", upEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 200, up: k8sRules(300, 60, 0, 0, 0), current: 100, desired: 500, want: 200},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", upEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 200, up: k8sRules(0, 0, 10000, 60, 0), current: 100, desired: 500, want: 200},
		// 120 s ago there were 100 - 15; 85 + 5 < 100 holds the count.
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", upEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(5, 120, 0, 0, 0), current: 100, desired: 500, want: 100},
		{name: "scaleUp with pod policy and previous scale up events", upEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(150, 120, 0, 0, 0), current: 100, desired: 500, want: 235}, // 100 - 15 + 150
		{name: "scaleUp with percent policy and previous scale up events", upEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(0, 0, 200, 120, 0), current: 100, desired: 500, want: 255}, // (100 - 15) * 3
		{name: "scaleUp with percent policy and previous scale up and down events", upEvents: k8sEvents([]int{4}, 120), downEvents: k8sEvents([]int{2}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(0, 0, 300, 300, 0), current: 6, desired: 24, want: 16}, // (6 - 4 + 2) * 4
		{name: "scaleDown with default policy and previous events", downEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, current: 10, desired: 5, want: 5},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", downEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(115, 120, 0, 0, 300), current: 100, desired: 0, want: 1},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", downEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 5, maxReplicas: 1000, down: k8sRules(130, 120, 0, 0, 300), current: 100, desired: 0, want: 5},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", downEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 5, maxReplicas: 1000, down: k8sRules(0, 0, 100, 120, 300), current: 100, desired: 2, want: 5},
		{name: "scaleDown with pod policy limitation and previous events", downEvents: k8sEvents([]int{1, 5, 9}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(5, 120, 0, 0, 300), current: 100, desired: 2, want: 100}, // 100 + 15 - 5 > 100 holds
		{name: "scaleDown with percent policy limitation and previous events", downEvents: k8sEvents([]int{2, 4, 6}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(0, 0, 50, 120, 300), current: 100, desired: 0, want: 56}, // (100 + 12) / 2
		{name: "scaleDown with percent policy and previous scale up and down events", upEvents: k8sEvents([]int{2}, 120), downEvents: k8sEvents([]int{4}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(0, 0, 50, 180, 0), current: 10, desired: 1, want: 6}, // (10 - 2 + 4) / 2
		{name: "scaleDown with previous events preventing further scale down", downEvents: k8sEvents([]int{10, 10, 10}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(0, 0, 10, 120, 300), current: 100, desired: 0, want: 100}, // (100 + 30) * 0.9 = 117 > 100 holds
		{name: "scaleDown with with previous events still allowing more scale down", downEvents: k8sEvents([]int{10, 10, 10}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(0, 0, 1000, 120, 300), current: 10, desired: 5, want: 5},
		{name: "check 'outdated' flag for events for one behavior for up", upEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(1000, 60, 0, 0, 0), current: 100, desired: 200, want: 200},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for up", upEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(1000, 120, 100, 60, 0), current: 100, desired: 200, want: 200},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for up", upEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, up: k8sRules(1000, 30, 100, 60, 0), current: 100, desired: 200, want: 200},
		{name: "check 'outdated' flag for events for one behavior for down", downEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(1000, 60, 0, 0, 300), current: 100, desired: 5, want: 5},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for down", downEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(1000, 120, 100, 60, 300), current: 100, desired: 5, want: 5},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for down", downEvents: k8sEvents([]int{8, 12, 9, 11}, 120),
			minReplicas: 1, maxReplicas: 1000, down: k8sRules(1000, 30, 100, 60, 300), current: 100, desired: 5, want: 5},
	} {
		b := k8sBehavior(c.up, c.down)
		require.NoError(t, b.Validate(), c.name)
		s := newScaler(b)
		s.up, s.down = c.upEvents, c.downEvents
		assert.Equal(t, c.want, s.limit(k8sNow, c.current, c.desired, c.minReplicas, c.maxReplicas), c.name)
	}
}

// TestCalculateScaleUpLimitWithScalingRules and
// TestCalculateScaleDownLimitWithBehaviors in horizontal_test.go: Select
// Min takes the policy that changes least.
func TestBehaviorK8sSelectMinLimits(t *testing.T) {
	rules := Rules{Window: 300 * time.Second, Select: SelectMin, Policies: []RatePolicy{
		{Kind: PodsRate, Value: 2, Period: 60 * time.Second},
		{Kind: PercentRate, Value: 50, Period: 60 * time.Second},
	}}
	up := newScaler(Behavior{ScaleUp: rules})
	assert.Equal(t, 2, up.upLimit(k8sNow, 1), "1 + 2 pods against ceil(1.5): the smaller rise")
	down := newScaler(Behavior{ScaleDown: rules})
	assert.Equal(t, 3, down.downLimit(k8sNow, 5), "5 - 2 pods against int(2.5): the smaller fall")
}

// TestNormalizeDesiredReplicasWithBehavior in horizontal_test.go: the
// stabilisation (stabilizeRecommendationWithBehaviors), and the log it
// leaves, where the last recommendation older than both windows is
// overwritten.
func TestBehaviorK8sStabilize(t *testing.T) {
	rec := func(replicas int, ago time.Duration) recommendation {
		return recommendation{at: k8sNow - ago, replicas: replicas}
	}
	for _, c := range []struct {
		name             string
		recs             []recommendation
		current, desired int
		want             int
		wantLog          []int // nil: not checked
		up, down         time.Duration
	}{
		{name: "empty recommendations for scaling down", recs: []recommendation{}, current: 100, desired: 5, want: 5, wantLog: []int{5}},
		{name: "simple scale down stabilization", recs: []recommendation{rec(4, 2*time.Minute), rec(5, time.Minute)},
			current: 100, desired: 3, want: 5, wantLog: []int{4, 5, 3}, down: 3 * time.Minute},
		{name: "simple scale up stabilization", recs: []recommendation{rec(4, 2*time.Minute), rec(5, time.Minute)},
			current: 1, desired: 7, want: 4, wantLog: []int{4, 5, 7}, up: 5 * time.Minute},
		{name: "no scale down stabilization", recs: []recommendation{rec(1, 2*time.Minute), rec(2, time.Minute)},
			current: 100, desired: 3, want: 3, wantLog: []int{1, 2, 3}, up: 5 * time.Minute},
		{name: "no scale up stabilization", recs: []recommendation{rec(4, 2*time.Minute), rec(5, time.Minute)},
			current: 1, desired: 3, want: 3, wantLog: []int{4, 5, 3}, down: 5 * time.Minute},
		{name: "no scale down stabilization, reuse recommendation element", recs: []recommendation{rec(10, 10*time.Minute), rec(9, 9*time.Minute)},
			current: 100, desired: 3, want: 3, wantLog: []int{10, 3}},
		{name: "no scale up stabilization, reuse recommendation element", recs: []recommendation{rec(10, 10*time.Minute), rec(9, 9*time.Minute)},
			current: 1, desired: 100, want: 100, wantLog: []int{10, 100}},
		{name: "scale down stabilization, reuse one of obsolete recommendation element",
			recs:    []recommendation{rec(10, 10*time.Minute), rec(4, time.Minute), rec(5, 2*time.Minute), rec(9, 9*time.Minute)},
			current: 100, desired: 3, want: 5, wantLog: []int{10, 4, 5, 3}, down: 3 * time.Minute},
		{name: "scale up stabilization, reuse one of obsolete recommendation element",
			recs:    []recommendation{rec(10, 100*time.Minute), rec(6, time.Minute), rec(5, 2*time.Minute), rec(9, 3*time.Minute)},
			current: 1, desired: 100, want: 5, wantLog: []int{100, 6, 5, 9}, up: 300 * time.Second},
		{name: "scale up and down stabilization, do not scale up when prenormalized rec goes down",
			recs:    []recommendation{rec(2, 100*time.Minute), rec(3, 3*time.Minute)},
			current: 2, desired: 1, want: 2, up: 300 * time.Second, down: 300 * time.Second},
		{name: "scale up and down stabilization, do not scale down when prenormalized rec goes up",
			recs:    []recommendation{rec(2, 100*time.Minute), rec(1, 3*time.Minute)},
			current: 2, desired: 3, want: 2, up: 300 * time.Second, down: 300 * time.Second},
	} {
		s := newScaler(Behavior{ScaleUp: Rules{Window: c.up}, ScaleDown: Rules{Window: c.down}})
		s.recs = c.recs
		assert.Equal(t, c.want, s.stabilize(k8sNow, c.current, c.desired), c.name)
		if c.wantLog != nil {
			got := make([]int, len(s.recs))
			for i, r := range s.recs {
				got[i] = r.replicas
			}
			assert.Equal(t, c.wantLog, got, c.name)
		}
	}
}

// TestStoreScaleEvents in horizontal_test.go: scale events within 60 s,
// then storeScaleEvent's reuse of the last outdated slot, in each
// direction. Its two cases without a behavior (HPA stores no event then)
// have no counterpart here: a scaler always has a Behavior.
func TestBehaviorK8sStoreScaleEvents(t *testing.T) {
	ev := func(change int, ago time.Duration, outdated bool) scaleEvent {
		return scaleEvent{at: k8sNow - ago*time.Second, change: change, outdated: outdated}
	}
	for _, c := range []struct {
		name       string
		rules      *Rules
		prev, next []scaleEvent
		within60s  int
	}{
		{name: "empty entries with two-policy-behavior", rules: k8sRules(10, 60, 100, 60, 0),
			prev: []scaleEvent{}, next: []scaleEvent{ev(5, 0, false)}},
		{name: "one outdated entry to be replaced with behavior", rules: k8sRules(10, 60, 100, 60, 0),
			prev: []scaleEvent{ev(7, 61, false)}, next: []scaleEvent{ev(5, 0, false)}},
		{name: "one actual entry to be not touched with behavior", rules: k8sRules(10, 60, 100, 60, 0),
			prev: []scaleEvent{ev(7, 58, false)}, next: []scaleEvent{ev(7, 58, false), ev(5, 0, false)}, within60s: 7},
		{name: "two entries, one of them to be replaced", rules: k8sRules(10, 60, 0, 0, 0),
			prev: []scaleEvent{ev(7, 61, false), ev(6, 59, false)}, next: []scaleEvent{ev(5, 0, false), ev(6, 59, false)}, within60s: 6},
		{name: "replace one entry, use policies with different periods", rules: k8sRules(10, 60, 100, 30, 0),
			prev: []scaleEvent{ev(8, 29, false), ev(6, 59, false), ev(7, 61, false), ev(9, 61, false)},
			next: []scaleEvent{ev(8, 29, false), ev(6, 59, false), ev(7, 61, true), ev(5, 0, false)}, within60s: 14},
		{name: "two entries, both actual", rules: k8sRules(10, 120, 100, 30, 0),
			prev: []scaleEvent{ev(7, 58, false), ev(6, 59, false)},
			next: []scaleEvent{ev(7, 58, false), ev(6, 59, false), ev(5, 0, false)}, within60s: 13},
	} {
		assert.Equal(t, c.within60s, changeIn(c.prev, k8sNow-60*time.Second), c.name)
		up := newScaler(Behavior{ScaleUp: *c.rules})
		up.up = append([]scaleEvent{}, c.prev...)
		up.store(k8sNow, 10, 15)
		assert.Equal(t, c.next, up.up, "up: "+c.name)
		assert.Empty(t, up.down, "up: "+c.name)
		down := newScaler(Behavior{ScaleDown: *c.rules})
		down.down = append([]scaleEvent{}, c.prev...)
		down.store(k8sNow, 10, 5)
		assert.Equal(t, c.next, down.down, "down: "+c.name)
		assert.Empty(t, down.up, "down: "+c.name)
	}
}

// Whole reconciliations of horizontal_test.go, from its metrics' raw
// recommendation on: the bounds that come first, and the first
// recommendation, the current count, that a fresh HPA records.
func TestBehaviorK8sReconcile(t *testing.T) {
	// TestScaleUpRCImmediately and TestScaleDownRCImmediately: a count
	// outside [min, max] goes to the bound at once, whatever is asked.
	s := newScaler(HPABehavior())
	assert.Equal(t, 2, s.normalize(0, 1, 100, 2, 6), "1 below min 2")
	s = newScaler(HPABehavior())
	assert.Equal(t, 5, s.normalize(0, 6, 0, 2, 5), "6 above max 5")

	// TestScaleDownWithScalingRules: 5 replicas at 1.4 of 5 CPUs against
	// a 50 % target ask for ceil(5 × 0.28 / 0.5) = 3; its controller
	// starts with an empty, non-nil log, so nothing holds the fall, and
	// the down policy (100 % per 15 s) allows it.
	s = newScaler(k8sBehavior(k8sRules(0, 0, 100, 15, 30), nil))
	s.started = true
	assert.Equal(t, 3, s.normalize(0, 5, 3, 2, 6))

	// TestScaleDownStabilizeInitialSize: the same ask with no log at all;
	// the current 5 is recorded first and holds the fall through the
	// 300 s window. (Kubernetes runs it without a behavior, on the older
	// path, which shares the initial recommendation and the 300 s.)
	s = newScaler(HPABehavior())
	assert.Equal(t, 5, s.normalize(0, 5, 3, 2, 6))

	// TestStabilizeDownscale: 4 replicas, of which 3 report 50 % against
	// a 100 % target, ask for ceil(3 × 0.5) = 2; the 4 of a minute ago
	// holds them (the 10 of ten minutes ago is past the window).
	s = newScaler(HPABehavior())
	s.started = true
	s.recs = []recommendation{{at: k8sNow - 10*time.Minute, replicas: 10}, {at: k8sNow - time.Minute, replicas: 4}}
	assert.Equal(t, 4, s.normalize(k8sNow, 4, 2, 1, 5))
}

// The zero Behavior takes every recommendation as it is: the count set is
// the one asked for, within the bounds, whatever came before and however
// the ticks fall.
func TestBehaviorZeroIsIdentity(t *testing.T) {
	s := newScaler(Behavior{})
	const lo, hi = 1, 30
	current := 3
	now := time.Duration(0)
	x := uint32(12345)
	for i := 0; i < 2000; i++ {
		x = x*1664525 + 1013904223
		desired := int(x>>16) % 41
		now += time.Duration(x>>24%16) * time.Second // some ticks repeat an instant
		got := s.normalize(now, current, desired, lo, hi)
		require.Equal(t, min(max(desired, lo), hi), got, "tick %d: %d asked, %d held", i, desired, current)
		current = got
	}
}

// HPA's default scale-up from 1 toward 100: Pods 4 gives 1+4 = 5 against
// Percent 100's 2, and from 5 on Percent 100 doubles (10 > 9, 20 > 14, ...)
// each 15 s period, until 100 is reached.
func TestBehaviorHPAScaleUp(t *testing.T) {
	s := newScaler(HPABehavior())
	var got []int
	current := 1
	for tick := 0; tick < 9; tick++ {
		current = s.normalize(time.Duration(tick)*15*time.Second, current, 100, 1, 1000)
		got = append(got, current)
	}
	assert.Equal(t, []int{5, 10, 20, 40, 80, 100, 100, 100, 100}, got)

	// Ticking every 5 s changes nothing of the rate: a change counts
	// against the 15 s periods that hold it, so the count rises only
	// once a period has passed since the last rise (a change exactly
	// 15 s old no longer counts).
	s = newScaler(HPABehavior())
	got = got[:0]
	current = 1
	for tick := 0; tick < 10; tick++ {
		current = s.normalize(time.Duration(tick)*5*time.Second, current, 100, 1, 1000)
		got = append(got, current)
	}
	assert.Equal(t, []int{5, 5, 5, 10, 10, 10, 20, 20, 20, 40}, got)
}

// HPA's default scale-down: the count holds while any recommendation of
// the last 300 s asks for it, then falls at once (100 % per 15 s) to what
// is asked. A recommendation exactly 300 s old no longer counts.
func TestBehaviorHPAScaleDown(t *testing.T) {
	// From a fresh start, the first recommendation is the current count.
	s := newScaler(HPABehavior())
	current := 10
	for tick := 0; tick <= 22; tick++ {
		now := time.Duration(tick) * 15 * time.Second
		current = s.normalize(now, current, 1, 1, 100)
		want := 10
		if now >= 300*time.Second {
			want = 1
		}
		require.Equal(t, want, current, "at %v", now)
	}

	// After 600 s asking for 10, the ask drops to 1: the last ask of 10
	// was at 585 s, so 10 holds until 585 + 300 = 885 s.
	s = newScaler(HPABehavior())
	current = 10
	for tick := 0; tick <= 70; tick++ {
		now := time.Duration(tick) * 15 * time.Second
		desired := 10
		if now >= 600*time.Second {
			desired = 1
		}
		current = s.normalize(now, current, desired, 1, 100)
		want := 10
		if now >= 885*time.Second {
			want = 1
		}
		require.Equal(t, want, current, "at %v", now)
	}
}

// The edges, as HPA compares instants: a recommendation exactly Window old
// and a change exactly Period old no longer count; a nanosecond younger,
// they do.
func TestBehaviorEdges(t *testing.T) {
	b := Behavior{
		ScaleUp:   Rules{Policies: []RatePolicy{{Kind: PercentRate, Value: 100, Period: 15 * time.Second}}},
		ScaleDown: Rules{Window: time.Minute},
	}
	s := newScaler(b)
	s.started = true
	s.up = []scaleEvent{{at: 0, change: 5}}
	assert.Equal(t, 10, s.normalize(15*time.Second-1, 10, 100, 1, 100), "started the period at 5: at most 10")
	assert.Equal(t, 20, s.normalize(15*time.Second, 10, 100, 1, 100), "the rise to 10 is 15 s old: the period starts at 10")

	s = newScaler(b)
	s.started = true
	s.recs = []recommendation{{at: 0, replicas: 8}}
	assert.Equal(t, 8, s.normalize(time.Minute-1, 10, 2, 1, 100), "the 8 of a minute ago less 1 ns holds the fall")
	s.recs = []recommendation{{at: 0, replicas: 8}}
	assert.Equal(t, 2, s.normalize(time.Minute, 10, 2, 1, 100), "the 8 of exactly a minute ago does not")

	// A scale event's slot is reused once it is older than the longest
	// period: exactly 15 s old, it is kept.
	s = newScaler(b)
	s.up = []scaleEvent{{at: 0, change: 5}}
	s.store(15*time.Second, 10, 12)
	assert.Equal(t, []scaleEvent{{at: 0, change: 5}, {at: 15 * time.Second, change: 2}}, s.up)
	s.store(15*time.Second+1, 12, 13)
	assert.Equal(t, []scaleEvent{{at: 15*time.Second + 1, change: 1}, {at: 15 * time.Second, change: 2}}, s.up)
}

// HPA computes a Percent limit in float64, and so does the port: 100
// replicas at 10 % may rise to ceil(110.00000000000001) = 111, and 10 at
// 80 % may fall to int(1.9999999999999996) = 1, where exact arithmetic
// gives 110 and 2.
func TestBehaviorPercentFloat(t *testing.T) {
	up := Rules{Policies: []RatePolicy{{Kind: PercentRate, Value: 10, Period: 15 * time.Second}}}
	assert.Equal(t, 111, newScaler(Behavior{ScaleUp: up}).normalize(0, 100, 200, 1, 1000))
	down := Rules{Policies: []RatePolicy{{Kind: PercentRate, Value: 80, Period: 15 * time.Second}}}
	assert.Equal(t, 1, newScaler(Behavior{ScaleDown: down}).normalize(0, 10, 0, 0, 1000))
}

// Select: Min takes the policy allowing the smaller change, Disabled
// forbids the direction (but not a move back within the bounds).
func TestBehaviorSelect(t *testing.T) {
	b := HPABehavior()
	b.ScaleUp.Select = SelectMin
	assert.Equal(t, 14, newScaler(b).normalize(0, 10, 50, 1, 100), "10 + 4 pods against 10 + 100 %")
	b.ScaleDown = Rules{Select: SelectMin, Policies: []RatePolicy{
		{Kind: PodsRate, Value: 2, Period: time.Minute},
		{Kind: PercentRate, Value: 50, Period: time.Minute},
	}}
	assert.Equal(t, 8, newScaler(b).normalize(0, 10, 1, 1, 100), "10 - 2 pods against 10 - 50 %")

	b = Behavior{ScaleUp: Rules{Select: SelectDisabled}, ScaleDown: Rules{Select: SelectDisabled}}
	s := newScaler(b)
	assert.Equal(t, 10, s.normalize(0, 10, 50, 1, 100))
	assert.Equal(t, 10, s.normalize(15*time.Second, 10, 1, 1, 100))
	assert.Equal(t, 20, s.normalize(30*time.Second, 30, 1, 1, 20), "above max: to the bound")
}

// The bounds that come before the behaviour: a count of 0 under a
// positive min stays 0 (HPA leaves a target scaled to zero alone), and
// moving a count into the bounds is a scale event like any other.
func TestBehaviorBounds(t *testing.T) {
	s := newScaler(HPABehavior())
	assert.Equal(t, 0, s.normalize(0, 0, 5, 1, 10))
	assert.Empty(t, s.up)
	assert.Equal(t, 10, s.normalize(0, 12, 12, 1, 10))
	assert.Equal(t, []scaleEvent{{at: 0, change: 2}}, s.down)

	s = newScaler(Behavior{})
	assert.Equal(t, 3, s.normalize(0, 0, 3, 0, 10), "min 0: scale from zero")
}

// Memory stays bounded: over a day of 15 s ticks, with the ask swinging
// up and down, the log holds at most the ticks of the longest window plus
// two, each direction's events at most those of its longest period plus
// two, and once warm, a tick allocates nothing.
func TestBehaviorMemoryBounded(t *testing.T) {
	const tick = 15 * time.Second
	slow := HPABehavior()
	slow.ScaleUp.Window = time.Minute
	slow.ScaleUp.Policies = []RatePolicy{{Kind: PodsRate, Value: 4, Period: 2 * time.Minute}}
	for _, c := range []struct {
		name           string
		b              Behavior
		recs, up, down int
	}{
		{name: "HPA", b: HPABehavior(), recs: int(300*time.Second/tick) + 2, up: 1 + 2, down: 1 + 2},
		{name: "slow", b: slow, recs: int(300*time.Second/tick) + 2, up: int(2*time.Minute/tick) + 2, down: 1 + 2},
		{name: "zero", b: Behavior{}, recs: 2, up: 2, down: 2},
	} {
		s := newScaler(c.b)
		current, ups, downs := 1, 0, 0
		now := time.Duration(0)
		step := func(i int) {
			// A 40-minute swing between 1 and 50.
			phase := i % 160
			desired := 1 + 49*min(phase, 160-phase)/80
			next := s.normalize(now, current, desired, 1, 100)
			if next > current {
				ups++
			} else if next < current {
				downs++
			}
			current = next
			now += tick
		}
		for i := 0; i < 24*240; i++ {
			step(i)
		}
		assert.Greater(t, ups, 100, c.name)
		assert.Greater(t, downs, 20, c.name)
		assert.LessOrEqual(t, len(s.recs), c.recs, c.name)
		assert.LessOrEqual(t, len(s.up), c.up, c.name)
		assert.LessOrEqual(t, len(s.down), c.down, c.name)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() { step(i); i++ })
		assert.Zero(t, allocs, c.name)
	}
}

func TestBehaviorValidateNamesFields(t *testing.T) {
	require.NoError(t, Behavior{}.Validate(), "the zero value takes recommendations as they are")
	require.NoError(t, HPABehavior().Validate())
	pods := func(v int, p time.Duration) []RatePolicy { return []RatePolicy{{Kind: PodsRate, Value: v, Period: p}} }
	for _, c := range []struct {
		b    Behavior
		want string
	}{
		{Behavior{ScaleUp: Rules{Window: -time.Second}}, "Behavior.ScaleUp.Window"},
		{Behavior{ScaleDown: Rules{Window: 25 * time.Hour}}, "Behavior.ScaleDown.Window"},
		{Behavior{ScaleUp: Rules{Select: SelectDisabled + 1}}, "Behavior.ScaleUp.Select"},
		{Behavior{ScaleDown: Rules{Select: -1}}, "Behavior.ScaleDown.Select"},
		{Behavior{ScaleUp: Rules{Policies: []RatePolicy{{Kind: 2, Value: 1, Period: time.Second}}}}, "Behavior.ScaleUp.Policies[0].Kind"},
		{Behavior{ScaleDown: Rules{Policies: append(pods(1, time.Second), pods(0, time.Second)...)}}, "Behavior.ScaleDown.Policies[1].Value"},
		{Behavior{ScaleUp: Rules{Policies: pods(maxRateValue+1, time.Second)}}, "Behavior.ScaleUp.Policies[0].Value"},
		{Behavior{ScaleUp: Rules{Policies: pods(1, 0)}}, "Behavior.ScaleUp.Policies[0].Period"},
		{Behavior{ScaleDown: Rules{Policies: pods(1, 25*time.Hour)}}, "Behavior.ScaleDown.Policies[0].Period"},
	} {
		err := c.b.Validate()
		require.Error(t, err, "%+v", c.b)
		assert.Contains(t, err.Error(), c.want)
	}
}
