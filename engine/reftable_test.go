package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The table answers like a map, for dense, sparse, negative and extreme
// Refs, and its slice never grows for a lone large Ref.
func TestRefTableIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab refTable
	model := map[int32]*seq{}
	refs := []int32{-1, -1 << 31, 1<<31 - 1, 5_000_000}
	for range 20_000 {
		var ref int32
		switch rng.IntN(4) {
		case 0:
			ref = refs[rng.IntN(len(refs))]
		default:
			ref = int32(rng.IntN(3000))
		}
		if s, ok := model[ref]; ok {
			got, ok := tab.get(ref)
			require.True(t, ok, "ref %d", ref)
			require.Same(t, s, got)
			tab.remove(ref)
			delete(model, ref)
		} else {
			_, ok := tab.get(ref)
			require.False(t, ok, "ref %d", ref)
			s := &seq{req: Request{Ref: ref}}
			tab.put(ref, s)
			model[ref] = s
		}
		require.Equal(t, len(model), tab.len())
	}
	seen := map[int32]*seq{}
	for ref, s := range tab.all() {
		seen[ref] = s
	}
	require.Equal(t, model, seen)
	require.LessOrEqual(t, len(tab.dense), 3000, "a large Ref went to the slice")
}
