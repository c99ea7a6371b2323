package report

import (
	"bufio"
	"io"
	"strconv"
	"time"

	"github.com/servesim/servesim/sim"
)

// ChromeTrace writes a run as a Chrome trace (the Trace Event Format's JSON
// object, {"traceEvents": […]}), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open. It is a sim.StepObserver: pass it to sim.Run,
// alone or with other observers through Observers, then call Close,
// which ends the JSON document. Times are the run's virtual time in
// microseconds ("ts", "dur"), exact decimals of its nanoseconds.
//
// Process 1, "replicas", has one thread per replica (tid = its index)
// holding each step it ran as a complete event ("ph":"X"), named by its
// composition — "decode×31", "mixed 31+1 chunk 256" (31 decodes beside
// one 256-token chunk), "prefill 2 chunks 2048" (the chunks' new tokens
// added up) — with the category decode, mixed or prefill and the step's
// figures in args; a run of identical decode steps is written step by
// step. Beside them, counter events ("ph":"C") per replica, written at a
// step's start when they changed: "replica N KV used" and "replica N KV
// cached" (blocks) and "replica N queue" (running and waiting requests).
// Process 2, "requests", holds each request's lifetime as an async span
// ("ph":"b" to "ph":"e", category "request", id = the request's ID) from
// its arrival to its end, named "request 17 ok" (its ID and terminal
// status), with an instant ("ph":"n") at its first token and its figures
// in the span's args. Metadata events ("ph":"M") name the processes and
// threads.
//
// Events are written as they arrive, through a buffer; Flush pushes out
// what is buffered (the document is whole only after Close). The first
// write error is kept (Err) and later events are dropped. A ChromeTrace is not
// safe for concurrent use; give each run its own.
type ChromeTrace struct {
	w      *bufio.Writer
	buf    []byte // the event being built, reused
	err    error
	events int  // events written
	closed bool // Close wrote the end of the document
	reps   []traceReplica
}

// traceReplica is what the trace has said of one replica.
type traceReplica struct {
	named                          bool
	used, cached, waiting, running int  // the counters last written
	counted                        bool // the counters were written once
}

// The trace's processes.
const (
	tracePidReplicas = 1
	tracePidRequests = 2
)

// NewChromeTrace returns a ChromeTrace writing to w.
func NewChromeTrace(w io.Writer) *ChromeTrace {
	return &ChromeTrace{w: bufio.NewWriter(w), buf: make([]byte, 0, 512)}
}

// Observe writes r's lifetime as an async span.
func (t *ChromeTrace) Observe(r *sim.Record) {
	if !t.open() {
		return
	}
	b := t.begin(nil)
	b = append(b, `"name":"request `...)
	b = strconv.AppendUint(b, r.ID, 10)
	b = append(append(append(b, ' '), r.Status.String()...), '"')
	b = append(b, `,"cat":"request","ph":"b","id":`...)
	b = strconv.AppendUint(b, r.ID, 10)
	b = appendTS(b, "ts", r.Arrival)
	b = append(b, `,"pid":2,"tid":0,"args":{"status":"`...)
	b = append(append(b, r.Status.String()...), '"')
	b = appendKey(b, "reason")
	b = appendJSONString(b, r.Reason)
	b = appendInt(b, "replica", r.Replica)
	b = appendKey(b, "measured")
	b = strconv.AppendBool(b, r.Measured)
	b = appendInt(b, "input", r.Input)
	b = appendInt(b, "output", r.Output)
	b = appendInt(b, "emitted", r.Emitted)
	b = appendInt(b, "cached", r.Cached)
	b = appendInt(b, "preemptions", r.Preemptions)
	b = appendMillis(b, "ttft_ms", r.TTFT())
	b = appendMillis(b, "max_itl_ms", maxITL(r))
	t.end(append(b, "}}"...))
	if r.FirstToken != sim.Never {
		b = t.begin(b[:0])
		b = append(b, `"name":"first token","cat":"request","ph":"n","id":`...)
		b = strconv.AppendUint(b, r.ID, 10)
		b = appendTS(b, "ts", r.FirstToken)
		t.end(append(b, `,"pid":2,"tid":0}`...))
	}
	b = t.begin(b[:0])
	b = append(b, `"name":"request `...)
	b = strconv.AppendUint(b, r.ID, 10)
	b = append(append(append(b, ' '), r.Status.String()...), '"')
	b = append(b, `,"cat":"request","ph":"e","id":`...)
	b = strconv.AppendUint(b, r.ID, 10)
	b = appendTS(b, "ts", r.Finish)
	t.end(append(b, `,"pid":2,"tid":0}`...))
}

// ObserveStep writes the steps of s, one complete event each, and the
// replica's counters where they changed.
func (t *ChromeTrace) ObserveStep(s *sim.Step) {
	if !t.open() {
		return
	}
	rep := t.replica(s)
	for i := range s.Count {
		start := s.Start + time.Duration(i)*s.Duration
		t.step(s, i, start)
		t.counters(s, rep, s.KVUsed[i], s.KVCached[i], start)
	}
}

// step writes step i of s (as sim.Step.All expands it).
func (t *ChromeTrace) step(s *sim.Step, i int, start time.Duration) {
	b := t.begin(t.buf[:0])
	b = append(b, `"name":"`...)
	b = appendStepName(b, s)
	b = append(b, `","cat":"`...)
	b = append(append(b, s.Composition().String()...), '"')
	b = append(b, `,"ph":"X"`...)
	b = appendTS(b, "ts", start)
	b = appendTS(b, "dur", s.Duration)
	b = append(b, `,"pid":1,"tid":`...)
	b = strconv.AppendInt(b, int64(s.Replica), 10)
	b = append(b, `,"args":{"decodes":`...)
	b = strconv.AppendInt(b, int64(len(s.Decode)), 10)
	b = appendKey(b, "prefill")
	b = appendChunks(b, s)
	cached, preempted := s.CachedTokens, s.Preempted
	if i > 0 {
		cached, preempted = 0, 0
	}
	b = appendInt(b, "cached_tokens", cached)
	b = appendInt(b, "preempted", preempted)
	b = appendInt(b, "waiting", s.Waiting)
	b = appendInt(b, "running", s.Running)
	b = appendInt(b, "kv_used", s.KVUsed[i])
	b = appendInt(b, "kv_cached", s.KVCached[i])
	b = appendKey(b, "requests")
	b = appendRequests(b, s, i)
	t.end(append(b, "}}"...))
}

// appendStepName appends the step's name: its composition and sizes.
func appendStepName(b []byte, s *sim.Step) []byte {
	d, c := len(s.Decode), len(s.Prefill)
	tokens := 0
	for _, ch := range s.Prefill {
		tokens += ch.NewTokens
	}
	switch s.Composition() {
	case sim.DecodeOnly:
		return strconv.AppendInt(append(b, "decode×"...), int64(d), 10)
	case sim.Mixed:
		b = strconv.AppendInt(append(b, "mixed "...), int64(d), 10)
		b = append(b, '+')
	default:
		b = append(b, "prefill "...)
	}
	b = strconv.AppendInt(b, int64(c), 10)
	if c == 1 {
		b = append(b, " chunk "...)
	} else {
		b = append(b, " chunks "...)
	}
	return strconv.AppendInt(b, int64(tokens), 10)
}

// counters writes the replica's KV and queue counters at start where
// they differ from those last written.
func (t *ChromeTrace) counters(s *sim.Step, rep *traceReplica, used, cached int, start time.Duration) {
	first := !rep.counted
	rep.counted = true
	if first || used != rep.used {
		rep.used = used
		t.counter(s.Replica, " KV used", start, "blocks", used, "", 0)
	}
	if first || cached != rep.cached {
		rep.cached = cached
		t.counter(s.Replica, " KV cached", start, "blocks", cached, "", 0)
	}
	if first || s.Waiting != rep.waiting || s.Running != rep.running {
		rep.waiting, rep.running = s.Waiting, s.Running
		t.counter(s.Replica, " queue", start, "running", s.Running, "waiting", s.Waiting)
	}
}

// counter writes a counter event "replica N<name>" with one or two series.
func (t *ChromeTrace) counter(replica int, name string, at time.Duration, k1 string, v1 int, k2 string, v2 int) {
	b := t.begin(t.buf[:0])
	b = strconv.AppendInt(append(b, `"name":"replica `...), int64(replica), 10)
	b = append(append(b, name...), `","ph":"C"`...)
	b = appendTS(b, "ts", at)
	b = append(b, `,"pid":1,"args":{"`...)
	b = strconv.AppendInt(append(append(b, k1...), `":`...), int64(v1), 10)
	if k2 != "" {
		b = appendInt(b, k2, v2)
	}
	t.end(append(b, "}}"...))
}

// replica is s's replica's state, named in the trace on its first step.
func (t *ChromeTrace) replica(s *sim.Step) *traceReplica {
	for len(t.reps) <= s.Replica {
		t.reps = append(t.reps, traceReplica{})
	}
	rep := &t.reps[s.Replica]
	if !rep.named {
		rep.named = true
		tid := strconv.Itoa(s.Replica)
		t.meta(`"name":"thread_name","ph":"M","pid":1,"tid":` + tid + `,"args":{"name":"replica ` + tid +
			` (` + strconv.Itoa(s.KVBlocks) + ` KV blocks)"}`)
		t.meta(`"name":"thread_sort_index","ph":"M","pid":1,"tid":` + tid + `,"args":{"sort_index":` + tid + `}`)
	}
	return rep
}

// open reports whether events can still be written, and starts the
// document before the first.
func (t *ChromeTrace) open() bool {
	if t.err != nil || t.closed {
		return false
	}
	if t.events == 0 {
		// The generator names the writer as it was named before it became
		// ChromeTrace, so that a trace's bytes did not change with the name.
		t.write([]byte(`{"displayTimeUnit":"ms","otherData":{"generator":"servesim sim/report.Trace",` +
			`"clock":"virtual time of the run, µs from its start"},"traceEvents":[` + "\n"))
		t.meta(`"name":"process_name","ph":"M","pid":1,"args":{"name":"replicas (steps, KV and queue counters)"}`)
		t.meta(`"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}`)
		t.meta(`"name":"process_name","ph":"M","pid":2,"args":{"name":"requests (arrival to end)"}`)
		t.meta(`"name":"process_sort_index","ph":"M","pid":2,"args":{"sort_index":2}`)
		t.meta(`"name":"thread_name","ph":"M","pid":2,"tid":0,"args":{"name":"requests"}`)
	}
	return t.err == nil
}

func (t *ChromeTrace) meta(body string) {
	b := t.begin(t.buf[:0])
	b = append(b, body...)
	t.end(append(b, '}'))
}

// begin starts an event in b: the separator from the one before, and its
// opening brace.
func (t *ChromeTrace) begin(b []byte) []byte {
	if b == nil {
		b = t.buf[:0]
	}
	if t.events > 0 {
		b = append(b, ",\n"...)
	}
	return append(b, '{')
}

// end writes the event built in b.
func (t *ChromeTrace) end(b []byte) {
	t.buf = b
	t.write(b)
	t.events++
}

func (t *ChromeTrace) write(b []byte) {
	if t.err == nil {
		_, t.err = t.w.Write(b)
	}
}

// Flush writes the buffered events to the underlying writer and returns
// the first error met so far. The document is not whole until Close.
func (t *ChromeTrace) Flush() error {
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

// Close ends the document and flushes it; later events are dropped. A
// trace of no event is a document with only its metadata.
func (t *ChromeTrace) Close() error {
	if t.closed {
		return t.err
	}
	t.open()
	t.write([]byte("\n]}\n"))
	t.closed = true
	return t.Flush()
}

// Err returns the first write error, or nil.
func (t *ChromeTrace) Err() error { return t.err }

// appendTS appends `,"key":` and d in microseconds, an exact decimal.
func appendTS(b []byte, key string, d time.Duration) []byte {
	return appendFixed(appendKey(b, key), d, time.Microsecond)
}

// appendMillis appends `,"key":` and d in milliseconds, or null for
// sim.Never.
func appendMillis(b []byte, key string, d time.Duration) []byte {
	b = appendKey(b, key)
	if d == sim.Never {
		return append(b, "null"...)
	}
	return appendFixed(b, d, time.Millisecond)
}

// appendFixed appends d in units of unit (a power of ten nanoseconds) as
// an exact decimal, trailing zeros trimmed.
func appendFixed(b []byte, d, unit time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	b = strconv.AppendInt(b, int64(d/unit), 10)
	frac := int64(d % unit)
	if frac == 0 {
		return b
	}
	digits := 0
	for u := unit; u > 1; u /= 10 {
		digits++
	}
	var tmp [18]byte
	for i := digits - 1; i >= 0; i-- {
		tmp[i] = byte('0' + frac%10)
		frac /= 10
	}
	for digits > 0 && tmp[digits-1] == '0' {
		digits--
	}
	return append(append(b, '.'), tmp[:digits]...)
}
