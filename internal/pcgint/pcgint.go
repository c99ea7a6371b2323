// Package pcgint draws math/rand/v2's IntN from a PCG itself, without
// the Rand's calls and its source's interface call: the bootstrap's
// resampling (sim/stats) and a conversation's uniform lengths
// (workload's draw).
package pcgint

import (
	"math/bits"
	"math/rand/v2"
)

// IntN is rand.New(p).IntN(n), n > 0: the same draws of p and the same
// reduction (math/rand/v2's uint64n on a 64-bit platform, whose 32-bit
// platforms keep the 64-bit sequence: a mask for a power of two, else
// Lemire's multiply with its rejection of the few biased products),
// with no call through the rand.Source interface. TestIntNIsRandIntN
// holds the two to the same values and the generator to the same state.
//
// Its callers' worth: a bootstrap makes one draw a request a round, and
// the calls were a third of a sweep's instructions; a conversation's two
// draws of lengths a request cost Regime/Conversations 27 instructions a
// request more through the Rand (cachegrind's marginal count with
// GODEBUG=memprofilerate=0: math/rand/v2's rand.go 70 then 16, workload's
// conversation.go 301 then 334; the budget test 10,767 then 10,738).
func IntN(p *rand.PCG, n int) int {
	u := uint64(n)
	if u&(u-1) == 0 { // a power of two: a mask
		return int(p.Uint64() & (u - 1))
	}
	hi, lo := bits.Mul64(p.Uint64(), u)
	if lo < u {
		thresh := -u % u
		for lo < thresh {
			hi, lo = bits.Mul64(p.Uint64(), u)
		}
	}
	return int(hi)
}
