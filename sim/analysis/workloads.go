package analysis

import (
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/workload"
)

// Workload builds the request source of one run at an offered load (in
// requests per second, or clients on the Concurrency axis) from a
// replication's seed. For common random numbers across loads, build every
// load's source from the same seed (workload's arrival processes scale
// unit-rate gaps by the rate, so the same seed at 2λ gives the same
// requests at half the instants).
//
// The built-in workloads are data (PoissonWorkload, SyntheticWorkload,
// ClassMixWorkload, ClientsWorkload, TraceWorkload): they print themselves
// and package scenario stores them, so a sweep or a card that uses one can
// be rerun. WorkloadFunc adapts a function, the escape hatch; a card of a
// sweep driven by one says it cannot be rerun.
type Workload interface {
	Source(load float64, seed uint64) (workload.Source, error)
}

// WorkloadFunc is a Workload of a function. It is not data.
type WorkloadFunc func(load float64, seed uint64) (workload.Source, error)

// Source calls f.
func (f WorkloadFunc) Source(load float64, seed uint64) (workload.Source, error) {
	return f(load, seed)
}

// year bounds the built-in open-loop sources: a sweep's runs stop at their
// window's end (Horizon + Drain) long before.
const year = 365 * 24 * time.Hour

// PoissonWorkload is open-loop Poisson arrivals at the offered rate, each
// request's lengths drawn from Lengths.
type PoissonWorkload struct {
	Lengths workload.Joint
}

// Poisson is the PoissonWorkload of the given lengths
// (workload.Fixed(2000, 200) for the chapter's operating point).
func Poisson(lengths workload.Joint) PoissonWorkload { return PoissonWorkload{Lengths: lengths} }

// Source is the Poisson source at rate from seed.
func (p PoissonWorkload) Source(rate float64, seed uint64) (workload.Source, error) {
	return workload.NewSynthetic(workload.Synthetic{Seed: seed, Duration: year, Arrival: workload.Arrival{Rate: rate}, Lengths: p.Lengths})
}

func (p PoissonWorkload) String() string {
	return fmt.Sprintf("open-loop Poisson arrivals at the offered rate; lengths %v", p.Lengths)
}

// SyntheticWorkload is any synthetic workload (arrival process,
// burstiness, lengths, prefixes, class) at the offered rate: Spec with its
// Seed and Arrival.Rate set per run, and its Duration a year unless
// given.
type SyntheticWorkload struct {
	Spec workload.Synthetic
}

// Source is Spec at rate from seed.
func (s SyntheticWorkload) Source(rate float64, seed uint64) (workload.Source, error) {
	spec := s.Spec
	spec.Seed, spec.Arrival.Rate = seed, rate
	if spec.Duration == 0 && spec.Count == 0 {
		spec.Duration = year
	}
	return workload.NewSynthetic(spec)
}

func (s SyntheticWorkload) String() string {
	return fmt.Sprintf("synthetic at the offered rate: %v arrivals, lengths %v, prefixes: %v", s.Spec.Arrival.Process, s.Spec.Lengths, s.Spec.Prefix)
}

// ClientsWorkload is the Concurrency axis's workload: load closed-loop
// clients with zero think time, each sending for a year of simulated
// time. With N clients, N requests are always in flight: the same run as
// an infinite rate under sim.Config.MaxConcurrency = N.
type ClientsWorkload struct {
	Lengths workload.Joint
}

// Clients is the ClientsWorkload of the given lengths.
func Clients(lengths workload.Joint) ClientsWorkload { return ClientsWorkload{Lengths: lengths} }

// Source is load clients (a whole number) from seed.
func (c ClientsWorkload) Source(load float64, seed uint64) (workload.Source, error) {
	n := int(load)
	if float64(n) != load || n < 1 {
		return nil, fmt.Errorf("sim: the Concurrency axis needs a whole number of clients, got %v", load)
	}
	return workload.NewClients(workload.Clients{Seed: seed, Clients: n, Duration: year, Lengths: c.Lengths})
}

func (c ClientsWorkload) String() string {
	return fmt.Sprintf("closed-loop clients with zero think time, as many as the load; lengths %v", c.Lengths)
}

// TraceWorkload replays a trace file scaled to the offered rate (its
// Config.Transform.TargetRate set per run; the seed is not used: a trace
// is one sample).
type TraceWorkload struct {
	Path   string
	Config workload.TraceConfig
}

// Source opens the trace at rate.
func (t TraceWorkload) Source(rate float64, _ uint64) (workload.Source, error) {
	cfg := t.Config
	cfg.Transform.TargetRate = rate
	return workload.OpenReplay(t.Path, cfg)
}

func (t TraceWorkload) String() string {
	return fmt.Sprintf("trace %s replayed at the offered rate (%v)", t.Path, t.Config.Conversations)
}

// Part is one request class of a ClassMix workload.
type Part struct {
	Class   string  // the requests' class (sim.Config.Classes names its SLO)
	Share   float64 // of the offered rate (> 0); the shares need not sum to 1
	Lengths workload.Joint
	Prefix  workload.PrefixReuse
}

// ClassMixWorkload is open-loop Poisson arrivals of several classes: at
// offered rate λ, part i arrives as its own Poisson process of rate
// λ·Share_i/ΣShare (a Poisson process thinned by class is Poisson per
// class), with its own lengths and prefixes, on its own random streams,
// merged by arrival (workload.Merge).
type ClassMixWorkload struct {
	Parts []Part
}

// ClassMix is the ClassMixWorkload of parts.
func ClassMix(parts ...Part) ClassMixWorkload { return ClassMixWorkload{Parts: parts} }

// Source is the mix at rate from seed.
func (c ClassMixWorkload) Source(rate float64, seed uint64) (workload.Source, error) {
	if len(c.Parts) == 0 {
		return nil, fmt.Errorf("sim: ClassMix needs at least one Part")
	}
	total := 0.0
	for i, p := range c.Parts {
		if !(p.Share > 0) || math.IsInf(p.Share, 0) {
			return nil, fmt.Errorf("sim: ClassMix Part %d (%q) needs a positive finite Share, got %v", i, p.Class, p.Share)
		}
		total += p.Share
	}
	srcs := make([]workload.Source, len(c.Parts))
	for i, p := range c.Parts {
		g, err := workload.NewSynthetic(workload.Synthetic{
			Seed: workload.NewStream(seed, fmt.Sprintf("sim/classmix/%d", i)).Uint64(), Duration: year,
			Arrival: workload.Arrival{Rate: rate * p.Share / total}, Lengths: p.Lengths, Prefix: p.Prefix, Class: p.Class,
		})
		if err != nil {
			return nil, fmt.Errorf("sim: ClassMix Part %d (%q): %w", i, p.Class, err)
		}
		srcs[i] = g
	}
	return workload.Merge(srcs...)
}

func (c ClassMixWorkload) String() string {
	s := "open-loop Poisson arrivals of classes, thinned by share:"
	for _, p := range c.Parts {
		s += fmt.Sprintf(" %q (share %g, lengths %v)", p.Class, p.Share, p.Lengths)
	}
	return s
}
