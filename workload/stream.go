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
func fnvOn[T string | []byte](h uint64, s T) uint64 {
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

// on makes c NewStream(seed, x + name), h the FNV-1a state after x
// (fnvOn), and returns it: a conversation's streams share the head of
// their names, hashed once.
func (c *streamCell) on(seed, h uint64, name string) *rand.Rand {
	c.pcg.Seed(seed, fnvOn(h, name))
	c.r = *rand.New(&c.pcg)
	return &c.r
}
