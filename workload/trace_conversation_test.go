package workload

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkKept asserts the rule of a conversation-keeping replay on a driven
// log against the recorded requests: every recorded request is offered
// once with every field as recorded, except that a turn after the first
// arrives at the later of its recorded instant and its predecessor's end +
// think, and is not even yielded before that end. It returns how many
// turns the rule delayed.
func checkKept(t *testing.T, recorded []Request, d *fakeDriver, think time.Duration) (delayed int) {
	t.Helper()
	require.Len(t, d.log, len(recorded), "every recorded request is offered once")
	byID := map[uint64]served{}
	for _, s := range d.log {
		byID[s.req.ID] = s
	}
	require.Len(t, byID, len(recorded))
	prev := map[uint64]served{} // conversation → its previous turn, as served
	for _, r := range recorded {
		s := byID[r.ID]
		want := r
		if p, ok := prev[r.Conversation]; ok {
			require.GreaterOrEqual(t, s.req.Arrival, p.end+think, "turn %d of conversation %d arrives before its predecessor's end + think", r.Turn, r.Conversation)
			require.GreaterOrEqual(t, s.pulled, p.end, "turn %d of conversation %d is yielded before its predecessor ends", r.Turn, r.Conversation)
			want.Arrival = max(r.Arrival, p.end+think)
		}
		require.Equal(t, want, s.req)
		if s.req.Arrival > r.Arrival {
			delayed++
		}
		if r.Conversation != 0 {
			prev[r.Conversation] = s
		}
	}
	return delayed
}

// Under overload (a server four times too slow) no turn arrives before
// its predecessor's end + the minimum think time, each arrives exactly at
// the later of that and its recorded instant, and every other field is
// the recorded one, whichever way the driver pulls; failed turns (about
// one in twenty) do not end their conversation.
func TestConversationReplayUnderOverload(t *testing.T) {
	recorded := conversationTrace(1, 300, 6, 200, 10*time.Minute, 0, 5*time.Second)
	data := genericCSV(t, recorded)
	const think = 3 * time.Second
	var logs [2][]Request
	for i, paced := range []bool{true, false} {
		d := drive(openKept(t, data, keepConversations(think)), 4*time.Second, paced)
		require.NoError(t, d.err, "paced %v", paced)
		delayed := checkKept(t, recorded, d, think)
		assert.Greater(t, delayed, 500, "paced %v: most later turns wait for their predecessor", paced)
		logs[i] = byArrival(d.requests())
	}
	assert.Equal(t, logs[0], logs[1], "the way the driver pulls changes no request")
}

// Requests without a conversation are untouched under overload: their
// recorded instants and fields, in file order, all through Next.
func TestConversationReplayLeavesLooseRequests(t *testing.T) {
	recorded := conversationTrace(2, 200, 6, 300, 10*time.Minute, 0, 5*time.Second)
	data := genericCSV(t, recorded)
	d := drive(openKept(t, data, keepConversations(time.Second)), 4*time.Second, true)
	require.NoError(t, d.err)
	var want, got []Request
	for _, r := range recorded {
		if r.Conversation == 0 {
			want = append(want, r)
		}
	}
	for _, s := range d.log {
		if s.req.Conversation == 0 {
			got = append(got, s.req)
			assert.True(t, s.stream, "request %d comes through Next", s.req.ID)
		}
	}
	assert.Equal(t, want, got)
}

// When no turn overlaps its predecessor — here every row is 3 s after the
// one before and is served in 1 s, with 1 s of think time — the replay is
// timestamp replay exactly: the same requests (ids, instants, every
// field), ordered by arrival as an event queue orders them, whichever way
// the driver pulls. (The order of pulling differs: a turn right after its
// predecessor in the file is read while that one is in flight, so it is
// held and released at its recorded instant when the predecessor ends.)
func TestConversationReplayEqualsTimestampReplayWithoutOverlap(t *testing.T) {
	recorded := conversationTrace(3, 30, 5, 30, time.Hour, 0, time.Minute)
	for i := range recorded {
		recorded[i].Arrival = time.Duration(i) * 3 * time.Second
	}
	data := genericCSV(t, recorded)
	cfg := keepConversations(time.Second)
	want := timestamps(t, data, cfg)
	require.Equal(t, recorded, want)
	for _, paced := range []bool{true, false} {
		d := drive(openKept(t, data, cfg), time.Second, paced)
		require.NoError(t, d.err)
		assert.Equal(t, want, byArrival(d.requests()), "paced %v", paced)
		assert.Zero(t, checkKept(t, recorded, d, time.Second), "paced %v: no turn delayed", paced)
	}
}

// A turn read while its predecessor is still in flight is held, but when
// its recorded instant is after the predecessor's end + think it is
// released at that instant: the replay offers exactly the requests of
// timestamp replay, ordered as a simulator's event queue orders them, for
// either driver.
func TestConversationReplayHeldTurnsKeepTheirInstants(t *testing.T) {
	recorded := conversationTrace(4, 40, 5, 40, 20*time.Minute, 10*time.Second, 2*time.Minute)
	data := genericCSV(t, recorded)
	cfg := keepConversations(2 * time.Second)
	want := timestamps(t, data, cfg)
	for _, paced := range []bool{true, false} {
		d := drive(openKept(t, data, cfg), time.Second, paced)
		require.NoError(t, d.err)
		assert.Equal(t, byArrival(want), byArrival(d.requests()), "paced %v", paced)
		assert.Zero(t, checkKept(t, recorded, d, 2*time.Second), "paced %v: no turn delayed", paced)
		assert.Positive(t, d.maxHeld, "paced %v: some turns were held", paced)
	}
}

// Next returns ErrWaiting when the file is read and every remaining turn
// waits on an unfinished predecessor; Finished releases the next turn at
// the later of its instant and the end + MinThink, ok or not; io.EOF once
// no turn remains, even with turns in flight.
func TestConversationReplayWaits(t *testing.T) {
	s := time.Second
	data := genericCSV(t, []Request{
		{ID: 0, Arrival: 0, InputTokens: 10, OutputTokens: 5, Conversation: 1},
		{ID: 1, Arrival: s / 2, InputTokens: 20, OutputTokens: 5, Conversation: 2},
		{ID: 2, Arrival: 1 * s, InputTokens: 30, OutputTokens: 5, Conversation: 1, Turn: 1},
		{ID: 3, Arrival: 2 * s, InputTokens: 40, OutputTokens: 5, Conversation: 1, Turn: 2},
		{ID: 4, Arrival: 3 * s, InputTokens: 50, OutputTokens: 5},
	})
	c := openKept(t, data, keepConversations(2*s))
	next := func() (uint64, time.Duration, error) {
		r, err := c.Next()
		return r.ID, r.Arrival, err
	}
	for _, want := range []struct {
		id uint64
		at time.Duration
	}{{0, 0}, {1, s / 2}, {4, 3 * s}} {
		id, at, err := next()
		require.NoError(t, err)
		assert.Equal(t, want.id, id)
		assert.Equal(t, want.at, at)
	}
	_, _, err := next()
	assert.ErrorIs(t, err, ErrWaiting)
	assert.Equal(t, 2, c.Held())
	c.Finished(1, 5*s, true) // another conversation: releases nothing
	c.Finished(2, 5*s, true) // a held turn, not in flight: ignored
	c.Finished(99, 5*s, true)
	_, _, err = next()
	assert.ErrorIs(t, err, ErrWaiting)
	c.Finished(0, 10*s, false) // failed: the conversation goes on
	id, at, err := next()
	require.NoError(t, err)
	assert.Equal(t, uint64(2), id)
	assert.Equal(t, 12*s, at, "10 s + 2 s of think time, after the recorded 1 s")
	_, _, err = next()
	assert.ErrorIs(t, err, ErrWaiting)
	assert.Equal(t, 1, c.Held())
	c.Finished(2, 20*s, true)
	r, ok := c.Released()
	require.True(t, ok)
	assert.Equal(t, uint64(3), r.ID)
	assert.Equal(t, 22*s, r.Arrival)
	_, _, err = next()
	assert.Equal(t, io.EOF, err, "no turn waits: the end, though turn 3 is in flight")
	assert.Equal(t, 5, c.Count())
}

// A turn read after its predecessor ended, but recorded less than
// MinThink after that end, is released at end + MinThink through
// Released; Next goes on with the rows that keep their instants.
func TestConversationReplayDelaysATurnReadAfterItsPredecessorEnded(t *testing.T) {
	s := time.Second
	data := genericCSV(t, []Request{
		{ID: 0, Arrival: 0, InputTokens: 10, OutputTokens: 5, Conversation: 1},
		{ID: 1, Arrival: 2 * s, InputTokens: 20, OutputTokens: 5},
		{ID: 2, Arrival: 3 * s, InputTokens: 30, OutputTokens: 5, Conversation: 1, Turn: 1},
		{ID: 3, Arrival: 4 * s, InputTokens: 40, OutputTokens: 5},
	})
	c := openKept(t, data, keepConversations(5*s))
	r, err := c.Next()
	require.NoError(t, err)
	assert.Equal(t, uint64(0), r.ID)
	c.Finished(0, 1*s, true)
	r, err = c.Next()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), r.ID)
	r, err = c.Next()
	require.NoError(t, err)
	assert.Equal(t, uint64(3), r.ID, "turn 2, due at 1 s + 5 s, waits in Released")
	r, ok := c.Released()
	require.True(t, ok)
	assert.Equal(t, uint64(2), r.ID)
	assert.Equal(t, 6*s, r.Arrival)
	assert.Zero(t, c.Held())
}

// laneRows generates a long trace: a row every 100 ms, in 8 lanes; row i
// is in lane i%8, where conversations of 8 turns follow one another, a
// turn every 800 ms (row i is turn (i/8)%8 of conversation (i/64)·8 + i%8
// + 1), except lane 7, of requests without conversation. Read it with
// laneColumns.
type laneRows struct {
	rows, limit int
	pending     []byte
}

const lanes, laneTurns = 8, 8

var laneColumns = TraceConfig{Columns: Columns{Arrival: "t", ArrivalUnit: time.Millisecond, Input: "i", Output: "o",
	Conversation: "c", Turn: "k"}, KeepOrigin: true}

func (l *laneRows) Read(p []byte) (int, error) {
	for len(l.pending) < len(p) && l.rows < l.limit {
		if l.rows == 0 {
			l.pending = append(l.pending, "t,i,o,c,k\n"...)
		}
		i := l.rows
		conv, turn := (i/(lanes*laneTurns))*lanes+i%lanes+1, (i/lanes)%laneTurns
		if i%lanes == lanes-1 {
			conv, turn = 0, 0
		}
		l.pending = fmt.Appendf(l.pending, "%d,1000,100,%d,%d\n", i*100, conv, turn)
		l.rows++
	}
	if len(l.pending) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.pending)
	l.pending = l.pending[:copy(l.pending, l.pending[n:])]
	return n, nil
}

// Memory stays bounded on a long trace: with a paced driver, the turns
// held, the conversations and turns tracked stay within a few times the
// conversations active at once (7 lanes), over 200,000 rows, while a
// second of think time (against turns 800 ms apart) delays most turns and
// holds some. A driver that drains Next instead holds every later turn of
// every conversation from the start.
func TestConversationReplayMemoryIsBounded(t *testing.T) {
	rows := 200000
	if testing.Short() {
		rows = 20000
	}
	cfg := laneColumns
	cfg.Conversations = ConversationReplay{Keep: true, MinThink: time.Second}
	open := func(limit int) *ConversationTrace {
		rep, err := NewReplay(&laneRows{limit: limit}, "lanes.csv", cfg)
		require.NoError(t, err)
		return rep.(*ConversationTrace)
	}
	const service = 60 * time.Millisecond // 60 % of the server
	d := drive(open(rows), service, true)
	require.NoError(t, d.err)
	require.Len(t, d.log, rows)
	delayed := 0
	for _, s := range d.log {
		if s.req.Arrival > time.Duration(s.req.ID)*100*time.Millisecond { // row i is recorded at i·100 ms
			delayed++
		}
	}
	assert.Greater(t, delayed, rows/2, "most turns are delayed")
	assert.Positive(t, d.maxHeld, "some turns are held")
	assert.LessOrEqual(t, d.maxHeld, 2*lanes, "turns held")
	assert.LessOrEqual(t, d.maxChains, 4*lanes, "conversations tracked")
	assert.LessOrEqual(t, d.maxTracked, 4*lanes, "turns tracked")
	assert.LessOrEqual(t, len(d.src.idle), 4*lanes, "idle conversations queued for pruning")
	t.Logf("paced, %d rows: %d delayed; at most %d turns held, %d conversations and %d turns tracked", rows, delayed, d.maxHeld, d.maxChains, d.maxTracked)

	const few = 6400
	d = drive(open(few), service, false)
	require.NoError(t, d.err)
	assert.Equal(t, few*(lanes-1)/lanes*(laneTurns-1)/laneTurns, d.maxHeld, "draining: every later turn is held from the start")
}

// The Azure conversation trace has no conversation column: keeping
// conversations changes nothing, even under overload (one server at a
// second per request, against 5.5 requests/s).
func TestConversationReplayOfAzureIsTimestampReplay(t *testing.T) {
	path := sharedTrace(t, azureConv)
	cfg := Azure()
	want, err := OpenTrace(path, cfg)
	require.NoError(t, err)
	defer want.Close()
	cfg.Conversations = ConversationReplay{Keep: true, MinThink: time.Second}
	rep, err := OpenReplay(path, cfg)
	require.NoError(t, err)
	defer rep.Close()
	d := drive(rep.(*ConversationTrace), time.Second, true)
	require.NoError(t, d.err)
	assert.Equal(t, drain(t, want), d.requests())
	assert.Zero(t, d.maxHeld)
}
