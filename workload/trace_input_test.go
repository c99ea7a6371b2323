package workload

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll opens in as a trace and drains it, returning the first error
// (nil at a clean end).
func readAll(in, name string, cfg TraceConfig) error {
	tr, err := NewTrace(strings.NewReader(in), name, cfg)
	if err != nil {
		return err
	}
	_, _, err = span(tr)
	return err
}

// traceErrorCase is an input and the error its reading must end with.
type traceErrorCase struct {
	what, name, in string
	cfg            TraceConfig
	want           string
	is             error
}

func checkTraceErrors(t *testing.T, cases []traceErrorCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			err := readAll(c.in, c.name, c.cfg)
			require.Error(t, err, c.want)
			assert.Equal(t, c.want, err.Error())
			assert.True(t, errors.Is(err, c.is), "%v wraps %v", err, c.is)
		})
	}
}

// An integer too large for its field is out of range, not "not an
// integer"; the message gives the field type's range.
func TestTraceIntegersOutOfRange(t *testing.T) {
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
	generic := "id,arrival_ns,input_tokens,output_tokens,priority,prefix_hashes,prefix_block_tokens\n"
	checkTraceErrors(t, []traceErrorCase{
		{"token count", "azure.csv", azure + "2023-11-16 18:15:47.0,99999999999,44\n", Azure(),
			`workload: azure.csv:3: field ContextTokens: "99999999999" is out of range [0, 2147483647]`, ErrMalformed},
		{"huge negative token count", "azure.csv", azure + "2023-11-16 18:15:47.0,3,-99999999999\n", Azure(),
			`workload: azure.csv:3: field GeneratedTokens: "-99999999999" is negative`, ErrMalformed},
		{"id", "g.csv", generic + "18446744073709551616,0,1,1,0,,\n", Generic(CSV),
			`workload: g.csv:2: field id: "18446744073709551616" is out of range [0, 18446744073709551615]`, ErrMalformed},
		{"priority", "g.csv", generic + "0,0,1,1,-99999999999,,\n", Generic(CSV),
			`workload: g.csv:2: field priority: "-99999999999" is out of range [-2147483648, 2147483647]`, ErrMalformed},
		{"hash id", "g.csv", generic + "0,0,1,1,0,1 99999999999999999999,\n", Generic(CSV),
			`workload: g.csv:2: field prefix_hashes: "99999999999999999999" is out of range [0, 18446744073709551615]`, ErrMalformed},
		{"block tokens", "g.csv", generic + "0,0,1,1,0,1,99999999999\n", Generic(CSV),
			`workload: g.csv:2: field prefix_block_tokens: "99999999999" is out of range [0, 2147483647]`, ErrMalformed},
		{"JSON token count", "mc.jsonl", `{"timestamp": 0, "input_length": 99999999999, "output_length": 1}`, Mooncake(0),
			`workload: mc.jsonl:1: field input_length: "99999999999" is out of range [0, 2147483647]`, ErrMalformed},
	})
}

// A negative arrival says so; one beyond time.Duration's range (about 292
// years) is out of range, in the file's own unit.
func TestTraceArrivalsOutOfRange(t *testing.T) {
	burst := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	checkTraceErrors(t, []traceErrorCase{
		{"negative integer", "b.csv", burst + "-5,GPT-4,1,1,2,API log\n", BurstGPT(nil, nil),
			`workload: b.csv:2: field Timestamp: "-5" is negative: arrival times must be >= 0`, ErrMalformed},
		{"negative fraction", "b.csv", burst + "1,GPT-4,1,1,2,API log\n-0.5,GPT-4,1,1,2,API log\n", BurstGPT(nil, nil),
			`workload: b.csv:3: field Timestamp: "-0.5" is negative: arrival times must be >= 0`, ErrMalformed},
		{"too many seconds", "b.csv", burst + "99999999999999999999,GPT-4,1,1,2,API log\n", BurstGPT(nil, nil),
			`workload: b.csv:2: field Timestamp: "99999999999999999999" is out of range: arrival times must be at most 9223372036 in units of 1s (time.Duration's range, about 292 years)`, ErrMalformed},
		{"too many seconds, as a float", "b.csv", burst + "1e20,GPT-4,1,1,2,API log\n", BurstGPT(nil, nil),
			`workload: b.csv:2: field Timestamp: "1e20" is out of range: arrival times must be at most 9223372036 in units of 1s (time.Duration's range, about 292 years)`, ErrMalformed},
		{"too many milliseconds", "mc.jsonl", `{"timestamp": 9223372036854776, "input_length": 1, "output_length": 1}`, Mooncake(0),
			`workload: mc.jsonl:1: field timestamp: "9223372036854776" is out of range: arrival times must be at most 9223372036854 in units of 1ms (time.Duration's range, about 292 years)`, ErrMalformed},
		{"date after 2262", "a.csv", azure + "2300-01-01 00:00:00,1,1\n", Azure(),
			`workload: a.csv:2: field TIMESTAMP: "2300-01-01 00:00:00" is out of range: date-times must lie between 1677-09-21 and 2262-04-11 (time.Duration's range)`, ErrMalformed},
		{"dates 400 years apart", "a.csv", azure + "1700-01-01 00:00:00,1,1\n2100-01-01 00:00:00,1,1\n", Azure(),
			`workload: a.csv:3: field TIMESTAMP: "2100-01-01 00:00:00" is out of range: more than 292 years (time.Duration's range) from the first kept row's`, ErrMalformed},
	})
}

// A UTF-8 byte order mark at the start of the file is skipped, in CSV
// (before a bare or a quoted header) and in JSONL alike.
func TestTraceSkipsByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	for _, c := range []struct {
		what, in string
		cfg      TraceConfig
	}{
		{"CSV", bom + "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n", Azure()},
		{"CSV, quoted header", bom + `"TIMESTAMP","ContextTokens","GeneratedTokens"` + "\n2023-11-16 18:15:46.6805900,374,44\n", Azure()},
		{"JSONL", bom + `{"timestamp": 0, "input_length": 374, "output_length": 44}` + "\n", Mooncake(0)},
	} {
		t.Run(c.what, func(t *testing.T) {
			tr, err := NewTrace(strings.NewReader(c.in), "bom", c.cfg)
			require.NoError(t, err)
			reqs := drain(t, tr)
			require.Len(t, reqs, 1)
			assert.Equal(t, 374, reqs[0].InputTokens)
		})
	}
}

// A column the configuration reads may appear only once in a CSV header;
// a duplicated column it does not read is harmless.
func TestTraceRefusesDuplicatedColumns(t *testing.T) {
	checkTraceErrors(t, []traceErrorCase{
		{"token column", "a.csv", "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:15:46.6805900,374,44,375\n", Azure(),
			`workload: a.csv:1: field ContextTokens: "TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens" is a header naming this column twice, as columns 2 and 4`, ErrMalformed},
		{"filter column", "b.csv", "Timestamp,Model,Request tokens,Response tokens,Log Type,Log Type\n5,GPT-4,1,1,API log,API log\n", BurstGPT(nil, []string{"API log"}),
			`workload: b.csv:1: field Log Type: "Timestamp,Model,Request tokens,Response tokens,Log Type,Log Type" is a header naming this column twice, as columns 5 and 6`, ErrMalformed},
		{"optional column", "b.csv", "Timestamp,Model,Request tokens,Response tokens,Model\n5,GPT-4,1,1,GPT-3\n", BurstGPT(nil, nil),
			`workload: b.csv:1: field Model: "Timestamp,Model,Request tokens,Response tokens,Model" is a header naming this column twice, as columns 2 and 5`, ErrMalformed},
	})
	unread := "TIMESTAMP,ContextTokens,GeneratedTokens,note,note\n2023-11-16 18:15:46.6805900,374,44,a,b\n"
	assert.NoError(t, readAll(unread, "a.csv", Azure()))
}

// A Git LFS pointer committed in place of a trace is named as such, in
// either format, instead of failing as a malformed first line.
func TestTraceNamesGitLFSPointer(t *testing.T) {
	pointer := "version https://git-lfs.github.com/spec/v1\n" +
		"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n" +
		"size 719188\n"
	reason := "the file is a Git LFS pointer, not the trace (run `git lfs pull` to fetch its content)"
	checkTraceErrors(t, []traceErrorCase{
		{"CSV", "azure.csv", pointer, Azure(), "workload: azure.csv:1: " + reason, ErrLFSPointer},
		{"JSONL", "mc.jsonl", pointer, Mooncake(0), "workload: mc.jsonl:1: " + reason, ErrLFSPointer},
	})
}

// A replay of zero requests is an error wrapping ErrEmptyTrace that names
// the file and says what dropped the rows, whatever the format and
// whatever emptied it, unless TraceConfig.AllowEmpty accepts it.
func TestTraceRefusesEmptyReplay(t *testing.T) {
	const allow = " (set TraceConfig.AllowEmpty to accept an empty replay)"
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	row := "2023-11-16 18:15:46.6805900,374,44\n"
	burst := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n"
	window := Azure()
	window.Transform = Transform{WindowStart: time.Minute}
	sorted := Azure()
	sorted.Sort = true
	cases := []traceErrorCase{
		{"empty CSV", "a.csv", "", Azure(), "workload: trace has no requests: a.csv has no rows" + allow, ErrEmptyTrace},
		{"header-only CSV", "a.csv", azure, Azure(), "workload: trace has no requests: a.csv has no rows" + allow, ErrEmptyTrace},
		{"header-only CSV, sorted", "a.csv", azure, sorted, "workload: trace has no requests: a.csv has no rows" + allow, ErrEmptyTrace},
		{"empty JSONL", "mc.jsonl", "", Mooncake(0), "workload: trace has no requests: mc.jsonl has no rows" + allow, ErrEmptyTrace},
		{"blank JSONL", "mc.jsonl", "\n  \n", Mooncake(0), "workload: trace has no requests: mc.jsonl has no rows" + allow, ErrEmptyTrace},
		{"filtered out", "b.csv", burst, BurstGPT([]string{"GPT-4"}, nil),
			"workload: trace has no requests: b.csv: TraceConfig.Filters dropped every row read (1)" + allow, ErrEmptyTrace},
		{"outside the window", "a.csv", azure + row, window,
			"workload: trace has no requests: a.csv: the Transform window [1m0s, end) dropped every row read (1)" + allow, ErrEmptyTrace},
	}
	checkTraceErrors(t, cases)
	for _, c := range cases {
		c.cfg.AllowEmpty = true
		assert.NoError(t, readAll(c.in, c.name, c.cfg), "%s with AllowEmpty", c.what)
	}
	_, err := NewTrace(strings.NewReader(azure), "a.csv", TraceConfig{Columns: Azure().Columns, Transform: Transform{TargetRate: 1}})
	assert.ErrorIs(t, err, ErrEmptyTrace, "the TargetRate pass finds the trace empty")
}

// AllowEmpty changes no request, so it leaves the fingerprint alone.
func TestFingerprintFileIgnoresAllowEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.csv")
	require.NoError(t, os.WriteFile(path, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n"), 0o644))
	cfg := Azure()
	want, err := FingerprintFile(path, cfg)
	require.NoError(t, err)
	cfg.AllowEmpty = true
	got, err := FingerprintFile(path, cfg)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// An instant that the time factor carries past time.Duration's range is an
// error naming the transform and the row's line, not a wrapped-around
// (negative) arrival; sorted replays keep each row's line.
func TestTraceScaleOverflow(t *testing.T) {
	cols := Columns{Arrival: "t", Input: "i", Output: "o"}
	rate := TraceConfig{Columns: cols, Transform: Transform{TargetRate: 1e-12}}
	slow := TraceConfig{Columns: cols, Transform: Transform{Slowdown: 1e300}}
	sorted := slow
	sorted.Sort = true
	checkTraceErrors(t, []traceErrorCase{
		{"TargetRate", "s.csv", "t,i,o\n0,1,1\n1,1,1\n2,1,1\n", rate,
			`workload: s.csv:3: field t: "1s" scaled ×1.5e+12 for Transform.TargetRate 1e-12 req/s is past time.Duration's range (about 292 years)`, ErrScaleOverflow},
		{"Slowdown", "s.csv", "t,i,o\n0,1,1\n1,1,1\n", slow,
			`workload: s.csv:3: field t: "1s" scaled ×1e+300 for Transform.Slowdown 1e+300 is past time.Duration's range (about 292 years)`, ErrScaleOverflow},
		{"Slowdown, sorted", "s.csv", "t,i,o\n1,1,1\n0,1,1\n", sorted,
			`workload: s.csv:2: field t: "1s" scaled ×1e+300 for Transform.Slowdown 1e+300 is past time.Duration's range (about 292 years)`, ErrScaleOverflow},
	})
}
