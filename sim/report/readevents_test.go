package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/sim/analysis"
	"github.com/servesim/servesim/workload"
)

// readCase is a run whose events are written and read back: a fleet of
// two speculating replicas with classes, a concurrency cap, timeouts and
// the fixture's odd requests, tokens kept.
func readCase(t *testing.T) (sim.Config, records, sim.Summary, []byte, []byte) {
	t.Helper()
	cfg := sim.Config{KeepTokens: true, Window: sim.Window{Warmup: 20 * time.Second, Horizon: 2 * time.Minute},
		Fleet:          sim.Fleet{Replicas: sim.Copies(2, sim.ReplicaConfig{Speculation: sim.Speculation{Tokens: 3, Acceptance: 0.6}}), Router: sim.LeastLoaded{}},
		Classes:        []sim.Class{{Name: "chat", SLO: sim.SLO{TTFT: 400 * time.Millisecond}}},
		MaxConcurrency: 40, Timeout: 15 * time.Second}
	src, err := workload.NewSynthetic(workload.Synthetic{Seed: 5, Count: 900, Arrival: workload.Arrival{Rate: 5},
		Lengths: workload.Fixed(2000, 100), Class: "chat"})
	require.NoError(t, err)
	var rs records
	var jl, cs bytes.Buffer
	j, c := NewEventJSONL(&jl), NewEventCSV(&cs)
	sum, err := sim.Run(cfg, src, multi{j, c, &rs})
	require.NoError(t, err)
	require.NoError(t, j.Flush())
	require.NoError(t, c.Flush())
	return cfg, rs, sum, jl.Bytes(), cs.Bytes()
}

// Events read back give the records that were written, every field the
// events carry, token instants included (CSV cannot tell an empty list of
// gaps from none: a record of one token gets its instant from its TTFT).
func TestEventsReadBackIntoTheirRecords(t *testing.T) {
	_, rs, _, jl, cs := readCase(t)
	fromJSONL, err := ReadJSONL(bytes.NewReader(jl), "run.jsonl")
	require.NoError(t, err)
	fromCSV, err := ReadCSV(bytes.NewReader(cs), "run.csv")
	require.NoError(t, err)
	require.Len(t, fromJSONL, len(rs))
	require.Len(t, fromCSV, len(rs))
	drafted := 0
	for i := range rs {
		want := rs[i]
		drafted += want.Drafted
		if len(want.Tokens) == 0 {
			want.Tokens = nil
		}
		got := fromJSONL[i]
		if len(got.Tokens) == 0 {
			got.Tokens = nil
		}
		assert.Equal(t, want, got, "JSONL, record %d", i)
		got = fromCSV[i]
		if got.Tokens == nil && want.Emitted == 1 {
			got.Tokens = []time.Duration{got.FirstToken}
		}
		assert.Equal(t, want, got, "CSV, record %d", i)
	}
	assert.Positive(t, drafted, "the case speculates")
}

// A summary recomputed from events read back equals the run's own, as
// sim.Summarize from the records does.
func TestSummaryFromEventsEqualsTheRun(t *testing.T) {
	cfg, _, sum, jl, cs := readCase(t)
	for name, read := range map[string]func() ([]sim.Record, error){
		"jsonl": func() ([]sim.Record, error) { return ReadJSONL(bytes.NewReader(jl), "x") },
		"csv":   func() ([]sim.Record, error) { return ReadCSV(bytes.NewReader(cs), "x") },
	} {
		recs, err := read()
		require.NoError(t, err)
		again, err := sim.Summarize(cfg, recs)
		require.NoError(t, err, name)
		assert.Equal(t, stepless(sum), stepless(again), name)
	}
}

// stepless prints a summary without what records cannot give.
func stepless(s sim.Summary) string {
	s.Steps, s.Speculation, s.Imbalance.Busy = sim.StepMix{}, sim.SpecSummary{}, 0
	s.Replicas = slices.Clone(s.Replicas)
	for i := range s.Replicas {
		s.Replicas[i].Busy, s.Replicas[i].KVOccupancy = 0, 0
	}
	return fmt.Sprintf("%+v", s)
}

// Malformed events get one error naming the file, the line and the
// column.
func TestMalformedEventsNameLineAndColumn(t *testing.T) {
	_, _, _, jl, cs := readCase(t)
	first, _, _ := bytes.Cut(jl, []byte("\n"))
	line := string(first)
	set := func(key, value string) string { // replaces key's value
		re := regexp.MustCompile(`"` + key + `":(\[[^\]]*\]|[^,}]*)`)
		require.Regexp(t, re, line)
		return "\n" + re.ReplaceAllString(line, `"`+key+`":`+value) + "\n"
	}
	for _, c := range []struct{ in, want string }{
		{set("ttft", `"x"`), `run.jsonl: line 2, column "ttft": want seconds, got "x"`},
		{strings.Replace("\n"+line, `"id":`, `"idd":`, 1), `run.jsonl: line 2, column "idd": unknown column`},
		{set("status", `"fine"`), `line 2, column "status": "fine" is not a status`},
		{set("measured", "1"), `line 2, column "measured": want true or false, got 1`},
		{set("replica", "-2"), `line 2, column "replica": want a whole number >= -1, got -2`},
		{set("arrival", "1.0000000001"), `line 2, column "arrival": want seconds (a decimal such as 0.045), got "1.0000000001"`},
		{set("arrival", "null"), `line 2, column "arrival": want seconds, got null`},
		{set("turn", `"1"`), `line 2, column "turn": want a whole number, got "1"`},
		{set("itl", "[-1]"), `line 2, column "itl": gap 0: want seconds >= 0, got "-1"`},
		{set("itl", "3"), `line 2, column "itl": want a list of seconds, got 3`},
		{set("token_itl", "[1,1]"), `line 2, column "token_itl"`},
		{set("output_len", "0"), `line 2, column "output_len": 0 tokens`},
		{`{"id":1}`, `line 1, column "conversation" is missing`},
		{`{"id":`, `line 1: not a JSON object`},
	} {
		_, err := ReadJSONL(strings.NewReader(c.in), "run.jsonl")
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.want)
	}
	lines := strings.SplitN(string(cs), "\n", 3)
	for _, c := range []struct{ in, want string }{
		{strings.Replace(lines[0], "ttft", "tfft", 1) + "\n", `run.csv: line 1: unknown column "tfft"`},
		{lines[0] + "\n" + strings.Replace(lines[1], ",ok,", ",okay,", 1) + "\n", `run.csv: line 2, column "status"`},
		{lines[0] + "\n" + lines[1] + ",extra\n", `run.csv: record on line 2: wrong number of fields`},
	} {
		_, err := ReadCSV(strings.NewReader(c.in), "run.csv")
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.want)
	}
	_, err := ReadEvents(filepath.Join(t.TempDir(), "x.txt"))
	assert.Error(t, err)
}

// seconds are read back exactly, as appendSeconds writes them.
func TestParseSecondsIsExact(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 90 * time.Millisecond, 2 * time.Second, 123456789123456789, -45 * time.Millisecond} {
		got, err := parseSeconds(string(appendSeconds(nil, d)))
		require.NoError(t, err)
		assert.Equal(t, d, got)
	}
	for _, s := range []string{"", ".5", "1e3", "0.1234567891", "x", "1.-2", "99999999999999"} {
		_, err := parseSeconds(s)
		assert.Error(t, err, s)
	}
}

// A folder of a sweep's events gives back its curve: every point's
// figures and intervals, the knee, the peak and the warnings.
func TestCurveFromEventsEqualsTheSweeps(t *testing.T) {
	sw := smallSweep()
	sw.Config.KeepTokens = true
	sw.Grid = analysis.Grid{Loads: []float64{1, 2.25, 3.5}}
	dir := t.TempDir()
	ev, err := NewEventDir(dir)
	require.NoError(t, err)
	sw.Observe = ev.Observe
	c, err := sw.Run()
	require.NoError(t, err)
	require.NoError(t, ev.Close())
	again, err := CurveFromEvents(sw, dir)
	require.NoError(t, err)
	assert.Equal(t, stepless(c.Points[1].Runs[0]), stepless(again.Points[1].Runs[0]))
	assert.Equal(t, curveText(c), curveText(again))

	require.NoError(t, os.Remove(filepath.Join(dir, EventFileName(2.25, 0))))
	_, err = CurveFromEvents(sw, dir)
	assert.ErrorContains(t, err, "load 2.25 has 1 runs but no replication 0")
}

// curveText prints a curve without its runs' step fields.
func curveText(c *analysis.Curve) string {
	c2 := *c
	c2.Points = slices.Clone(c.Points)
	var b strings.Builder
	for i := range c2.Points {
		for _, r := range c2.Points[i].Runs {
			b.WriteString(stepless(r))
		}
		c2.Points[i].Runs = nil
	}
	return fmt.Sprintf("%+v\n%s", c2, b.String())
}

func TestEventFileNamesGiveTheLoadBack(t *testing.T) {
	for _, l := range []float64{0.5, 2.00390625, 1.0 / 3, 1234.5} {
		load, rep, err := parseEventName(EventFileName(l, 3))
		require.NoError(t, err)
		assert.Equal(t, l, load)
		assert.Equal(t, 3, rep)
	}
	load, _, err := parseEventName("load=2.004-rep=0.jsonl") // examples/capacity's %.4g
	require.NoError(t, err)
	assert.Equal(t, 2.004, load)
	for _, bad := range []string{"x.jsonl", "load=-1-rep=0.jsonl", "load=1-rep=x.jsonl"} {
		_, _, err := parseEventName(bad)
		assert.Error(t, err, bad)
	}
}
