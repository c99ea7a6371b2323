package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/workload"
)

// A conversation's second turn finds the first turn's answer in the
// prefix cache, as vLLM finds it. By hand, with 16-token blocks and ids:
// turn 1 is a 100-token prompt and a 60-token answer, 160 tokens in ten
// full blocks; its last token (159) is sampled, never computed, so blocks
// 0..8 (144 tokens) are cached when it leaves: 6 by its prefill, 3 by the
// decodes computing tokens 111, 127 and 143. Turn 2's prompt is those 160
// tokens + 40 new ones: it finds 144, where with ids over the prompt
// alone it found the 6 blocks of turn 1's prompt, 96.
func TestConversationFindsItsAnswer(t *testing.T) {
	src, err := workload.NewConversations(workload.Conversations{Seed: 1, Count: 1, Arrival: workload.Arrival{Rate: 1},
		Turns: workload.Uniform{Center: 2}, FirstInput: workload.Uniform{Center: 100}, UserInput: workload.Uniform{Center: 40},
		Output: workload.Uniform{Center: 60}, Prefix: workload.PrefixReuse{BlockTokens: 16}})
	require.NoError(t, err)
	var recs []Record
	_, err = Run(Config{}, src, keepRecords(&recs))
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, []int{100, 200}, []int{recs[0].Input, recs[1].Input})
	assert.Equal(t, 0, recs[0].Cached)
	assert.Equal(t, 144, recs[1].Cached, "blocks 0..8 of turn 1's prompt and answer")
}

// The same conversation replayed from a trace that gives ids over each
// prompt only (the generic form, 16-token blocks): keeping
// conversations, turn 1 is given ids over its answer and turn 2, which
// resends it, the same ids, so it finds the same 144 tokens; with
// ConversationReplay.Answers < 0 (the trace's ids as they are) it finds
// the 96 of turn 1's prompt. Fast and step by step agree on both.
func TestConversationTraceFindsItsAnswer(t *testing.T) {
	const trace = `id,arrival_ns,input_tokens,output_tokens,conversation,turn,class,priority,failed,prefix_block_tokens,prefix_hashes
0,0,100,60,1,1,,0,false,16,1 2 3 4 5 6 7
1,1000000,200,10,1,2,,0,false,16,1 2 3 4 5 6 17 18 19 20 21 22 23
`
	for _, c := range []struct {
		answers, cached int
	}{{0, 144}, {-1, 96}} {
		for _, stepwise := range []bool{false, true} {
			cfg := workload.Generic(workload.CSV)
			cfg.Conversations = workload.ConversationReplay{Keep: true, Answers: c.answers}
			src, err := workload.NewReplay(strings.NewReader(trace), "conv.csv", cfg)
			require.NoError(t, err)
			var recs []Record
			_, err = Run(Config{Stepwise: stepwise}, src, keepRecords(&recs))
			require.NoError(t, err)
			require.Len(t, recs, 2)
			assert.Equal(t, c.cached, recs[1].Cached, "answers %d, stepwise %v", c.answers, stepwise)
		}
	}
}
