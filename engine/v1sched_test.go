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
		if len(buf) == 0 {
			fmt.Fprintf(&b, " (empty, %v)", plan.End-plan.Start)
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

// Under Priority the victim is the lowest-priority request of the whole
// running list, as vLLM's max(self.running, key=(priority, arrival)),
// even one the step has already scheduled: it is taken out of the step
// (its tokens back to the budget, its blocks freed). 8 blocks of 16
// tokens, a budget of 48: request 1 (priority 5, 31 tokens) runs first;
// 2 (priority 0, 112 tokens) is admitted beside its decode with 47 tokens
// (3 blocks; 2 left free). In the third step 1 is scheduled first (its
// 33rd token takes a third block: 1 left), then 2's next 47 tokens need 3
// blocks: the victim is 1, already scheduled, which loses its decode and
// its 3 blocks, and 2 takes its chunk. (Choosing among the requests not
// yet scheduled, as servesim did, 2 was its own victim.) 1's two full
// blocks were cached when freed, but 2's last chunk and its decode take
// them (the free queue's last blocks): 1 resumes after 2 leaves, from 0.
func TestPriorityVictimAlreadyScheduled(t *testing.T) {
	cfg := engine.Config{MaxBatchedTokens: 48, MaxSeqs: 4, BlockSize: 16, KVBlocks: 8,
		Policy: engine.Priority{}, AdmitOnFirstChunk: true}
	arrivals := map[int][]engine.Request{
		0: {{Ref: 1, Input: 31, Output: 40, Priority: 5}},
		1: {{Ref: 2, Input: 112, Output: 2, Priority: 0}},
	}
	e, err := engine.New(cfg, costmodel.Frozen{})
	require.NoError(t, err)
	require.Equal(t, []string{
		"1:31@0",
		"1:1@31 2:47@0",
		"2:47@47 preempted [1]", // 1 was scheduled first, then taken out
		"2:18@94",
		"2:1@112",
		"1:33@0", // resumed: its 31 prompt tokens and 2 emitted
	}, stepLines(t, e, arrivals, 6))
}

// When the first running request is its own victim (the lowest priority,
// while another holds the blocks it needs), vLLM's running loop breaks
// and, a request having been preempted, its waiting loop is skipped: the
// step is empty, and lasts 1 µs (no forward pass). 4 blocks of 16 tokens:
// 1 (priority 9, 31 tokens) and 2 (priority 0, 32 tokens) hold 2 blocks
// each; 1's 33rd token needs a fifth. The step after the empty one makes
// progress: 2 decodes in the blocks 1 left.
func TestPriorityEmptyStep(t *testing.T) {
	cfg := engine.Config{MaxBatchedTokens: 64, MaxSeqs: 4, BlockSize: 16, KVBlocks: 4, Policy: engine.Priority{}}
	arrivals := map[int][]engine.Request{
		0: {{Ref: 1, Input: 31, Output: 30, Priority: 9}},
		1: {{Ref: 2, Input: 32, Output: 3, Priority: 0}},
	}
	e, err := engine.New(cfg, costmodel.Frozen{})
	require.NoError(t, err)
	require.Equal(t, []string{
		"1:31@0",
		"1:1@31 2:32@0",
		"preempted [1] (empty, 1µs)",
		"2:1@32", // 1 waits: 2 evicted its second cached block, 1 block is free
		"2:1@33",
		"1:17@16",
	}, stepLines(t, e, arrivals, 6))
}
