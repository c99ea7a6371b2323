package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/workload"
)

// TestApproxViewBrokenTwoRunsIsAnyChain gives ApproxView's tree
// requests whose PrefixTwoRuns promises two runs of consecutive ids but
// whose units are three (a source in the module whose promise broke):
// ascend.Two's check fails, and the chain must then promise nothing
// (two = -1), as anyChain's. The tree holds 100–103, then 200–203 below
// it (a run edge). C, 100–103 200 201 500 501, is asked about
// (approxState.arrive): 6 units are cached, not the 8 a chain that took
// Two's k (4) for its first run, and so 200 201 500 501 for its second,
// would match over the run edge. D, 100–103 200 201 600 601, is routed
// unasked (routedUnasked, chainOf's twoOf): it must hang 600 601 below
// 200 201, so that E (D's units, no promise) finds all 8. Each is
// compared with the same requests without the promise (the
// promise-free path, anyChain), answers and tree. It fails with
// arrive's or twoOf's -1 on a failed check replaced by Two's k.
func TestApproxViewBrokenTwoRunsIsAnyChain(t *testing.T) {
	ids := func(runs ...[2]uint64) []uint64 {
		var u []uint64
		for _, r := range runs {
			for id := r[0]; id < r[0]+r[1]; id++ {
				u = append(u, id)
			}
		}
		return u
	}
	grow := func(promise bool) ([]int, *tree) {
		s, err := ApproxView{}.state(&runner{replicas: replicas{reps: make([]replica, 1)}, routing: routing{signals: make([]signals, 1)}})
		require.NoError(t, err)
		a := s.(*approxState)
		a.block[0] = 16 // read from no engine
		r := &runner{}
		req := func(u []uint64, two bool) *workload.Request {
			q := &workload.Request{InputTokens: 200, PrefixHashes: u, PrefixBlockTokens: 16}
			if two {
				q.PrefixTwoRuns = ascend.TwoRuns()
			}
			return q
		}
		var got []int
		step := func() { r.routed++; r.now += time.Second }
		step()
		a.routed(r, 0, req(ids([2]uint64{100, 4}), true)) // kept promises
		step()
		a.routed(r, 0, req(ids([2]uint64{100, 4}, [2]uint64{200, 4}), true))
		step()
		got = append(got, a.cached(r, 0, req(ids([2]uint64{100, 4}, [2]uint64{200, 2}, [2]uint64{500, 2}), promise)))
		step()
		a.routed(r, 0, req(ids([2]uint64{100, 4}, [2]uint64{200, 2}, [2]uint64{600, 2}), promise))
		step()
		got = append(got, a.cached(r, 0, req(ids([2]uint64{100, 4}, [2]uint64{200, 2}, [2]uint64{600, 2}), false)))
		return got, &a.trees[0][0]
	}
	got, fast := grow(true)
	want, slow := grow(false)
	require.Equal(t, []int{96, 128}, want, "the promise-free answers")
	require.Equal(t, want, got, "the answers with the broken promise")
	require.Equal(t, slow.size, fast.size)
	require.Equal(t, slow.nodes(), fast.nodes())
}
