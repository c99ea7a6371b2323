package sim

import (
	"errors"
	"fmt"
	"time"
)

// Schedule is a fleet size set by the clock, not by load: the static
// fleet (one step) and the time-of-day baseline (24 steps of an hour),
// what Kubernetes' CronJob-driven scaling and KEDA's cron scaler do. The
// controller acts on a step at its first tick at or after the step's
// start (Autoscale.Interval apart).
//
// Lead asks for each step's replicas Lead before the step starts, and
// keeps a step's replicas until it ends: Desired at t is the largest
// step among those that overlap [t, t+Lead]. With Lead equal to the cold
// start, the replicas a step needs serve when it starts: the perfect
// foresight of a schedule that knows the load.
type Schedule struct {
	// Steps are the sizes, each held for its Duration from the end of
	// the last; at least one.
	Steps []ReplicaStep
	// Repeat starts the steps again after the last; without it the last
	// step holds for ever.
	Repeat bool
	// Lead is how early a step's replicas are asked for (0: at its
	// start).
	Lead time.Duration
}

// ReplicaStep is one step of a Schedule.
type ReplicaStep struct {
	Duration time.Duration
	Replicas int
}

// Validate checks that every step lasts and has a replica.
func (s Schedule) Validate() error {
	var errs []error
	if len(s.Steps) == 0 {
		errs = append(errs, errors.New("Schedule.Steps is empty: a schedule needs at least one step"))
	}
	for i, st := range s.Steps {
		if st.Duration <= 0 || st.Duration > 366*24*time.Hour {
			errs = append(errs, fmt.Errorf("Schedule.Steps[%d].Duration must be in (0, 366 days], got %v", i, st.Duration))
		}
		if st.Replicas < 1 || st.Replicas > MaxReplicas {
			errs = append(errs, fmt.Errorf("Schedule.Steps[%d].Replicas must be in [1, MaxReplicas (%d)], got %d", i, MaxReplicas, st.Replicas))
		}
	}
	if s.Lead < 0 || s.Lead > 24*time.Hour {
		errs = append(errs, fmt.Errorf("Schedule.Lead must be in [0, 24h], got %v", s.Lead))
	}
	return errors.Join(errs...)
}

// Desired is the largest step that overlaps [now, now+Lead].
func (s Schedule) Desired(v *ScaleView) int {
	t := v.Now()
	n := s.At(t)
	if s.Lead == 0 {
		return n
	}
	// The steps that start in (t, t+Lead].
	for end := s.next(t); end <= t+s.Lead; end = s.next(end) {
		n = max(n, s.At(end))
		if end == Unbounded {
			break
		}
	}
	return n
}

// At is the step's size at instant t.
func (s Schedule) At(t time.Duration) int {
	i, _ := s.step(t)
	return s.Steps[i].Replicas
}

// step is the index of the step at t and when it ends (Unbounded for the
// last step held for ever).
func (s Schedule) step(t time.Duration) (int, time.Duration) {
	var period time.Duration
	for _, st := range s.Steps {
		period += st.Duration
	}
	base := time.Duration(0)
	if s.Repeat && t >= period {
		base = t / period * period
	}
	end := base
	for i, st := range s.Steps {
		end += st.Duration
		if t < end {
			return i, end
		}
	}
	return len(s.Steps) - 1, Unbounded
}

// next is the instant the step at t ends.
func (s Schedule) next(t time.Duration) time.Duration {
	_, end := s.step(t)
	return end
}
