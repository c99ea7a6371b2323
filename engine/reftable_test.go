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

// put grows the slice just to a Ref below twice its length plus 1,024,
// and sends one beyond that, or a negative one, to the map.
func TestRefTablePutGrowsToTheRef(t *testing.T) {
	var tab refTable
	s := &seq{}
	tab.put(0, s)
	require.Len(t, tab.dense, 1)
	tab.put(1_025, s) // below 2·1 + 1,024 = 1,026: the slice grows to it
	require.Len(t, tab.dense, 1_026)
	tab.put(3_076, s) // 2·1,026 + 1,024 = 3,076: too far
	tab.put(-1, s)
	require.Len(t, tab.dense, 1_026)
	require.Len(t, tab.sparse, 2)
	tab.put(3_075, s) // below 3,076: the slice grows to it
	require.Len(t, tab.dense, 3_076)
	require.Equal(t, 5, tab.len())
	for _, ref := range []int32{0, 1_025, 3_076, -1, 3_075} {
		got, ok := tab.get(ref)
		require.True(t, ok, "ref %d", ref)
		require.Same(t, s, got, "ref %d", ref)
	}
}
