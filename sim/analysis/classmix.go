package analysis

import (
	"fmt"
	"math"

	"github.com/servesim/servesim/sim"
)

// MetricClassAttainment is a class's own SLO attainment (NaN in a run
// without the class, or that measured none of its requests).
func MetricClassAttainment(class string) Metric {
	return Metric{Name: fmt.Sprintf("SLO attainment of class %q", class), Of: func(s *sim.Summary) float64 {
		if c := s.Class(class); c != nil {
			return c.Attainment
		}
		return math.NaN()
	}}
}

// MetricClassTTFTP99 is a class's TTFT p99, ms.
func MetricClassTTFTP99(class string) Metric {
	return Metric{Name: fmt.Sprintf("TTFT p99 of class %q (ms)", class), LowerIsBetter: true, Of: func(s *sim.Summary) float64 {
		if c := s.Class(class); c != nil {
			return c.TTFT.P99
		}
		return math.NaN()
	}}
}
