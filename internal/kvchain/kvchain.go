// Package kvchain chains the content keys of a run of blocks along
// consecutive prefix ids (the engine's keys, engine.PrefixKeys), and
// names such a run by what its keys are computed from (Run), so that an
// engine can publish the run's KV events and an index compute its keys
// only when it needs them.
package kvchain

// Run names the chained keys of N blocks of B tokens along consecutive
// ids of Per blocks each, from block R of unit ID, after the key
// Parent: block i's content is the unit ID+(R+i)/Per at offset
// ((R+i)%Per)·B, and its key mixes the key before it with that content,
// as the engine's mix does.
type Run struct {
	Parent, ID uint64
	R, Per, B  int
	N          int
}

// Keys fills keys (of length N) with the run's keys and returns the
// last (Parent if none).
func (c Run) Keys(keys []uint64) uint64 {
	return Fill(keys[:c.N], c.Parent, c.ID, c.R, c.Per, c.B)
}

// First is the run's first key (N > 0).
func (c Run) First() uint64 {
	h := consts
	return h.mix(c.Parent, h.mix(uint64(c.R*c.B), c.ID))
}

// Fill fills keys with the chained keys, after k, of blocks of b tokens
// along consecutive ids of per blocks each, from block r of unit id,
// and returns the last. It walks the blocks' units and offsets as the
// engine's appendShared does, without a division a block: block i's
// content is the unit id+(r+i)/per at offset ((r+i)%per)·b.
//
// With a block a unit (per 1, as at vLLM's 16-token blocks under ids of
// 16 tokens), every block is at offset 0 of its own id: mix0(id+i),
// which is finish(c+i) with c = id + golden, one add a block, no id
// kept: 35 instructions a key against 38 with mix0(id) and id++ (whose
// two inlined calls each left an inline mark in the loop); 2,687 then
// 2,478 instructions a request in chainRun (now Fill), Regime/Fleet8PrefixEvents
// (cachegrind).
func Fill(keys []uint64, k, id uint64, r, per, b int) uint64 {
	h := consts // in registers for the loop (splitMix)
	if per == 1 {
		c := id + h.golden // mix0(id + i) is finish(c + i)
		for i := range keys {
			k = h.mix(k, h.finish(c+uint64(i)))
			keys[i] = k
		}
		return k
	}
	for i := range keys {
		k = h.mix(k, h.mix(uint64(r*b), id))
		keys[i] = k
		if r++; r == per {
			id, r = id+1, 0
		}
	}
	return k
}

// FillIDs fills keys with the chained keys, after k, of blocks each at
// offset 0 of its own unit, ids (as many, in any order): mix(k,
// mix0(id)) block by block, mix's constants in registers (splitMix).
// The engine's appendShared calls it for a block a unit. A loop of its
// own, as Fill: inside appendShared it kept its values on the stack, 42
// instructions a key (Regime/Tiers keys about 60 a request so, a
// group's prefix the first time the fleet sees it and each prompt's own
// ids).
func FillIDs(keys []uint64, k uint64, ids []uint64) {
	h := consts
	keys = keys[:len(ids)]
	for i, id := range ids {
		k = h.mix(k, h.finish(id+h.golden)) // mix(k, mix0(id))
		keys[i] = k
	}
}

// Next is the chained key, after k, of a block at offset 0 of unit id:
// FillIDs's key for one id, small enough to inline where a caller
// chains one key (sim's prefixChains.nextKey, every arrival whose group
// an index holds: FillIDs's call and loop setup cost
// Regime/Fleet8PrefixEvents about 48 instructions for that one key).
func Next(k, id uint64) uint64 {
	h := consts
	return h.mix(k, h.finish(id+h.golden))
}

// splitMix is the engine's mix and finish (SplitMix64's increment and
// its finaliser's multipliers) with their constants as values, for a
// loop that chains many keys (Fill): it takes them from consts, a
// variable, so that they are loaded into registers once. Given
// constants, the compiler loads each again (a 10-byte move) at every
// block, with two inline marks more: 41 instructions a key against 38
// (Regime/Fleet8PrefixEvents chains 112,320 keys, cachegrind). The
// engine's TestChainRunIsMix holds Fill to its mix.
type splitMix struct{ golden, mul1, mul2 uint64 }

// consts is mix's constants, never written.
var consts = splitMix{0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb}

func (c splitMix) mix(parent, content uint64) uint64 {
	return c.finish(parent ^ (content + c.golden + parent<<6 + parent>>2))
}

func (c splitMix) finish(h uint64) uint64 {
	h ^= h >> 30
	h *= c.mul1
	h ^= h >> 27
	h *= c.mul2
	return h ^ h>>31
}
