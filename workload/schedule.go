package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// RateStep is one piece of a Schedule: Rate requests/s (>= 0) for Duration
// (> 0).
type RateStep struct {
	Duration time.Duration
	Rate     float64
}

// Schedule is a piecewise-constant arrival rate, such as a diurnal shape.
// The process runs in "operational time": a unit-rate renewal process
// (Poisson, gamma or periodic) is mapped through the inverse of the
// cumulative rate Λ(t), so arrivals are denser where the rate is higher and
// a step of rate 0 has none. With Repeat the steps cycle forever; without
// it the process ends after the last step.
type Schedule struct {
	Steps  []RateStep
	Repeat bool
}

// Validate reports every problem with the schedule.
func (s Schedule) Validate() error {
	var errs []error
	positive := false
	for i, st := range s.Steps {
		if st.Duration <= 0 {
			errs = append(errs, fmt.Errorf("workload: Schedule.Steps[%d].Duration must be > 0, got %v", i, st.Duration))
		}
		if !(st.Rate >= 0) || math.IsInf(st.Rate, 0) {
			errs = append(errs, fmt.Errorf("workload: Schedule.Steps[%d].Rate must be >= 0 and finite, got %v", i, st.Rate))
		}
		positive = positive || st.Rate > 0 && st.Duration > 0
	}
	if len(s.Steps) > 0 && !positive {
		errs = append(errs, errors.New("workload: Schedule needs at least one step with Rate > 0"))
	}
	return errors.Join(errs...)
}

// MeanRate is the time-weighted mean rate of one pass over the steps.
func (s Schedule) MeanRate() float64 {
	var work, span float64
	for _, st := range s.Steps {
		work += st.Rate * st.Duration.Seconds()
		span += st.Duration.Seconds()
	}
	if span == 0 {
		return 0
	}
	return work / span
}

// span is the length of one pass over the steps.
func (s Schedule) span() time.Duration {
	var d time.Duration
	for _, st := range s.Steps {
		d += st.Duration
	}
	return d
}

func (s Schedule) String() string {
	var b strings.Builder
	b.WriteString("schedule[")
	for i, st := range s.Steps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%v@%g", st.Duration, st.Rate)
	}
	b.WriteByte(']')
	if s.Repeat {
		b.WriteString(" repeated")
	}
	return b.String()
}

// Diurnal returns a repeating schedule of steps equal pieces over period
// whose rate follows a sinusoid with the given mean (requests/s) and
// peak-to-trough ratio (>= 1): the trough is at the start of the period
// (night), the peak at its middle (working hours).
func Diurnal(period time.Duration, steps int, mean, peakToTrough float64) Schedule {
	if steps <= 0 || period <= 0 {
		return Schedule{}
	}
	amp := (peakToTrough - 1) / (peakToTrough + 1)
	s := Schedule{Repeat: true, Steps: make([]RateStep, steps)}
	piece := period / time.Duration(steps)
	for j := range s.Steps {
		phase := 2 * math.Pi * (float64(j) + 0.5) / float64(steps)
		s.Steps[j] = RateStep{Duration: piece, Rate: mean * (1 - amp*math.Cos(phase))}
	}
	return s
}

// scheduleClock maps cumulative unit-rate time to seconds through the
// inverse of Λ(t), walking forward only (the process is monotone).
type scheduleClock struct {
	s      Schedule
	step   int     // current step index
	u0, t0 float64 // Λ and t (seconds) at the start of the current step
	done   bool    // past the end of a non-repeating schedule
}

// at returns t with Λ(t) = u, or false if u lies past a non-repeating end.
func (c *scheduleClock) at(u float64) (float64, bool) {
	for !c.done {
		st := c.s.Steps[c.step]
		dur := st.Duration.Seconds()
		end := c.u0 + st.Rate*dur
		if st.Rate > 0 && u <= end {
			return c.t0 + (u-c.u0)/st.Rate, true
		}
		c.u0, c.t0 = end, c.t0+dur
		c.step++
		if c.step == len(c.s.Steps) {
			c.done = !c.s.Repeat
			c.step = 0
		}
	}
	return 0, false
}
