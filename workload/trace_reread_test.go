package workload

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/sharedtraces"
)

// rereadRun is everything a replay shows: its description or the error
// that refused it, each request or error Next returned, then its clock
// and count.
func rereadRun(data []byte, cfg TraceConfig) string {
	var b bytes.Buffer
	if cfg.Conversations.Keep {
		rep, err := NewReplay(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			return "refused: " + err.Error()
		}
		d := drive(rep.(*ConversationTrace), time.Second, true)
		fmt.Fprintf(&b, "%v\n%+v\n%v\n%+v %d", rep, d.log, d.err, rep.(*ConversationTrace).Clock(), rep.Count())
		return b.String()
	}
	tr, err := NewTrace(bytes.NewReader(data), "fuzz", cfg)
	if err != nil {
		return "refused: " + err.Error()
	}
	fmt.Fprintln(&b, tr)
	// With rereadInto, each request is written by NextInto into a slot
	// that holds the one before it (a junk one at first), as sim's
	// runner writes it: every field must be written.
	slot := Request{ID: 99, Arrival: 7, InputTokens: 5, OutputTokens: 3, PrefixHashes: []uint64{1, 2}, PrefixBlockTokens: 9,
		HashesCoverOutput: true, Conversation: 4, Turn: 2, Priority: 1, Class: "junk", Failed: true, PrefixTwoRuns: ascend.TwoRuns()}
	for {
		var r Request
		var err error
		if rereadInto {
			err = (*traceInto)(tr).NextInto(&slot)
			r = slot
		} else {
			r, err = tr.Next()
		}
		if err != nil {
			fmt.Fprintf(&b, "%v\n%+v %d", err, tr.Clock(), tr.Count())
			return b.String()
		}
		fmt.Fprintf(&b, "%+v\n", r)
	}
}

// checkReread holds a TargetRate replay that takes its first pass's
// reads (kept whole, or dropped past a small bound) to its slow twin,
// which reads the file again: the same output, byte for byte.
func checkReread(t *testing.T, data []byte, cfg TraceConfig) {
	t.Helper()
	defer func(keep, skim, tmpl bool, limit int) {
		keepFirstPass, skimFirstPass, replayTemplate, rereadBytes = keep, skim, tmpl, limit
	}(keepFirstPass, skimFirstPass, replayTemplate, rereadBytes)
	// The first pass reads whole lines, and keeps them; the replay
	// reads every line by flatObject.
	keepFirstPass, skimFirstPass, replayTemplate = false, false, false
	want := rereadRun(data, cfg)
	keepFirstPass, replayTemplate = true, true
	for _, limit := range []int{16 << 20, 0, 600} {
		rereadBytes = limit
		require.Equal(t, want, rereadRun(data, cfg), "bound %d, config %+v, data %q", limit, cfg, data)
	}
	rereadBytes = 16 << 20
	for _, n := range []int{1, 2, 3} { // the kept reads across chunks of n (reread.add, unadd and turn)
		keptChunkReads = n
		require.Equal(t, want, rereadRun(data, cfg), "chunks of %d reads, config %+v, data %q", n, cfg, data)
	}
	keptChunkReads = keptChunk
	keptByTemplate = false // the first pass's lines kept through read
	require.Equal(t, want, rereadRun(data, cfg), "kept through read: config %+v, data %q", cfg, data)
	keptByTemplate = true
	keepRunOn, rereadNextOn = false, false // each line through Next, each kept read through read
	require.Equal(t, want, rereadRun(data, cfg), "kept without keepRun and nextKept: config %+v, data %q", cfg, data)
	keepRunOn, rereadNextOn = true, true
	chunkSkim = false // keepRun's lines cut by scanText, then read by the template
	require.Equal(t, want, rereadRun(data, cfg), "lines cut before their read: config %+v, data %q", cfg, data)
	chunkSkim = true
	fourOn = false // keepRun's lines in the chunk read by read's loop, not readFour
	require.Equal(t, want, rereadRun(data, cfg), "lines in the chunk read by read: config %+v, data %q", cfg, data)
	fourOn = true
	rereadInto = true // through internal/nextinto's route
	require.Equal(t, want, rereadRun(data, cfg), "through NextInto: config %+v, data %q", cfg, data)
	rereadNextOn = false
	require.Equal(t, want, rereadRun(data, cfg), "through NextInto without nextKept: config %+v, data %q", cfg, data)
	rereadInto, rereadNextOn = false, true
	checkSkim(t, data, cfg, want)
	cfg.Transform.TargetRate = 0
	checkTemplate(t, data, cfg)
}

// checkTemplate holds a replay of data that reads its lines by their
// template (skimmer with ids) to its slow twin, which reads every line
// by flatObject (replayTemplate off): the same output, byte for byte.
func checkTemplate(t *testing.T, data []byte, cfg TraceConfig) {
	t.Helper()
	defer func(tmpl, next bool) { replayTemplate, templateNextOn = tmpl, next }(replayTemplate, templateNextOn)
	replayTemplate, templateNextOn = false, false
	want := rereadRun(data, cfg)
	replayTemplate = true
	require.Equal(t, want, rereadRun(data, cfg), "the replay's template changed it: config %+v, data %q", cfg, data)
	templateNextOn = true // and nextByTemplate
	require.Equal(t, want, rereadRun(data, cfg), "nextByTemplate changed a replay: config %+v, data %q", cfg, data)
	rereadInto = true
	defer func() { rereadInto = false }()
	require.Equal(t, want, rereadRun(data, cfg), "nextByTemplate through NextInto: config %+v, data %q", cfg, data)
	replayTemplate = false
	require.Equal(t, want, rereadRun(data, cfg), "read through NextInto: config %+v, data %q", cfg, data)
}

// rereadInto: rereadRun drives a Trace through internal/nextinto's
// route (traceInto), into a reused slot; Next, its twin, otherwise.
var rereadInto bool

// checkSkim holds a TargetRate replay whose first pass skims its lines
// (skimmer) to want, its slow twin's, whose first pass parses them
// whole: the same output, byte for byte, unless the twin refused the
// trace; then the skimming replay refuses it with the same error, or
// (a malformed hash id list, which the skim steps over) ends with it,
// the same file and line, when it reaches it.
//
// The pass skims the lines after those whose reads it kept, up to the
// bound (rereadBytes): it runs with the bound at 16 MiB (all kept), 0
// (every line skimmed after the first) and 600 (a few kept).
func checkSkim(t *testing.T, data []byte, cfg TraceConfig, want string) {
	t.Helper()
	defer func(keep, skim bool, limit int) {
		keepFirstPass, skimFirstPass, rereadBytes = keep, skim, limit
	}(keepFirstPass, skimFirstPass, rereadBytes)
	keepFirstPass, skimFirstPass = true, true
	checkSkimSpan(t, data, cfg)
	for _, limit := range []int{16 << 20, 0, 600} {
		rereadBytes = limit
		got := rereadRun(data, cfg)
		if got == want {
			continue
		}
		e, refused := strings.CutPrefix(want, "refused: ")
		require.True(t, refused, "the skimming first pass changed a replay: bound %d, config %+v, data %q\nwant %s\ngot  %s", limit, cfg, data, want, got)
		require.Contains(t, got, "\n"+e+"\n", "the skimming replay does not end with the error the twin refused the trace with: bound %d, config %+v, data %q", limit, cfg, data)
	}
}

// rereadConfigs are the TargetRate configurations checkReread replays
// data in: plain, windowed, filtered, sorted, keeping conversations, and
// at a rate that scales arrivals past time.Duration's range (an error
// naming the row's line).
func rereadConfigs(base TraceConfig) []TraceConfig {
	var out []TraceConfig
	for i := 0; i < 6; i++ {
		cfg := base
		cfg.Transform.TargetRate = 3
		switch i {
		case 1:
			cfg.Transform.WindowStart, cfg.Transform.WindowEnd = 1*time.Second, 3*time.Second
		case 2:
			cfg.Filters = []Filter{{Column: base.Columns.Output, Values: []string{"2", "4"}}}
		case 3:
			cfg.Sort = true
		case 4:
			cfg.Conversations = ConversationReplay{Keep: true, MinThink: time.Second}
		case 5:
			cfg.Transform.TargetRate = 1e-12
		}
		out = append(out, cfg)
	}
	return out
}

func TestRereadIsTheFile(t *testing.T) {
	rows := []string{
		"", // no rows
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}`,
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 1000, "input_length": 40, "output_length": 4, "hash_ids": [7]}
{"timestamp": 2500, "input_length": 1100, "output_length": 3, "hash_ids": [0, 1, 2]}
{"timestamp": 4000, "input_length": 5, "output_length": 2, "hash_ids": []}`,
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 3000, "input_length": 40, "output_length": 4, "hash_ids": [7, x]}`,
		`{"timestamp": 2000, "input_length": 600, "output_length": 2}
{"timestamp": 1000, "input_length": 40, "output_length": 4}`,
		`{"timestamp": "2024-05-01 10:00:00", "input_length": 600, "output_length": 2}
{"timestamp": "2024-05-01 10:00:02.5", "input_length": 40, "output_length": 4, "hash_ids": [3]}`,
		// A row before the window with hash ids, then one in it without
		// (NextInto's slot must not keep the first's).
		`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 0, "output_length": 4}`,
	}
	// Lines after a first one the skim takes as its template: lines it
	// takes, lines it leaves to the full parse (other keys, numbers that
	// are not plain, out of range), and malformed lists, whose error the
	// skimming replay reports when it reaches them.
	head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"
	for _, tail := range []string{
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": []}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, "a]"]}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [[1], 2]}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, 2}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, -2]}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [{}]}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1], "timestamp": 900}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1]} `,
		`{"input_length": 40, "timestamp": 1500, "output_length": 4, "hash_ids": [1]}`,
		`{"timestamp": 01500, "input_length": 40, "output_length": 4, "hash_ids": [1]}`,
		`{"timestamp": 1.5e3, "input_length": 40, "output_length": 4, "hash_ids": [1]}`,
		`{"timestamp": 1500, "input_length": 4000000000, "output_length": 4, "hash_ids": [1]}`,
		`{"timestamp": 1500, "input_length": 40, "output_length": 12345678901234567890, "hash_ids": [1]}`,
		`{"timestamp": 99999999999999999, "input_length": 40, "output_length": 4, "hash_ids": [1]}`,
		`{"timestamp": 500, "input_length": 40, "output_length": 4, "hash_ids": [1]}` + "\n" + head,
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1, x]}` + "\n" + `{"timestamp": 4000, "input_length": 4, "output_length": 4, "hash_ids": [2]}`,
		`{"timestamp": 3500, "input_length": 40, "output_length": 4, "hash_ids": [1, x]}`,
		// A malformed list after a line whose arrival, scaled by the
		// factor the skimming pass found, overflows: the replay reports
		// the list's error, not the overflow the full pass never reaches.
		`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1]}` + "\n" + `{"timestamp": 3000, "input_length": 4, "output_length": 4, "hash_ids": [1, x]}`,
	} {
		rows = append(rows, head+tail, head+tail+"\n"+head[:len(head)-1])
	}
	for _, data := range rows {
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			checkReread(t, []byte(data), cfg)
		}
	}
	var many bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&many, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%d, %d, %d]}`+"\n", 37*i, 1000+i, 1+i%5, i, i+1, i+2)
	}
	for _, cfg := range rereadConfigs(Mooncake(0)) {
		checkReread(t, many.Bytes(), cfg)
	}
	var gen bytes.Buffer
	WriteTrace(&gen, CSV, richWorkload(t))
	for _, cfg := range rereadConfigs(Generic(CSV)) {
		checkReread(t, gen.Bytes(), cfg)
	}
}

// FuzzReread is TestRereadIsTheFile on any input.
func FuzzReread(f *testing.F) {
	seedLines(f, mooncake, false)
	f.Add([]byte(`{"timestamp": 5, "input_length": 600, "output_length": 0, "hash_ids": [1, 2]}
{"timestamp": 1500, "input_length": 6, "output_length": 2, "hash_ids": [1]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range rereadConfigs(Mooncake(0)) {
			checkReread(t, data, cfg)
		}
	})
}

// mooncakeData is the Mooncake trace's bytes, when ../shared holds it
// (else the test is noted as run without it): for a test that has
// inputs of its own besides.
func mooncakeData(t *testing.T) ([]byte, bool) {
	path, ok := sharedtraces.Optional(t, mooncake)
	if !ok {
		return nil, false
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data, true
}

// mooncakeFile is the Mooncake trace's bytes; the test skips (and is
// noted as skipped) when ../shared does not hold it: for a test that
// has nothing else to check.
func mooncakeFile(t *testing.T) []byte {
	data, err := os.ReadFile(sharedtraces.Path(t, mooncake))
	require.NoError(t, err)
	return data
}

// TestSkimIsTheFullPass holds a TargetRate replay of the Mooncake trace,
// whose first pass skims it, to the replay whose first pass parses it
// whole (checkReread), and checks that the skim takes every line after
// the first (its template) at the arrival the full parse reads.
func TestSkimIsTheFullPass(t *testing.T) {
	data := mooncakeFile(t)
	for _, cfg := range rereadConfigs(Mooncake(0))[:3] { // plain, windowed, filtered (not skimmed)
		checkReread(t, data, cfg)
	}
	full := parser{name: "m", cfg: Mooncake(0)}
	p := parser{name: "m", cfg: Mooncake(0)}
	j, rows := newJSONRows(bytes.NewReader(data), "m"), newJSONRows(bytes.NewReader(data), "m")
	j.skim = &skimmer{p: &p}
	lines, skimmed := 0, 0
	for {
		r, err := j.next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		row, err := rows.next()
		require.NoError(t, err)
		var req, want Request
		got, _, err := p.parse(r, &req)
		require.NoError(t, err)
		raw, _, err := full.parse(row, &want)
		require.NoError(t, err)
		require.Equal(t, raw, got, "line %d", row.line())
		lines++
		if j.skimmed {
			skimmed++
		}
	}
	assert.Equal(t, lines-1, skimmed, "the lines skimmed")
}

// skimLineSeeds are lines after a Mooncake line that a skim takes or
// leaves to the full parse (FuzzSkimLine, FuzzTemplateLine).
var skimLineSeeds = []string{
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [7, 8]}`,
	`{"timestamp": 01500, "input_length": 40, "output_length": 4, "hash_ids": [7, 8]}`,
	`{"timestamp": 1500, "input_length": 040, "output_length": 4, "hash_ids": [7, 8]}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": ["]}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [x]}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4294967296, "hash_ids": []}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1]}}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [1]`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 0, "hash_ids": [19, 20, 21, 22, 1.5]}`,
	`{"timestamp": 1500, "input_length": 40, "output_length": 4, "hash_ids": [12345, 12346, 12347, 12348, 12349, 12350]}`,
}

// FuzzTemplateLine holds a replay's template (skimmer with ids) to its
// slow twin, flatObject and plainRow (jsonRows without it), on a line
// after a Mooncake line (the template): the same rows, requests and
// errors. The Mooncake lines it takes are counted by
// TestTemplateTakesMooncake.
func FuzzTemplateLine(f *testing.F) {
	fuzzLine(f, func(t *testing.T, line []byte) {
		require.Equal(t, templateRead(line, false), templateRead(line, true), "%q", line)
	})
}

// fuzzLine runs check on one line after a Mooncake line, from
// skimLineSeeds on (FuzzSkimLine, FuzzTemplateLine).
func fuzzLine(f *testing.F, check func(t *testing.T, line []byte)) {
	for _, s := range skimLineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !bytes.ContainsAny(line, "\n\r") { // one line
			check(t, line)
		}
	})
}

// templateRead is what a replay's parser reads of a Mooncake line and
// line after it, by its template (tmpl) or by flatObject alone.
func templateRead(line []byte, tmpl bool) string {
	head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"
	p := parser{name: "f", cfg: Mooncake(0)}
	j := newJSONRows(strings.NewReader(head+string(line)), "f")
	if tmpl {
		j.skim = &skimmer{p: &p, ids: true}
	}
	var b strings.Builder
	for range 2 {
		r, err := j.next()
		if err != nil {
			fmt.Fprintln(&b, err)
			break
		}
		var req Request
		raw, keep, err := p.parse(r, &req)
		fmt.Fprintf(&b, "%d: %v %v %v %+v\n", r.line(), raw, keep, err, req)
	}
	return b.String()
}

// TestTemplateTakesMooncake checks that a replay of the Mooncake trace
// yields every line after the first (its template) by nextByTemplate,
// to the requests its twin reads (checkTemplate).
func TestTemplateTakesMooncake(t *testing.T) {
	data := mooncakeFile(t)
	checkTemplate(t, data, Mooncake(0))
	tr, err := NewTrace(bytes.NewReader(data), "m", Mooncake(0))
	require.NoError(t, err)
	j := tr.rows.(*jsonRows)
	require.NotNil(t, j.skim)
	lines, taken := 0, 0
	for {
		var r Request
		if tr.nextByTemplate(j, &r) {
			lines, taken = lines+1, taken+1
			continue
		}
		if _, err := tr.Next(); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		lines++
	}
	assert.Equal(t, lines-1, taken, "the lines read by the template")
}

// FuzzSkimLine holds the skim to the full parse on a line after a
// Mooncake line (the skim's template): a line the skim takes is one the
// full parse reads, at the same arrival, once its hash id list (what the
// skim steps over, to its first ']') is replaced by []. The skim reads
// every other byte: only a malformed list escapes it.
func FuzzSkimLine(f *testing.F) {
	fuzzLine(f, func(t *testing.T, line []byte) {
		head := `{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}` + "\n"
		p := parser{name: "f", cfg: Mooncake(0)}
		j := newJSONRows(strings.NewReader(head+string(line)), "f")
		j.skim = &skimmer{p: &p}
		for range 2 {
			r, err := j.next()
			if err != nil {
				return
			}
			var req Request
			if _, _, err := p.parse(r, &req); err != nil {
				return
			}
		}
		if !j.skimmed {
			return
		}
		text := bytes.TrimSpace(line)
		k := bytes.Index(text, []byte(`"hash_ids": [`)) + len(`"hash_ids": `)
		e := k + bytes.IndexByte(text[k:], ']')
		fixed := string(text[:k]) + "[]" + string(text[e+1:])
		full := parser{name: "f", cfg: Mooncake(0)}
		rows := newJSONRows(strings.NewReader(head+fixed), "f")
		var raw time.Duration
		for range 2 {
			r, err := rows.next()
			require.NoError(t, err, "%q, list replaced: %q", line, fixed)
			var req Request
			var keep bool
			raw, keep, err = full.parse(r, &req)
			require.NoError(t, err, "%q, list replaced: %q", line, fixed)
			require.True(t, keep)
		}
		require.Equal(t, raw, j.raw, "%q", line)
	})
}

// checkSkimSpan holds span with skimRun to its twin, span without, on a first pass over
// data that skims (cfg's, without TargetRate, when it skims): the same
// count, last arrival and error, and the same state of the trace after.
func checkSkimSpan(t *testing.T, data []byte, cfg TraceConfig) {
	t.Helper()
	cfg.Transform.TargetRate, cfg.Conversations = 0, ConversationReplay{}
	if !skims(cfg) {
		return
	}
	pass := func(fast bool) (string, *Trace) {
		tr, err := NewTrace(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			return "refused: " + err.Error(), nil
		}
		j := tr.rows.(*jsonRows)
		tr.p.measuring, j.skim, tr.skimming = true, &skimmer{p: &tr.p}, j
		defer func(on bool) { skimRunOn = on }(skimRunOn)
		skimRunOn = fast
		n, last, err := span(tr)
		return fmt.Sprintf("%d %v %v", n, last, err), tr
	}
	want, slow := pass(false)
	got, fast := pass(true)
	require.Equal(t, want, got, "config %+v, data %q", cfg, data)
	if slow == nil {
		return
	}
	state := func(tr *Trace) string {
		return fmt.Sprintf("%v %v %v %v %d %d %d %d %+v %v %v %v %v", tr.started, tr.rebased, tr.origin, tr.prev, tr.lastLine,
			tr.next, tr.count, tr.rowsRead, tr.track, tr.done, tr.err, tr.p.clock, tr.rows.(*jsonRows).ln)
	}
	require.Equal(t, state(slow), state(fast), "config %+v, data %q", cfg, data)
}

// TestKeptIDsAreTheirOwn checks that the hash ids of a replay's
// requests, cut from keepIDs' slabs, are each request's own: an append
// to one leaves the next request's as read, and a row longer than a
// slab is kept whole.
func TestKeptIDsAreTheirOwn(t *testing.T) {
	var b bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 600, "output_length": 2, "hash_ids": [%d, %d]}`+"\n", i, 10*i, 10*i+1)
	}
	long := make([]string, idSlab+5)
	for i := range long {
		long[i] = fmt.Sprint(i)
	}
	fmt.Fprintf(&b, `{"timestamp": 9, "input_length": 600, "output_length": 2, "hash_ids": [%s]}`+"\n", strings.Join(long, ", "))
	tr, err := NewTrace(bytes.NewReader(b.Bytes()), "ids", Mooncake(0))
	require.NoError(t, err)
	var reqs []Request
	for range 4 {
		r, err := tr.Next()
		require.NoError(t, err)
		reqs = append(reqs, r)
	}
	reqs[0].PrefixHashes = append(reqs[0].PrefixHashes, 99)
	reqs[1].PrefixHashes = append(reqs[1].PrefixHashes, 98) // read in place (idRoom)
	assert.Equal(t, []uint64{0, 1, 99}, reqs[0].PrefixHashes)
	assert.Equal(t, []uint64{10, 11, 98}, reqs[1].PrefixHashes)
	assert.Equal(t, []uint64{20, 21}, reqs[2].PrefixHashes)
	require.Len(t, reqs[3].PrefixHashes, idSlab+5)
	assert.Equal(t, uint64(idSlab+4), reqs[3].PrefixHashes[idSlab+4])
}

// TestPlainEndsAreTrimmed holds plainEnds to bytes.TrimSpace: a line it
// says has plain ends is its own trimming, for every first and last byte
// (and lines of one byte); a line it does not is trimmed as before.
func TestPlainEndsAreTrimmed(t *testing.T) {
	for first := range 256 {
		for last := range 256 {
			for _, b := range [][]byte{{byte(first), ' ', 'x', 0xc2, 0xa0, byte(last)}, {byte(first)}} {
				if plainEnds(b) && !bytes.Equal(bytes.TrimSpace(b), b) {
					t.Fatalf("%q: plainEnds, but bytes.TrimSpace trims it to %q", b, bytes.TrimSpace(b))
				}
			}
		}
	}
	require.True(t, plainEnds([]byte(`{"a": 1}`)))
	require.False(t, plainEnds([]byte(" {}")))
	require.False(t, plainEnds(nil))
}

// csvRereadRows are CSV traces for checkReread: plain lines (keepRunCSV's),
// lines it leaves to csv.Reader (quoted, empty, short), and rows that
// end the replay (a count that is not one, an arrival that goes back),
// with the arrival in seconds or as Azure's date-times.
var csvRereadRows = []string{
	"TIMESTAMP,ContextTokens,GeneratedTokens\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n1,40,4\n2.5,1100,3\n4,5,2\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n0.5,40,4\n0.7,1100,3\n1.5,5,2\n2,7,4\n3,8,2\n3.5,9,4\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n1,40,4\n\n2.5,1100,3\n\"3\",7,2\n4,5,2\n5,6,4\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\r\n0,600,2\r\n1,40,4\r\n2,7,0\r\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n1,40,4\n2,x,4\n3,5,2\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n3,40,4\n2,9,4\n4,5,2\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n1,40,4\n2,9\n4,5,2\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n0,600,2\n1, 40 ,4\n2,9,2\n4,5,4\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:52.1,96,2\n2023-11-16 18:15:58,36,4\n",
	"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,374,44\n2023-11-16 18:15:50,396,109\n2023-11-16 18:15:40,96,2\n",
}

// TestRereadIsTheFileCSV is TestRereadIsTheFile on CSV traces (their
// first pass's plain lines kept by keepRunCSV), the Azure sample among
// them.
func TestRereadIsTheFileCSV(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "tracereplay", "testdata", "azure_conv_sample.csv"))
	require.NoError(t, err)
	for _, d := range append(csvRereadRows, string(data)) {
		for _, cfg := range rereadConfigs(Azure()) {
			checkReread(t, []byte(d), cfg)
		}
	}
}

// FuzzRereadCSV is TestRereadIsTheFileCSV on any input.
func FuzzRereadCSV(f *testing.F) {
	for _, d := range csvRereadRows {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, cfg := range rereadConfigs(Azure()) {
			checkReread(t, data, cfg)
		}
	})
}

// TestNextIntoAfterSkippedRow: a row before the window has hash ids and
// the next, in it, has none. Next (which goes through NextInto) and
// NextInto into a slot holding a request must both yield the second
// row alone, nothing of the first.
func TestNextIntoAfterSkippedRow(t *testing.T) {
	data := []byte(`{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [0, 1]}
{"timestamp": 1500, "input_length": 40, "output_length": 4}`)
	cfg := Mooncake(0)
	cfg.Transform.WindowStart, cfg.Transform.WindowEnd = time.Second, 3*time.Second
	want := Request{Arrival: 500 * time.Millisecond, InputTokens: 40, OutputTokens: 4}
	for _, into := range []bool{false, true} {
		tr, err := NewTrace(bytes.NewReader(data), "skip", cfg)
		require.NoError(t, err)
		r := Request{ID: 9, PrefixHashes: []uint64{5}, PrefixBlockTokens: 3, Class: "x", Priority: 2}
		if into {
			err = (*traceInto)(tr).NextInto(&r)
		} else {
			r, err = tr.Next()
		}
		require.NoError(t, err)
		assert.Equal(t, want, r, "through NextInto: %v", into)
		if into {
			require.Equal(t, io.EOF, (*traceInto)(tr).NextInto(&r))
			assert.Equal(t, Request{}, r, "NextInto's slot after the last")
		}
	}
}
