package engine

import (
	"testing"
	"time"

	"github.com/servesim/servesim/costmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type eventLog []KVEvent

func (l *eventLog) KVEvent(ev KVEvent) { *l = append(*l, ev) }

// KV events by hand, on 40 blocks of 16 tokens. A's 64-token prompt is 4
// units of shared content: its step at 0 stores their 4 keys (stamped
// 0), which stay cached, free, when it leaves. B's 592-token prompt of
// its own needs 37 blocks: the 36 never used, then the head of the cached
// ones, A's last block (freed first): removed at B's step. B's first
// decode, planned as a run of decode steps, needs a 38th block at its
// first step (A's third block, removed at the run's start) and a 39th when
// its context passes 608 tokens, at the run's 17th step (A's second
// block, removed at Start + 16 × StepTime) and a 40th at its 33rd (A's
// first, at Start + 32 × StepTime), as a step-by-step engine would take
// them, though the run took them lazily (CompleteUntil).
func TestKVEventsByHand(t *testing.T) {
	e, err := New(Config{KVBlocks: 40, MaxBatchedTokens: 1024}, costmodel.Frozen{})
	require.NoError(t, err)
	var log eventLog
	e.PublishKVEvents(&log)
	for _, p := range e.FastPaths() {
		switch p.Name {
		case "continue":
			assert.False(t, p.On, p.Name)
			assert.Contains(t, p.Reason, "KV events are published")
		case "residues", "cohort":
			assert.NotContains(t, p.Reason, "KV events", p.Name)
		}
	}
	keys := e.BlockKeys(nil, []uint64{1, 2, 3, 4}, 16, 65)
	require.Len(t, keys, 4)
	require.NoError(t, e.Add(0, Request{Ref: 1, Input: 64, Output: 1, Prefix: []uint64{1, 2, 3, 4}, PrefixBlockTokens: 16}))
	p, err := e.Schedule(0)
	require.NoError(t, err)
	_, err = e.Complete(p.End)
	require.NoError(t, err)
	want := eventLog{{0, keys[0], false}, {0, keys[1], false}, {0, keys[2], false}, {0, keys[3], false}}
	require.Equal(t, want, log)
	assert.Equal(t, 4, e.CachedBlocks())

	t1 := p.End + time.Second
	require.NoError(t, e.Add(t1, Request{Ref: 2, Input: 592, Output: 40}))
	p, err = e.Schedule(t1)
	require.NoError(t, err)
	want = append(want, KVEvent{t1, keys[3], true})
	require.Equal(t, want, log)
	_, err = e.Complete(p.End)
	require.NoError(t, err)

	r := e.Runner()
	t2 := p.End
	p, err = r.ScheduleUntil(t2, t2+time.Hour)
	require.NoError(t, err)
	require.Greater(t, p.Steps, 33, "a run of decode steps")
	want = append(want, KVEvent{t2, keys[2], true})
	require.Equal(t, want, log, "the run's first step took its block when planned")
	_, err = r.CompleteUntil(p.End - p.StepTime)
	require.NoError(t, err)
	want = append(want, KVEvent{t2 + 16*p.StepTime, keys[1], true}, KVEvent{t2 + 32*p.StepTime, keys[0], true})
	assert.Equal(t, want, log)
	require.NoError(t, e.Check())
}
