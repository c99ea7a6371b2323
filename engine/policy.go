package engine

// Policy orders the waiting queue: admission takes waiting requests in this
// order and stops at the first that does not fit.
type Policy interface {
	// Less reports whether a should be admitted before b.
	Less(a, b Queued) bool
}

// Queued is what a Policy may look at.
type Queued struct {
	Priority int    // Request.Priority, lower first under Priority
	Seq      uint64 // order of Add calls: 0, 1, 2, …
}

// FCFS admits in arrival order. A preempted request keeps its place, so it
// goes back to the front of the queue ahead of every later arrival, as in
// vLLM (prepend on preemption).
type FCFS struct{}

// Less orders by arrival.
func (FCFS) Less(a, b Queued) bool { return a.Seq < b.Seq }

// Priority admits the lowest Priority value first, ties in arrival order
// (vLLM's "priority" scheduling policy).
type Priority struct{}

// Less orders by (Priority, arrival).
func (Priority) Less(a, b Queued) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}

// PolicyFunc adapts a function to a Policy.
type PolicyFunc func(a, b Queued) bool

// Less calls f.
func (f PolicyFunc) Less(a, b Queued) bool { return f(a, b) }
