package sim

import "time"

// Status is a request's terminal state. Every request that arrives ends in
// exactly one.
type Status uint8

const (
	StatusOK         Status = iota // every output token emitted
	StatusRejected                 // refused by the replica at once
	StatusTimedOut                 // abandoned at the client deadline
	StatusErrored                  // failed in the server
	StatusUnfinished               // still in flight when the run stopped
	numStatus
)

var statusNames = [...]string{"ok", "rejected", "timed_out", "errored", "unfinished"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// Never marks an instant that did not happen (no first token, say).
const Never = time.Duration(-1)

// Unrouted is the Record.Replica of a request no replica received: one
// the trace recorded as failed ends at its arrival, outside every
// replica's share of the run.
const Unrouted = -1

// Record is one request's account, handed to the Observer when the request
// ends. Instants are measured from the start of the run.
type Record struct {
	ID           uint64
	Conversation uint64
	Turn         int
	Class        string
	Replica      int  // the replica the router sent it to (0 for a single replica); Unrouted if none
	Measured     bool // arrived inside the measurement window

	// Scheduled is when the workload issued it; Arrival when it reached
	// the server: later only when it waited client-side for a slot
	// (Config.MaxConcurrency). TTFT and E2E count from Arrival. A request
	// still waiting for a slot when the run stopped was never Sent (its
	// Arrival stays Scheduled), nor was one the trace recorded as failed.
	Scheduled      time.Duration
	Arrival        time.Duration
	Sent           bool
	FirstScheduled time.Duration // Never if never scheduled
	FirstToken     time.Duration // Never if no token was emitted
	Finish         time.Duration // instant of the terminal event

	Input, Output int // requested lengths in tokens
	Emitted       int // output tokens emitted
	Cached        int // prompt tokens served from a prefix cache
	Preemptions   int

	LastToken time.Duration // instant of the last token; Never if none
	MaxITL    time.Duration // largest inter-token gap, per chunk (0 with < 2 tokens)
	// MaxTokenITL is the largest retokenized gap: a chunk's gap over its
	// tokens. It is MaxITL without speculative decoding.
	MaxTokenITL time.Duration
	ITLOver     int // gaps above the SLO's ITL bound, in the series it gates
	// Drafted and Accepted are the draft tokens its decode steps verified
	// and those accepted (speculative decoding; Drafted − Accepted were
	// rejected). They are not output: Emitted counts what the user got.
	Drafted, Accepted int
	// Tokens holds every token's emit instant when Config.KeepTokens is set.
	Tokens []time.Duration

	Status Status
	Reason string // why a request was rejected or errored
}

// TTFT is the time to first token, or Never.
func (r *Record) TTFT() time.Duration {
	if r.FirstToken == Never {
		return Never
	}
	return r.FirstToken - r.Arrival
}

// E2E is arrival to last token, or Never.
func (r *Record) E2E() time.Duration {
	if r.LastToken == Never {
		return Never
	}
	return r.LastToken - r.Arrival
}

// TPOT is vLLM's time per output token, (E2E - TTFT) / (tokens - 1), or
// Never with fewer than two tokens.
func (r *Record) TPOT() time.Duration {
	if r.Emitted < 2 {
		return Never
	}
	return (r.LastToken - r.FirstToken) / time.Duration(r.Emitted-1)
}

// QueueDelay is arrival to first scheduled, or Never.
func (r *Record) QueueDelay() time.Duration {
	if r.FirstScheduled == Never {
		return Never
	}
	return r.FirstScheduled - r.Arrival
}

// Observer receives each request's record once, when it ends (measured or
// not; see Record.Measured). The pointer is valid only during the call.
type Observer interface {
	Observe(r *Record)
}

// ObserverFunc adapts a function to an Observer.
type ObserverFunc func(r *Record)

// Observe calls f.
func (f ObserverFunc) Observe(r *Record) { f(r) }
