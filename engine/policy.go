package engine

import "time"

// Policy orders the waiting queue: admission takes waiting requests in this
// order and stops at the first that does not fit. It also chooses the
// preemption victim: the running request the policy would admit last (see
// each policy).
type Policy interface {
	// Less reports whether a should be admitted before b.
	Less(a, b Queued) bool
}

// Queued is what a Policy may look at: what real schedulers order by.
type Queued struct {
	Priority int    // Request.Priority, lower first under Priority
	Seq      uint64 // order of Add calls: 0, 1, 2, …
	Class    int    // Request.Class, the driver's class index
	Arrival  time.Duration
	Prompt   int // prompt tokens
	// Output is the output length when the workload declares it known (an
	// oracle: Request.OutputKnown), else 0.
	Output int
	// Deadline is the instant the request's first token is due
	// (Request.Deadline); 0 when it has none.
	Deadline time.Duration
}

// FCFS admits in arrival order (vLLM's default "fcfs"). A preempted request
// keeps its place, so it goes back to the front of the queue ahead of every
// later arrival, as in vLLM (prepend on preemption); the victim is the last
// arrival, the tail of the running list.
type FCFS struct{}

// Less orders by arrival.
func (FCFS) Less(a, b Queued) bool { return a.Seq < b.Seq }

// Priority admits the lowest Priority value first, ties in arrival order
// (vLLM's "priority" scheduling policy); the victim is the running request
// with the highest value, the latest among equals.
type Priority struct{}

// Less orders by (Priority, arrival).
func (Priority) Less(a, b Queued) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}

// ShortestPrompt admits the shortest prompt first, ties in arrival order:
// shortest-job-first by the one length a scheduler knows on arrival, as in
// the SJF schedulers of the literature (e.g. FastServe's and Llumnix's
// baselines; no mainline engine's default). It minimises mean waiting time
// when prefill dominates, at the price of starving long prompts under
// sustained load. The victim is the running request with the longest
// prompt, the latest among equals.
type ShortestPrompt struct{}

// Less orders by (prompt length, arrival).
func (ShortestPrompt) Less(a, b Queued) bool {
	if a.Prompt != b.Prompt {
		return a.Prompt < b.Prompt
	}
	return a.Seq < b.Seq
}

// EarliestDeadline admits the request whose first token is due first,
// ties (and requests without a deadline, last) in arrival order: earliest-
// deadline-first, as deadline-aware LLM schedulers do for TTFT SLOs. The
// victim is the running request due last.
type EarliestDeadline struct{}

// Less orders by (deadline, arrival), no deadline last.
func (EarliestDeadline) Less(a, b Queued) bool {
	da, db := a.Deadline, b.Deadline
	if da == 0 {
		da = 1<<63 - 1
	}
	if db == 0 {
		db = 1<<63 - 1
	}
	if da != db {
		return da < db
	}
	return a.Seq < b.Seq
}

// PolicyFunc adapts a function to a Policy.
type PolicyFunc func(a, b Queued) bool

// Less calls f.
func (f PolicyFunc) Less(a, b Queued) bool { return f(a, b) }
