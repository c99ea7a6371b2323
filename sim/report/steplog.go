package report

import (
	"io"
	"strconv"
	"time"

	"github.com/servesim/servesim/sim"
)

// StepLog is a sim.StepObserver that writes every step each replica ran
// as one JSON object per line, in the order the steps were collected
// (each replica's in time order; replicas interleave). A run of
// identical decode steps (sim.Step.Count > 1) is written step by step,
// as sim.Step.All expands it. Pass it to sim.Run (it receives no
// records: Observe does nothing), or with other observers through
// Observers, and call Flush after the run. The keys, in order
// (StepColumns):
//
//	replica                 the replica that ran the step
//	start_s, duration_s     when it started (from the start of the run) and how long it lasted, s
//	composition             decode (decodes only), mixed (decodes and prefill chunks) or prefill (chunks only)
//	decodes                 sequences that computed one token
//	decode_context          their context lengths added up, tokens (what a decode step reads from KV)
//	prefill                 the prefill chunks: [{"new": tokens computed, "context": tokens in KV before it}, …]
//	prefill_tokens          the chunks' new tokens added up
//	cached_tokens           prompt tokens the requests the step started found in the prefix cache
//	preempted               requests preempted to plan the step
//	waiting, running        the replica's queue lengths while the step ran
//	kv_used, kv_cached      KV blocks some request held, and blocks carrying cached content (held or free), at its start
//	kv_blocks               the replica's KV blocks
//	requests                the requests the step scheduled, in scheduling order (sim.Step.Requests):
//	                        [{"id": its ID, "kind": new, resumed or continuing, "tokens": computed in the step,
//	                        "computed": in KV before it, "cached": found in the prefix cache by the step,
//	                        "decode": a decode rather than a prefill chunk}, …], with "aborted":true after
//	                        "decode" for a request aborted while the step ran (its work discarded)
//
// Times are exact decimals of the simulator's nanoseconds, as in the
// per-request events (73.96 ms is 0.07396). Lines are built in a reused
// buffer: once it has grown, a step costs no allocation. The first write
// error is kept (Err) and later steps are dropped. A StepLog is not safe
// for concurrent use; give each run its own.
type StepLog struct {
	lineWriter
}

// NewStepLog returns a StepLog writing to w.
func NewStepLog(w io.Writer) *StepLog { return &StepLog{newLineWriter(w)} }

// StepColumns are the step log's keys, in the order every line has them.
func StepColumns() []string {
	return []string{"replica", "start_s", "duration_s", "composition", "decodes", "decode_context", "prefill",
		"prefill_tokens", "cached_tokens", "preempted", "waiting", "running", "kv_used", "kv_cached", "kv_blocks", "requests"}
}

// Observe does nothing: a step log has no line for a request.
func (l *StepLog) Observe(*sim.Record) {}

// ObserveStep writes the steps of s, one line each.
func (l *StepLog) ObserveStep(s *sim.Step) {
	if l.err != nil {
		return
	}
	ctx := 0
	for _, c := range s.Decode {
		ctx += c
	}
	var newTokens int
	for _, c := range s.Prefill {
		newTokens += c.NewTokens
	}
	comp := s.Composition().String()
	for i := range s.Count {
		// Expanded as sim.Step.All does, without its per-call scratch:
		// each step one Duration later, every decode one token longer,
		// the cache hits and preemptions on the first step only.
		cached, preempted := s.CachedTokens, s.Preempted
		if i > 0 {
			cached, preempted = 0, 0
		}
		b := append(l.buf[:0], `{"replica":`...)
		b = strconv.AppendInt(b, int64(s.Replica), 10)
		b = appendKey(b, "start_s")
		b = appendSeconds(b, s.Start+time.Duration(i)*s.Duration)
		b = appendKey(b, "duration_s")
		b = appendSeconds(b, s.Duration)
		b = appendKey(b, "composition")
		b = append(append(append(b, '"'), comp...), '"')
		b = appendInt(b, "decodes", len(s.Decode))
		b = appendInt(b, "decode_context", ctx+i*len(s.Decode))
		b = appendKey(b, "prefill")
		b = appendChunks(b, s)
		b = appendInt(b, "prefill_tokens", newTokens)
		b = appendInt(b, "cached_tokens", cached)
		b = appendInt(b, "preempted", preempted)
		b = appendInt(b, "waiting", s.Waiting)
		b = appendInt(b, "running", s.Running)
		b = appendInt(b, "kv_used", s.KVUsed[i])
		b = appendInt(b, "kv_cached", s.KVCached[i])
		b = appendInt(b, "kv_blocks", s.KVBlocks)
		b = appendKey(b, "requests")
		b = appendRequests(b, s, i)
		l.buf = append(b, "}\n"...)
		l.emit()
	}
}

// appendChunks appends the step's prefill chunks as a JSON array.
func appendChunks(b []byte, s *sim.Step) []byte {
	b = append(b, '[')
	for k, c := range s.Prefill {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"new":`...)
		b = strconv.AppendInt(b, int64(c.NewTokens), 10)
		b = append(b, `,"context":`...)
		b = strconv.AppendInt(b, int64(c.Context), 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendRequests appends the requests of step i of s (as sim.Step.All
// expands it) as a JSON array.
func appendRequests(b []byte, s *sim.Step, i int) []byte {
	b = append(b, '[')
	for k, q := range s.Requests {
		q = q.Later(i)
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = strconv.AppendUint(b, q.ID, 10)
		b = append(b, `,"kind":"`...)
		b = append(append(b, q.Kind.String()...), '"')
		b = appendInt(b, "tokens", q.Tokens)
		b = appendInt(b, "computed", q.Computed)
		b = appendInt(b, "cached", q.Cached)
		b = strconv.AppendBool(appendKey(b, "decode"), q.Decode)
		if q.Aborted {
			b = append(b, `,"aborted":true`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendKey appends `,"key":`.
func appendKey(b []byte, key string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendInt appends `,"key":v`.
func appendInt(b []byte, key string, v int) []byte {
	return strconv.AppendInt(appendKey(b, key), int64(v), 10)
}
