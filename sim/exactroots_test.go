package sim

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// TestCutPathsAreEach holds ExactView's answers through the memo of cut
// paths (View.cutPaths) to CachedPrefix asked of each replica with the
// arrival's own path (checkedPrefixes, at every arrival), on prompts
// whose groups begin at the same ids but are cut at other lengths, with
// other units and prompt lengths: a path remembered for one of them is
// not the other's. Some prompts end where their group does, their own
// ids past the prompt, so that the prompt's length, not the path's ids,
// bounds the blocks a cache may find.
func TestCutPathsAreEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 1))
	var reqs list
	own := uint64(1 << 40) // each prompt's own ids, fresh
	at := time.Duration(0)
	// Groups 1,000, 2,000 and 3,000, and one whose first id shares
	// 1,000's memo slot (cutSlot): a memo must tell them apart.
	groups := []uint64{1_000, 2_000, 3_000}
	for y := uint64(1 << 20); ; y += 32 {
		if cutSlot(y) == cutSlot(1_000) {
			groups = append(groups, y)
			break
		}
	}
	for range 600 {
		x := groups[rng.IntN(len(groups))]
		n := []int{8, 12, 16}[rng.IntN(3)]
		p := []int{16, 32}[rng.IntN(2)]
		ids := make([]uint64, 0, n+4)
		for j := range n {
			ids = append(ids, x+uint64(j))
		}
		for range 4 {
			ids = append(ids, own)
			own++
		}
		input := 16*32 + []int{1, 64}[rng.IntN(2)] // past every group: often the same length
		if rng.IntN(4) == 0 {
			input = n * p // the prompt ends with its group: its own ids lie past it
		}
		at += time.Duration(rng.IntN(200)) * time.Millisecond
		reqs = append(reqs, workload.Request{Arrival: at, InputTokens: input, OutputTokens: 1 + rng.IntN(40),
			PrefixHashes: ids, PrefixBlockTokens: p, PrefixTwoRuns: ascend.TwoRuns()})
	}
	asked, approx, lacked, ranged, counted, cut := 0, 0, 0, 0, 0, 0
	cfg := Config{Fleet: Fleet{Replicas: Copies(4, ReplicaConfig{}),
		Router: checkedPrefixes{PrefixAffinity: PrefixAffinity{BalanceAbs: 2}, t: t, asked: &asked, approx: &approx, lacked: &lacked, ranged: &ranged, counted: &counted, cut: &cut}}}
	_, err := runScenario(cfg, reqs)
	require.NoError(t, err)
	t.Logf("%d arrivals checked, %d paths cut", asked, cut)
	require.Greater(t, cut, 300)
}
