package workload

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Think is a client's think time between an answer and its next request:
// Mean (>= 0) every time, or exponentially distributed with that mean when
// Exponential is set. The zero value is no think time.
type Think struct {
	Mean        time.Duration
	Exponential bool
}

// Validate reports a negative mean.
func (t Think) Validate() error {
	if t.Mean < 0 {
		return fmt.Errorf("workload: Think.Mean must be >= 0, got %v", t.Mean)
	}
	return nil
}

func (t Think) String() string {
	if t.Exponential {
		return fmt.Sprintf("exponential think time, mean %v", t.Mean)
	}
	return fmt.Sprintf("think time %v", t.Mean)
}

func (t Think) sample(r *rand.Rand) time.Duration {
	if !t.Exponential || t.Mean == 0 {
		return t.Mean
	}
	return seconds(r.ExpFloat64() * t.Mean.Seconds())
}

// LoopOf labels a source: ClosedLoop if it takes Feedback, else OpenLoop.
func LoopOf(s Source) Loop {
	if _, ok := s.(Feedback); ok {
		return ClosedLoop
	}
	return OpenLoop
}
