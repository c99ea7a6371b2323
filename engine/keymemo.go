package engine

import (
	"slices"

	"github.com/servesim/servesim/internal/ascend"
	"github.com/servesim/servesim/internal/kvchain"
)

// The key memo: prompts that begin with the same prefix ids key those
// blocks once. A block's key is a chain of two SplitMix64 finalisers over
// every block before it (appendShared), so a prompt of hundreds of blocks
// costs hundreds of finalisers, and the workloads that cache most resend
// what was keyed a moment ago: a system prompt shared by a group of
// prompts (FleetHighReuse's 256 blocks of 287), a conversation so far.
// The memo holds the chains of recent prompts, one slot for each first
// prefix id; a prompt whose leading ids equal its slot's copies the keys
// of the blocks wholly inside those ids and keys only the rest.
//
// The keys are the same either way: a block's key reads no unit past its
// last token (sharedContent), and the memo gives only blocks inside the
// units the two prompts share. TestKeyMemoIsAppendShared and
// FuzzKeyMemo hold the memo's chains to appendShared's. The engines of a
// fleet share one (ShareKeyMemo), as a fleet keys a prompt alike on every
// replica of one block size.

// keyMemoSlots is the number of chains a memo holds: the slot of a
// prompt is its first id's, so a workload of more distinct first ids
// than slots keys some prefixes again.
const keyMemoSlots = 512

// keyMemo is the chains of recent prompts, by the slot of their first id,
// the runs of their ids (runSlot), by the same slots, and the chains of
// runs of consecutive ids from the root (runKeys), by the slot of the
// run's first id.
type keyMemo struct {
	slots  []keySlot
	runs   []runSlot
	chains []runChain
	two    ascend.Guess // where the last prompt of two runs of ids, or of rising ids, parted them (twoRuns', appendRisen's)
}

// runChain is the chain from the root of blocks of b tokens over the ids
// first, first+1, … of p tokens each, as far as it was asked for.
type runChain struct {
	first uint64
	p, b  int
	keys  []uint64
}

// runSlot is one prompt's units and where each run of consecutive ids
// in them ends (appendRunPath's runs, ascend.Len's lengths summed).
type runSlot struct {
	ids  []uint64
	ends []int32
	// risen is where the runs of the last rising prompt whose second run
	// begins with an id of this slot end after its first run, and one
	// before the last end (appendRisenFrom's guesses; keyMemo.risen).
	risen []int32
}

// risen is the guesses of where the runs of a rising prompt end after
// its first, kept in the slot of the id that begins its second
// (appendRisenFrom): a conversation's first id of its own, which each
// of its turns resends, its next turn finding the runs of the one
// before. The slots are the runs', made here if not yet.
func (m *keyMemo) risen(second uint64) *[]int32 {
	if m.runs == nil {
		m.runs = make([]runSlot, keyMemoSlots)
	}
	sl := &m.runs[memoSlot(second)]
	if sl.risen == nil {
		// Every slot's room for a conversation of 7 turns, cut from one
		// array at the first: growing each slot's as its conversation
		// goes on (an allocation about each turn, the memo's 512 slots
		// taken over by the conversations one after the other) took
		// Regime/Conversations' runtime.mallocgcSmallNoscan and growslice
		// from 119 and 47 instructions a request to 161 and 96 (SERVESIM_BUDGET_FUNCS).
		room := make([]int32, risenRoom*len(m.runs))
		for i := range m.runs {
			m.runs[i].risen = room[i*risenRoom : i*risenRoom : (i+1)*risenRoom]
		}
	}
	return &sl.risen
}

// risenRoom is the room in ends of a run slot's risen guesses.
const risenRoom = 16

// memoSlot is the slot of a prompt whose first id is first.
func memoSlot(first uint64) int { return int((first*0x9e3779b97f4a7c15)>>32) % keyMemoSlots }

// keySlot is one prompt's chain: keys of blocks of b tokens over ids of
// p tokens each, ids holding the units those keys read.
type keySlot struct {
	ids  []uint64
	keys []uint64
	p, b int
	at   int // where the last prompt parted from the one before it (ascend.Common's guess)
	asc  int // ids' first asc run on from the first (ascend.Two's, for a prompt that promised two runs; else 0)
}

// sharedKeys appends to dst (empty), and returns, the keys of blocks 0 to
// to−1 of the shared content of prefix (ids of p tokens, blocks of b),
// from the memo where its slot's prompt shares the leading ids, and
// keeps the chain in that slot. It gives appendShared(dst, rootKey,
// prefix, p, b, 0, to).
//
// A prompt that promises at most two runs of ids (two: its
// PrefixTwoRuns), asked of a slot whose first at ids run on from its
// first (asc, noted when a prompt that promised so wrote it), is
// compared by ascend.CommonTwo: a group's prompts share its run of
// shared ids, which two ids then tell apart from another run, where
// Common compared them as memory (FleetHighReuse's 256 shared ids,
// 2 KiB a prompt). Regime/Tiers (budget test, SERVESIM_BUDGET_FUNCS):
// 37,197 instructions a request so, 36,765 and 36,844 this way
// (memeqbody 1,578 to 1,193). The slow twin compares every prompt so
// (memoNoTwo: TestKeyMemoTwoRunsIsCommon).
func (m *keyMemo) sharedKeys(dst, prefix []uint64, p, b, to int, two bool) []uint64 {
	if m.slots == nil {
		m.slots = make([]keySlot, keyMemoSlots)
	}
	sl := &m.slots[memoSlot(prefix[0])]
	known, common := 0, 0
	if sl.p == p && sl.b == b {
		// A group's prompts part where their own ids begin, where the
		// last one parted from the one before: compared there first
		// (ascend.Common), the shared ids are compared once, where
		// lcp.Len compared them whole, then again by 256 ids, as the
		// prompts differ past them. Regime/Tiers (cachegrind,
		// SERVESIM_BUDGET_FUNCS): 44,109 instructions a request with
		// lcp.Len and the slot rewritten whole, 43,302 so, the ids and
		// keys they share left in place below (memeqbody 2,753 to
		// 2,363, memmove 1,618 to 1,241).
		if two && sl.asc >= sl.at && !memoNoTwo {
			common = ascend.CommonTwo(sl.ids, prefix, sl.at)
		} else {
			common = ascend.Common(sl.ids, prefix, sl.at)
		}
		known = min(len(sl.keys), common*p/b, to)
	}
	dst = append(dst, sl.keys[:known]...)
	if known == to {
		return dst
	}
	key := rootKey
	if known > 0 {
		key = dst[known-1]
	}
	dst = appendShared(dst, key, prefix, p, b, known, to)
	// Keep the longer chain: a prompt that is a prefix of the slot's
	// leaves it as it is. The ids and keys the two share stay where
	// they are.
	read := min(len(prefix), (to*b+p-1)/p) // the units the keys read
	common = min(common, read)
	sl.ids = append(sl.ids[:common], prefix[common:read]...)
	sl.keys = append(sl.keys[:known], dst[known:]...)
	sl.p, sl.b, sl.at, sl.asc = p, b, common, 0
	if two {
		if k, ok := ascend.Two(sl.ids, common); ok {
			sl.asc = k
		}
	}
	return dst
}

// memoNoTwo makes sharedKeys compare every prompt's ids with its slot's
// by ascend.Common (the slow twin of a promised prompt's CommonTwo; a
// test's switch).
var memoNoTwo = false

// appendRuns appends to dst, and returns, the labels of appendRunPath's
// runs of consecutive ids over units ids (not empty) of per blocks each,
// the first shared blocks of them, and keeps the runs in ids' slot.
// Where the slot's prompt shares the leading ids (found as memory,
// lcp.Len), its runs that end inside them are ids' runs too (an end is
// an id that does not follow the one before, both shared), and the run
// that reaches past them is scanned from the last shared id on; a
// group's system prompt of hundreds of ids is then not read an id at a
// time (ascend.Len) again. TestRunMemoIsAscending holds it to the scan.
func (m *keyMemo) appendRuns(dst []runLabel, ids []uint64, per, shared int) []runLabel {
	if m.runs == nil {
		m.runs = make([]runSlot, keyMemoSlots)
	}
	sl := &m.runs[memoSlot(ids[0])]
	ends := sl.ends[:0] // rewritten in place: an end is read before it is written
	u, known := 0, 0
	if len(sl.ids) > 0 { // a prompt of the slot's group parts from it where its first run ends
		known = ascend.Common(sl.ids, ids, int(sl.ends[0]))
		for _, v := range sl.ends {
			if int(v) >= known {
				break
			}
			dst, ends, u = appendRun(dst, ids, u, int(v), per, shared), append(ends, v), int(v)
		}
		if u < known { // the slot's run from u goes on past known-1: so does ids'
			v := known - 1 + ascend.Len(ids[known-1:])
			dst, ends, u = appendRun(dst, ids, u, v, per, shared), append(ends, int32(v)), v
		}
	}
	for u < len(ids) {
		v := u + ascend.Len(ids[u:])
		dst, ends, u = appendRun(dst, ids, u, v, per, shared), append(ends, int32(v)), v
	}
	sl.ids, sl.ends = append(sl.ids[:known], ids[known:]...), ends // the first known agree
	return dst
}

// runKeys appends to dst, and returns, the keys of blocks len(dst) to
// to−1 of the chain from the root over the ids first, first+1, … (p
// tokens each, blocks of b), dst holding the first ones: the blocks of
// a shared prefix as workloads number it, which a fleet's run pools key
// on every replica a group's prompts reach (and its router before
// them). The slot of first keeps the chain, computed once as far as
// asked; a run of another first id, p or b takes the slot over.
// TestRunKeysIsAppendShared holds it to appendShared.
func (m *keyMemo) runKeys(dst []uint64, first uint64, p, b, to int) []uint64 {
	if m.chains == nil {
		m.chains = make([]runChain, keyMemoSlots)
	}
	sl := &m.chains[memoSlot(first)]
	if sl.first != first || sl.p != p || sl.b != b {
		*sl = runChain{first: first, p: p, b: b, keys: sl.keys[:0]}
	}
	if n := len(sl.keys); n < to {
		k := rootKey
		if n > 0 {
			k = sl.keys[n-1]
		}
		sl.keys = slices.Grow(sl.keys, to-n)[:to]
		if keys := sl.keys[n:]; p%b == 0 {
			per := p / b
			kvchain.Fill(keys, k, first+uint64(n/per), n%per, per, b)
		} else { // blocks straddle units: sharedContent's ids, first+u for unit u
			for i := range keys {
				lo := (n + i) * b
				c := uint64(lo % p)
				for u := lo / p; u <= (lo+b-1)/p; u++ {
					c = mix(c, first+uint64(u))
				}
				k = mix(k, c)
				keys[i] = k
			}
		}
	}
	return append(dst, sl.keys[len(dst):to]...)
}

// RunKeys appends to keys, and returns, the block keys len(keys) to n−1,
// at the engine's block size, of a prompt whose prefix ids are first,
// first+1, first+2, … (prefixBlockTokens > 0 tokens each) as far as
// those blocks reach: its chain as PrefixKeys gives it, keys holding
// its first len(keys) keys (fewer than n). Workloads number a shared
// prefix so (a group's system prompt). The keys come from the memo the
// engine shares with its fleet (ShareKeyMemo), which chains each such
// run once for the router that asks and for the engines, whose KV
// events name the same keys. Like PrefixKeys it reads only the block
// size.
func (e *Engine) RunKeys(keys []uint64, first uint64, prefixBlockTokens, n int) []uint64 {
	return e.memo.runKeys(keys, first, prefixBlockTokens, e.cfg.BlockSize, n)
}

// ShareKeyMemo makes e key prompts through with's memo of recent chains
// (see keymemo.go): engines of one fleet, stepped from one goroutine,
// key a shared prefix once among them. It changes no key and no result,
// only the work of keying; with nil, e keeps a memo of its own.
func (e *Engine) ShareKeyMemo(with *Engine) {
	if with == nil {
		e.memo = &keyMemo{}
	} else {
		e.memo = with.memo
	}
	if e.pool.runs != nil {
		e.pool.runs.memo = e.memo
	}
}
