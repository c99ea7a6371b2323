package lcp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLenIsTheFirstDifference holds Len to the first index where a and b
// differ, over random slices that share random beginnings (long ones
// too, whose difference Len finds a chunk at a time).
func TestLenIsTheFirstDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for k := range 2_000 {
		a := make([]uint64, rng.IntN(40+k%3*300)) // two in three past several chunks
		for i := range a {
			a[i] = rng.Uint64N(3)
		}
		b := append([]uint64(nil), a[:rng.IntN(len(a)+1)]...)
		for range rng.IntN(5 + k%3*40) {
			b = append(b, rng.Uint64N(3))
		}
		want := 0
		for want < len(a) && want < len(b) && a[want] == b[want] {
			want++
		}
		require.Equal(t, want, Len(a, b), "%v %v", a, b)
		require.Equal(t, want, Len(b, a))
	}
	require.Equal(t, 0, Len(nil, []uint64{1}))
}

// lenEach is Len's slow twin: an id at a time.
func lenEach(a, b []uint64) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// FuzzLen holds Len to lenEach: b is a's first ids, then ids of its own,
// so that the two agree on a long beginning and part anywhere.
func FuzzLen(f *testing.F) {
	f.Add(uint16(300), uint16(255), uint16(40), uint64(1))
	f.Add(uint16(64), uint16(64), uint16(0), uint64(2))
	f.Add(uint16(1000), uint16(17), uint16(500), uint64(3))
	f.Fuzz(func(t *testing.T, na, common, nb uint16, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a := make([]uint64, int(na)%2048)
		for i := range a {
			a[i] = rng.Uint64N(4)
		}
		b := append([]uint64(nil), a[:int(common)%(len(a)+1)]...)
		for range int(nb) % 2048 {
			b = append(b, rng.Uint64N(4))
		}
		if got, want := Len(a, b), lenEach(a, b); got != want {
			t.Fatalf("Len = %d, lenEach %d (len %d and %d)", got, want, len(a), len(b))
		}
		if got, want := Len(b, a), lenEach(b, a); got != want {
			t.Fatalf("Len(b, a) = %d, lenEach %d", got, want)
		}
	})
}

// TestChainIsLen holds Chain to Len over chains of keys in which a key
// names every key before it (each key a mix of its parent and its
// content, as the engine's): random contents of a few values, so that
// chains share beginnings of every length, long ones too, and part.
func TestChainIsLen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	chain := func(contents []uint64) []uint64 {
		keys, k := make([]uint64, len(contents)), uint64(0)
		for i, c := range contents {
			k = (k^c+0x9e3779b97f4a7c15+k<<6+k>>2)*0xbf58476d1ce4e5b9 + 1
			keys[i] = k
		}
		return keys
	}
	for k := range 2_000 {
		a := make([]uint64, rng.IntN(40+k%3*300))
		for i := range a {
			a[i] = rng.Uint64N(3)
		}
		b := append([]uint64(nil), a[:rng.IntN(len(a)+1)]...)
		for range rng.IntN(5 + k%3*40) {
			b = append(b, rng.Uint64N(3))
		}
		ka, kb := chain(a), chain(b)
		require.Equal(t, Len(ka, kb), Chain(ka, kb), "%v %v", a, b)
		require.Equal(t, Len(kb, ka), Chain(kb, ka))
	}
	require.Equal(t, 0, Chain(nil, []uint64{1}))
}
