package kvtier

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// stream is a random stream of requests over chained prefixes: each
// request reads a chain of block keys, key i a hash of key i-1 and the
// block's content, the first shared blocks drawn from a few documents
// (so requests share heads of chains) and the rest its own.
func stream(seed uint64, requests int) [][]uint64 {
	r := rand.New(rand.NewPCG(seed, 0x6b76))
	docs := 1 + r.IntN(6)
	var own uint64
	out := make([][]uint64, requests)
	for q := range out {
		doc := uint64(r.IntN(docs))
		shared, mine := r.IntN(24), r.IntN(12)
		chain := make([]uint64, 0, shared+mine)
		var key uint64
		for i := range shared + mine {
			content := doc<<32 | uint64(i)
			if i >= shared {
				own++
				content = 1<<63 | own
			}
			key = mix(key, content)
			chain = append(chain, key)
		}
		out[q] = chain
	}
	return out
}

// mix chains a block's content onto its parent's key (splitmix64's
// finaliser over the pair).
func mix(parent, content uint64) uint64 {
	z := parent*0x9e3779b97f4a7c15 + content + 0x632be59bd9b4e019
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func mustNew(t testing.TB, blocks int) *LRU {
	l, err := New(Config{Blocks: blocks})
	require.NoError(t, err)
	return l
}

// access is one block read by one LRU: a hit is touched, a miss inserted.
// A request reads its chain last block first, so the chain's head ends
// the most recent, the order vLLM's reversed touch leaves.
func access(t testing.TB, l *LRU, key uint64) bool {
	if l.Lookup(key) {
		l.Touch([]uint64{key})
		return true
	}
	if _, _, ok := l.Insert([]uint64{key}, nil); ok != (l.Capacity() > 0) {
		t.Fatalf("Insert answered %v at capacity %d: an unpinned tier refuses only at capacity 0", ok, l.Capacity())
	}
	return false
}

// exclusive is the reference two-level cache: level 1 (HBM, H blocks)
// over level 2 (host, C blocks), no block in both.
type exclusive struct {
	l1, l2 *LRU
	buf    []uint64
}

// access reads key: a level-1 hit is touched; a level-2 hit is promoted
// (removed from level 2, inserted in level 1); a miss is inserted in level
// 1. What level 1 evicts is demoted to level 2's most recent end, least
// recent first; a block level 1 cannot hold at all (H = 0) goes to level
// 2 itself.
func (x *exclusive) access(t testing.TB, key uint64) (hit1, hit2 bool) {
	if x.l1.Contains(key) {
		x.l1.Touch([]uint64{key})
		return true, false
	}
	hit2 = x.l2.Contains(key)
	if hit2 {
		if !x.l2.Remove(key) {
			t.Fatalf("level 2 did not remove a held unpinned key")
		}
	}
	var ok bool
	x.buf, _, ok = x.l1.Insert([]uint64{key}, x.buf[:0])
	if !ok {
		x.buf = append(x.buf[:0], key)
	}
	for _, k := range x.buf {
		if _, _, ok := x.l2.Insert([]uint64{k}, nil); ok != (x.l2.Capacity() > 0) {
			t.Fatalf("level 2 answered %v at capacity %d", ok, x.l2.Capacity())
		}
	}
	return false, hit2
}

// sizes are the level sizes tried, 0 (no tier) among them.
var sizes = []int{0, 1, 2, 3, 5, 8, 13, 21, 34, 64}

// An exclusive two-level cache of H and C blocks finds exactly the hits
// of one LRU of H+C blocks, access by access (the identity at
// infinite bandwidth and zero latency): level 1 holds the H most recent
// blocks of the one LRU's stack and level 2 the next C.
func TestExclusiveTwoLevelEqualsLRU(t *testing.T) {
	promoted := 0 // level-2 hits with a level 1: the demote-promote path ran
	for seed := range uint64(12) {
		reqs := stream(seed, 150)
		for _, h := range sizes {
			for _, c := range sizes {
				{
					at := fmt.Sprintf("seed %d H %d C %d", seed, h, c)
					x := exclusive{l1: mustNew(t, h), l2: mustNew(t, c)}
					one := mustNew(t, h+c)
					var hits, hits1, hits2 int
					for q, chain := range reqs {
						for j := len(chain) - 1; j >= 0; j-- {
							k := chain[j]
							h1, h2 := x.access(t, k)
							want := access(t, one, k)
							if want != (h1 || h2) {
								t.Fatalf("%s: request %d block %d: one LRU hit %v, two levels %v, %v", at, q, j, want, h1, h2)
							}
							if x.l1.Contains(k) && x.l2.Contains(k) {
								t.Fatalf("%s: request %d block %d in both levels", at, q, j)
							}
							if h1 {
								hits1++
							}
							if h2 {
								hits2++
							}
							if want {
								hits++
							}
						}
						require.Equal(t, one.Len(), x.l1.Len()+x.l2.Len(), "%s: request %d: the two levels hold the one LRU's blocks", at, q)
					}
					require.Equal(t, int64(hits), one.Counters().Hits, at)
					require.Equal(t, hits, hits1+hits2)
					if h == 0 {
						require.Zero(t, hits1, "%s: no level 1 finds nothing", at)
					}
					if c == 0 {
						require.Zero(t, hits2, "%s: no level 2 finds nothing", at)
					}
					if h > 0 {
						promoted += hits2
					}
				}
			}
		}
	}
	require.Positive(t, promoted, "the streams promote blocks from level 2")
}

// Write-through (vLLM's mode: every block read is inserted or touched in
// both levels) with C >= H finds exactly the hits of one LRU of C blocks,
// and level 1 stays inside level 2 (inclusive): both are LRUs of the same
// stream, so each holds the top of the same stack.
func TestInclusiveEqualsLRUOfMax(t *testing.T) {
	for seed := range uint64(12) {
		reqs := stream(seed, 150)
		for _, h := range sizes {
			for _, c := range sizes {
				if c < h {
					continue
				}
				{
					at := fmt.Sprintf("seed %d H %d C %d", seed, h, c)
					l1, l2, one := mustNew(t, h), mustNew(t, c), mustNew(t, c)
					for q, chain := range reqs {
						for j := len(chain) - 1; j >= 0; j-- {
							k := chain[j]
							in1, in2 := l1.Contains(k), l2.Contains(k)
							access(t, l1, k)
							access(t, l2, k)
							if want := access(t, one, k); want != (in1 || in2) {
								t.Fatalf("%s: request %d block %d: one LRU hit %v, levels %v, %v", at, q, j, want, in1, in2)
							}
							if in1 && !in2 {
								t.Fatalf("%s: request %d block %d in level 1 only", at, q, j)
							}
						}
						require.Equal(t, min(l1.Len(), l2.Len()), l1.Len(), at)
					}
					require.Equal(t, one.Counters().Hits, l2.Counters().Hits, at)
				}
			}
		}
	}
}
