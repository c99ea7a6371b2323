package sim

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/sim/stats"
)

// Class is a class of requests with its own SLO: interactive chat beside
// batch summarisation, say. A request belongs to the class whose Name is
// its workload.Request.Class; a request with no class, or one no class
// names, belongs to the default class, whose SLO is Config.SLO.
type Class struct {
	Name string
	// SLO bounds the class's requests. A zero bound inherits Config.SLO's;
	// a class must set at least one bound of its own.
	SLO SLO
	// Priority is added to each of its requests' own priority (usually
	// 0): lower is served first under engine.Priority.
	Priority int
}

// DefaultClass names the default class in summaries.
const DefaultClass = "default"

// validateClasses refuses duplicate names, empty names, a class without a
// bound of its own, and negative bounds.
func validateClasses(cs []Class) error {
	var errs []error
	seen := map[string]int{}
	for i, c := range cs {
		switch {
		case c.Name == "":
			errs = append(errs, fmt.Errorf("sim: Classes[%d].Name is empty (requests without a class belong to the default class)", i))
		case c.Name == DefaultClass:
			errs = append(errs, fmt.Errorf("sim: Classes[%d].Name %q is the default class's: it is Config.SLO's", i, c.Name))
		}
		if j, dup := seen[c.Name]; dup {
			errs = append(errs, fmt.Errorf("sim: Classes[%d].Name %q is also Classes[%d]'s", i, c.Name, j))
		}
		seen[c.Name] = i
		if c.SLO == (SLO{}) {
			errs = append(errs, fmt.Errorf("sim: Classes[%d] (%q) sets no SLO bound of its own", i, c.Name))
		}
		if err := c.SLO.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sim: Classes[%d] (%q): %w", i, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// inherit fills a class's zero bounds from the default SLO (defaults
// filled).
func (s SLO) inherit(base SLO) SLO {
	if s.TTFT == 0 {
		s.TTFT = base.TTFT
	}
	if s.ITL == 0 {
		s.ITL = base.ITL
	}
	if s.TPOT == 0 {
		s.TPOT = base.TPOT
	}
	if s.E2E == 0 {
		s.E2E = base.E2E
	}
	if s.ITLSeries == PerChunk {
		s.ITLSeries = base.ITLSeries
	}
	return s
}

// classes is the runner's view of Config.Classes: each class's effective
// SLO and collector, the default class last.
type classes struct {
	names map[string]int
	list  []classState
}

type classState struct {
	name     string
	slo      SLO
	priority int
	col      collector
}

func newClasses(cs []Class, base SLO) classes {
	out := classes{names: make(map[string]int, len(cs))}
	for i, c := range cs {
		out.names[c.Name] = i
		st := classState{name: c.Name, slo: c.SLO.inherit(base), priority: c.Priority}
		st.col.slo = st.slo
		out.list = append(out.list, st)
	}
	def := classState{name: DefaultClass, slo: base}
	def.col.slo = base
	out.list = append(out.list, def)
	return out
}

// of is the index of a request's class.
func (c *classes) of(name string) int {
	if len(c.names) == 0 {
		return 0 // only the default class
	}
	if i, ok := c.names[name]; ok {
		return i
	}
	return len(c.list) - 1
}

// ClassSummary is one class's share of a run's measured requests, judged
// by its own SLO.
type ClassSummary struct {
	Name          string
	SLO           SLO
	Offered, Good int
	Goodput       float64 // good requests per second of window
	Attainment    float64 // Good / Offered; NaN as Summary.Attainment is
	Misses        Misses  // exclusive, in the order of Summary.Misses
	TTFT, TPOT    stats.Dist
	ITL, E2E      stats.Dist
	TTFTOffered   stats.Dist // over every measured request of the class
	Samples       Samples
}

// Class returns the summary of the class named name (DefaultClass for
// the default), or nil when the run had no such class.
func (s *Summary) Class(name string) *ClassSummary {
	for i := range s.Classes {
		if s.Classes[i].Name == name {
			return &s.Classes[i]
		}
	}
	return nil
}

// summaries finishes each class's collector over the window.
func (c *classes) summaries(window time.Duration, m stats.Method) []ClassSummary {
	out := make([]ClassSummary, len(c.list))
	for i := range c.list {
		st := &c.list[i]
		s := st.col.finish(window, 0, m)
		out[i] = ClassSummary{Name: st.name, SLO: st.slo, Offered: s.Offered, Good: s.Good, Goodput: s.Goodput,
			Attainment: s.Attainment, Misses: s.Misses, TTFT: s.TTFT, TPOT: s.TPOT, ITL: s.ITL, E2E: s.E2E,
			TTFTOffered: s.TTFTOffered, Samples: s.Samples}
	}
	return out
}

// deadline is when a request of class i arriving at t is due its first
// token: t + the class's TTFT bound (none when unbounded).
func (r *runner) deadline(i int, t time.Duration) time.Duration {
	b := r.bounds[i].ttft
	if b >= Unbounded || t > math.MaxInt64-b {
		return 0
	}
	return t + b
}
