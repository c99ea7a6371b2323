package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/sim"
)

// traceEvent is an event of the Trace Event Format, as a viewer reads it.
type traceEvent struct {
	Name string          `json:"name"`
	Cat  string          `json:"cat"`
	Ph   string          `json:"ph"`
	TS   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	PID  int             `json:"pid"`
	TID  int             `json:"tid"`
	ID   *uint64         `json:"id"`
	Args json.RawMessage `json:"args"`
}

func parseTrace(t *testing.T, b []byte) []traceEvent {
	t.Helper()
	var doc struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}
	require.NoError(t, json.Unmarshal(b, &doc), "the trace is one JSON object")
	assert.Equal(t, "ms", doc.DisplayTimeUnit)
	return doc.TraceEvents
}

// The Chrome trace of a small fleet run is valid JSON in the trace event
// format: a named track per replica whose slices are its steps (each as
// long as the step, named by its composition), an async span per request
// from arrival to end, and counters for KV and queues.
func TestTraceOfAFleetRun(t *testing.T) {
	var buf bytes.Buffer
	tr := NewChromeTrace(&buf)
	_, tl := chunkedRun(t, 2, tr)
	require.NoError(t, tr.Close())
	if path := os.Getenv("SERVESIM_TRACE"); path != "" {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644)) // to open it in Perfetto
	}
	events := parseTrace(t, buf.Bytes())

	threads := map[[2]int]string{}
	var slices []traceEvent
	spans := map[uint64][]traceEvent{}
	counters := map[string]int{}
	for _, e := range events {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				var a struct{ Name string }
				require.NoError(t, json.Unmarshal(e.Args, &a))
				threads[[2]int{e.PID, e.TID}] = a.Name
			}
		case "X":
			slices = append(slices, e)
		case "b", "n", "e":
			require.NotNil(t, e.ID, "an async event has an id")
			assert.Equal(t, "request", e.Cat)
			spans[*e.ID] = append(spans[*e.ID], e)
		case "C":
			counters[e.Name]++
		default:
			t.Fatalf("unexpected phase %q", e.Ph)
		}
	}
	assert.Equal(t, "replica 0 (28672 KV blocks)", threads[[2]int{1, 0}])
	assert.Equal(t, "replica 1 (28672 KV blocks)", threads[[2]int{1, 1}])
	assert.Equal(t, "requests", threads[[2]int{2, 0}])
	for _, name := range []string{"replica 0 KV used", "replica 1 KV used", "replica 0 KV cached", "replica 0 queue", "replica 1 queue"} {
		assert.Positive(t, counters[name], name)
	}

	// One slice per step, in the order the steps came, each as long as
	// its step and named by its composition.
	require.Len(t, slices, len(tl.steps))
	mixed := 0
	for i, e := range slices {
		s := tl.steps[i]
		assert.Equal(t, s.Replica, e.TID)
		assert.Equal(t, 1, e.PID)
		assert.InDelta(t, float64(s.Start)/1e3, e.TS, 1e-6)
		assert.InDelta(t, float64(s.Duration)/1e3, e.Dur, 1e-9, "slice %d lasts its step", i)
		assert.Equal(t, s.Composition().String(), e.Cat)
		if len(s.Decode) == 31 && len(s.Prefill) == 1 && s.Prefill[0].NewTokens == 256 {
			mixed++
			assert.Equal(t, "mixed 31+1 chunk 256", e.Name)
			assert.Equal(t, 73960.0, e.Dur, "µs")
		}
		if s.Composition() == sim.DecodeOnly {
			assert.Equal(t, fmt.Sprintf("decode×%d", len(s.Decode)), e.Name)
		}
	}
	assert.Greater(t, mixed, 10)

	// Every request's span opens at its arrival and closes at its end.
	require.Len(t, spans, len(tl.records.slice()))
	for _, r := range tl.records.slice() {
		sp := spans[r.ID]
		name := fmt.Sprintf("request %d %s", r.ID, r.Status)
		require.NotEmpty(t, sp)
		first, last := sp[0], sp[len(sp)-1]
		assert.Equal(t, []string{"b", name}, []string{first.Ph, first.Name})
		assert.Equal(t, []string{"e", name}, []string{last.Ph, last.Name})
		assert.InDelta(t, float64(r.Arrival)/1e3, first.TS, 1e-6)
		assert.InDelta(t, float64(r.Finish)/1e3, last.TS, 1e-6)
		if r.FirstToken != sim.Never {
			require.Len(t, sp, 3)
			assert.InDelta(t, float64(r.FirstToken)/1e3, sp[1].TS, 1e-6)
		}
	}
}

func (rs *records) slice() []sim.Record { return *rs }

// A run of identical steps is traced exactly as its steps one by one, and
// the counters are written only where they change.
func TestTraceExpandsARunAsAll(t *testing.T) {
	run := runOfDecodes()
	var whole, each bytes.Buffer
	a, b := NewChromeTrace(&whole), NewChromeTrace(&each)
	a.ObserveStep(&run)
	for one := range run.All() {
		b.ObserveStep(one)
	}
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assert.Equal(t, each.String(), whole.String())
	events := parseTrace(t, whole.Bytes())
	var kvUsed []float64
	for _, e := range events {
		if e.Name == "replica 1 KV used" {
			kvUsed = append(kvUsed, e.TS)
		}
	}
	assert.Equal(t, []float64{1500e3, 1590e3}, kvUsed, "written at the first step and where it changed")
	assert.Contains(t, whole.String(), `{"name":"decode×3","cat":"decode","ph":"X","ts":1545000,"dur":45000,"pid":1,"tid":1,`+
		`"args":{"decodes":3,"prefill":[],"cached_tokens":0,"preempted":0,"waiting":2,"running":3,"kv_used":500,"kv_cached":40,`+
		`"requests":[{"id":7,"kind":"continuing","tokens":1,"computed":2101,"cached":0,"decode":true},`+
		`{"id":8,"kind":"continuing","tokens":1,"computed":2401,"cached":0,"decode":true},`+
		`{"id":9,"kind":"continuing","tokens":1,"computed":3009,"cached":0,"decode":true}]}}`)
}

// Steps are named by their composition; times are exact microseconds.
func TestTraceNamesAndTimes(t *testing.T) {
	for _, c := range []struct {
		step sim.Step
		name string
	}{
		{sim.Step{Decode: make([]int, 31)}, "decode×31"},
		{sim.Step{Decode: make([]int, 31), Prefill: []costmodel.Chunk{{NewTokens: 256}}}, "mixed 31+1 chunk 256"},
		{sim.Step{Decode: make([]int, 30), Prefill: []costmodel.Chunk{{NewTokens: 200}, {NewTokens: 56}}}, "mixed 30+2 chunks 256"},
		{sim.Step{Prefill: []costmodel.Chunk{{NewTokens: 2000}}}, "prefill 1 chunk 2000"},
	} {
		assert.Equal(t, c.name, string(appendStepName(nil, &c.step)))
	}
	for d, want := range map[time.Duration]string{
		0: "0", 73960 * time.Microsecond: "73960", 1500 * time.Nanosecond: "1.5", 1001: "1.001", 90 * time.Millisecond: "90000",
	} {
		assert.Equal(t, want, string(appendFixed(nil, d, time.Microsecond)))
	}
	assert.Equal(t, "0.000001", string(appendFixed(nil, 1, time.Millisecond)))
}

// A trace that saw nothing is still a whole document; Close twice is
// harmless, and events after it are dropped.
func TestTraceClose(t *testing.T) {
	var buf bytes.Buffer
	tr := NewChromeTrace(&buf)
	require.NoError(t, tr.Close())
	require.NoError(t, tr.Close())
	run := runOfDecodes()
	tr.ObserveStep(&run)
	events := parseTrace(t, buf.Bytes())
	for _, e := range events {
		assert.Equal(t, "M", e.Ph)
	}

	bad := NewChromeTrace(&failing{n: 10})
	for range 50 {
		bad.ObserveStep(&run)
	}
	assert.ErrorIs(t, bad.Close(), errDisk)
}

// Tracing a step allocates nothing once the buffers have grown.
func TestTraceAllocatesNothingPerStep(t *testing.T) {
	run := runOfDecodes()
	tr := NewChromeTrace(io.Discard)
	tr.ObserveStep(&run)
	assert.Zero(t, testing.AllocsPerRun(200, func() { tr.ObserveStep(&run) }))
}

// Observers hands records to all and steps to those that want them, and
// is a step observer only if one of them is.
func TestObservers(t *testing.T) {
	assert.Nil(t, Observers())
	assert.Nil(t, Observers(nil, nil))
	var rs records
	assert.Equal(t, sim.Observer(&rs), Observers(nil, &rs))
	_, ok := Observers(&rs, NewEventJSONL(io.Discard)).(sim.StepObserver)
	assert.False(t, ok, "no step observer among them")

	var buf bytes.Buffer
	log := NewStepLog(&buf)
	var more records
	obs := Observers(&rs, log, &more)
	so, ok := obs.(sim.StepObserver)
	require.True(t, ok)
	obs.Observe(&sim.Record{ID: 4})
	run := runOfDecodes()
	so.ObserveStep(&run)
	require.NoError(t, log.Flush())
	assert.Len(t, rs, 1)
	assert.Len(t, more, 1)
	assert.Equal(t, 3, bytes.Count(buf.Bytes(), []byte("\n")))
}

// The trace and the step log of the fixture (every terminal status; a
// request timed out while decoding) name each step's requests: the
// goldens hold both documents, and every step's requests add up to its
// figures, each request's computed tokens grow by what it was given, and
// the one that timed out in a step is named in it, aborted, by its ID.
func TestTraceAndStepLogNameTheRequests(t *testing.T) {
	var trace, steps bytes.Buffer
	tr, log := NewChromeTrace(&trace), NewStepLog(&steps)
	runFixture(t, false, Observers(tr, log))
	require.NoError(t, tr.Close())
	require.NoError(t, log.Flush())
	checkGolden(t, "trace_fixture.json", trace.Bytes())
	checkGolden(t, "steps_fixture.jsonl", steps.Bytes())

	type named struct {
		ID       uint64 `json:"id"`
		Kind     string `json:"kind"`
		Tokens   int    `json:"tokens"`
		Computed int    `json:"computed"`
		Cached   int    `json:"cached"`
		Decode   bool   `json:"decode"`
		Aborted  bool   `json:"aborted"`
	}
	computed := map[uint64]int{} // after the last step that named it
	aborted := 0
	n := 0
	for _, e := range parseTrace(t, trace.Bytes()) {
		if e.Ph != "X" {
			continue
		}
		n++
		var args struct {
			Decodes int `json:"decodes"`
			Prefill []struct {
				New int `json:"new"`
			} `json:"prefill"`
			Cached   int     `json:"cached_tokens"`
			Requests []named `json:"requests"`
		}
		require.NoError(t, json.Unmarshal(e.Args, &args))
		want := args.Decodes
		for _, c := range args.Prefill {
			want += c.New
		}
		tokens, cachedNew, decodes := 0, 0, 0
		for _, q := range args.Requests {
			tokens += q.Tokens
			if q.Decode {
				decodes++
			}
			switch q.Kind {
			case "new":
				cachedNew += q.Cached
				assert.Equal(t, q.Cached, q.Computed, "request %d: new, with nothing computed but its hits", q.ID)
				assert.NotContains(t, computed, q.ID, "request %d new twice", q.ID)
			case "continuing":
				assert.Equal(t, computed[q.ID], q.Computed, "request %d continues where it stopped", q.ID)
				assert.Zero(t, q.Cached)
			}
			computed[q.ID] = q.Computed + q.Tokens
			if q.Aborted {
				aborted++
				assert.Equal(t, uint64(4), q.ID, "the request that timed out")
			}
		}
		assert.Equal(t, want, tokens, "step at %v µs: its requests' tokens", e.TS)
		assert.Equal(t, args.Decodes, decodes, "step at %v µs: its decodes", e.TS)
		assert.Equal(t, args.Cached, cachedNew, "step at %v µs: the new requests' hits", e.TS)
	}
	assert.Equal(t, 1, aborted, "request 4 timed out in a step")
	assert.Equal(t, n, strings.Count(steps.String(), "\n"), "a line per step")
	// Requests 0, 1, 4, 5 and 6 ran (2 never fits, 3 is recorded failed);
	// each was named.
	assert.Len(t, computed, 5)
}
