package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/workload"
)

// Part is one request class of a ClassMix workload.
type Part struct {
	Class   string  // the requests' class (Config.Classes names its SLO)
	Share   float64 // of the offered rate (> 0); the shares need not sum to 1
	Lengths workload.Joint
	Prefix  workload.PrefixReuse
}

// ClassMix is the Workload of open-loop Poisson arrivals of several classes:
// at offered rate λ, part i arrives as its own Poisson process of rate
// λ·Share_i/ΣShare (a Poisson process thinned by class is Poisson per
// class), with its own lengths and prefixes, on its own random streams,
// merged by arrival (workload.Merge).
func ClassMix(parts ...Part) Workload {
	return func(rate float64, seed uint64) (workload.Source, error) {
		if len(parts) == 0 {
			return nil, fmt.Errorf("sim: ClassMix needs at least one Part")
		}
		total := 0.0
		for i, p := range parts {
			if !(p.Share > 0) || math.IsInf(p.Share, 0) {
				return nil, fmt.Errorf("sim: ClassMix Part %d (%q) needs a positive finite Share, got %v", i, p.Class, p.Share)
			}
			total += p.Share
		}
		srcs := make([]workload.Source, len(parts))
		for i, p := range parts {
			g, err := workload.NewSynthetic(workload.Synthetic{
				Seed: workload.NewStream(seed, fmt.Sprintf("sim/classmix/%d", i)).Uint64(), Duration: 365 * 24 * time.Hour,
				Arrival: workload.Arrival{Rate: rate * p.Share / total}, Lengths: p.Lengths, Prefix: p.Prefix, Class: p.Class,
			})
			if err != nil {
				return nil, fmt.Errorf("sim: ClassMix Part %d (%q): %w", i, p.Class, err)
			}
			srcs[i] = g
		}
		return workload.Merge(srcs...)
	}
}

// MetricClassAttainment is a class's own SLO attainment (NaN in a run
// without the class, or that measured none of its requests).
func MetricClassAttainment(class string) Metric {
	return Metric{Name: fmt.Sprintf("SLO attainment of class %q", class), Of: func(s *Summary) float64 {
		if c := s.Class(class); c != nil {
			return c.Attainment
		}
		return math.NaN()
	}}
}

// MetricClassTTFTP99 is a class's TTFT p99, ms.
func MetricClassTTFTP99(class string) Metric {
	return Metric{Name: fmt.Sprintf("TTFT p99 of class %q (ms)", class), LowerIsBetter: true, Of: func(s *Summary) float64 {
		if c := s.Class(class); c != nil {
			return c.TTFT.P99
		}
		return math.NaN()
	}}
}
