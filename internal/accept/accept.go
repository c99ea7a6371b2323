// Package accept draws the drafts a speculative decoding step accepts
// under i.i.d. acceptance (sim.Speculation.Acceptance): the thresholds of
// α's powers a uniform is compared with, and IID, the acceptor of one α
// for every request, which sim hands its engines as their
// engine.Acceptor and which the engine, finding it, calls without an
// interface call (engine's verified; the interface call is its twin).
package accept

import (
	"math"
	"math/big"
	"math/bits"
)

// IID is i.i.d. acceptance at one α: a step of drafted drafts accepts
// Accepted of a draw from the request's own stream.
type IID struct {
	// Streams are the requests' acceptance streams, by ref; the driver
	// grows and seeds them (a pointer: it grows them as requests come).
	Streams *[]PCG
	Below   []uint64    // Thresholds(α, K)
	Start   *[256]uint8 // Starts(Below)
}

// NewIID is the acceptor at alpha of steps of at most k drafts, drawing
// from streams.
func NewIID(streams *[]PCG, alpha float64, k int) *IID {
	below := Thresholds(alpha, k)
	return &IID{Streams: streams, Below: below, Start: Starts(below)}
}

// Accept is engine.Acceptor's: how many of drafted drafts the step of
// request ref accepted.
func (a *IID) Accept(ref int32, drafted int) int {
	return Accepted((*a.Streams)[ref].Uint64()>>11, a.Below, a.Start, drafted)
}

// Accepted is the drafts a step of drafted (at most len(below)) accepts
// under i.i.d. acceptance, from one uniform u of 53 bits and below, the
// thresholds of α (Thresholds): the j-th draft is accepted when u <
// below[j−1], so the first j are when u < ⌈α^j·2⁵³⌉, that is when
// u/2⁵³ < α^j. That is the inverse CDF of the truncated geometric law of
// the accepted drafts, P(A ≥ j) = α^j for j ≤ drafted: the law of a
// draw a draft up to the first rejection, from one draw a step (the
// thresholds decrease: the first failed compare is the first rejection).
// Each P(A ≥ j) is ⌈α^j·2⁵³⌉/2⁵³, in [α^j, α^j + 2⁻⁵³), α^j taken
// exactly (a draw a draft had each draft's in [α, α + 2⁻⁵³), and so
// P(A ≥ j) in [α^j, (α + 2⁻⁵³)^j)). One PCG draw a step instead of one
// a draft examined (2.7 a step at K = 4, α = 0.7): 39,495 then 36,608
// instructions a request in BenchmarkRegime/Speculation.
//
// The compares begin at start[u's top 8 bits] (Starts), the drafts every
// u with those bits accepts, so that a step makes about one compare, the
// one that fails, instead of one a draft accepted and that one: 36,608
// then 36,122 instructions a request. Starting at 0 is its twin
// (TestStartsSkipOnlyAccepted). A bucket no threshold cuts (exact)
// makes no compare at all: 32,979 then 32,624 instructions a request.
func Accepted(u uint64, below []uint64, start *[256]uint8, drafted int) int {
	b := start[u>>45]
	n := min(int(b&^exact), drafted)
	if b < exact { // a bucket a threshold cuts, or the twin's table of zeros
		n = climb(u, below, n, drafted)
	}
	return n
}

// Accepted is Accepted(u, a.Below, a.Start, drafted), its thresholds
// read only for a draw in a bucket one cuts: a loop that inlines it
// keeps a, not the thresholds and the table, in its registers (engine's
// verifyIID spilled them and reloaded them a decode: 32,645 then 31,884
// instructions a request in BenchmarkRegime/Speculation).
func (a *IID) Accepted(u uint64, drafted int) int {
	b := a.Start[u>>45]
	n := min(int(b&^exact), drafted)
	if b < exact {
		n = climb(u, a.Below, n, drafted)
	}
	return n
}

// climb counts the drafts from the n-th on that u accepts, up to drafted.
func climb(u uint64, below []uint64, n, drafted int) int {
	for n < drafted && u < below[n] {
		n++
	}
	return n
}

// exact marks a bucket of Starts that no threshold cuts: every u with
// its top 8 bits accepts the drafts its entry counts (below exact), and
// Accepted makes no compare for it, not even the one that fails (K = 4
// at α = 0.7 leaves 4 buckets of 256 to compare in).
const exact = 0x80

// Exact is exact, for a loop that reads Starts' entries itself (engine's
// drawUncut).
const Exact = exact

// Starts are, for each value of a 53-bit uniform's top 8 bits, the
// thresholds below (decreasing) above every u with those bits: the
// drafts accepted whatever its other bits (Accepted).
func Starts(below []uint64) *[256]uint8 {
	var start [256]uint8
	for b := range start {
		top := uint64(b+1)<<45 - 1 // the largest u of the bucket
		n := 0
		for n < len(below) && n < exact-1 && top < below[n] {
			n++
		}
		start[b] = uint8(n)
		// No threshold between the bucket's least u and its largest: the
		// least accepts no more than the largest (the next threshold is
		// at most the least, or there is none: every draft accepted).
		if n == len(below) || (n < exact-1 && below[n] <= uint64(b)<<45) {
			start[b] |= exact
		}
	}
	return &start
}

// Thresholds are the integer thresholds of α's powers for a draw of 53
// bits u (p.Uint64()>>11): the (j−1)-th is ⌈α^j·2⁵³⌉, j = 1 to k, so that
// u < it exactly when u/2⁵³ < α^j, α^j and the compare exact (Accepted).
// α, a float64 in [0, 1], is m·2^e with m an integer of 53 bits, so
// α^j·2⁵³ is m^j·2^(e·j+53), an integer shifted, computed exactly with
// math/big; once a threshold is 1 (α^j ≤ 2⁻⁵³) the rest are, α^j falling
// but positive. Each is at most 2⁵³.
func Thresholds(alpha float64, k int) []uint64 {
	below := make([]uint64, k)
	if alpha <= 0 {
		return below
	}
	frac, exp := math.Frexp(alpha)
	m := new(big.Int).SetUint64(uint64(frac * (1 << 53))) // exact: frac has 53 bits
	e := exp - 53
	pow, t := big.NewInt(1), new(big.Int)
	for j := 1; j <= k; j++ {
		pow.Mul(pow, m) // m^j
		if sh := e*j + 53; sh >= 0 {
			t.Lsh(pow, uint(sh))
		} else { // ⌈pow / 2^−sh⌉
			t.Sub(t.Lsh(big.NewInt(1), uint(-sh)), big.NewInt(1))
			t.Rsh(t.Add(t, pow), uint(-sh))
		}
		below[j-1] = t.Uint64()
		if below[j-1] == 1 {
			for i := j; i < k; i++ {
				below[i] = 1
			}
			break
		}
	}
	return below
}

// PCG is math/rand/v2's PCG: the same generator, seeded alike, drawing
// the same values (TestPCGIsRandPCG), its state two words a draw loop
// reads once and writes back once, holding it in registers between
// (Next). Through a *rand.PCG, whose words are its own, engine's
// drawAhead loaded and stored the state at each draw: 2,781 then 2,570
// instructions a request in it, 25,990 then 25,764 in all, in
// BenchmarkRegime/Speculation (the budget test).
type PCG struct {
	Hi, Lo uint64
}

// NewPCG is rand.NewPCG(seed1, seed2)'s state.
func NewPCG(seed1, seed2 uint64) PCG { return PCG{seed1, seed2} }

// Seed resets p as rand.PCG's Seed does.
func (p *PCG) Seed(seed1, seed2 uint64) { p.Hi, p.Lo = seed1, seed2 }

// Uint64 draws as rand.PCG's Uint64 does, written as it is so that it is
// inlined as it is: through Next it was not (cost 89 over the inliner's
// 80), and engine's verifyMembersIID called it a draw, 25,764 then 26,013
// instructions a request in BenchmarkRegime/Speculation.
func (p *PCG) Uint64() uint64 {
	hi, lo := p.next()
	const cheapMul = 0xda942042e4dd58b5
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo | 1
	return hi
}

// next advances p as rand.PCG's next does (step's, written out: with
// the call, Uint64 was not inlined).
func (p *PCG) next() (hi, lo uint64) {
	const (
		mulHi = 2549297995355413924
		mulLo = 4865540595714422341
		incHi = 6364136223846793005
		incLo = 1442695040888963407
	)
	hi, lo = bits.Mul64(p.Lo, mulLo)
	hi += p.Hi*mulLo + p.Lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	p.Lo = lo
	p.Hi = hi
	return hi, lo
}

// Next is rand.PCG's Uint64 on the state (hi, lo): the state after the
// draw, and the value drawn (math/rand/v2's pcg.go, Go 1.22 on).
func Next(hi, lo uint64) (nhi, nlo, x uint64) {
	hi, lo = step(hi, lo)
	x = hi
	const cheapMul = 0xda942042e4dd58b5
	x ^= x >> 32
	x *= cheapMul
	x ^= x >> 48
	x *= lo | 1
	return hi, lo, x
}

// step advances the state (hi, lo): a 128-bit LCG.
func step(hi, lo uint64) (uint64, uint64) {
	const (
		mulHi = 2549297995355413924
		mulLo = 4865540595714422341
		incHi = 6364136223846793005
		incLo = 1442695040888963407
	)
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	return h, l
}
