package analysis

import (
	"math"
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
