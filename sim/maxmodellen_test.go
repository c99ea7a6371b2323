package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/engine"
)

// On a replica of 100 blocks of 16 (MaxModelLen 1,600 by default), a
// 1,500-token prompt asking for 500 tokens is served and stopped when its
// tokens reach 1,600, after 100 (vLLM's FINISHED_LENGTH_CAPPED): ok and
// length-capped. Alone, its prefill takes 20 + 0.035 × 1,500 = 72.5 ms and
// emits the first token, and 99 decode steps of 45 ms the rest: E2E
// 72.5 + 99 × 45 = 4,527.5 ms. A 1,600-token prompt is refused, naming
// the bound; a short request is served whole. Fast and step by step agree.
func TestLengthCappedRequestIsServedAndCounted(t *testing.T) {
	reqs := list{
		{ID: 1, InputTokens: 1500, OutputTokens: 500},
		{ID: 2, InputTokens: 1600, OutputTokens: 10},
		{ID: 3, Arrival: 10 * time.Second, InputTokens: 100, OutputTokens: 10},
	}
	cfg := Config{Engine: engine.Config{KVBlocks: 100}}
	run := fastEqualsStepwise(t, cfg, reqs)
	byID := map[uint64]Record{}
	for _, r := range run.recs {
		byID[r.ID] = r
	}
	a := byID[1]
	assert.Equal(t, StatusOK, a.Status)
	assert.True(t, a.LengthCapped)
	assert.Equal(t, 100, a.Emitted)
	assert.Equal(t, 500, a.Output, "the record keeps what was asked")
	assert.Equal(t, 72500*time.Microsecond, a.TTFT())
	assert.Equal(t, 4527500*time.Microsecond, a.E2E())

	b := byID[2]
	assert.Equal(t, StatusRejected, b.Status)
	assert.False(t, b.LengthCapped)
	assert.Equal(t, "engine: prompt too long (Input >= MaxModelLen leaves no room for an output token): MaxModelLen 1600", b.Reason)

	c := byID[3]
	assert.Equal(t, StatusOK, c.Status)
	assert.False(t, c.LengthCapped)
	assert.Equal(t, 10, c.Emitted)

	s := run.sum
	assert.Equal(t, 3, s.Offered)
	assert.Equal(t, 2, s.Count(StatusOK), "a length-capped request counts as ok")
	assert.Equal(t, 1, s.Count(StatusRejected))
	assert.Equal(t, 1, s.LengthCapped)
	assert.Equal(t, 110, s.Tokens, "the tokens emitted: 100 + 10")
}

// A MaxModelLen above the replica's KV capacity is refused before the run,
// naming the field.
func TestRunRefusesMaxModelLenAboveTheCapacity(t *testing.T) {
	reqs := list{{ID: 1, InputTokens: 10, OutputTokens: 10}}
	_, err := Run(Config{Engine: engine.Config{KVBlocks: 100, MaxModelLen: 2000}}, &reqs, nil)
	require.Error(t, err)
	assert.ErrorContains(t, err, "MaxModelLen must be <= 1600")
}
