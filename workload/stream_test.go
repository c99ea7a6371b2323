package workload

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFnvOnIsNewStreams holds a stream whose name's head was hashed once
// (streamCell.on, as a conversation's streams are) to NewStream of the whole
// name, its slow twin: heads and names of random bytes and lengths, and
// the conversations' own.
func TestFnvOnIsNewStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 4))
	word := func() string {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	check := func(seed uint64, head, name string) {
		t.Helper()
		var c streamCell
		a, b := NewStream(seed, head+name), c.on(seed, fnvOn(fnvOn(fnvOffset, []byte(head)), name))
		for range 3 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("seed %d, %q + %q: NewStream draws %x, streamCell %x", seed, head, name, x, y)
			}
		}
	}
	for range 2000 {
		check(rng.Uint64(), word(), word())
	}
	for id := range 3000 {
		for _, name := range []string{"input", "output", "think", "turns", "prefix"} {
			check(uint64(id%7), fmt.Sprintf("conversation/%d/", id), name)
		}
	}
}
