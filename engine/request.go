package engine

import (
	"errors"
	"time"
	"unsafe"

	"github.com/servesim/servesim/internal/ascend"
)

// Request is what the driver hands the engine.
type Request struct {
	// Ref is the driver's own reference for the request (an index into its
	// records, say); the engine reports it back in every event and looks
	// requests up by it. It must be unique among requests in the engine.
	Ref int32
	// Arrival is the instant the request reached the replica.
	Arrival time.Duration
	// Input and Output are the prompt and response lengths in tokens
	// (both > 0, Input < MaxModelLen). A request whose Input + Output
	// exceeds Config.MaxModelLen emits MaxModelLen − Input tokens
	// (ServedOutput): it is length-capped.
	Input, Output int
	// Priority is read by the Priority policy: lower first.
	Priority int
	// Class is the driver's class index, for a policy that orders by it.
	Class int
	// OutputKnown says the workload declares Output known in advance (an
	// oracle): policies see it only then (Queued.Output).
	OutputKnown bool
	// PrefixCoversOutput says Prefix goes on past the prompt: its ids
	// cover the request's whole sequence, the prompt followed by its
	// output, one per PrefixBlockTokens tokens (a unit that straddles the
	// prompt's end has one id for both parts). The engine then caches a
	// full block of output as shared content once its tokens are computed,
	// as vLLM hashes and caches generated tokens, and a later request
	// whose prompt resends this one's prompt and answer (a conversation's
	// next turn, with the same ids) finds those blocks. False (the zero
	// value): ids past the prompt's full units are ignored and output
	// blocks are the request's own. (Declared beside OutputKnown, whose
	// padding it fills: a Request is copied once a request.)
	PrefixCoversOutput bool
	// Remote says another replica prefilled the request: it computed the
	// prompt's KV and sampled the first output token. The engine reserves
	// blocks for the prompt when its waiting queue reaches it, the driver
	// moves the KV (Plan.Reserved says how many tokens) and calls Land; the
	// engine then decodes the remaining ServedOutput−1 tokens. Emits of a
	// Remote request are never First. It needs Config.RemoteKV
	// (ErrRemoteOff otherwise) and ServedOutput >= 2 (ErrRemoteOutput
	// otherwise: nothing would be left to decode). See remote.go.
	Remote bool
	// PrefixTwoRuns is a promise about Prefix's shape (the name is its
	// first kind's). TwoRuns promises at most two runs of consecutive
	// ids, each one more than the one before (a synthetic prompt's
	// shared ids, then its own fresh ones): the engine finds where the
	// first run ends by bisection, not by reading every id, and ids that
	// fail a cheap check of the promise (the last id at its place in its
	// run) are read one by one. Rising promises that each id is more
	// than the one before (a conversation's turn): each run's end is
	// found by bisection, and the ids are read one by one when one that
	// bisection reads does not rise. Only this module's sources can make
	// a promise (the zero value, the only one another caller can write,
	// promises nothing): a broken promise that passed the check would
	// change which blocks count as cached. (Declared beside Remote,
	// whose padding it fills.)
	PrefixTwoRuns ascend.Promise
	// Deadline is the instant the first token is due, for
	// EarliestDeadline; 0 means none. It must not precede Arrival.
	Deadline time.Duration
	// Prefix holds one hash id per PrefixBlockTokens prompt tokens (or of
	// prompt and output, with PrefixCoversOutput), equal
	// ids meaning identical content (workload.Request.PrefixHashes); the
	// prefix cache keys on them. The engine does not retain the slice
	// beyond the request's life and never modifies it.
	Prefix            []uint64
	PrefixBlockTokens int
}

// Reasons a request is rejected at once by Add. Branch on them with
// errors.Is.
var (
	// ErrPromptTooLong: the prompt has MaxModelLen tokens or more, so no
	// output token fits after it (vLLM's front end refuses it,
	// InputProcessor._validate_prompt_len). It is the only request the
	// engine refuses for its size with chunked prefill on: a longer output
	// is cut at MaxModelLen.
	ErrPromptTooLong = errors.New("engine: prompt too long (Input >= MaxModelLen leaves no room for an output token)")
	// ErrNeverFits is ErrPromptTooLong.
	//
	// Deprecated: a request whose prompt + output needed more KV than the
	// pool used to be refused with it; it is now served and cut at
	// MaxModelLen (at most the pool), as vLLM serves it, and only a
	// prompt of MaxModelLen tokens or more is refused for its size.
	ErrNeverFits = ErrPromptTooLong
	// ErrTooLong is ErrPromptTooLong.
	//
	// Deprecated: a request longer than MaxTokens used to be refused with
	// it; MaxModelLen <= MaxTokens now bounds every request (a longer
	// output is cut there, a longer prompt refused).
	ErrTooLong = ErrPromptTooLong
	// ErrExceedsBudget: without chunked prefill, a request whose prompt +
	// output - 1 tokens (its output cut at MaxModelLen) exceed MaxBatchedTokens could not be (re)computed
	// in one step.
	ErrExceedsBudget = errors.New("engine: request exceeds MaxBatchedTokens with chunked prefill disabled")
	// ErrQueueFull: the waiting queue held MaxWaiting requests.
	ErrQueueFull = errors.New("engine: waiting queue is full (MaxWaiting)")
	// ErrInvalidRequest: non-positive Input or Output, or a deadline
	// before the arrival.
	ErrInvalidRequest = errors.New("engine: request needs Input > 0, Output > 0 and no Deadline before its Arrival")
	// ErrDuplicateRef: a request with the same Ref is already in the engine.
	ErrDuplicateRef = errors.New("engine: Ref already in use")
	// ErrUnknownRef: Abort named a Ref the engine does not hold.
	ErrUnknownRef = errors.New("engine: no request with that Ref")
)

type phase uint8

const (
	phaseWaiting phase = iota
	phaseRunning
	phaseReserved // a Remote request's blocks reserved, its KV in transfer (remote.go)
	phaseLanded   // a Remote request's KV landed, waiting for admission (remote.go)
)

// seq is the engine's state for one request.
type seq struct {
	req      Request
	order    uint64 // Add order
	known    int    // prompt + tokens emitted: the tokens that exist
	computed int    // tokens in KV
	emitted  int    // output tokens emitted so far
	sched    int    // tokens scheduled in the step in flight; 0 if none
	admitted uint64 // outcomes with steps before the plan that last admitted it, + 1 (Scheduled's Kind)

	// Its KV blocks, block j holding tokens [j·BlockSize, (j+1)·BlockSize):
	// the leading held ones carry content in the prefix cache (ids, nodes
	// of the pool; in a pool kept by runs, runs names them: runpool.go),
	// the anon after them none.
	ids    []int32
	held   int
	runs   *runSeq
	anon   int
	keys   []uint64 // content keys of the leading full blocks, computed on demand
	shared int      // leading blocks of shared content cached as they are computed (prefix.go): keyed, or its prompt's alone when its answer's are cached late (lateCache)
	keyed  int      // leading blocks of shared content: those its keys and runs name as shared (prefix.go)

	lastMove uint64 // the last outcome it emitted in (streak.go)

	// In the decode cohort (cohort.go): its token fields were true when
	// the cohort's clock read t0; its last token is at clock finTick;
	// rank is its running order among the members.
	t0      int
	finTick int
	rank    uint64

	// The narrow fields, together after the words: a seq is 320 bytes (the
	// const below), 5 passes of recycle's zeroing where 384, with
	// padding after each bool and these as ints, took 6 (RunAtlas 4,888 →
	// 4,883 instructions a request, the budget test). Each int32 holds a
	// count bounded by MaxTokens (math.MaxInt32, Config.Validate), by
	// MaxSeqsLimit, or by the requests waiting (2³¹ of them would be 640
	// GiB of seqs), or saturates (preempts).
	heapIdx  int32 // index in the waiting heap, runIdx of its index in the FCFS run, -1 when not waiting
	cached   int32 // prompt tokens found cached at first admission (< Input < MaxModelLen)
	draft    int32 // draft tokens it verifies in the step in flight (speculative; < MaxBatchedTokens)
	look     int32 // tokens beyond computed whose blocks it holds from rejected drafts (at most SpeculativeTokens)
	preempts int32 // times preempted, saturating at math.MaxInt32 (read only as none or some)
	cidx     int32 // its place in the cohort's list (fewer than 2·MaxSeqsLimit + 16: compact)
	// A tier's (tier.go): the leading full blocks offered to it, and
	// while a load is reserved or landed the tokens found in HBM and
	// those it loads (int32: a seq is zeroed at every recycle).
	stored, tierHit, tierLoad int32
	tierNext                  int32  // the next step of the run in flight at which it has a block to offer the tier (storeFrom)
	checkGen                  uint32 // Check's scratch: the generation that last visited
	phase                     phase
	rstate                    uint8 // a Remote request's stage (remote.go); 0 for any other
	checkIn                   uint8 // Check's scratch: where it found the request (1 running, 2 waiting)
	started                   bool
	decoding                  bool // scheduled as a decode (one token after an emitted one)
	aborted                   bool // aborted while in the step in flight
	ownCached                 bool // its own blocks were cached at a preemption
	member                    bool // in the decode cohort
	tierLag                   bool // a member whose store the tier refused: it offers at every step (coStore, tier.go)
}

const _ = uint(320 - unsafe.Sizeof(seq{})) // does not compile if a seq outgrows 320 bytes (recycle's five passes)

func (s *seq) queued() Queued {
	q := Queued{Priority: s.req.Priority, Seq: s.order, Class: s.req.Class, Arrival: s.req.Arrival,
		Prompt: s.req.Input, Deadline: s.req.Deadline}
	if s.req.OutputKnown {
		q.Output = s.req.Output
	}
	return q
}

// left is the work s still asks of the replica, in tokens: its prompt
// tokens not in KV and its output tokens not yet emitted.
func (s *seq) left() int { return max(0, s.req.Input-s.computed) + s.req.Output - s.emitted }
