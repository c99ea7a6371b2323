package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// conversationTrace writes a generic CSV trace of n conversations of turns
// turns each, started at rate conversations per second, whose turns were
// recorded gap apart, with a few single-turn rows (conversation 0)
// between them.
func conversationTrace(n, turns int, rate float64, gap time.Duration) string {
	rng := rand.New(rand.NewPCG(1, 2))
	type row struct {
		at         time.Duration
		conv, turn int
		in, out    int
	}
	var rows []row
	at := time.Duration(0)
	for c := 1; c <= n; c++ {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		for k := range turns {
			rows = append(rows, row{at + time.Duration(k)*gap, c, k, 500 + 500*k, 100 + rng.IntN(100)})
		}
		if c%5 == 0 {
			rows = append(rows, row{at, 0, 0, 1000, 50})
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return int(a.at - b.at) })
	var b strings.Builder
	b.WriteString("t,in,out,conv,turn\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%.6f,%d,%d,%d,%d\n", r.at.Seconds(), r.in, r.out, r.conv, r.turn)
	}
	return b.String()
}

func replay(t *testing.T, trace string, keep bool, think time.Duration) workload.Source {
	t.Helper()
	cfg := workload.TraceConfig{Columns: workload.Columns{Arrival: "t", Input: "in", Output: "out", Conversation: "conv", Turn: "turn"}}
	if keep {
		cfg.Conversations = workload.ConversationReplay{Keep: true, MinThink: think}
	}
	src, err := workload.NewReplay(strings.NewReader(trace), "conversations.csv", cfg)
	require.NoError(t, err)
	return src
}

// Under overload (turns recorded 2 s apart, answers of 100 to 200 tokens
// that take 4.5 s or more) a conversation-keeping replay never lets a turn
// arrive before its predecessor ended plus the minimum think time, while
// timestamp replay sends most turns before the answer they follow exists.
func TestConversationReplayWaitsForTheAnswer(t *testing.T) {
	trace := conversationTrace(300, 4, 1, 2*time.Second)
	early := func(keep bool) (int, int) {
		var recs []Record
		_, err := Run(Config{}, replay(t, trace, keep, time.Second), keepRecords(&recs))
		require.NoError(t, err)
		finish := map[[2]uint64]time.Duration{}
		for _, r := range recs {
			finish[[2]uint64{r.Conversation, uint64(r.Turn)}] = r.Finish
		}
		n, turns := 0, 0
		for _, r := range recs {
			if r.Conversation == 0 || r.Turn == 0 {
				continue
			}
			turns++
			if prev := finish[[2]uint64{r.Conversation, uint64(r.Turn - 1)}]; r.Arrival < prev+time.Second {
				n++
			}
		}
		return n, turns
	}
	kept, turns := early(true)
	assert.Equal(t, 900, turns)
	assert.Zero(t, kept, "no turn arrives before its predecessor's end + 1 s")
	stamped, _ := early(false)
	t.Logf("timestamp replay: %d of %d turns arrive before their predecessor's end + 1 s", stamped, turns)
	assert.Equal(t, 900, stamped, "timestamp replay overtakes every answer")
}

// Where no turn overlaps its predecessor (turns recorded 60 s apart at a
// light load, every answer done in under 10 s), conversation-keeping
// replay is timestamp replay: the same records and the same summary.
func TestConversationReplayWithoutOverlapIsTimestampReplay(t *testing.T) {
	trace := conversationTrace(200, 3, 0.5, 60*time.Second)
	run := func(keep bool) (string, string) {
		var recs []Record
		cfg := Config{Window: Window{Warmup: 30 * time.Second, Horizon: 500 * time.Second}}
		sum, err := Run(cfg, replay(t, trace, keep, 2*time.Second), keepRecords(&recs))
		require.NoError(t, err)
		slices.SortFunc(recs, func(a, b Record) int { return int(a.ID) - int(b.ID) })
		return fmt.Sprintf("%+v", recs), fmt.Sprintf("%+v", sum)
	}
	keptRecs, keptSum := run(true)
	stampRecs, stampSum := run(false)
	require.Equal(t, stampSum, keptSum)
	require.Equal(t, stampRecs, keptRecs)
}

// A paced replay streams: the runner holds the requests in flight and the
// turns released until their recorded instants, never the whole trace, so
// a trace four times as long needs no more slots (23 here, for
// conversations started 0.3 a second, 1.26 req/s, whose turns come 30 s
// apart).
func TestConversationReplayStreams(t *testing.T) {
	slots := func(n int) int {
		r, err := newRunner(Config{}, replay(t, conversationTrace(n, 4, 0.3, 30*time.Second), true, time.Second), nil)
		require.NoError(t, err)
		require.NoError(t, r.loop())
		assert.Equal(t, n*4+n/5, r.summary().Offered)
		return len(r.slots)
	}
	short, long := slots(500), slots(2000)
	t.Logf("slots: %d for 2,100 rows, %d for 8,400", short, long)
	assert.Less(t, short, 50)
	assert.Less(t, long, short+10)
}
