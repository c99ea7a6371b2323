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

// FCFS admits in arrival order (vLLM's default "fcfs"), but that a
// preempted request goes back to the front of the queue, ahead of every
// waiting request, the last preempted first, as vLLM's deque prepends it
// (scheduler.py _preempt_request: self.waiting.prepend_request; vLLM
// 28be48fa line 949). The victim is the tail of the running list, the
// last admitted (vLLM's self.running.pop()). Without Remote requests the
// running list is in arrival order, so the victim is the last arrival and
// the preempted requests wait in arrival order; a landed Remote request,
// admitted ahead of the queue, can run after a request that arrived
// before it. The engine applies this order to the FCFS type itself, not
// to a PolicyFunc that compares as FCFS.Less does: Less sees only the
// arrival order.
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
