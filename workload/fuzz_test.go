package workload

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/sharedtraces"
)

// seedLines adds the header and a few rows of a real trace (when present;
// TestMain says when it is not) to the fuzz corpus, as whole files of one,
// two and three rows.
func seedLines(f *testing.F, name string, header bool) {
	path, ok := sharedtraces.Optional(f, name)
	if !ok {
		return // the static seeds still run
	}
	file, err := os.Open(path)
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	s.Buffer(nil, maxLine)
	var head string
	var rows []string
	for s.Scan() && len(rows) < 4 {
		if header && head == "" {
			head = s.Text() + "\n"
			continue
		}
		rows = append(rows, s.Text())
	}
	for i := 1; i <= len(rows); i++ {
		body := head
		for _, r := range rows[:i] {
			body += r + "\n"
		}
		f.Add([]byte(body))
		f.Add([]byte(body[:len(body)-1])) // no final newline
	}
}

// fuzzReader reads data as a trace with cfg and checks the invariants that
// hold for any input: no panic, errors are *ParseError or I/O errors,
// arrivals never go back, sequential ids.
func fuzzReader(t *testing.T, data []byte, cfg TraceConfig) {
	for _, sorted := range []bool{false, true} {
		cfg.Sort = sorted
		tr, err := NewTrace(bytes.NewReader(data), "fuzz", cfg)
		if err != nil {
			checkTraceError(t, err)
			continue
		}
		var prev Request
		for i := 0; ; i++ {
			r, err := tr.Next()
			if err == io.EOF && i == 0 || errors.Is(err, ErrEmptyTrace) && i > 0 {
				t.Fatalf("after %d requests, Next returned %v: only a replay of zero requests is empty", i, err)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				checkTraceError(t, err)
				break
			}
			if i > 0 && r.Arrival < prev.Arrival {
				t.Fatalf("arrival went back: %v after %v", r.Arrival, prev.Arrival)
			}
			if r.InputTokens < 0 || r.OutputTokens < 0 || r.Arrival < 0 {
				t.Fatalf("negative field in %+v", r)
			}
			prev = r
		}
	}
	fuzzConversations(t, data, cfg)
}

// fuzzConversations replays data keeping conversations, under a paced and
// a draining fake driver, sorted or not, and checks what holds for any
// input: no panic; errors are *ParseError or ErrEmptyTrace (the driver's
// own errors — a request yielded after its instant, Next going back, a
// stall with turns held — are neither, so they fail); no turn arrives
// before its predecessor's end + MinThink, nor is yielded before that end;
// a replay that ends cleanly offers as many requests as timestamp replay.
func fuzzConversations(t *testing.T, data []byte, cfg TraceConfig) {
	const think = 250 * time.Millisecond
	for _, sorted := range []bool{false, true} {
		cfg.Sort = sorted
		cfg.Conversations = ConversationReplay{}
		want := -1
		if tr, err := NewTrace(bytes.NewReader(data), "fuzz", cfg); err == nil {
			if n, _, err := span(tr); err == nil {
				want = n
			}
		}
		cfg.Conversations = ConversationReplay{Keep: true, MinThink: think}
		for _, paced := range []bool{true, false} {
			rep, err := NewReplay(bytes.NewReader(data), "fuzz", cfg)
			if err != nil {
				checkTraceError(t, err)
				continue
			}
			d := drive(rep.(*ConversationTrace), time.Second, paced)
			if d.err != nil {
				checkTraceError(t, d.err)
				continue
			}
			if want >= 0 && len(d.log) != want {
				t.Fatalf("paced %v, sorted %v: %d requests offered, timestamp replay has %d", paced, sorted, len(d.log), want)
			}
			last := map[uint64]served{} // a conversation's turns are yielded in order
			for _, s := range d.log {
				if r := s.req; r.Conversation != 0 && r.PrefixHashes != nil && r.PrefixBlockTokens > 0 &&
					(!r.HashesCoverOutput || len(r.PrefixHashes) != blocks(r.InputTokens+max(r.OutputTokens, 0), r.PrefixBlockTokens)) {
					t.Fatalf("turn %d: %d ids over %d + %d tokens of %d (cover output %v): want one per block of its prompt and answer", r.ID, len(r.PrefixHashes), r.InputTokens, r.OutputTokens, r.PrefixBlockTokens, r.HashesCoverOutput)
				}
				if c := s.req.Conversation; c != 0 {
					if p, ok := last[c]; ok && (s.req.Arrival < p.end+think || s.pulled < p.end) {
						t.Fatalf("turn %d of conversation %d at %v (yielded at %v) overtakes the previous turn, ended at %v", s.req.ID, c, s.req.Arrival, s.pulled, p.end)
					}
					last[c] = s
				}
			}
		}
	}
}

func checkTraceError(t *testing.T, err error) {
	if errors.Is(err, ErrEmptyTrace) || errors.Is(err, ErrImplausibleRate) {
		if !strings.Contains(err.Error(), "fuzz") {
			t.Fatalf("whole-trace error does not name the file: %v", err)
		}
		return
	}
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error is not a *ParseError: %v", err)
	}
	if pe.File != "fuzz" || pe.Line < 1 {
		t.Fatalf("error does not name file and line: %v", err)
	}
}

func FuzzAzure(f *testing.F) {
	seedLines(f, azureConv, true)
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,1,2\n2024-05-10 00:00:01+00:00,3,4"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReader(t, data, Azure()) })
}

func FuzzMooncake(f *testing.F) {
	seedLines(f, mooncake, false)
	f.Add([]byte(`{"timestamp": 5, "input_length": 600, "output_length": 0, "hash_ids": [1, 2]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzReader(t, data, Mooncake(0)) })
}

func FuzzBurstGPT(f *testing.F) {
	f.Add([]byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,0,1087,API log\n"))
	f.Add([]byte("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n1.5,ab-1,0.8,GPT-4,10,20,30,Conversation log"))
	f.Add([]byte("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"1,s1,0.8,GPT-4,10,20,30,Conversation log\n1.2,s1,0.9,GPT-4,11,0,11,Conversation log\n1.2,,1,GPT-4,5,5,10,API log\n1.3,s1,0.9,GPT-4,12,22,34,Conversation log\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzReader(t, data, BurstGPT(nil, nil))
		fuzzReader(t, data, BurstGPT([]string{"GPT-4"}, []string{"Conversation log"}))
	})
}

func FuzzGeneric(f *testing.F) {
	var csv, jsonl bytes.Buffer
	WriteTrace(&csv, CSV, richWorkload(f))
	WriteTrace(&jsonl, JSONL, richWorkload(f))
	lines := func(b []byte, n int) []byte { return bytes.Join(bytes.SplitN(b, []byte("\n"), n+1)[:n], []byte("\n")) }
	f.Add(lines(csv.Bytes(), 4), false)
	f.Add(lines(jsonl.Bytes(), 3), true)
	f.Add([]byte(`{"id": 0, "arrival_ns": 0, "input_tokens": 5, "output_tokens": 2, "conversation": 3}
{"id": 1, "arrival_ns": 10, "input_tokens": 9, "output_tokens": 2, "conversation": 3, "turn": 1, "failed": true}
{"id": 2, "arrival_ns": 10, "input_tokens": 4, "output_tokens": 2}
{"id": 3, "arrival_ns": 20, "input_tokens": 12, "output_tokens": 2, "conversation": 3, "turn": 2}`), true)
	f.Add([]byte("id,arrival_ns,input_tokens,output_tokens,conversation,turn\n0,0,5,2,3,1\n1,5,5,2,3,0\n"), false)
	f.Add([]byte("id,arrival_ns,input_tokens,output_tokens,conversation,turn\n4,0,5,2,3,0\n4,5,5,2,0,0\n4,9,5,2,3,1\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, jsonLines bool) {
		format := CSV
		if jsonLines {
			format = JSONL
		}
		fuzzReader(t, data, Generic(format))
	})
}

// FuzzHashIDs holds the byte-by-byte reader of a hash id list to its
// twin by strings.FieldsFunc and strconv.ParseUint: the same ids, or the
// same bad token and error.
func FuzzHashIDs(f *testing.F) {
	for _, s := range []string{"[0, 1, 2, 3]", "[]", "", "[ 7;8\t9\r\n10 ]", "[18446744073709551615]",
		"[18446744073709551616]", "[1, x]", "[1,,2]", "[1, -2]", "[1, 2é]", "[[1]]", "[0001, 99999999999999999999]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var p parser
		p.hashIDs("[9, 9, 9, 9, 9, 9, 9, 9, 9]") // a scratch used before
		ids, bad, err := p.hashIDs(v)
		wantIDs, wantBad, wantErr := hashIDsSlow(strings.Trim(v, "[] \t"))
		if wantErr != nil {
			require.Error(t, err, "%q", v)
			assert.Equal(t, wantErr.Error(), err.Error(), "%q", v)
			assert.Equal(t, wantBad, bad, "%q", v)
			return
		}
		require.NoError(t, err, "%q", v)
		assert.Equal(t, wantIDs, ids, "%q", v)
		assert.Equal(t, len(wantIDs), cap(ids), "%q: a slice of the ids' number exactly", v)
	})
}
