package sim

import (
	"iter"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
	"github.com/servesim/servesim/sim/stats"
)

// Status is a request's terminal state. Every request that arrives ends in
// exactly one.
type Status uint8

const (
	StatusOK         Status = iota // every output token emitted, or cut at MaxModelLen (Record.LengthCapped)
	StatusRejected                 // refused by the replica at once
	StatusTimedOut                 // abandoned at the client deadline
	StatusErrored                  // failed in the server
	StatusUnfinished               // still in flight when the run stopped
	// The gateway's (Config.Gateway): none reached a replica.
	StatusThrottled // refused by the gateway's token bucket at once
	StatusShed      // shed by the gateway at once: every replica saturated
	StatusQueueFull // refused by the gateway at once: every replica at its limit, the gateway's queue full
	StatusExpired   // waited at the gateway for its time-to-live
	numStatus
)

var statusNames = [...]string{"ok", "rejected", "timed_out", "errored", "unfinished", "throttled", "shed", "queue_full", "expired"}

// Gateway reports whether the gateway ended the request (throttled,
// shed, refused for a full queue, or expired).
func (s Status) Gateway() bool { return s >= StatusThrottled && s < numStatus }

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
	Remote       bool // a prefill pool prefilled it (see PrefillReplica)

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
	// GatewayWait is how long it waited at the gateway's queue
	// (Gateway.Limit) before a replica took it, or until it ended there;
	// 0 without a gateway queue.
	GatewayWait time.Duration
	// Remote (above) says a disaggregated fleet's prefill pool
	// prefilled it (Fleet.Prefill): PrefillReplica is the fleet's index of that
	// replica, Replica its decode replica (the one the fleet's router
	// chose; unless it ended during its prefill, when it is the prefill
	// replica). KVWait is how long its decode replica took to reserve
	// blocks for its prompt after the prefill ended, Transfer how long its
	// KV then took to land; both are in the gap between its first and
	// second tokens. All zero for a request its own replica prefilled.
	PrefillReplica   int
	KVWait, Transfer time.Duration
	// CachedHost and CachedShared are the prompt tokens it loaded from
	// its replica's host tier and from the shared store before its first
	// scheduling (Fleet.HostTier, Fleet.SharedStore), after the Cached
	// ones its replica's HBM held; TierLoad is how long its loads before
	// its first token took, from the plan that reserved each to its
	// landing: time inside its TTFT when it could not run. (A preempted
	// request's reloads after its first token count in
	// Summary.Tiers only.)
	CachedHost, CachedShared int
	TierLoad                 time.Duration
	// Tokens holds every token's emit instant when Config.KeepTokens is set.
	Tokens []time.Duration

	Status Status
	// LengthCapped says the request ended ok with fewer output tokens than
	// it asked for (Emitted < Output): its prompt + output exceeded its
	// replica's engine.Config.MaxModelLen, and the engine stopped it when
	// its tokens reached it, as vLLM finishes such a request
	// FINISHED_LENGTH_CAPPED. It counts as ok (the request was served as
	// vLLM serves it), and summaries count it apart
	// (Summary.LengthCapped), since its user got fewer tokens than asked.
	// (Beside Status, it takes no room of its own.)
	LengthCapped bool
	Reason       string // why a request was rejected or errored
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

// StepObserver receives every step every replica ran. An Observer handed
// to Run that also implements it gets the steps too; without one the
// engines do not describe their steps, and nothing is spent on them.
type StepObserver interface {
	ObserveStep(s *Step)
}

// Step is what a replica ran: Count identical steps of Duration from Start
// (more than one only for a run of identical decode steps advanced in one
// move; All expands it step by step, exactly as a step-by-step run would
// have delivered them). The pointer and its slices are valid only during
// the call.
type Step struct {
	Replica  int
	Start    time.Duration
	Duration time.Duration // of each step
	Count    int
	// Decode holds each decoding sequence's context at the first step
	// (one token longer at each later one); Prefill each prefill chunk's
	// new tokens and the context before it.
	Decode []int
	// Verify holds the positions each decode verified with speculative
	// decoding (its token and its drafts); nil without.
	Verify  []int
	Prefill []costmodel.Chunk
	// CachedTokens are the prompt tokens the requests the first step
	// started found in the prefix cache; Preempted the requests preempted
	// to plan it.
	CachedTokens, Preempted int
	// Waiting and Running are the replica's queue lengths while the steps
	// ran.
	Waiting, Running int
	// KVUsed and KVCached are, for each step, the KV blocks some request
	// held while it ran (its own allocation made: the blocks its tokens
	// are written to) and those carrying cached content (held or free),
	// of KVBlocks.
	KVUsed, KVCached []int
	KVBlocks         int
	// Requests names the requests the (first) step scheduled, in
	// scheduling order (engine.Engine.Scheduled): their tokens add up to
	// the step's decodes and chunks, the Cached of the new ones to
	// CachedTokens (a resumed one's are its hits after a preemption). Each
	// later step of a run schedules the same ones with the same tokens,
	// every one continuing.
	Requests []StepRequest

	decode []int         // All's scratch, reused from step to step
	later  []StepRequest // All's scratch, the requests of a run's later steps
}

// StepRequest is one request a step scheduled (engine.Scheduled, named by
// the request's ID): the tokens it computed in the step, those it had in
// KV before it, the prompt tokens the step found for it in the prefix
// cache (when the step admitted it; else 0), whether they are a decode,
// whether the step admitted it for the first time, resumed it after a
// preemption or continued it, and whether it was aborted (timed out)
// while the step ran, its work discarded.
type StepRequest struct {
	ID       uint64
	Tokens   int
	Computed int
	Cached   int
	Decode   bool
	Aborted  bool
	Kind     engine.ScheduledKind
}

// Later is q as it is i steps later in a run of identical steps: the
// same tokens, i times them more computed, continuing, nothing found
// cached.
func (q StepRequest) Later(i int) StepRequest {
	if i == 0 {
		return q
	}
	q.Computed += i * q.Tokens
	q.Cached, q.Kind = 0, engine.ScheduledContinuing
	return q
}

// Composition names what a step computed.
type Composition uint8

const (
	DecodeOnly  Composition = iota // only decodes
	Mixed                          // decodes and prefill chunks
	PrefillOnly                    // only prefill chunks
)

func (c Composition) String() string {
	if c > PrefillOnly {
		return "Composition(?)"
	}
	return [...]string{"decode", "mixed", "prefill"}[c]
}

// Composition classifies the step.
func (s *Step) Composition() Composition { return compose(len(s.Decode), len(s.Prefill)) }

func compose(decodes, chunks int) Composition {
	switch {
	case chunks == 0:
		return DecodeOnly
	case decodes == 0:
		return PrefillOnly
	}
	return Mixed
}

// All yields the steps one by one, as a step-by-step run delivers them:
// Count 1, each start one Duration later, decode contexts one token
// longer, the KV state of its own. The yielded Step and its slices are
// valid only until the next. It reuses a buffer of the Step the runner
// hands the observer, so expanding costs no allocation per decode.
func (s *Step) All() iter.Seq[*Step] {
	return func(yield func(*Step) bool) {
		one := *s
		one.Count = 1
		if cap(s.decode) < len(s.Decode) {
			s.decode = make([]int, len(s.Decode))
		}
		decode := s.decode[:len(s.Decode)]
		if s.Count > 1 && cap(s.later) < len(s.Requests) {
			s.later = make([]StepRequest, len(s.Requests))
		}
		for i := range s.Count {
			one.Start = s.Start + time.Duration(i)*s.Duration
			for k, c := range s.Decode {
				decode[k] = c + i
			}
			one.Decode = decode
			one.KVUsed, one.KVCached = s.KVUsed[i:i+1], s.KVCached[i:i+1]
			if i > 0 {
				one.CachedTokens, one.Preempted = 0, 0
				later := s.later[:len(s.Requests)]
				for k, q := range s.Requests {
					later[k] = q.Later(i)
				}
				one.Requests = later
			}
			if !yield(&one) {
				return
			}
		}
	}
}

// observeSteps hands a replica's completed steps to the step observer.
func (r *runner) observeSteps(rep *replica, out *engine.Outcome) {
	sh := &out.Shape
	r.step = Step{Replica: rep.idx, Start: sh.Start, Duration: sh.StepTime, Count: sh.Steps,
		Decode: sh.Batch.Decode, Verify: sh.Batch.Verify, Prefill: sh.Batch.Prefill, CachedTokens: sh.CachedTokens, Preempted: sh.Preempted,
		Waiting: sh.Waiting, Running: sh.Running, KVUsed: sh.Used, KVCached: sh.Cached, KVBlocks: rep.eng.Config().KVBlocks,
		Requests: r.stepRequests(rep, sh.Scheduled), decode: r.step.decode, later: r.step.later}
	r.steps.ObserveStep(&r.step)
	rep.aborted = rep.aborted[:0]
}

// stepRequests names the requests of a step by their IDs, in a reused
// buffer. An aborted one has ended, and its ref may name a request added
// since: its ID is the one noted when it was aborted.
func (r *runner) stepRequests(rep *replica, sched []engine.Scheduled) []StepRequest {
	names := r.names[:0]
	for _, q := range sched {
		id := r.slots[q.Ref].rec.ID
		if q.Aborted {
			for _, a := range rep.aborted {
				if a.ref == q.Ref {
					id = a.id
					break
				}
			}
		}
		names = append(names, StepRequest{ID: id, Tokens: q.Tokens, Computed: q.Computed, Cached: q.Cached,
			Decode: q.Decode, Aborted: q.Aborted, Kind: q.Kind})
	}
	r.names = names
	return names
}

// StepMix is how a window's step time divides by composition: how many
// steps of each kind ended in it, their share of the busy time, and the
// distribution of their durations (ms).
type StepMix struct {
	Decode, Mixed, Prefill StepClass
}

// StepClass is one composition's share of the steps.
type StepClass struct {
	Steps int
	Time  time.Duration
	Share float64    // of the time with a step in flight; NaN without any
	Dist  stats.Dist // of step durations, ms
}

// stepMix accumulates step durations by composition. Each composition's
// steps and their time are its durations' count and sum (weighted.totals),
// found once at the summary rather than added at every move (RunAtlas
// 5,067 then 5,060 instructions a request, the budget test's count).
// The moves add to dur[c] itself, whose add inlines there: through a
// method of stepMix, which weighted.add's inlining kept from inlining
// (the inliner's budget), each add was a call: RunAtlas 4,808 then
// 4,773 instructions a request, Regime/Fleet8LeastLoaded 10,620 then
// 10,557 (the budget test).
type stepMix struct {
	dur [3]weighted
}

func (m *stepMix) finish(method stats.Method) StepMix {
	var steps [3]int
	var took [3]time.Duration
	var total time.Duration
	for c := range m.dur {
		steps[c], took[c] = m.dur[c].totals()
		total += took[c]
	}
	class := func(c Composition) StepClass {
		out := StepClass{Steps: steps[c], Time: took[c], Share: nan()}
		if total > 0 {
			out.Share = float64(took[c]) / float64(total)
		}
		out.Dist = weightedDist(&m.dur[c], method)
		return out
	}
	return StepMix{Decode: class(DecodeOnly), Mixed: class(Mixed), Prefill: class(PrefillOnly)}
}
