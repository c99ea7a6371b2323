package sim

import (
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
