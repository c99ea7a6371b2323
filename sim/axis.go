package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/servesim/servesim/workload"
)

// Axis is what a sweep's load measures: an open-loop arrival rate
// (vLLM's bench serve --request-rate) or a population of closed-loop
// clients (--max-concurrency with an infinite rate: each client sends its
// next request the instant its last one ends). The zero value is Rate.
type Axis int

const (
	Rate        Axis = iota // Point.Load is requests/s
	Concurrency             // Point.Load is a whole number of clients
)

func (a Axis) String() string {
	if a == Concurrency {
		return "concurrency"
	}
	return "rate"
}

// Unit labels a load on the axis: "req/s" or "clients".
func (a Axis) Unit() string {
	if a == Concurrency {
		return "clients"
	}
	return "req/s"
}

// Clients is the Workload of the Concurrency axis: load closed-loop clients
// with zero think time and the given lengths, each sending for a year of
// simulated time (a sweep's runs stop at their window's end long before).
// With N clients, N requests are always in flight: the same run as an
// infinite rate under Config.MaxConcurrency = N.
func Clients(lengths workload.Joint) Workload {
	return func(load float64, seed uint64) (workload.Source, error) {
		n := int(load)
		if float64(n) != load || n < 1 {
			return nil, fmt.Errorf("sim: the Concurrency axis needs a whole number of clients, got %v", load)
		}
		return workload.NewClients(workload.Clients{Seed: seed, Clients: n, Duration: 365 * 24 * time.Hour, Lengths: lengths})
	}
}

// gridLoad puts a load on the axis: a whole number of clients, at least
// one, on the Concurrency axis; the load itself on the Rate axis.
func (a Axis) gridLoad(l float64) float64 {
	if a == Concurrency {
		return max(1, math.Round(l))
	}
	return l
}

// validLoad reports whether l can be a load on the axis.
func (a Axis) validLoad(l float64) bool {
	if !(l > 0) || math.IsInf(l, 0) {
		return false
	}
	return a != Concurrency || l == math.Trunc(l)
}
