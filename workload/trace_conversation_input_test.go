package workload

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A negative MinThink, or one without Keep, is refused naming the field;
// NewTrace refuses a conversation-keeping configuration, naming the
// constructors that read it.
func TestConversationReplayConfig(t *testing.T) {
	cfg := Azure()
	cfg.Conversations = ConversationReplay{Keep: true, MinThink: -time.Second}
	assert.EqualError(t, cfg.Validate(), "workload: TraceConfig.Conversations.MinThink must be >= 0, got -1s")
	cfg.Conversations = ConversationReplay{MinThink: time.Second}
	assert.EqualError(t, cfg.Validate(), "workload: TraceConfig.Conversations.MinThink (1s) applies only with Conversations.Keep, which is not set")
	_, err := NewReplay(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n"), "a.csv", cfg)
	assert.ErrorContains(t, err, "Conversations.MinThink")
	cfg.Conversations = ConversationReplay{Keep: true}
	require.NoError(t, cfg.Validate())
	_, err = NewTrace(strings.NewReader("TIMESTAMP,ContextTokens,GeneratedTokens\n"), "a.csv", cfg)
	assert.ErrorContains(t, err, "read it with NewReplay or OpenReplay")
	_, err = OpenReplay(filepath.Join(t.TempDir(), "missing.csv"), cfg)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Bad input in conversation-keeping replay: a Turn that goes back, and an
// id shared by a turn still tracked and another request (Finished would
// not know which one ended), are errors naming file, line and field; a file going back in time is ErrUnsorted, and an empty one
// ErrEmptyTrace, as in timestamp replay. Errors are sticky.
func TestConversationReplayBadInput(t *testing.T) {
	s := time.Second
	cases := []struct {
		what string
		rows []Request
		want string
		is   error
	}{
		{"turn goes back", []Request{
			{ID: 0, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 1},
			{ID: 1, Arrival: s, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 0}},
			`workload: conv.csv:3: field turn: "0" does not follow turn 1 of conversation 5, read before it (turns are ordered by timestamp, ties in file order)`, ErrTurnOrder},
		{"turn repeated", []Request{
			{ID: 0, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 2},
			{ID: 1, Arrival: 0, InputTokens: 1, OutputTokens: 1},
			{ID: 2, Arrival: s, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 2}},
			`workload: conv.csv:4: field turn: "2" does not follow turn 2 of conversation 5`, ErrTurnOrder},
		{"id repeated", []Request{
			{ID: 7, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5},
			{ID: 7, Arrival: s, InputTokens: 1, OutputTokens: 1, Conversation: 6}},
			`workload: conv.csv:3: field id: "7" repeats the id of a turn of conversation 5 still held or in flight: ids must be unique`, ErrMalformed},
		{"id of a loose request in flight", []Request{
			{ID: 7, Arrival: 0, InputTokens: 1, OutputTokens: 1},
			{ID: 7, Arrival: s / 2, InputTokens: 1, OutputTokens: 1, Conversation: 6}},
			`workload: conv.csv:3: field id: "7" repeats the id of a request still in flight: ids must be unique`, ErrMalformed},
		{"loose request with a held turn's id", []Request{
			{ID: 1, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5},
			{ID: 7, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 1},
			{ID: 7, Arrival: s, InputTokens: 1, OutputTokens: 1}},
			`workload: conv.csv:4: field id: "7" repeats the id of a turn of conversation 5 still held or in flight: ids must be unique`, ErrMalformed},
		{"unsorted", []Request{
			{ID: 0, Arrival: s, InputTokens: 1, OutputTokens: 1, Conversation: 5},
			{ID: 1, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 1}},
			`workload: conv.csv:3: field arrival_ns: "0s" goes back before line 2's 1s`, ErrUnsorted},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			ct := openKept(t, genericCSV(t, c.rows), keepConversations(0))
			d := drive(ct, s, false)
			require.Error(t, d.err)
			assert.Contains(t, d.err.Error(), c.want)
			assert.ErrorIs(t, d.err, c.is)
			var pe *ParseError
			assert.ErrorAs(t, d.err, &pe)
			_, err := ct.Next()
			assert.Equal(t, d.err, err, "sticky")
			_, ok := ct.Released()
			assert.False(t, ok)
		})
	}
	loose := []Request{{ID: 7, Arrival: 0, InputTokens: 1, OutputTokens: 1}, {ID: 7, Arrival: s / 2, InputTokens: 1, OutputTokens: 1},
		{ID: 8, Arrival: s, InputTokens: 1, OutputTokens: 1, Conversation: 5}}
	d := drive(openKept(t, genericCSV(t, loose), keepConversations(0)), s, false)
	assert.NoError(t, d.err, "an id repeated among requests without conversation is harmless, as in timestamp replay")
	ct := openKept(t, []byte("id,arrival_ns,input_tokens,output_tokens\n"), keepConversations(0))
	_, err := ct.Next()
	assert.ErrorIs(t, err, ErrEmptyTrace)
}

// The Turn column is checked only when mapped, and conversation 0 is no
// conversation: a generic trace of single-turn requests (conversation 0,
// turn 0 on every row) replays untouched.
func TestConversationReplayTurnColumnAndConversationZero(t *testing.T) {
	recorded := withoutRuns(drain(t, richWorkload(t)))
	data := genericCSV(t, recorded)
	d := drive(openKept(t, data, keepConversations(time.Second)), 10*time.Second, true)
	require.NoError(t, d.err)
	assert.Equal(t, recorded, d.requests())
	cfg := keepConversations(0)
	cfg.Columns.Turn = ""
	rows := []Request{
		{ID: 0, Arrival: 0, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 1},
		{ID: 1, Arrival: time.Second, InputTokens: 1, OutputTokens: 1, Conversation: 5, Turn: 0}}
	d = drive(openKept(t, genericCSV(t, rows), cfg), time.Second, true)
	require.NoError(t, d.err)
	assert.Len(t, d.log, 2)
}

// String says which replay was used, with the minimum think time and the
// clock, for a card.
func TestReplayString(t *testing.T) {
	data := "t,i,o,c\n0,1,1,1\n10,1,1,1\n"
	cfg := TraceConfig{Columns: Columns{Arrival: "t", Input: "i", Output: "o", Conversation: "c"}}
	tr, err := NewReplay(strings.NewReader(data), "conv.csv", cfg)
	require.NoError(t, err)
	assert.Equal(t, "conv.csv (csv), timestamp replay (every row at its recorded instant), own pace", tr.String())
	assert.Equal(t, OpenLoop, tr.Loop())
	cfg.Conversations = ConversationReplay{Keep: true, MinThink: 2 * time.Second}
	cfg.Transform = Transform{WindowEnd: time.Hour, Slowdown: 2}
	kept, err := NewReplay(strings.NewReader(data), "conv.csv", cfg)
	require.NoError(t, err)
	assert.Equal(t, "conv.csv (csv), conversation-keeping replay (a turn is released at the later of its recorded instant and its predecessor's end + 2s minimum think time), window [0s, 1h0m0s) of the trace, slowdown ×2", kept.String())
	assert.Equal(t, ClosedLoop, kept.Loop())
	assert.Equal(t, ClosedLoop, LoopOf(kept))
	assert.Equal(t, cfg, kept.Config())
}

// A conversation-keeping replay has a fingerprint of its own, per minimum
// think time; timestamp replay keeps the one it had.
func TestFingerprintFileNamesTheReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.csv")
	require.NoError(t, os.WriteFile(path, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"), 0o644))
	fp := func(c ConversationReplay) string {
		cfg := Azure()
		cfg.Conversations = c
		s, err := FingerprintFile(path, cfg)
		require.NoError(t, err)
		return s
	}
	stamp := fp(ConversationReplay{})
	// FingerprintFile's value for this file and Azure() before
	// TraceConfig.Conversations existed.
	assert.Equal(t, "sha256:f28c603e0f90ad4cc81e810a0f49b7d220ee7ea730872caf7e34545c94c3e4fa", stamp)
	kept := fp(ConversationReplay{Keep: true})
	assert.NotEqual(t, stamp, kept)
	assert.NotEqual(t, kept, fp(ConversationReplay{Keep: true, MinThink: time.Second}))
}

// A TargetRate replay measures the recorded instants (its first pass is
// a timestamp replay) and scales them before turns wait.
func TestConversationReplayTargetRate(t *testing.T) {
	data := []byte("t,i,o,c\n0,1,1,1\n1,1,1,2\n2,1,1,1\n3,1,1,2\n")
	cfg := TraceConfig{Columns: Columns{Arrival: "t", Input: "i", Output: "o", Conversation: "c"},
		Transform: Transform{TargetRate: 2}, Conversations: ConversationReplay{Keep: true}}
	rep, err := NewReplay(bytes.NewReader(data), "rate.csv", cfg)
	require.NoError(t, err)
	d := drive(rep.(*ConversationTrace), 0, true)
	require.NoError(t, d.err)
	var at []time.Duration
	for _, r := range d.requests() {
		at = append(at, r.Arrival)
	}
	assert.Equal(t, []time.Duration{0, 666666667, 1333333333, 2 * time.Second}, at, "4 requests at 2/s: the last at 2 s, each instant ×2/3 rounded")
}
