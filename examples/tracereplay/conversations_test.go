package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/golden"
	"github.com/servesim/servesim/sim"
	"github.com/servesim/servesim/workload"
)

// conversationSample is the path of the synthetic multi-turn trace.
var conversationSample = filepath.Join("testdata", "conversations.csv")

// synthConversations writes the synthetic multi-turn trace in the generic
// CSV form: 150 conversations starting as a Poisson process (one every
// 12 s on average), each of 1 to 6 turns. A first prompt has 300 to 1,499
// tokens; turn k+1's prompt is turn k's prompt, its answer and 50 to 349
// new tokens, so its leading 512-token blocks carry the same prefix ids; an
// answer has 50 to 399 tokens. A turn is recorded 4 s plus an exponential
// 8 s on average after the one before: often less than the 9 s a
// 200-token answer takes on Atlas, so a timestamp replay sends turns
// before the answer they follow has ended.
func synthConversations() ([]byte, error) {
	rng := workload.NewStream(12, "examples/tracereplay/conversations")
	const block = 512
	var reqs []workload.Request
	start := time.Duration(0)
	for conv := uint64(1); conv <= 150; conv++ {
		start += time.Duration(rng.ExpFloat64() * 12 * float64(time.Second))
		at, in := start, 300+rng.IntN(1200)
		for turn := range 1 + rng.IntN(6) {
			out := 50 + rng.IntN(350)
			ids := make([]uint64, in/block)
			for j := range ids {
				ids[j] = conv*1000 + uint64(j) // block j of the conversation's growing text
			}
			reqs = append(reqs, workload.Request{Arrival: at.Round(time.Millisecond), InputTokens: in, OutputTokens: out,
				Conversation: conv, Turn: turn + 1, PrefixHashes: ids, PrefixBlockTokens: block})
			at += 4*time.Second + time.Duration(rng.ExpFloat64()*8*float64(time.Second))
			in += out + 50 + rng.IntN(300)
		}
	}
	slices.SortStableFunc(reqs, func(a, b workload.Request) int { return int(a.Arrival - b.Arrival) })
	var buf bytes.Buffer
	w := workload.NewTraceWriter(&buf, workload.CSV)
	for i, r := range reqs {
		r.ID = uint64(i)
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// The shipped sample is what synthConversations writes (go test -update
// rewrites it).
func TestConversationSample(t *testing.T) {
	b, err := synthConversations()
	require.NoError(t, err)
	golden.Check(t, conversationSample, b)
}

// On the synthetic trace time-scaled to 2 req/s, timestamp replay sends
// turns whose previous answer has not ended, a burst the recorded users
// never made, and attainment falls to 0.805; keeping conversations sends
// each turn at least -min-think after that answer, and attainment stays
// at 1.000: a turn that resends its predecessor's answer finds it in the
// prefix cache, as on vLLM. With -answers -1 (the trace's ids over
// prompts only: no answer is ever found) it is 0.998, the figure before
// answers were given ids. The report names the replay it ran; the
// trace's rows, and so its window line, are the same either way, and the
// fingerprints differ.
func TestKeepConversations(t *testing.T) {
	args := []string{"-trace", conversationSample, "-format", "generic", "-rates", "1,2,2.5,3"}
	var ts, kept bytes.Buffer
	require.NoError(t, run(&ts, args))
	require.NoError(t, run(&kept, append(args, "-keep-conversations", "-min-think", "2s")))
	golden.Check(t, filepath.Join("testdata", "conversations_timestamp.golden"), ts.Bytes())
	golden.Check(t, filepath.Join("testdata", "conversations_keep.golden"), kept.Bytes())
	line := func(out, prefix string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		return ""
	}
	assert.Contains(t, line(ts.String(), "replay     "), "timestamp replay (every row at its recorded instant)")
	assert.Contains(t, line(kept.String(), "replay     "), "conversation-keeping replay (a turn is released at the later of its recorded instant and its predecessor's end + 2s minimum think time)")
	assert.Equal(t, line(ts.String(), "window     "), line(kept.String(), "window     "))
	assert.NotEqual(t, line(ts.String(), "workload   "), line(kept.String(), "workload   "))
	attain := func(out string) string { return strings.Fields(line(out, "scaled to 2/s"))[6] }
	assert.Equal(t, "0.805", attain(ts.String()))
	assert.Equal(t, "1.000", attain(kept.String()))
	assert.Contains(t, kept.String(), "answers: 356 of the 532 rows that name a conversation resend")

	var bare bytes.Buffer
	require.NoError(t, run(&bare, append(args, "-keep-conversations", "-min-think", "2s", "-answers", "-1")))
	assert.Equal(t, "0.998", attain(bare.String()))
	assert.Contains(t, bare.String(), "no answer is ever found in the prefix cache")
	var loose bytes.Buffer
	assert.EqualError(t, run(&loose, append(args, "-answers", "5")), "-answers applies only with -keep-conversations, got 5")
}

// The sample shows what the option is for: replayed by timestamp at
// 1 req/s, some turns reach the replica before the answer they follow has
// ended; kept, no turn arrives before its predecessor's end + 2 s, nor
// before its recorded instant, and every row is still offered.
func TestKeptTurnsWaitForTheirAnswers(t *testing.T) {
	cfg, err := traceConfig("generic", false)
	require.NoError(t, err)
	cfg.Transform.TargetRate = 1
	overtaken := func(c workload.ConversationReplay) (early, n int) {
		cfg := cfg
		cfg.Conversations = c
		recorded := map[uint64]time.Duration{}
		tr, err := workload.OpenTrace(conversationSample, func() workload.TraceConfig { c := cfg; c.Conversations = workload.ConversationReplay{}; return c }())
		require.NoError(t, err)
		for {
			r, err := tr.Next()
			if err != nil {
				break
			}
			recorded[r.ID] = r.Arrival
		}
		tr.Close()
		rep, err := workload.OpenReplay(conversationSample, cfg)
		require.NoError(t, err)
		defer rep.Close()
		var recs []sim.Record
		_, err = sim.Run(sim.Config{}, rep, sim.ObserverFunc(func(r *sim.Record) { recs = append(recs, *r) }))
		require.NoError(t, err)
		slices.SortFunc(recs, func(a, b sim.Record) int { return int(a.Scheduled - b.Scheduled) })
		end := map[uint64]time.Duration{} // a conversation's last answer's end
		for _, r := range recs {
			assert.GreaterOrEqual(t, r.Arrival, recorded[r.ID], "request %d never arrives before its recorded instant", r.ID)
			if e, ok := end[r.Conversation]; ok && r.Arrival < e+c.MinThink {
				early++
			}
			end[r.Conversation] = r.Finish
		}
		return early, len(recs)
	}
	early, n := overtaken(workload.ConversationReplay{})
	assert.Positive(t, early, "timestamp replay at 1 req/s sends turns before their answer")
	kept, m := overtaken(workload.ConversationReplay{Keep: true, MinThink: 2 * time.Second})
	assert.Zero(t, kept)
	assert.Equal(t, n, m, "every row offered either way")
	t.Logf("timestamp replay: %d of %d turns sent before their answer ended", early, n)
}
