package blis

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// openFixture opens testdata/<name>.yaml and .csv.
func openFixture(t *testing.T, name string, opt Options) *TraceV2 {
	t.Helper()
	dir := "testdata"
	tr, err := OpenTrace(filepath.Join(dir, name+".yaml"), filepath.Join(dir, name+".csv"), opt)
	require.NoError(t, err)
	t.Cleanup(func() { tr.Close() })
	return tr
}

// The fixture a `blis run --trace-output` writes (written by hand from
// BLIS's TraceHeader and traceV2Columns): a prefix group, sessions, SLO
// classes and a request without output.
func TestBLISGeneratedFixture(t *testing.T) {
	tr := openFixture(t, "generated", Options{})
	seed := int64(42)
	assert.Equal(t, Header{Version: 3, TimeUnit: "microseconds", Mode: "generated", WorkloadSeed: &seed,
		SLOTargets: map[string]SLOTarget{"batch": {E2EMs: 120000}, "critical": {TTFTMs: 600, ITLMs: 150}}}, tr.Header())
	got := drain(t, tr)
	sys := []uint64{groupHash("sys-prompt")}
	chat := workload.ConversationID("chat-7")
	want := []workload.Request{
		{ID: 0, Arrival: 0, InputTokens: 2000, OutputTokens: 200, PrefixHashes: sys, PrefixBlockTokens: 512, Class: "critical"},
		{ID: 1, Arrival: 250 * time.Millisecond, InputTokens: 2000, OutputTokens: 200, Class: "batch"},
		{ID: 2, Arrival: 500 * time.Millisecond, InputTokens: 1500, OutputTokens: 200, PrefixHashes: sys, PrefixBlockTokens: 512, Class: "critical"},
		{ID: 3, Arrival: 750 * time.Millisecond, InputTokens: 300, OutputTokens: 50, Conversation: chat, Class: "critical"},
		{ID: 4, Arrival: time.Second, InputTokens: 650, OutputTokens: 80, Conversation: chat, Turn: 1, Class: "critical"},
		{ID: 5, Arrival: 1250 * time.Millisecond, InputTokens: 100, OutputTokens: 0, Class: "batch", Failed: true},
	}
	assert.Equal(t, want, got, "a group's rows are its 512 prefix tokens + input_tokens: 2,000 and 1,500")
	assert.Equal(t, 4.8, tr.Clock().Rate(), "6 requests over 1.25 s")
	assert.Equal(t, "arrivals read in microseconds, as the format says; 6 requests over 1.25s: 4.8 requests/s", tr.Clock().String())
	assert.Equal(t, "testdata/generated.csv (BLIS TraceV2 version 3, mode \"generated\"), timestamp replay at the recorded µs instants", tr.String())
}

// The fixture `blis observe` writes: time_unit us, the server and network
// sections, a KV offload block with a sequence of tiers, vllm_priority
// after slo_class, send times after arrival times, server-counted
// prompts, and rows in completion order.
func TestBLISObserveFixture(t *testing.T) {
	tr := openFixture(t, "observe", Options{})
	_, err := tr.Next()
	require.NoError(t, err)
	_, err = tr.Next()
	require.Error(t, err)
	assert.Equal(t, "workload: testdata/observe.csv:3: field send_time_us: \"310\" goes back before line 2's 100250 µs (set blis.Options.Sort to sort)", err.Error())
	assert.ErrorIs(t, err, workload.ErrUnsorted)

	tr = openFixture(t, "observe", Options{Sort: true})
	h := tr.Header()
	assert.Equal(t, "us", h.TimeUnit)
	assert.Equal(t, "2026-05-01T12:00:00Z", h.CreatedAt)
	assert.Equal(t, 5, h.WarmUpRequests)
	assert.Equal(t, "preset:chatbot", h.WorkloadSpec)
	assert.Equal(t, &Server{Type: "vllm", Model: "meta-llama/Llama-3.1-70B-Instruct", TensorParallel: 4, MaxNumSeqs: 32, BlockSize: 16, GPUMemoryUtilization: 0.9}, h.Server)
	assert.Equal(t, 0.42, h.MeasuredRTTMs)
	assert.Equal(t, []string{"kv_offload"}, h.Other)
	want := []workload.Request{
		{ID: 0, Arrival: 310 * time.Microsecond, InputTokens: 2013, OutputTokens: 12, Class: "critical"},
		{ID: 1, Arrival: 100250 * time.Microsecond, InputTokens: 193, OutputTokens: 40, Class: "standard", Priority: 1},
		{ID: 2, Arrival: 400180 * time.Microsecond, InputTokens: 950, OutputTokens: 300, Class: "batch", Priority: 2},
	}
	assert.Equal(t, want, drain(t, tr), "send times; the server's prompt counts when recorded; status not read")
	assert.InDelta(t, 3/0.39987, tr.Clock().Rate(), 1e-9)
}

// servesim → TraceV2 → servesim gives identical requests.
func TestBLISRoundTrip(t *testing.T) {
	want := drain(t, richWorkload(t)) // LowReuse prefixes; a class with a comma and quotes
	for i := range want {
		want[i].Arrival = want[i].Arrival.Round(time.Microsecond)
		want[i].PrefixTwoRuns = ascend.Promise{} // a promise of runs of ids, which a trace does not carry
	}
	want[5].Failed = true
	want[6].Conversation, want[6].Turn, want[6].Priority = 42, 3, 2
	want[7].InputTokens, want[7].Failed = 0, true
	h := Header{Mode: "generated", WarmUpRequests: 3, Server: &Server{MaxNumSeqs: 32, BlockSize: 16},
		SLOTargets: map[string]SLOTarget{want[0].Class: {TTFTMs: 600, ITLMs: 150}}}
	var hb, db bytes.Buffer
	w, err := WriteTrace(&hb, &db, h, want)
	require.NoError(t, err)
	assert.Equal(t, 300, w.Requests)
	assert.Zero(t, w.Rounded)
	assert.Zero(t, w.Unshared, "PrefixReuse's groups share flat prefixes")
	columns, _, _ := strings.Cut(db.String(), "\n")
	assert.Equal(t, "request_id,client_id,tenant_id,slo_class,vllm_priority,session_id,round_index,prefix_group,prefix_length,"+
		"streaming,input_tokens,output_tokens,text_tokens,image_tokens,audio_tokens,video_tokens,reason_ratio,model,deadline_us,"+
		"server_input_tokens,arrival_time_us,send_time_us,first_chunk_time_us,last_chunk_time_us,num_chunks,status,error_message,"+
		"finish_reason,servesim_prefix_block_tokens,servesim_prefix_hashes,servesim_failed", columns,
		"BLIS's traceV2Columns in its order (it parses by position), vllm_priority after slo_class, then servesim's own")
	tr, err := NewTrace(&hb, "rt.yaml", &db, "rt.csv", Options{})
	require.NoError(t, err)
	assert.Equal(t, workload.Requests(want), workload.Requests(drain(t, tr)))
	h.Version, h.TimeUnit = 3, "microseconds"
	assert.Equal(t, h, tr.Header())
}

// Arrivals off the µs are rounded to the nearest, BLIS's tick.
func TestBLISWriteRoundsToTheMicrosecond(t *testing.T) {
	rs := workload.Requests{
		{ID: 0, Arrival: 1499 * time.Nanosecond, InputTokens: 10, OutputTokens: 1},
		{ID: 1, Arrival: 1500 * time.Nanosecond, InputTokens: 10, OutputTokens: 1},
		{ID: 2, Arrival: 3 * time.Second, InputTokens: 10, OutputTokens: 1},
	}
	var hb, db bytes.Buffer
	w, err := WriteTrace(&hb, &db, Header{}, rs)
	require.NoError(t, err)
	assert.Equal(t, 2, w.Rounded)
	assert.Equal(t, "3 requests, 0 prefix groups, 2 arrivals rounded to the µs", w.String())
	assert.Equal(t, "trace_version: 3\ntime_unit: microseconds\nmode: generated\nwarm_up_requests: 0\n", hb.String(), "BLIS's keys, BLIS's order")
	tr, err := NewTrace(&hb, "h", &db, "d", Options{})
	require.NoError(t, err)
	got := drain(t, tr)
	assert.Equal(t, []time.Duration{time.Microsecond, 2 * time.Microsecond, 3 * time.Second}, []time.Duration{got[0].Arrival, got[1].Arrival, got[2].Arrival})
}

// Prefix groups: the longest leading run of ids another request starts
// with. A, B, C and E start with id 1; A and C with 1 2 3; B with 1 2.
func TestBLISPrefixGroups(t *testing.T) {
	rs := workload.Requests{
		{ID: 0, InputTokens: 60, OutputTokens: 1, PrefixHashes: []uint64{1, 2, 3}, PrefixBlockTokens: 16},    // A
		{ID: 1, InputTokens: 40, OutputTokens: 1, PrefixHashes: []uint64{1, 2, 9}, PrefixBlockTokens: 16},    // B
		{ID: 2, InputTokens: 64, OutputTokens: 1, PrefixHashes: []uint64{1, 2, 3, 4}, PrefixBlockTokens: 16}, // C
		{ID: 3, InputTokens: 16, OutputTokens: 1, PrefixHashes: []uint64{7}, PrefixBlockTokens: 16},          // D
		{ID: 4, InputTokens: 32, OutputTokens: 1, PrefixHashes: []uint64{1, 5}, PrefixBlockTokens: 16},       // E
	}
	for i := range rs {
		rs[i].Arrival = time.Duration(i) * time.Second
	}
	var hb, db bytes.Buffer
	w, err := WriteTrace(&hb, &db, Header{}, rs)
	require.NoError(t, err)
	assert.Equal(t, 3, w.Groups, "A and C: 1 2 3; B: 1 2; E: 1")
	assert.Equal(t, 4, w.Unshared, "A, B, C and E share id 1 across groups; D shares nothing")

	// What BLIS reads: drop servesim's columns.
	csvText := db.String()
	var blisOnly strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(csvText), "\n") {
		cells := strings.Split(line, ",")
		blisOnly.WriteString(strings.Join(cells[:len(blisColumns)], ",") + "\n")
	}
	tr, err := NewTrace(strings.NewReader(hb.String()), "h", strings.NewReader(blisOnly.String()), "d", Options{})
	require.NoError(t, err)
	got := drain(t, tr)
	var in, prefix []int
	for _, r := range got {
		in, prefix = append(in, r.InputTokens), append(prefix, r.PrefixBlockTokens)
	}
	assert.Equal(t, []int{60, 40, 64, 16, 32}, in, "prefix_length + input_tokens is the prompt")
	assert.Equal(t, []int{48, 32, 48, 0, 16}, prefix, "3, 2, 3, 0 and 1 blocks of 16")
	assert.Equal(t, got[0].PrefixHashes, got[2].PrefixHashes, "A and C share a group")
	assert.NotEqual(t, got[0].PrefixHashes, got[1].PrefixHashes)

	// servesim reads its own columns back: the exact ids.
	tr, err = NewTrace(strings.NewReader(hb.String()), "h", strings.NewReader(csvText), "d", Options{})
	require.NoError(t, err)
	assert.Equal(t, rs, workload.Requests(drain(t, tr)))
}

// FleetHighReuse and FleetLowReuse (flat groups, Zipf popularity) lose no
// sharing in BLIS's groups.
func TestBLISGroupsOfTheFleetPresetsAreExact(t *testing.T) {
	for _, p := range []workload.PrefixReuse{workload.FleetHighReuse, workload.FleetLowReuse} {
		g, err := workload.NewSynthetic(workload.Synthetic{Seed: 3, Count: 500, Arrival: workload.Arrival{Process: workload.Poisson, Rate: 10},
			Lengths: workload.Fixed(6000, 100), Prefix: p})
		require.NoError(t, err)
		var hb, db bytes.Buffer
		w, err := WriteTrace(&hb, &db, Header{}, drain(t, g))
		require.NoError(t, err)
		assert.Zero(t, w.Unshared, "%v", p)
		assert.Positive(t, w.Groups)
		assert.LessOrEqual(t, w.Groups, p.Groups)
	}
}

func TestBLISWriteRefusesWhatTraceV2CannotHold(t *testing.T) {
	rs := workload.Requests{
		{ID: 1 << 63, Arrival: 0, InputTokens: 10, OutputTokens: 1},
		{ID: 2, Arrival: time.Second, InputTokens: 10, OutputTokens: 1, Priority: -1},
	}
	_, err := WriteTrace(io.Discard, io.Discard, Header{TimeUnit: "ms"}, rs)
	for _, want := range []string{
		`Header.TimeUnit must be microseconds (TraceV2's columns are µs), got "ms"`,
		"Requests[0].ID 9223372036854775808 is over 9223372036854775807, the largest request_id BLIS reads",
		"Requests[1].Priority -1 is negative, which BLIS's vllm_priority refuses",
	} {
		assert.ErrorContains(t, err, want)
	}
}

// Errors name the file, the line and the key or column.
func TestBLISErrorsNameFileLineAndField(t *testing.T) {
	const header = "trace_version: 3\ntime_unit: microseconds\nmode: generated\nwarm_up_requests: 0\n"
	const cols = "request_id,prefix_group,prefix_length,input_tokens,output_tokens,arrival_time_us\n"
	for _, tc := range []struct {
		name, header, data, want string
	}{
		{"unit", "trace_version: 3\ntime_unit: ms\n", cols, `workload: h.yaml:2: field time_unit: "ms" is not microseconds`},
		{"server", header + "server:\n    type: vllm\n    max_num_seqs: many\n", cols, `workload: h.yaml:7: field server.max_num_seqs: "many" is not an integer`},
		{"quoted int", header + "workload_seed: \"42\"\n", cols, `workload: h.yaml:5: field workload_seed: "42" is not an integer`},
		{"slo", header + "goodput_slo_targets:\n    critical:\n        ttft_ms: -1\n", cols, `workload: h.yaml:7: field goodput_slo_targets.critical.ttft_ms: "-1" is not a finite number >= 0`},
		{"flow", header + "server: {type: vllm}\n", cols, "workload: h.yaml:5: flow collections ({...}, [...]) are not supported"},
		{"indent", header + "server:\n    type: vllm\n  model: x\n", cols, `workload: h.yaml:7: "model: x" belongs to no block above it`},
		{"column", header, "request_id,input_tokens,output_tokens\n", "workload: d.csv:1: field arrival_time_us: \"request_id,input_tokens,output_tokens\" is a header without this column"},
		{"tokens", header, cols + "0,,0,12x,5,0\n", `workload: d.csv:2: field input_tokens: "12x" is not an integer`},
		{"arrival", header, cols + "0,,0,12,5,-3\n", `workload: d.csv:2: field arrival_time_us: "-3" is negative`},
		{"id", header, cols + "-1,,0,12,5,0\n", `workload: d.csv:2: field request_id: "-1" is not an unsigned integer`},
		{"late group", header, cols + "0,g,0,12,5,0\n1,g,512,12,5,1000\n", `workload: d.csv:3: field prefix_length: "512" is prefix_group "g"'s first length, but line 2 of the group came before it`},
		{"empty", header, cols, "workload: trace has no requests: d.csv has no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := NewTrace(strings.NewReader(tc.header), "h.yaml", strings.NewReader(tc.data), "d.csv", Options{})
			if err == nil {
				_, err = tr.Next()
				for err == nil {
					_, err = tr.Next()
				}
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var pe *workload.ParseError
			if tc.name != "empty" {
				assert.True(t, errors.As(err, &pe), "a *ParseError: %v", err)
			}
		})
	}
}

// A file of seconds written into arrival_time_us is caught by its rate.
func TestBLISImplausibleRate(t *testing.T) {
	data := "request_id,input_tokens,output_tokens,arrival_time_us\n0,10,1,0\n1,10,1,1\n2,10,1,2\n3,10,1,3\n"
	tr, err := NewTrace(strings.NewReader("trace_version: 3\n"), "h", strings.NewReader(data), "secs.csv", Options{})
	require.NoError(t, err)
	var e error
	for e == nil {
		_, e = tr.Next()
	}
	assert.ErrorIs(t, e, workload.ErrImplausibleRate)
	assert.ErrorContains(t, e, "secs.csv: arrivals read in microseconds, as the format says; 4 requests over 3µs: 1.333e+06 requests/s, above a million a second: convert the column to microseconds (read in seconds it would be 1.333 requests/s), or set blis.Options.AnyRate to accept it")
}

// FuzzBLISTrace: no header or data panics the reader; every error names
// the file (a *workload.ParseError its line too); what it yields is a valid
// workload.
func FuzzBLISTrace(f *testing.F) {
	for _, name := range []string{"generated", "observe"} {
		h, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
		require.NoError(f, err)
		d, err := os.ReadFile(filepath.Join("testdata", name+".csv"))
		require.NoError(f, err)
		f.Add(h, d, false)
		f.Add(h, d, true)
	}
	f.Add([]byte("trace_version: 2\ntime_unit: us\n"), []byte("request_id,input_tokens,output_tokens,arrival_time_us,prefix_group,prefix_length,servesim_prefix_hashes,servesim_prefix_block_tokens\n0,5,1,0,g,512,1 2,16\n"), false)
	f.Fuzz(func(t *testing.T, header, data []byte, sorted bool) {
		tr, err := NewTrace(bytes.NewReader(header), "h.yaml", bytes.NewReader(data), "d.csv", Options{Sort: sorted})
		if err != nil {
			checkBLISError(t, err)
			return
		}
		var got workload.Requests
		for {
			r, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				checkBLISError(t, err)
				return
			}
			got = append(got, r)
		}
		for i := range got {
			got[i].ID = uint64(i) // ids need not be unique in a file
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("yielded an invalid workload: %v", err)
		}
	})
}

func checkBLISError(t *testing.T, err error) {
	var pe *workload.ParseError
	switch {
	case errors.As(err, &pe):
		if pe.File != "h.yaml" && pe.File != "d.csv" || pe.Line < 1 {
			t.Fatalf("error does not name file and line: %v", err)
		}
	case errors.Is(err, workload.ErrEmptyTrace) || errors.Is(err, workload.ErrImplausibleRate):
		if !strings.Contains(err.Error(), "d.csv") {
			t.Fatalf("whole-trace error does not name the file: %v", err)
		}
	default:
		t.Fatalf("unexpected error: %v", err)
	}
}

// A header of a version servesim does not know (trace_version: 99), with
// none, or an empty header file is refused, naming the file and
// trace_version: each used to be read as if it were version 3.
func TestBLISHeaderVersion(t *testing.T) {
	const empty = "workload: h.yaml:1: the header is empty: a TraceV2 header (BLIS's <prefix>.yaml) begins with trace_version: 2 or 3"
	for _, c := range []struct{ header, want string }{
		{"", empty},
		{"\n# written by hand\n\n", empty},
		{"\ufeff", empty},
		{"time_unit: us\nmode: real\n", "workload: h.yaml:1: the header has no trace_version: a TraceV2 header (BLIS's <prefix>.yaml) begins with trace_version: 2 or 3"},
		{"trace_version: 99\ntime_unit: us\n", `workload: h.yaml:1: field trace_version: "99" is not a TraceV2 version servesim reads (2 or 3)`},
		{"time_unit: us\ntrace_version: 1\n", `workload: h.yaml:2: field trace_version: "1" is not a TraceV2 version servesim reads (2 or 3)`},
		{"trace_version: 0\n", `workload: h.yaml:1: field trace_version: "0" is not a TraceV2 version servesim reads (2 or 3)`},
		{"trace_version:\n", `workload: h.yaml:1: field trace_version: "" is not a TraceV2 version servesim reads (2 or 3)`},
		{"trace_version: -3\n", `workload: h.yaml:1: field trace_version: "-3" is out of range [0, 2147483647]`},
	} {
		_, err := ReadHeader(strings.NewReader(c.header), "h.yaml")
		assert.EqualError(t, err, c.want, "%q", c.header)
		assert.ErrorIs(t, err, workload.ErrMalformed, "%q", c.header)
		var pe *workload.ParseError
		assert.True(t, errors.As(err, &pe), "%q", c.header)
		_, err = NewTrace(strings.NewReader(c.header), "h.yaml", strings.NewReader("request_id,input_tokens,output_tokens,arrival_time_us\n0,5,1,0\n"), "d.csv", Options{})
		assert.EqualError(t, err, c.want, "%q", c.header)
	}
	for _, v := range []int{2, 3} {
		h, err := ReadHeader(strings.NewReader("trace_version: "+strconv.Itoa(v)+"\n"), "h.yaml")
		require.NoError(t, err)
		assert.Equal(t, Header{Version: v}, h)
	}

	// OpenTrace names the header file it opened.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.yaml"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.csv"), []byte("request_id,input_tokens,output_tokens,arrival_time_us\n0,5,1,0\n"), 0o644))
	_, err := OpenTrace(filepath.Join(dir, "t.yaml"), filepath.Join(dir, "t.csv"), Options{})
	assert.EqualError(t, err, "workload: "+filepath.Join(dir, "t.yaml")+":1: the header is empty: a TraceV2 header (BLIS's <prefix>.yaml) begins with trace_version: 2 or 3")

	// Nor does the writer write a version it could not read back.
	reqs := workload.Requests{{ID: 0, InputTokens: 5, OutputTokens: 1}}
	var hb, db bytes.Buffer
	_, err = WriteTrace(&hb, &db, Header{Version: 99}, reqs)
	assert.EqualError(t, err, "blis: Header.Version must be 2 or 3 (0 writes 3), the TraceV2 versions servesim reads, got 99")
	_, err = WriteTrace(&hb, &db, Header{Version: 2}, reqs)
	require.NoError(t, err)
	back, err := ReadHeader(&hb, "h")
	require.NoError(t, err)
	assert.Equal(t, 2, back.Version)
}
