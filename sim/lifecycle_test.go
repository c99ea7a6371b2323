package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/workload"
)

// A schedule that never changes the fleet's size is the fixed fleet: the
// controller ticks, reads nothing and moves nothing, and the router's view
// through the routable list is the identity. Every record and the summary
// are the same bytes, over the random scenarios with a fleet of two or
// more (one replica autoscaled is a fleet, which keeps its replica's share
// apart).
func TestStaticScheduleIsTheFixedFleet(t *testing.T) {
	compared := 0
	for seed := range uint64(400) {
		cfg, reqs := decodeScenario(randomScenario(seed))
		if cfg.Fleet.Autoscale.On() || len(cfg.Fleet.Replicas) < 2 || cfg.Fleet.Prefill.On() || cfg.Fleet.HostTier.On() || cfg.Fleet.SharedStore.On() {
			continue
		}
		fixed, err := runScenario(cfg, reqs)
		require.NoError(t, err)
		n := len(cfg.Fleet.Replicas)
		cfg.Fleet.Autoscale = Autoscale{Policy: Schedule{Steps: []ReplicaStep{{Duration: time.Hour, Replicas: n}}}, Max: 2 * n,
			Interval: 35 * time.Millisecond, MetricDelay: 20 * time.Millisecond, ColdStart: ColdStart{Load: time.Second}, Drain: Drain{Timeout: time.Second, HandBack: true}}
		scaled, err := runScenario(cfg, reqs)
		require.NoError(t, err, "seed %d", seed)
		text := scaled.text[:bytes.LastIndex(scaled.text, []byte("scale {"))] // the fixed fleet has no ScaleSummary
		sameBytes(t, fixed.text, text)
		sc := scaled.sum.Scale
		require.Zero(t, sc.Joins+sc.Leaves)
		if !cfg.DetectWarmup { // the declared window is the measured one
			require.InDelta(t, float64(n)*scaled.sum.Window.Hours(), sc.ReplicaHours, 1e-12, "n replicas over the window: seed %d, %+v", seed, cfg.Window)
		}
		compared++
	}
	require.Greater(t, compared, 50)
}

// A replica asked for at a tick serves from the tick plus its cold start,
// with an empty cache, and takes its share of the arrivals from then on;
// the one that leaves is the one that became ready last, and it stops
// costing when its last request ends.
func TestColdStartAndDrain(t *testing.T) {
	atlas := ReplicaConfig{}
	cfg := Config{Fleet: Fleet{Replicas: []ReplicaConfig{atlas},
		Autoscale: Autoscale{
			Policy:    Schedule{Steps: []ReplicaStep{{Duration: 10 * time.Second, Replicas: 1}, {Duration: 90 * time.Second, Replicas: 2}, {Duration: time.Hour, Replicas: 1}}},
			Max:       2,
			Interval:  5 * time.Second,
			ColdStart: ColdStart{Provision: 20 * time.Second, Load: 30 * time.Second, Capture: 10 * time.Second},
		}}}
	// One request a second, 200 tokens in, 100 out, for 150 s: each is
	// done in about 100 × 45 ms / (a light batch's steps) < 5 s.
	var reqs list
	for i := range 150 {
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i)*time.Second + 500*time.Millisecond, InputTokens: 200, OutputTokens: 100})
	}
	run, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	require.Len(t, run.lives, 2)
	l := run.lives[1]
	require.Equal(t, 10*time.Second, l.requested, "asked for at the first tick of the second step")
	require.Equal(t, 70*time.Second, l.readyAt, "serving after 20 + 30 + 10 s")
	require.Equal(t, 100*time.Second, l.drainAt, "the one ready last leaves when the schedule drops back")
	require.Equal(t, stateGone, l.state)
	last := time.Duration(0)
	for _, r := range run.recs {
		require.Equal(t, StatusOK, r.Status)
		switch {
		case r.Arrival < 70*time.Second || r.Arrival > 100*time.Second:
			require.Zero(t, r.Replica, "request %d arrived at %v, when one replica served", r.ID, r.Arrival)
		case r.Replica == 1:
			last = max(last, r.Finish)
		}
	}
	require.Equal(t, last, l.goneAt, "gone when its last request ended")
	require.Greater(t, last, 100*time.Second, "a request it held when it left finished there")
	// Round robin over two replicas from 70 s to 100 s: 30 arrivals, 15
	// each.
	n := 0
	for _, r := range run.recs {
		if r.Replica == 1 {
			n++
		}
	}
	require.Equal(t, 15, n)
}

// HandBack sends a draining replica's never-scheduled requests to the
// router at once, keeping their arrival; a drain deadline aborts what is
// left, as vLLM's shutdown timeout does.
func TestDrainHandsBackAndAborts(t *testing.T) {
	// One slot per replica (MaxSeqs 1): every request but the running one
	// waits, never scheduled.
	rep := ReplicaConfig{Engine: engine.Config{MaxSeqs: 1}}
	base := Config{Fleet: Fleet{Replicas: Copies(2, rep),
		Autoscale: Autoscale{
			Policy:   Schedule{Steps: []ReplicaStep{{Duration: 10 * time.Second, Replicas: 2}, {Duration: time.Hour, Replicas: 1}}},
			Max:      2,
			Interval: 10 * time.Second,
		}}}
	// Eight requests at 9 s, dealt round robin: four each, each taking
	// 20 + 0.035·100 ms to prefill and 199 decode steps of about 45 ms
	// at batch 1 (less: 45 ms is batch 32's step), so the ones behind the
	// first still wait at 10 s.
	var reqs list
	for i := range 8 {
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: 9 * time.Second, InputTokens: 100, OutputTokens: 200})
	}
	t.Run("handback", func(t *testing.T) {
		cfg := base
		cfg.Fleet.Autoscale.Drain = Drain{HandBack: true}
		run, err := runScenario(cfg, reqs)
		require.NoError(t, err)
		on := map[int]int{}
		for _, r := range run.recs {
			require.Equal(t, StatusOK, r.Status)
			require.Equal(t, 9*time.Second, r.Arrival, "a handed-back request keeps its arrival")
			on[r.Replica]++
		}
		require.Equal(t, map[int]int{0: 7, 1: 1}, on, "replica 1 (ready last, as both were at 0: the higher index) kept only the request it was running")
	})
	t.Run("deadline", func(t *testing.T) {
		cfg := base
		cfg.Fleet.Autoscale.Drain = Drain{Timeout: 2 * time.Second}
		run, err := runScenario(cfg, reqs)
		require.NoError(t, err)
		aborted, held := 0, 0
		for _, r := range run.recs {
			if r.Replica != 1 {
				require.Equal(t, StatusOK, r.Status)
				continue
			}
			held++
			if r.Status == StatusOK {
				require.LessOrEqual(t, r.Finish, 12*time.Second)
				continue
			}
			require.Equal(t, StatusErrored, r.Status)
			require.Equal(t, 12*time.Second, r.Finish, "aborted at the leave plus Drain.Timeout")
			require.Contains(t, r.Reason, "Drain.Timeout")
			aborted++
		}
		require.Equal(t, 4, held, "round robin dealt replica 1 four")
		require.GreaterOrEqual(t, aborted, 3, "the three behind its running one could not finish in 2 s: 200 tokens one at a time")
		require.Equal(t, 12*time.Second, run.lives[1].goneAt)
	})
}

// The controller refuses what it cannot do, naming the field.
func TestAutoscaleValidate(t *testing.T) {
	sched := Schedule{Steps: []ReplicaStep{{Duration: time.Hour, Replicas: 2}}}
	for _, c := range []struct {
		name string
		a    Autoscale
		f    func(*Fleet)
		want string
	}{
		{"no policy", Autoscale{Max: 3}, nil, "has no Policy"},
		{"max below min", Autoscale{Policy: sched, Min: 3, Max: 2}, nil, "Fleet.Autoscale.Max must be >= Min"},
		{"start outside", Autoscale{Policy: sched, Min: 3, Max: 4}, nil, "must bound the replicas the run starts with"},
		{"interval", Autoscale{Policy: sched, Max: 4, Interval: -time.Second}, nil, "Fleet.Autoscale.Interval"},
		{"cold start", Autoscale{Policy: sched, Max: 4, ColdStart: ColdStart{Load: -1}}, nil, "Fleet.Autoscale.ColdStart.Load"},
		{"drain", Autoscale{Policy: sched, Max: 4, Drain: Drain{Timeout: -1}}, nil, "Fleet.Autoscale.Drain.Timeout"},
		{"steps", Autoscale{Policy: Schedule{Steps: []ReplicaStep{{Duration: 0, Replicas: 0}}}, Max: 4}, nil, "Schedule.Steps[0].Duration"},
		{"empty", Autoscale{Policy: Schedule{}, Max: 4}, nil, "Schedule.Steps is empty"},
		{"pools", Autoscale{Policy: sched, Max: 4}, func(f *Fleet) { f.Prefill = PrefillPool{Replicas: Copies(1, ReplicaConfig{})} }, "prefill pool"},
		{"tiers", Autoscale{Policy: sched, Max: 4}, func(f *Fleet) { f.HostTier = HostTier{Blocks: 10} }, "KV tiers"},
	} {
		f := Fleet{Replicas: Copies(2, ReplicaConfig{}), Autoscale: c.a}
		if c.f != nil {
			c.f(&f)
		}
		err := Config{Fleet: f}.Validate()
		require.ErrorContains(t, err, c.want, c.name)
	}
}

// Schedule's Lead asks for a step's replicas Lead before it starts and
// keeps them to its end.
func TestScheduleLead(t *testing.T) {
	s := Schedule{Steps: []ReplicaStep{{Duration: time.Hour, Replicas: 2}, {Duration: time.Hour, Replicas: 5}, {Duration: time.Hour, Replicas: 3}}, Repeat: true}
	at := func(s Schedule, t time.Duration) int {
		r := &runner{}
		r.now = t
		return s.Desired(&ScaleView{r: r})
	}
	for _, c := range []struct {
		lead, t time.Duration
		want    int
	}{
		{0, 0, 2}, {0, 59 * time.Minute, 2}, {0, time.Hour, 5}, {0, 3 * time.Hour, 2}, {0, 4 * time.Hour, 5},
		{5 * time.Minute, 54 * time.Minute, 2}, {5 * time.Minute, 55 * time.Minute, 5},
		{5 * time.Minute, 119 * time.Minute, 5}, {5 * time.Minute, 2 * time.Hour, 3}, {5 * time.Minute, 175 * time.Minute, 3},
		{2 * time.Hour, 0, 5}, {5 * time.Minute, 3*time.Hour + 55*time.Minute, 5},
	} {
		s.Lead = c.lead
		require.Equal(t, c.want, at(s, c.t), "lead %v at %v", c.lead, c.t)
	}
	s.Repeat = false
	require.Equal(t, 3, at(s, 10*time.Hour), "without Repeat the last step holds")
}

// The controller applies HPA's behaviour to the policy's recommendation:
// under HPABehavior a rise from 1 to 10 goes 1, 5, 10 at 15 s ticks (4
// pods or 100 % a period, the larger), and a fall back to 1 waits for the
// highest recommendation of the last 300 s to drop.
func TestBehaviorPacesTheFleet(t *testing.T) {
	cfg := Config{Fleet: Fleet{Replicas: []ReplicaConfig{{}},
		Autoscale: Autoscale{
			Policy:   Schedule{Steps: []ReplicaStep{{Duration: 60 * time.Second, Replicas: 1}, {Duration: 60 * time.Second, Replicas: 10}, {Duration: time.Hour, Replicas: 1}}},
			Max:      10,
			Behavior: HPABehavior(),
		}}}
	var reqs list
	for i := range 600 { // one a second for 10 minutes, so that the run lasts
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * time.Second, InputTokens: 100, OutputTokens: 20})
	}
	run, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	require.Len(t, run.lives, 10)
	for i, l := range run.lives[1:] {
		want := 60 * time.Second
		if i >= 4 {
			want = 75 * time.Second
		}
		require.Equal(t, want, l.requested, "replica %d", i+1)
		// The last recommendation of 10 is the 105 s tick's (the step
		// ends at 120 s); exactly 300 s old it no longer counts, so the
		// 405 s tick drops to 1, all at once (100 % a period).
		require.Equal(t, 405*time.Second, l.drainAt, "replica %d", i+1)
	}
}

// With no cold start, a schedule's serving replica-hours are exactly the
// sum of its steps (each replica serves from the tick that asks for it to
// the tick that takes it out of routing, and the ticks fall on the hour),
// the replica-hours exceed them only by the drains, and the timeline
// accounts for every arrival and every measured end.
func TestServingHoursFollowTheSchedule(t *testing.T) {
	hours := []int{2, 4, 3, 1}
	steps := make([]ReplicaStep, len(hours))
	for i, n := range hours {
		steps[i] = ReplicaStep{Duration: time.Hour, Replicas: n}
	}
	cfg := Config{Window: Window{Horizon: 4 * time.Hour}, Fleet: Fleet{Replicas: Copies(2, ReplicaConfig{}),
		Autoscale: Autoscale{Policy: Schedule{Steps: steps}, Max: 8, Drain: Drain{Timeout: time.Minute}}}}
	var reqs list
	for i := range 4 * 3600 / 2 { // one every 2 s for the 4 hours
		reqs = append(reqs, workload.Request{ID: uint64(i), Arrival: time.Duration(i) * 2 * time.Second, InputTokens: 300, OutputTokens: 150})
	}
	run, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	sc := run.sum.Scale
	require.Equal(t, 2+4+3+1.0, sc.Serving, "serving replica-hours: the sum of the steps, exactly")
	require.Zero(t, sc.Warming, "no cold start")
	require.Equal(t, 2, sc.Joins)
	require.Equal(t, 3, sc.Leaves)
	require.Equal(t, 4, sc.PeakReplicas)
	require.LessOrEqual(t, sc.Draining, float64(sc.Leaves)*time.Minute.Hours(), "each drain lasts at most its deadline")
	require.Positive(t, sc.Draining, "a replica leaving a fleet under load holds something")
	require.InDelta(t, sc.Serving+sc.Draining, sc.ReplicaHours, 1e-12)
	require.InDelta(t, 10.0/4, sc.MeanServing, 1e-12)
	require.InDelta(t, 12*sc.ReplicaHours, sc.Cost(12), 1e-12)
	arrived, ended, good := 0, 0, 0
	for i, s := range sc.Timeline {
		if i < len(sc.Timeline)-1 || s.At%DefaultScaleInterval == 0 {
			require.Equal(t, time.Duration(i+1)*DefaultScaleInterval, s.At, "a sample a tick")
		}
		require.Equal(t, hours[min(int(s.At/time.Hour), 3)], s.Desired, "at %v", s.At)
		require.Equal(t, s.Desired, s.Serving+s.Warming, "at %v", s.At)
		arrived, ended, good = arrived+s.Arrived, ended+s.Ended, good+s.Good
	}
	require.Equal(t, len(reqs), arrived, "every arrival")
	require.Equal(t, run.sum.Offered, ended, "the timeline counts every measured end, the last ones in a sample at the run's end")
	require.Equal(t, run.sum.Good, good)
}
