package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/costmodel"
	"github.com/servesim/servesim/engine"
)

// stepLines drives e step by step from now until it is idle or max steps
// have run, adding each step's arrivals (by step index) before planning
// it, and returns one line a step: the scheduled requests in scheduling
// order as ref:tokens@computed, then the step's preemptions.
func stepLines(t *testing.T, e *engine.Engine, arrivals map[int][]engine.Request, max int) []string {
	t.Helper()
	var out []string
	var now time.Duration
	var buf []engine.Scheduled
	for k := 0; k < max; k++ {
		for _, r := range arrivals[k] {
			require.NoError(t, e.Add(now, r))
		}
		plan, err := e.Schedule(now)
		require.NoError(t, err)
		if plan == nil {
			break
		}
		buf, _ = e.Scheduled(buf[:0])
		var b strings.Builder
		for _, s := range buf {
			fmt.Fprintf(&b, "%d:%d@%d ", s.Ref, s.Tokens, s.Computed)
		}
		if len(plan.Preempted) > 0 {
			fmt.Fprintf(&b, "preempted %v", plan.Preempted)
		}
		out = append(out, strings.TrimSpace(b.String()))
		_, err = e.Complete(plan.End)
		require.NoError(t, err)
		require.NoError(t, e.Check())
		now = plan.End
	}
	return out
}

// Chunked prefill off is vLLM V1's enable_chunked_prefill=False: the running
// decode goes first, as with chunking, and a waiting prompt whose tokens
// exceed the budget it leaves (1,024 > 1,023) is not chunked: it waits
// while the decode runs (V0 would have stalled the decode behind a
// prefill-only step; chunking would have scheduled 1,023 of its tokens).
// It is admitted whole once nothing runs.
func TestUnchunkedV1DecodesBesideARefusedPrompt(t *testing.T) {
	cfg := engine.Config{MaxBatchedTokens: 1024, MaxSeqs: 8, DisableChunkedPrefill: true}
	arrivals := map[int][]engine.Request{
		0: {{Ref: 1, Input: 300, Output: 3}},
		1: {{Ref: 2, Input: 1024, Output: 1}},
	}
	e, err := engine.New(cfg, costmodel.Frozen{})
	require.NoError(t, err)
	require.Equal(t, []string{
		"1:300@0",  // the prompt, whole
		"1:1@300",  // the decode; 2's 1,024 tokens exceed the 1,023 left
		"1:1@301",  // again: 1 finishes here
		"2:1024@0", // nothing runs: the whole budget
	}, stepLines(t, e, arrivals, 10))

	cfg.DisableChunkedPrefill = false // the twin with chunking
	e, err = engine.New(cfg, costmodel.Frozen{})
	require.NoError(t, err)
	require.Equal(t, []string{"1:300@0", "1:1@300 2:1023@0", "1:1@301 2:1@1023"}, stepLines(t, e, arrivals, 10))
}

// The refusal counts the prompt's tokens after those the prefix cache
// serves (vLLM's num_new_tokens = num_tokens − num_computed_tokens): a
// 1,024-token prompt whose first 512 tokens are cached asks for 512, which
// fit beside the decode.
func TestUnchunkedV1CountsTokensAfterCacheHits(t *testing.T) {
	cfg := engine.Config{MaxBatchedTokens: 1024, MaxSeqs: 8, DisableChunkedPrefill: true}
	prefix := make([]uint64, 32) // 32 units of 16 tokens: 512 tokens
	for i := range prefix {
		prefix[i] = uint64(i + 1)
	}
	e, err := engine.New(cfg, costmodel.Frozen{})
	require.NoError(t, err)
	added, err := e.Warm(prefix, 16, 512)
	require.NoError(t, err)
	require.Equal(t, 32, added)
	arrivals := map[int][]engine.Request{
		0: {{Ref: 1, Input: 300, Output: 3}},
		1: {{Ref: 2, Input: 1024, Output: 1, Prefix: prefix, PrefixBlockTokens: 16}},
	}
	require.Equal(t, []string{"1:300@0", "1:1@300 2:512@512", "1:1@301"}, stepLines(t, e, arrivals, 10))
}
