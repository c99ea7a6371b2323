package workload

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answerTrace is a generic CSV of 16-token blocks: conversation 1's turn
// 2 resends turn 1 (a 100-token prompt, a 60-token answer) and adds 20
// tokens; conversation 2's turn 2 starts a new thread (other ids); its
// turn 3 is shorter than turn 2's prompt and answer.
const answerTrace = `id,arrival_ns,input_tokens,output_tokens,conversation,turn,class,priority,failed,prefix_block_tokens,prefix_hashes
0,0,100,60,1,1,,0,false,16,1 2 3 4 5 6 7
1,1000000,40,10,2,1,,0,false,16,50 51 52
2,5000000000,180,5,1,2,,0,false,16,1 2 3 4 5 6 17 18 19 20 21 22
3,6000000000,64,10,2,2,,0,false,16,60 61 62 63
4,9000000000,70,10,2,3,,0,false,16,60 61 62 63 64
`

// replayAnswers drives answerTrace keeping conversations, answers
// remembered for limit conversations, and returns the requests by id.
func replayAnswers(t *testing.T, limit int) (map[uint64]Request, *ConversationTrace) {
	t.Helper()
	cfg := Generic(CSV)
	cfg.Conversations = ConversationReplay{Keep: true, Answers: limit}
	c := openKept(t, []byte(answerTrace), cfg)
	d := drive(c, time.Second, true)
	require.NoError(t, d.err)
	got := map[uint64]Request{}
	for _, s := range d.log {
		got[s.req.ID] = s.req
	}
	require.Len(t, got, 5)
	return got, c
}

// Counted by hand: turn 1's prompt has 6 full blocks (96 of its 100
// tokens); its prompt and answer, 160 tokens, fill 10 blocks, the 7th
// straddling the prompt's end. It is issued with the trace's 6 ids, then
// 4 of its own over blocks 6–9 (the 10th, ids cover ceil(160/16) blocks).
// Turn 2 (180 tokens ≥ 160, the same 6 leading ids) resends it: its
// first 10 ids are turn 1's, its 11th (tokens 160–175) the trace's, and
// blocks 11 (its prompt's partial block) and beyond its own.
func TestConversationReplayGivesAnswersIDs(t *testing.T) {
	got, c := replayAnswers(t, 0)
	t1, t2 := got[0], got[2]
	require.True(t, t1.HashesCoverOutput)
	require.Len(t, t1.PrefixHashes, 10)
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, t1.PrefixHashes[:6])
	for u := 6; u < 10; u++ {
		assert.Equal(t, answerID(1, 0, u), t1.PrefixHashes[u], "block %d of turn 1's answer", u)
	}
	require.True(t, t2.HashesCoverOutput)
	require.Len(t, t2.PrefixHashes, blocks(185, 16))
	assert.Equal(t, t1.PrefixHashes, t2.PrefixHashes[:10], "turn 2 resends turn 1's prompt and answer")
	assert.Equal(t, uint64(21), t2.PrefixHashes[10], "the trace's id past turn 1's answer")
	assert.Equal(t, answerID(1, 2, 11), t2.PrefixHashes[11])

	// Conversation 2: turn 2's ids differ from turn 1's (a new thread);
	// turn 3 has turn 2's leading ids, but 70 tokens < 64 + 10.
	assert.Equal(t, []uint64{60, 61, 62, 63}, got[3].PrefixHashes[:4])
	assert.Equal(t, []uint64{60, 61, 62, 63}, got[4].PrefixHashes[:4])
	assert.Equal(t, 1, c.Resent(), "only conversation 1's turn 2 resends its predecessor")

	// Every request keeps the fields of the replay without answers.
	bare, _ := replayAnswers(t, -1)
	for id, r := range got {
		b := bare[id]
		assert.False(t, b.HashesCoverOutput)
		r.PrefixHashes, r.HashesCoverOutput = b.PrefixHashes, false
		assert.Equal(t, b, r, "request %d", id)
	}
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 17, 18, 19, 20, 21, 22}, bare[2].PrefixHashes)
}

// A replay remembering one conversation forgets conversation 1's answer
// once conversation 2's first turn is issued after it: turn 2 of
// conversation 1 keeps the trace's ids.
func TestConversationReplayForgetsAnswersBeyondItsLimit(t *testing.T) {
	got, c := replayAnswers(t, 1)
	assert.Equal(t, 0, c.Resent())
	assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 17, 18, 19, 20, 21}, got[2].PrefixHashes[:11])
}

// Three turns: turn 3 resends turn 2, which resent turn 1, so turn 1's
// answer ids carry over to turn 3, though turn 3's trace ids over them
// are the trace's (not turn 2's rewritten ones).
func TestConversationReplayCarriesAnswersOver(t *testing.T) {
	data := answerTrace + "5,20000000000,220,10,1,3,,0,false,16,1 2 3 4 5 6 17 18 19 20 21 30 31 32\n"
	cfg := Generic(CSV)
	cfg.Conversations = ConversationReplay{Keep: true}
	c := openKept(t, []byte(data), cfg)
	d := drive(c, time.Second, true)
	require.NoError(t, d.err)
	var t2, t3 Request
	for _, s := range d.log {
		switch s.req.ID {
		case 2:
			t2 = s.req
		case 5:
			t3 = s.req
		}
	}
	// Turn 2's prompt and answer, 185 tokens, fill 11 blocks.
	assert.Equal(t, t2.PrefixHashes[:11], t3.PrefixHashes[:11])
	assert.Equal(t, answerID(1, 0, 9), t3.PrefixHashes[9], "turn 1's answer, two turns later")
	assert.Equal(t, []uint64{30, 31}, t3.PrefixHashes[11:13], "the trace's ids past turn 2's answer, over full blocks")
	assert.Equal(t, answerID(1, 5, 13), t3.PrefixHashes[13], "the block straddling turn 3's prompt's end is its answer's")
	assert.Equal(t, 2, c.Resent())
}

// The generic form writes a request's prompt ids only, so a replay read
// back gives the same ids over the prompt.
func TestTraceWriterCutsAnswerIDs(t *testing.T) {
	got, _ := replayAnswers(t, 0)
	var buf bytes.Buffer
	w := NewTraceWriter(&buf, CSV)
	require.NoError(t, w.Write(got[0]))
	require.NoError(t, w.Flush())
	tr, err := NewTrace(strings.NewReader(buf.String()), "back.csv", Generic(CSV))
	require.NoError(t, err)
	r, err := tr.Next()
	require.NoError(t, err)
	assert.Equal(t, got[0].PrefixHashes[:7], r.PrefixHashes, "ceil(100/16) = 7 ids")
	_, err = tr.Next()
	assert.ErrorIs(t, err, io.EOF)
}

func TestConversationReplayAnswersNeedKeep(t *testing.T) {
	cfg := Generic(CSV)
	cfg.Conversations = ConversationReplay{Answers: 5}
	assert.EqualError(t, cfg.Validate(), "workload: TraceConfig.Conversations.Answers (5) applies only with Conversations.Keep, which is not set")
}
