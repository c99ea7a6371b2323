package workload

import (
	"errors"
	"time"

	"github.com/servesim/servesim/internal/ascend"
)

// Request is one request offered to the serving system.
type Request struct {
	// ID is unique within a stream; sources number requests 0, 1, 2, … in
	// the order they yield them unless a trace says otherwise.
	ID uint64
	// Arrival is the instant the client sends the request, measured from the
	// start of the run.
	Arrival time.Duration
	// InputTokens is the prompt length (> 0); OutputTokens the number of
	// tokens the response will have (> 0 for a request that can succeed).
	InputTokens, OutputTokens int
	// PrefixHashes are block hash ids of the prompt (and of the answer
	// after it, with HashesCoverOutput), one per PrefixBlockTokens tokens,
	// in order; equal ids at equal
	// positions mean an identical prefix block (Mooncake's hash_ids).
	// Nil when the workload says nothing of prefixes.
	PrefixHashes []uint64
	// PrefixBlockTokens is the number of prompt tokens one hash id covers
	// (512 in Mooncake's traces); 0 when PrefixHashes is nil.
	PrefixBlockTokens int
	// Conversation groups the turns of one multi-turn conversation; Turn is
	// the turn's index within it, starting at 0. Both are 0 for single-turn
	// workloads.
	Conversation uint64
	Turn         int
	// Class is an optional label (a tenant, a priority class); "" if none.
	Class string
	// Priority orders requests under a priority policy: lower is served
	// first, as in vLLM. 0 by default.
	Priority int
	// Failed marks a request the trace recorded as failed (BurstGPT's
	// zero-token responses); a simulator reports it as errored.
	Failed bool
	// HashesCoverOutput says PrefixHashes go on past the prompt over the
	// response: one id per PrefixBlockTokens tokens of the prompt followed
	// by the OutputTokens of the answer (a block straddling the prompt's
	// end has one id for both), as vLLM hashes generated tokens. A
	// conversation's next turn that resends this answer with the same ids
	// then finds it in the prefix cache (Conversations sets it). False:
	// the ids are the prompt's.
	HashesCoverOutput bool
	// PrefixTwoRuns is a promise about PrefixHashes' shape, which lets a
	// simulator find where its runs of consecutive ids end without
	// reading every id (engine.Request.PrefixTwoRuns; the name is the
	// first kind's). Synthetic's prompts promise at most two runs, each
	// id one more than the one before: their group's shared ids, then
	// their own fresh ones. Conversations' turns promise that their ids
	// rise. A JSON Lines trace that maps no column but the arrival, the
	// token counts and the hash ids (Mooncake's) promises at most two
	// runs for a row whose ids are so. Only this module's sources can make a promise; the zero
	// value, the only one another source can write, promises nothing. A
	// source that changes a request's ids must set it to the zero value.
	PrefixTwoRuns ascend.Promise
}

// Source yields requests one at a time.
//
// Open-loop sources yield in non-decreasing Arrival order and return io.EOF
// after the last request. A source never holds a whole trace in memory.
type Source interface {
	Next() (Request, error)
}

// ErrWaiting is returned by a closed-loop source's Next when no request can be
// issued until a request in flight finishes (see Feedback).
var ErrWaiting = errors.New("workload: waiting for a request to finish")

// Feedback is implemented by closed-loop sources (a fixed population of
// clients, multi-turn conversations whose next turn follows the answer).
//
// A driver that finds a Source implementing Feedback calls Finished each time
// one of the source's requests reaches a terminal state, then drains Next
// until ErrWaiting (or io.EOF). Requests yielded this way may come out of
// arrival order, but none arrives before the instant of the Finished call
// that released it; the driver orders them.
type Feedback interface {
	Finished(id uint64, at time.Duration, ok bool)
}

// Paced is implemented by a closed-loop source whose requests keep
// instants of their own unless feedback moves them (ConversationTrace: a
// trace's rows arrive at their recorded instants, but a turn waits for its
// predecessor's answer). Such a source can be pulled as lazily as an
// open-loop one, so that a driver holds only what is due next:
//   - Next yields the requests that keep their own instants, in
//     non-decreasing arrival order. Call it at the start and at the
//     arrival of each request it yielded, as for an open-loop source;
//     after ErrWaiting, again after the next Finished; io.EOF ends it.
//   - Released yields, earliest first, the requests whose instants
//     feedback set, each arriving at or after the Finished call that set
//     it. Drain it after every Next and every Finished.
//
// A driver that treats a Paced source as any Feedback source (draining
// Next to ErrWaiting after each Finished) is also correct: Next yields the
// released requests first. It then holds every request that does not wait
// for feedback from the start.
type Paced interface {
	Feedback
	Released() (Request, bool)
}

// Loop says whether a workload is open- or closed-loop.
type Loop int

const (
	OpenLoop   Loop = iota // arrivals are externally driven
	ClosedLoop             // a fixed population waits for answers
)

func (l Loop) String() string {
	if l == ClosedLoop {
		return "closed-loop"
	}
	return "open-loop"
}
