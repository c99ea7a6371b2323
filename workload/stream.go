package workload

import (
	"hash/fnv"
	"math/rand/v2"
)

// NewStream returns a random stream derived from seed and a name, so that
// every consumer of randomness (arrivals, input lengths, output lengths,
// errors, …) draws from its own stream: adding a stream, or drawing more from
// one, shifts no other. The same (seed, name) always gives the same stream.
func NewStream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// FNV-1a, 64 bits (hash/fnv's New64a): its offset basis and prime.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

// fnvOn is the FNV-1a hash state h after s: from fnvOffset, the hash
// NewStream takes of s, and from the state after a string x, the hash of
// x + s (TestFnvOnIsNewStreams holds it to hash/fnv).
//
// Four bytes a turn of its loop, then one at a time: a conversation's
// start (ChatSource.start, which it is inlined into) hashes its head and
// five names, about 44 bytes. A byte a turn cost Regime/Conversations 17
// instructions a request more of servesim's own, 10,421 then 10,404
// (the budget test), with on's call below; a tail of two bytes and one
// unrolled too made fnvOn too large to inline (10,413).
func fnvOn[T string | []byte](h uint64, s T) uint64 {
	for len(s) >= 4 {
		h = (h ^ uint64(s[0])) * fnvPrime
		h = (h ^ uint64(s[1])) * fnvPrime
		h = (h ^ uint64(s[2])) * fnvPrime
		h = (h ^ uint64(s[3])) * fnvPrime
		s = s[4:]
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// streamCell holds a random stream in place, its source and generator.
type streamCell struct {
	pcg rand.PCG
	r   rand.Rand
}

// on makes c NewStream(seed, name), hash the FNV-1a hash of name
// (fnvOn), and returns it: a conversation's streams share the head of
// their names, hashed once. The name is hashed by its caller, not here:
// fnvOn's loop, inlined, made on too large to inline itself, a call for
// each of a conversation's five streams.
func (c *streamCell) on(seed, hash uint64) *rand.Rand {
	c.pcg.Seed(seed, hash)
	c.r = *rand.New(&c.pcg)
	return &c.r
}
