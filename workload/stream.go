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
