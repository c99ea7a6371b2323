package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seqIDs is one id per 16-token unit of a sequence: ids[u] = base + u.
func seqIDs(base uint64, units int) []uint64 {
	ids := make([]uint64, units)
	for u := range ids {
		ids[u] = base + uint64(u)
	}
	return ids
}

// A conversation's second turn resends the first turn's prompt and answer
// and finds the answer's blocks cached, as vLLM finds them. By hand, with
// 16-token blocks: turn 1 has a 100-token prompt and a 60-token answer, a
// 160-token sequence whose ten blocks 0..9 are full, block 6 straddling the
// prompt's end (tokens 96..111: 4 of prompt, 12 of answer). Its prefill
// caches blocks 0..5 (tokens 0..95); each decode computes the token sampled
// before it, and the one computing token 16j+15 caches block j: blocks 6, 7,
// 8 at the decodes of tokens 111, 127, 143. Token 159, the answer's last, is
// sampled and never computed (the request leaves), so block 9 (144..159) is
// never cached. Turn 2's prompt is those 160 tokens + 40 new (200 tokens, 12
// full units, the first 10 turn 1's ids): it finds blocks 0..8, 144 tokens,
// where without the answer's ids it found the prompt's 6 full blocks, 96.
func TestAnswerBlocksFoundByTheNextTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		covers bool
		want   int
	}{{"answer ids", true, 144}, {"prompt ids only", false, 96}} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{KVBlocks: 100}, nil)
			require.NoError(t, err)
			turn1 := seqIDs(1000, 10)
			require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 60, Prefix: turn1, PrefixBlockTokens: 16, PrefixCoversOutput: tc.covers}))
			now := step1(t, e, 0)
			want := 6 // the prefill caches blocks 0..5
			assert.Equal(t, want, e.CachedBlocks())
			for k := 1; k < 60; k++ { // decode k computes token 99 + k
				now = step1(t, e, now)
				if c := 100 + k; tc.covers && c%16 == 0 && c/16 <= 9 {
					want++ // token c-1 completes block c/16 - 1
				}
				assert.Equal(t, want, e.CachedBlocks(), "after decode %d", k)
			}
			assert.True(t, e.Idle())
			if tc.covers {
				assert.Equal(t, 9, want, "blocks 0..8")
			}
			assert.Equal(t, 100, e.FreeBlocks(), "all blocks free again")

			turn2 := append(append([]uint64{}, turn1...), 2000, 2001)
			require.NoError(t, e.Add(now, Request{Ref: 2, Input: 200, Output: 5, Prefix: turn2, PrefixBlockTokens: 16, PrefixCoversOutput: tc.covers}))
			assert.Equal(t, tc.want, e.CachedPrefix(turn2, 16, 200))
			p, _ := step(t, e, now)
			assert.Equal(t, []int{tc.want}, p.Cached)
			assert.Equal(t, 200-tc.want, p.Batch.Prefill[0].NewTokens)
		})
	}
}

// step1 runs one step at now and returns its end.
func step1(t *testing.T, e *Engine, now time.Duration) time.Duration {
	t.Helper()
	p, _ := step(t, e, now)
	return p.End
}

// conversationAdds is a workload of conversations whose turns share their
// answers: each turn's prompt is the last turn's prompt and answer and 20
// new tokens, with ids over the whole sequence. Turns arrive every 400 ms
// whether the last one finished or not, so that a turn sometimes computes
// its predecessor's answer while the predecessor still decodes it (a
// second copy), beside plain requests that make runs of decode steps.
func conversationAdds(convs, turns int) map[time.Duration][]Request {
	adds := map[time.Duration][]Request{}
	ref := int32(0)
	for c := range convs {
		input, output := 50+37*c, 30+11*c
		var ids []uint64
		for k := range turns {
			keep := min(len(ids), input/16)
			ids = ids[:keep:keep]
			for len(ids) < (input+output)/16 {
				ids = append(ids, uint64(c)<<32|uint64(len(ids)+1))
			}
			at := time.Duration(c*150+k*400) * time.Millisecond
			adds[at] = append(adds[at], Request{Ref: ref, Input: input, Output: output, Prefix: ids, PrefixBlockTokens: 16, PrefixCoversOutput: true})
			ref++
			adds[at] = append(adds[at], Request{Ref: ref, Input: 300, Output: 45})
			ref++
			input += output + 20
		}
	}
	return adds
}

// Runs of decode steps cache a turn's answer blocks exactly as the
// step-by-step engine does (runPublish caches those of a run's later
// steps as it takes their blocks), with and without pressure on the
// cache; the same workload driven twice gives the same timeline.
func TestAnswerBlocksRunsMatchSteps(t *testing.T) {
	for _, blocks := range []int{1000, 60} {
		adds := conversationAdds(4, 4)
		cfg := Config{KVBlocks: blocks, MaxSeqs: 8}
		slow, err := New(cfg, nil)
		require.NoError(t, err)
		fast, err := New(cfg, nil)
		require.NoError(t, err)
		again, err := New(cfg, nil)
		require.NoError(t, err)
		want := timeline(t, slow, false, adds)
		got := timeline(t, fast, true, adds)
		assert.Equal(t, want, got, "KV blocks %d", blocks)
		assert.Equal(t, got, timeline(t, again, true, adds), "deterministic")
		assert.Equal(t, slow.CachedBlocks(), fast.CachedBlocks())
		assert.Equal(t, cfg.KVBlocks, fast.FreeBlocks(), "idle: every block free")
	}
}

// A run of decode steps goes on through the decodes that complete blocks
// of a turn's answer (PrefixCoversOutput), and caches each of them when
// the run reaches the step that completes it, as a step-by-step engine
// caches it when it plans that step: TestAnswerBlocksFoundByTheNextTurn's
// turn 1, whose decodes of tokens 111, 127 and 143 cache blocks 6, 7 and
// 8, is one run of its 59 decodes after its prefill, and a router that
// brings it to an instant (SyncTo) finds the blocks of the steps started
// by then. With KV events published, each caching carries its step: the
// run stops before such a decode instead (FastPaths' runs).
func TestRunGoesOnThroughAnswerBlocks(t *testing.T) {
	for _, events := range []bool{false, true} {
		e, err := New(Config{KVBlocks: 100}, nil)
		require.NoError(t, err)
		if events {
			e.PublishKVEvents(&eventLog{})
		}
		turn1 := seqIDs(1000, 10)
		require.NoError(t, e.Add(0, Request{Ref: 1, Input: 100, Output: 60, Prefix: turn1, PrefixBlockTokens: 16, PrefixCoversOutput: true}))
		now := step1(t, e, 0) // the prefill: blocks 0..5
		r := e.Runner()
		p, err := r.ScheduleUntil(now, time.Hour)
		require.NoError(t, err)
		if events {
			assert.Equal(t, 11, p.Steps, "decode 12 computes token 111, completing block 6: a run of decodes 1..11")
			continue
		}
		require.Equal(t, 59, p.Steps, "one run of the 59 decodes to the last token")
		for _, k := range []int{1, 11, 12, 27, 28, 43, 44, 59} {
			want := 6 + min(3, max(0, (100+k)/16-6))
			e2, err := New(Config{KVBlocks: 100}, nil)
			require.NoError(t, err)
			require.NoError(t, e2.Add(0, Request{Ref: 1, Input: 100, Output: 60, Prefix: turn1, PrefixBlockTokens: 16, PrefixCoversOutput: true}))
			n := step1(t, e2, 0)
			p2, err := e2.Runner().ScheduleUntil(n, time.Hour)
			require.NoError(t, err)
			e2.Runner().SyncTo(p2.Start + time.Duration(k-1)*p2.StepTime + 1)
			assert.Equal(t, want, e2.CachedBlocks(), "%d decodes started", k)
			require.NoError(t, e2.Check())
		}
		o, err := e.Complete(p.End)
		require.NoError(t, err)
		require.Len(t, o.Emitted, 1)
		assert.True(t, o.Emitted[0].Done)
		assert.Equal(t, 100, e.FreeBlocks(), "all blocks free again")
		assert.Equal(t, 9, e.CachedBlocks(), "blocks 0..8, as step by step")
	}
}

// A request waiting for blocks may fit at a later step of a run of
// decodes only because a block of another's answer, cached at that step,
// is one it finds: turn 2 of TestAnswerBlocksFoundByTheNextTurn's
// conversation (its prompt turn 1's prompt and answer and 40 tokens
// more) arrives while turn 1 decodes, in a pool too small to admit it
// until enough of turn 1's answer is cached. The run stops before each
// such decode (publishesThrough), as the step-by-step engine plans each
// step with the blocks cached by then: the same timeline either way, and
// in some pool turn 2 is admitted while turn 1 still decodes.
func TestRunStopsWhereAnAnswerBlockLetsTheWaitingIn(t *testing.T) {
	turn1 := seqIDs(1000, 10)
	turn2 := append(append([]uint64{}, turn1...), 2000, 2001)
	admittedEarly := 0
	for kv := 13; kv <= 24; kv++ {
		adds := map[time.Duration][]Request{
			0:                      {{Ref: 1, Input: 100, Output: 60, Prefix: turn1, PrefixBlockTokens: 16, PrefixCoversOutput: true}},
			300 * time.Millisecond: {{Ref: 2, Input: 200, Output: 5, Prefix: turn2, PrefixBlockTokens: 16, PrefixCoversOutput: true}},
		}
		cfg := Config{KVBlocks: kv, Watermark: 0.01}
		slow, err := New(cfg, nil)
		require.NoError(t, err)
		fast, err := New(cfg, nil)
		require.NoError(t, err)
		want := timeline(t, slow, false, adds)
		assert.Equal(t, want, timeline(t, fast, true, adds), "KV blocks %d", kv)
		if strings.Contains(want, "admit 2") && !strings.HasPrefix(want[strings.Index(want, "admit 2"):], "admit 2\nKV") {
			admittedEarly++
		}
	}
	assert.Positive(t, admittedEarly, "turn 2 admitted while turn 1 decodes in some pool")
}
