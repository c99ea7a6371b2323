package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
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

// TestDecimalIsAppendUint holds a ChatSource's count of its
// conversations' ids in decimal (decimal.inc) to strconv.AppendUint, its
// twin, through every carry up to 120,000 and across the twentieth
// digit, and the stream of each conversation start starts to NewStream
// of its whole name.
func TestDecimalIsAppendUint(t *testing.T) {
	s, err := NewConversations(Conversations{Seed: 7, Count: 1, Turns: Constant{Tokens: 1}, FirstInput: Constant{Tokens: 1},
		UserInput: Constant{Tokens: 1}, Output: Constant{Tokens: 1}, Arrival: Arrival{Rate: 1}})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(0); id <= 120_000; id++ {
		if got, want := string(s.count.d[s.count.lo:]), strconv.FormatUint(id, 10); got != want {
			t.Fatalf("count %d: decimal %q", id, got)
		}
		c := s.start()
		if got, want := c.user.r.Uint64(), NewStream(7, fmt.Sprintf("conversation/%d/input", id)).Uint64(); c.id != id || got != want {
			t.Fatalf("conversation %d (id %d): its input stream draws %x, want %x", id, c.id, got, want)
		}
	}
	var c decimal
	x := uint64(9_999_999_999_999_999_990)
	c.lo = len(c.d) - len(strconv.FormatUint(x, 10))
	copy(c.d[c.lo:], strconv.FormatUint(x, 10))
	for ; x < 10_000_000_000_000_000_005; x++ {
		if got, want := string(c.d[c.lo:]), strconv.FormatUint(x, 10); got != want {
			t.Fatalf("count %d: decimal %q", x, got)
		}
		c.inc()
	}
}
