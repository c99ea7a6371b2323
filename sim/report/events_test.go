package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
)

func TestEventsGolden(t *testing.T) {
	writers := map[string]func(*bytes.Buffer) eventWriter{
		"jsonl": func(b *bytes.Buffer) eventWriter { return NewEventJSONL(b) },
		"csv":   func(b *bytes.Buffer) eventWriter { return NewEventCSV(b) },
	}
	for ext, mk := range writers {
		for _, keep := range []bool{false, true} {
			var buf bytes.Buffer
			w := mk(&buf)
			runFixture(t, keep, w)
			require.NoError(t, w.Flush())
			checkGolden(t, "events_keep="+strconv.FormatBool(keep)+"."+ext, buf.Bytes())
		}
	}
}

func TestJSONStringsAreValidJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\x00", "ünïcödé ✓", "bad \xff utf-8"} {
		b := appendJSONString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(b, &back), string(b))
		if utf8.ValidString(s) {
			assert.Equal(t, s, back)
		}
	}
}

// records collects copies of a run's records.
type records []sim.Record

func (rs *records) Observe(r *sim.Record) {
	c := *r
	c.Tokens = append([]time.Duration(nil), r.Tokens...)
	*rs = append(*rs, c)
}

func TestCSVParsesBackOneRowPerRecord(t *testing.T) {
	var buf bytes.Buffer
	var rs records
	w := NewEventCSV(&buf)
	runFixture(t, true, multi{w, &rs})
	require.NoError(t, w.Flush())

	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, len(rs)+1, "a header and one row per record")
	assert.Equal(t, EventColumns(), rows[0])
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for i, r := range rs {
		row := rows[i+1]
		assert.Equal(t, strconv.FormatUint(r.ID, 10), row[col["id"]])
		assert.Equal(t, r.Class, row[col["class"]], "quoted class reads back")
		assert.Equal(t, r.Status.String(), row[col["status"]])
		if ttft := r.TTFT(); ttft == sim.Never {
			assert.Empty(t, row[col["ttft"]])
		} else {
			assert.Equal(t, ttft.Seconds(), mustFloat(t, row[col["ttft"]]))
		}
		gaps := strings.Fields(row[col["itl"]])
		assert.Len(t, gaps, max(r.Emitted-1, 0), "one gap per token after the first")
	}
}

func TestJSONLParsesBackWithVLLMNames(t *testing.T) {
	var buf bytes.Buffer
	var rs records
	w := NewEventJSONL(&buf)
	runFixture(t, false, multi{w, &rs})
	require.NoError(t, w.Flush())

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(rs))
	for i, line := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		r := rs[i]
		assert.NotContains(t, m, "itl", "no itl list when tokens are not kept")
		assert.EqualValues(t, r.Input, m["input_len"])
		assert.EqualValues(t, r.Emitted, m["output_len"])
		assert.EqualValues(t, r.ITLOver, m["itl_over_budget"])
		if r.Status == sim.StatusOK {
			assert.Equal(t, "", m["error"])
		} else {
			assert.NotEmpty(t, m["error"], "vLLM's error is set iff the request failed")
		}
		if e2e := r.E2E(); e2e == sim.Never {
			assert.Nil(t, m["e2el"], "%s request without a token", r.Status)
		} else {
			assert.InDelta(t, e2e.Seconds(), m["e2el"], 1e-12)
		}
	}
}

// multi hands each record to every observer.
type multi []sim.Observer

func (m multi) Observe(r *sim.Record) {
	for _, o := range m {
		o.Observe(r)
	}
}

// failing fails every write after the first n bytes.
type failing struct{ n int }

var errDisk = errors.New("disk full")

func (f *failing) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

// eventWriter is what JSONL and CSV have in common.
type eventWriter interface {
	sim.Observer
	Flush() error
	Err() error
}

func TestWritersKeepTheFirstError(t *testing.T) {
	mk := map[string]func(*failing) eventWriter{
		"jsonl": func(f *failing) eventWriter { return NewEventJSONL(f) },
		"csv":   func(f *failing) eventWriter { return NewEventCSV(f) },
	}
	for name, mk := range mk {
		t.Run(name, func(t *testing.T) {
			w := mk(&failing{n: 100})
			runFixture(t, true, w)
			assert.ErrorIs(t, w.Flush(), errDisk)
			assert.ErrorIs(t, w.Err(), errDisk)
		})
	}
}

func TestAppendSecondsIsExact(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 90 * time.Millisecond: "0.09", 2 * time.Second: "2",
		73960 * time.Microsecond: "0.07396", 1: "0.000000001", 61*time.Second + 5*time.Millisecond: "61.005",
	} {
		assert.Equal(t, want, string(appendSeconds(nil, d)))
	}
}

func TestObserveAllocatesNothingPerToken(t *testing.T) {
	r := sim.Record{Status: sim.StatusOK, Emitted: 1000, FirstToken: 0, LastToken: time.Second, FirstScheduled: 0}
	for i := range 1000 {
		r.Tokens = append(r.Tokens, time.Duration(i)*45*time.Millisecond)
	}
	for name, o := range map[string]sim.Observer{"jsonl": NewEventJSONL(discard{}), "csv": NewEventCSV(discard{})} {
		o.Observe(&r) // grow the line buffer once
		allocs := testing.AllocsPerRun(20, func() { o.Observe(&r) })
		assert.Zero(t, allocs, name)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestCSVWithoutRecordsStillHasItsHeader(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, NewEventCSV(&buf).Flush())
	assert.Equal(t, strings.Join(EventColumns(), ",")+"\n", buf.String())
}

// A fleet's events say which replica served each request: the replica
// column is the record's, in both formats.
func TestEventsOfAFleetCarryTheReplica(t *testing.T) {
	cfg := fixtureConfig(false)
	cfg.Fleet = sim.Fleet{Replicas: sim.Copies(3, sim.ReplicaConfig{}), Router: sim.RoundRobin{}}
	var jl, cs bytes.Buffer
	var rs records
	j, c := NewEventJSONL(&jl), NewEventCSV(&cs)
	_, err := sim.Run(cfg, fixture(), multi{j, c, &rs})
	require.NoError(t, err)
	require.NoError(t, j.Flush())
	require.NoError(t, c.Flush())

	rows, err := csv.NewReader(&cs).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, len(rs)+1)
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	lines := strings.Split(strings.TrimSuffix(jl.String(), "\n"), "\n")
	require.Len(t, lines, len(rs))
	// Request 3 is recorded failed in the trace: it ends at its arrival,
	// routed nowhere, and takes no turn.
	roundRobin := map[uint64]int{0: 0, 1: 1, 2: 2, 4: 0, 5: 1, 6: 2}
	seen := map[int]bool{}
	for i, r := range rs {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &m))
		assert.EqualValues(t, r.Replica, m["replica"], "request %d", r.ID)
		assert.Equal(t, strconv.Itoa(r.Replica), rows[i+1][col["replica"]], "request %d", r.ID)
		if want, routed := roundRobin[r.ID]; routed {
			assert.Equal(t, want, r.Replica, "request %d: round robin over 3 replicas in arrival order", r.ID)
			seen[r.Replica] = true
		} else {
			assert.Equal(t, sim.Unrouted, r.Replica, "request %d", r.ID)
		}
	}
	assert.Len(t, seen, 3, "every replica served a request")
}
