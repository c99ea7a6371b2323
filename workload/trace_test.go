package workload

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/servesim/servesim/internal/sharedtraces"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	azureConv = "AzureLLMInferenceTrace_conv.csv"
	mooncake  = "mooncake_synthetic_trace.jsonl"
)

// sharedTrace is the real trace name in ../shared/traces beside the
// repository; the test skips, and TestMain says so, without it.
func sharedTrace(t testing.TB, name string) string {
	t.Helper()
	return sharedtraces.Path(t, name)
}

type traceStats struct {
	n           int
	last        time.Duration
	meanIn      float64
	meanOut     float64
	blocksMatch bool
}

func statsOf(t *testing.T, src Source) traceStats {
	s := traceStats{blocksMatch: true}
	var in, out float64
	for _, r := range drain(t, src) {
		s.n++
		s.last = r.Arrival
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
		if r.PrefixHashes != nil && len(r.PrefixHashes) != (r.InputTokens+r.PrefixBlockTokens-1)/r.PrefixBlockTokens {
			s.blocksMatch = false
		}
	}
	s.meanIn, s.meanOut = in/float64(s.n), out/float64(s.n)
	return s
}

// The Azure 2023 conversation trace: 19,366 rows over its hour, ≈ 5.5
// requests/s, mean ≈ 1,155 tokens in and 211 out.
func TestAzureConversationTrace(t *testing.T) {
	tr, err := OpenTrace(sharedTrace(t, azureConv), Azure())
	require.NoError(t, err)
	defer tr.Close()
	s := statsOf(t, tr)
	assert.Equal(t, 19366, s.n)
	assert.InDelta(t, 5.5, float64(s.n)/s.last.Seconds(), 0.05, "requests/s")
	assert.Less(t, s.last, time.Hour)
	assert.InDelta(t, 1155, s.meanIn, 1)
	assert.InDelta(t, 211, s.meanOut, 1)
}

// The Mooncake synthetic trace: 3,993 rows, last at 1,022,025 ms, mean ≈
// 15,325 in and 149 out, ceil(input/512) hash ids on every row.
func TestMooncakeTrace(t *testing.T) {
	tr, err := OpenTrace(sharedTrace(t, mooncake), Mooncake(0))
	require.NoError(t, err)
	defer tr.Close()
	s := statsOf(t, tr)
	assert.Equal(t, 3993, s.n)
	assert.Equal(t, 1022025*time.Millisecond, s.last)
	assert.InDelta(t, 15325, s.meanIn, 1)
	assert.InDelta(t, 149, s.meanOut, 1)
	assert.True(t, s.blocksMatch, "every row has ceil(input/512) hash ids")
}

func TestTraceTransforms(t *testing.T) {
	path := sharedTrace(t, azureConv)
	open := func(tr Transform) traceStats {
		cfg := Azure()
		cfg.Transform = tr
		src, err := OpenTrace(path, cfg)
		require.NoError(t, err)
		defer src.Close()
		return statsOf(t, src)
	}
	base := open(Transform{})
	half := open(Transform{Slowdown: 0.5})
	assert.Equal(t, base.n, half.n)
	assert.InDelta(t, base.last/2, half.last, 1)
	target := open(Transform{TargetRate: 2})
	assert.Equal(t, time.Duration(19366/2)*time.Second, target.last, "last arrival at N/rate")
	win := open(Transform{WindowStart: 10 * time.Minute, WindowEnd: 20 * time.Minute})
	assert.Less(t, win.last, 10*time.Minute)
	assert.InDelta(t, 3300, win.n, 600)
}

// Replay order is the file's, exactly.
func TestTraceKeepsFileOrder(t *testing.T) {
	in := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"5,ChatGPT,472,18,490,Conversation log\n" +
		"5,GPT-4,100,0,100,API log\n" +
		"45,ChatGPT,1087,230,1317,Conversation log\n" +
		"118,GPT-4,417,276,693,Conversation log"
	tr, err := NewTrace(strings.NewReader(in), "burst.csv", BurstGPT(nil, nil))
	require.NoError(t, err)
	reqs := drain(t, tr)
	require.Len(t, reqs, 4)
	assert.Equal(t, []time.Duration{0, 0, 40 * time.Second, 113 * time.Second},
		[]time.Duration{reqs[0].Arrival, reqs[1].Arrival, reqs[2].Arrival, reqs[3].Arrival})
	assert.Equal(t, []string{"ChatGPT", "GPT-4", "ChatGPT", "GPT-4"}, []string{reqs[0].Class, reqs[1].Class, reqs[2].Class, reqs[3].Class})
	assert.True(t, reqs[1].Failed, "0 response tokens is a failed request")
	assert.False(t, reqs[0].Failed)
	assert.Equal(t, uint64(3), reqs[3].ID)
}

func TestBurstGPTFiltersAndEightColumns(t *testing.T) {
	in := "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"1.5,3f2a-1,0.8,ChatGPT,10,20,30,Conversation log\n" +
		"2.25,3f2a-1,0.9,GPT-4,11,21,32,Conversation log\n" +
		"3,,1.0,GPT-4,12,22,34,API log\n"
	tr, err := NewTrace(strings.NewReader(in), "b3.csv", BurstGPT([]string{"GPT-4"}, []string{"Conversation log"}))
	require.NoError(t, err)
	reqs := drain(t, tr)
	require.Len(t, reqs, 1)
	assert.Equal(t, 11, reqs[0].InputTokens)
	assert.Equal(t, conversationID("3f2a-1"), reqs[0].Conversation)
	assert.Equal(t, time.Duration(0), reqs[0].Arrival)
}

func TestAzure2024Timestamps(t *testing.T) {
	in := "TIMESTAMP,ContextTokens,GeneratedTokens\n" +
		"2024-05-10 00:00:00+00:00,100,10\n" +
		"2024-05-10 00:00:00.009930+00:00,200,20\n" +
		"2024-05-10T00:00:01.5Z,300,30\n" +
		"2024-05-10 02:00:01.5+02:00,400,40"
	tr, err := NewTrace(strings.NewReader(in), "az24.csv", Azure())
	require.NoError(t, err)
	reqs := drain(t, tr)
	require.Len(t, reqs, 4)
	assert.Equal(t, []time.Duration{0, 9930 * time.Microsecond, 1500 * time.Millisecond, 1500 * time.Millisecond},
		[]time.Duration{reqs[0].Arrival, reqs[1].Arrival, reqs[2].Arrival, reqs[3].Arrival})
}

// Every malformed line names file, line and field.
func TestTraceErrorsNameFileLineField(t *testing.T) {
	azure := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
	cases := []struct {
		name, in string
		cfg      TraceConfig
		want     string
		is       error
	}{
		{"azure.csv", azure + "2023-11-16 18:15:47.0,abc,44\n", Azure(),
			`workload: azure.csv:3: field ContextTokens: "abc" is not an integer`, ErrMalformed},
		{"azure.csv", azure + "2023-11-16 18:15:47.0,3,-4\n", Azure(),
			`workload: azure.csv:3: field GeneratedTokens: "-4" is negative`, ErrMalformed},
		{"azure.csv", azure + "yesterday,3,4\n", Azure(),
			`workload: azure.csv:3: field TIMESTAMP: "yesterday" is not a date-time like the first row's`, ErrMalformed},
		{"azure.csv", azure + "2023-11-16 18:15:40.0,3,4\n", Azure(),
			`workload: azure.csv:3: field TIMESTAMP: "-6.68059s" goes back before line 2's 0s (set TraceConfig.Sort to sort)`, ErrUnsorted},
		{"azure.csv", azure + "2023-11-16 18:15:47.0,3\n", Azure(),
			`workload: azure.csv:3: wrong number of fields`, ErrMalformed},
		{"azure.csv", "TIMESTAMP,Context,GeneratedTokens\n", Azure(),
			`workload: azure.csv:1: field ContextTokens: "TIMESTAMP,Context,GeneratedTokens" is a header without this column`, ErrMalformed},
		{"mc.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0]}` + "\n\n" + `{"timestamp": 1, "input_length": 5, "hash_ids": [1]}`, Mooncake(0),
			`workload: mc.jsonl:3: field output_length: "" is missing`, ErrMalformed},
		{"mc.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0, x]}`, Mooncake(0),
			`workload: mc.jsonl:1: not a JSON object`, ErrMalformed},
		{"mc.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [0, -1]}`, Mooncake(0),
			`workload: mc.jsonl:1: field hash_ids: "-1" is not an unsigned integer hash id`, ErrMalformed},
		{"b.csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,1.5,3,4,API log\n", BurstGPT(nil, nil),
			`workload: b.csv:2: field Request tokens: "1.5" is not an integer`, ErrMalformed},
	}
	for _, c := range cases {
		var err error
		tr, err := NewTrace(strings.NewReader(c.in), c.name, c.cfg)
		if err == nil {
			_, _, err = span(tr)
		}
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
		assert.True(t, errors.Is(err, c.is), "%v wraps %v", err, c.is)
		var pe *ParseError
		assert.True(t, errors.As(err, &pe))
	}
}

func TestTraceSortOption(t *testing.T) {
	in := "t,i,o\n3,1,1\n1,2,2\n2,3,3\n1,4,4\n"
	cfg := TraceConfig{Columns: Columns{Arrival: "t", Input: "i", Output: "o"}}
	tr, err := NewTrace(strings.NewReader(in), "u.csv", cfg)
	require.NoError(t, err)
	_, _, err = span(tr)
	assert.ErrorIs(t, err, ErrUnsorted)
	cfg.Sort = true
	tr, err = NewTrace(strings.NewReader(in), "u.csv", cfg)
	require.NoError(t, err)
	reqs := drain(t, tr)
	var order []int
	for _, r := range reqs {
		order = append(order, r.InputTokens)
	}
	assert.Equal(t, []int{2, 4, 3, 1}, order, "sorted by time, ties in file order")
	assert.Equal(t, 2*time.Second, reqs[3].Arrival)
}

func TestTraceConfigValidate(t *testing.T) {
	err := TraceConfig{Format: 7, Filters: []Filter{{}}, Transform: Transform{WindowStart: 2, WindowEnd: 1, Slowdown: -1, TargetRate: 1}}.Validate()
	require.Error(t, err)
	for _, want := range []string{"Format", "Columns.Arrival", "Filters[0]", "window", "Slowdown", "not both"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = NewTrace(io.MultiReader(strings.NewReader("")), "x", TraceConfig{Columns: Azure().Columns, Transform: Transform{TargetRate: 1}})
	assert.ErrorContains(t, err, "seekable")
}

// After a malformed line the replay stays failed: Next repeats the error.
func TestTraceErrorIsSticky(t *testing.T) {
	in := "t,i,o\n1,1,1\n2,x,1\n3,1,1\n"
	tr, err := NewTrace(strings.NewReader(in), "s.csv", TraceConfig{Columns: Columns{Arrival: "t", Input: "i", Output: "o"}})
	require.NoError(t, err)
	_, err = tr.Next()
	require.NoError(t, err)
	_, err1 := tr.Next()
	_, err2 := tr.Next()
	assert.ErrorIs(t, err1, ErrMalformed)
	assert.Equal(t, err1, err2)
}

// Both joint samplers keep the Azure trace's input/output rank
// correlation: resampling its pairs, and a copula over its two empirical
// marginals with its Spearman correlation as the target.
func TestJointSamplersKeepTraceCorrelation(t *testing.T) {
	tr, err := OpenTrace(sharedTrace(t, azureConv), Azure())
	require.NoError(t, err)
	defer tr.Close()
	res, err := ResampleFrom(tr, 0)
	require.NoError(t, err)
	require.Len(t, res.Pairs, 19366)
	in, out := make([]int, len(res.Pairs)), make([]int, len(res.Pairs))
	xs, ys := make([]float64, len(res.Pairs)), make([]float64, len(res.Pairs))
	for i, p := range res.Pairs {
		in[i], out[i] = p.Input, p.Output
		xs[i], ys[i] = float64(p.Input), float64(p.Output)
	}
	rho := spearman(xs, ys)
	cop := Copula{Input: NewEmpirical(in), Output: NewEmpirical(out), Spearman: rho}
	for _, j := range []Joint{res, cop} {
		a, b := NewStream(3, "input"), NewStream(3, "output")
		sx, sy := make([]float64, 20000), make([]float64, 20000)
		for i := range sx {
			x, y := j.Sample(a, b)
			sx[i], sy[i] = float64(x), float64(y)
		}
		assert.InDelta(t, rho, spearman(sx, sy), 0.03, "%v", j)
	}
	t.Logf("Azure conversation trace: Spearman(input, output) = %.3f", rho)
}
